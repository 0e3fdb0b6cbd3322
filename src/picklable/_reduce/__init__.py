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
   located by :mod:`picklable._diagnostics.culprit`.

:mod:`.table` is the one table of kinds that ties them together (its refusals,
the kinds that never ship, listed once in :mod:`.refusals`); the
by-value registry (``register_by_value``) is :mod:`.registry`, per-payload
state :mod:`.state`. Every reducer is called with the pickler's
:class:`~.context.DumpContext` (:mod:`.context`): the fields it reads and the
operations it calls, never the pickler itself.

The package's own names are what modules built on the api ask of the reducers
(the pools: whether a worker that imports the running script holds a function
as it is here); everything else stays inside the package.
"""

from .scripts import recheck_scripts, workers_own_function

__all__ = ["recheck_scripts", "workers_own_function"]
