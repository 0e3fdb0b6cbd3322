"""Callables whose own ``__reduce__`` makes loading them crash or hang.

stdlib pickle, cloudpickle and dill call ``__reduce__``; the payload then
calls ``ctypes.string_at(0)`` (a null-pointer read: SIGSEGV) or
``time.sleep(3600)`` in the interpreter that loads it. Both objects live at
module level, so picklable ships them by reference. The package does not
import this module: audit it by name (``picklable_testpkg.hostile``).
"""

from __future__ import annotations

import ctypes
import time


class CrashOnLoad:
    """Loading its stdlib pickle kills the interpreter."""

    def __call__(self):
        return "crash"

    def __reduce__(self):
        return (ctypes.string_at, (0,))


class HangOnLoad:
    """Loading its stdlib pickle never returns."""

    def __call__(self):
        return "hang"

    def __reduce__(self):
        return (time.sleep, (3600,))


crash_on_load = CrashOnLoad()
hang_on_load = HangOnLoad()


def harmless(x):
    """Ships with every serializer."""
    return x
