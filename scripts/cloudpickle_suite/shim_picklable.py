"""``cloudpickle``, answered by picklable: the package the suite imports in the picklable run.

scripts/cloudpickle-suite writes this file as ``cloudpickle/__init__.py`` of a
scratch tree, so ``import cloudpickle`` in cloudpickle's tests, and in the child
interpreters they start (``testutils`` puts that tree on their ``PYTHONPATH``),
loads picklable's serializer. Each name is bound to picklable's own object, or
to its nearest API where picklable spells it differently; nothing here
implements behaviour of its own, so what the tests see is picklable. A name
picklable lacks is left out: the test that uses it fails, and the report says so.
"""

import picklable

DEFAULT_PROTOCOL = picklable.DEFAULT_PROTOCOL
dumps = picklable.dumps
dump = picklable.dump
loads = picklable.loads
load = picklable.load
Pickler = picklable.Pickler
CloudPickler = picklable.Pickler  # cloudpickle's older name for its Pickler

# Nearest API: picklable's registry takes a module or its name; cloudpickle's,
# a module object only.
register_pickle_by_value = picklable.register_by_value
unregister_pickle_by_value = picklable.unregister_by_value
list_registry_pickle_by_value = picklable.list_registry_by_value

# Deliberately absent: is_tornado_coroutine (a deprecated cloudpickle utility,
# not a serializer). The private helpers some tests import from
# cloudpickle.cloudpickle come from the pinned cloudpickle itself (see the
# cloudpickle/cloudpickle.py the script writes); the tests that check them are
# listed in internals.json and not run here.
