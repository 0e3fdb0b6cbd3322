"""``cloudpickle``, answered by picklable: the package the suite imports in the picklable run.

scripts/cloudpickle-suite writes this file as ``cloudpickle/__init__.py`` of a
scratch tree, so ``import cloudpickle`` in cloudpickle's tests, and in the child
interpreters they start (``testutils`` puts that tree on their ``PYTHONPATH``),
loads picklable's drop-in module, ``picklable.compat.cloudpickle``: what the
tests see is what a user who swaps the import gets. Nothing here implements
behaviour of its own. The private helpers some tests import from
``cloudpickle.cloudpickle`` come from the pinned cloudpickle itself (see the
cloudpickle/cloudpickle.py the script writes); the tests that check them are
listed in internals.json and not run here.
"""

from picklable.compat.cloudpickle import *  # noqa: F403
from picklable.compat.cloudpickle import __all__  # noqa: F401
