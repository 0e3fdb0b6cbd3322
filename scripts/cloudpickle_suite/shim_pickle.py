"""``cloudpickle``, answered by the standard library's pickle: the lower bound.

scripts/cloudpickle-suite writes this file as ``cloudpickle/__init__.py`` of a
scratch tree for its optional ``--pickle`` run (see shim_picklable.py). The
by-value registry has no counterpart in pickle: its three names exist only so
that the test module imports (it imports them at the top), and raise when called.
"""

import pickle

DEFAULT_PROTOCOL = pickle.DEFAULT_PROTOCOL
dumps = pickle.dumps
dump = pickle.dump
loads = pickle.loads
load = pickle.load
Pickler = pickle.Pickler
CloudPickler = pickle.Pickler


def _missing(*args, **kwargs):
    raise NotImplementedError("the standard library's pickle has no by-value registry")


register_pickle_by_value = unregister_pickle_by_value = list_registry_pickle_by_value = _missing
