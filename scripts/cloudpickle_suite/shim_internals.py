"""``cloudpickle.cloudpickle`` in the shimmed runs: the public names of the shim
package, plus the private helpers cloudpickle's test module imports at its top.

The helpers are the pinned cloudpickle's own (its ``cloudpickle.py``, loaded as
``_cloudpickle_reference``): the test module must import, and the behavioural
tests that use one (``_make_empty_cell``, to build an empty cell) use it only to
build their input. The tests that check the helpers themselves are listed in
internals.json and deselected, so no result here comes from cloudpickle's code.
"""

import _cloudpickle_reference as _reference

from . import *  # noqa: F403  (dumps, loads, Pickler, ... as the shim package binds them)
from . import CloudPickler, Pickler, dump, dumps, load, loads  # noqa: F401

_should_pickle_by_reference = _reference._should_pickle_by_reference
_make_empty_cell = _reference._make_empty_cell
_extract_class_dict = _reference._extract_class_dict
_whichmodule = _reference._whichmodule
_lookup_module_and_qualname = _reference._lookup_module_and_qualname
_extract_code_globals = _reference._extract_code_globals
