"""Diagnostics: why an object cannot ship, where it sits, and what to do.

One package above the table of kinds (:mod:`picklable._reduce.table`), whose
verdicts it reads and never restates, except for its two low modules:

* :mod:`.wording` -- the words every error shares: "Cannot pickle X - at
  path: reason. Fix: hint.", pickle's "cannot pickle 'X' object", a type's
  name. Low, so that the pickler reads pickle's words with the same pattern.
* :mod:`.loading` -- why a payload failed to load (a module missing here, a
  damaged stream). Low, so that the unpickler uses it without the table.

The rest reads the table:

* :mod:`.hints` -- the reason and fix for an object whose pickling failed;
* :mod:`.culprit` -- ``decide`` (the reducers' decision read back) and the
  walk that finds the culprit's attribute path;
* :mod:`.errors` -- the errors users read (``dump_error``, ``pickling_error``,
  ...): the only place that adds an attribute path to an error;
* :mod:`.explain` -- ``explain(obj)``;
* :mod:`.inspect` -- ``picklable inspect FILE``.

This ``__init__`` imports nothing: the pickler and the unpickler import the low
modules without loading the rest.
"""
