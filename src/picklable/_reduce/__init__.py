"""How each kind of object is reduced: the rule, one family per module.

The order of the rule, and where each step lives:

1. plain data -- never here: CPython's C pickler saves it before the hook;
2. by its own name -- :mod:`.reference` (and each family's fast path);
3. by a located path -- :mod:`.reference`, over :mod:`picklable._locator`;
4. wrapper kinds taken apart -- :mod:`.wrappers` (and singledispatch in
   :mod:`.functions`);
5. by value -- :mod:`.functions`, :mod:`.classes`, :mod:`.objects` (pickle's
   own reduction for instances), :mod:`.exceptions`;
6. an error that names the path -- raised by the reducers that refuse, and
   located by :mod:`picklable._diagnose`.

:mod:`.table` is the one table of kinds that ties them together; the
by-value registry (``register_by_value``) is :mod:`.registry`, per-payload
state :mod:`.state`. Every reducer is called with the pickler's
:class:`~.context.DumpContext` (:mod:`.context`): the fields it reads and the
operations it calls, never the pickler itself.
"""
