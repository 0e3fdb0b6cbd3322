"""Diagnostics: why an object cannot ship, where it sits, and what to do.

One package above the table of kinds (:mod:`picklable._reduce.table`), whose
verdicts it reads:

* :mod:`.hints` -- reasons and fixes (its load-failure half is used by the
  unpickler);
* :mod:`.culprit` -- ``decide`` (the reducers' decision read back) and the
  walk that finds the culprit's attribute path;
* :mod:`.explain` -- ``explain(obj)``;
* :mod:`.inspect` -- ``picklable inspect FILE``.

This ``__init__`` imports nothing: the unpickler imports a low module without
loading the rest.
"""
