"""Decorators as real code writes them: without functools.wraps, returning objects."""

from __future__ import annotations

import builtins
import marshal
import threading
import types


def no_wraps(func):
    """A decorator that forgot functools.wraps."""

    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


def tagging(tag):
    """A decorator factory without wraps; the wrapper records calls."""

    def decorate(func):
        def tagged(*args, **kwargs):
            return (tag, func(*args, **kwargs))

        return tagged

    return decorate


class Counted:
    """A class-based decorator: the module name now points at this object."""

    def __init__(self, func):
        self.func = func
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.func(*args, **kwargs)


class CLIOption:
    """Like sacred's CLIOption: keeps the function in an attribute."""

    def __init__(self, apply_function, short_flag, long_flag):
        self.apply_function = apply_function
        self.short_flag = short_flag
        self.long_flag = long_flag

    def __call__(self, *args):
        return self.apply_function(*args)


def cli_option(short_flag, long_flag):
    def wrapper(func):
        return CLIOption(func, short_flag, long_flag)

    return wrapper


class Compiled:
    """A JIT-like decorator: its state holds what no pickler writes (a lock stands
    for compiled code), and its own ``__reduce__`` ships the code it compiles, to
    compile again where it loads (numba's ufuncs ship theirs with a pickler of
    their own)."""

    def __init__(self, func):
        self.py_func = func
        self.machine_code = threading.Lock()

    def __call__(self, *args):
        return self.py_func(*args)

    def __reduce__(self):
        return (_compiled_from, (marshal.dumps(self.py_func.__code__),))


def _compiled_from(code):
    return Compiled(types.FunctionType(marshal.loads(code), {"__builtins__": builtins}))
