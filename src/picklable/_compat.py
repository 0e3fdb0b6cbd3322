"""Constants and version shims, one copy of each.

Every module that needs to know what ``__main__`` is called in a spawn worker,
whether a class is a heap type, or how to reach a wrapt proxy's own
``__dict__`` imports it from here.
"""

from __future__ import annotations

import builtins
import gc
import os
import sys
import types
import typing
from typing import Any, TypeVar

__all__ = [
    "C_RECURSION_APART",
    "HEAPTYPE",
    "IMMUTABLETYPE",
    "LAZY_IMPORT_TYPE",
    "MAIN_MODULES",
    "PICKLE_NOTE",
    "PICKLE_OWN_TYPES",
    "SENTINEL_TYPE",
    "TRACEBACK_SPANS",
    "TYPE_ALIAS_TYPE",
    "chained",
    "full_traceback",
    "is_heap_type",
    "proxy_own_dict",
    "written_in_c",
]

# A script is ``__main__`` in the process that runs it and ``__mp_main__`` in a
# spawn worker that re-imports it (multiprocessing.spawn): both name a script.
MAIN_MODULES = frozenset({"__main__", "__mp_main__"})

# Py_TPFLAGS_HEAPTYPE: classes made by class statements (and by type()); static
# C types lack it, and nothing about them can be copied by value.
HEAPTYPE = 1 << 9

# Py_TPFLAGS_IMMUTABLETYPE: static types, and the heap types C extensions make
# (PyType_FromSpec: from Python 3.12/3.13 on most of the stdlib's, ctypes'
# metaclasses among them); never the class of a class statement or of type().
IMMUTABLETYPE = 1 << 8

# The types the C pickler saves itself, without picklable's hook: plain data.
PICKLE_OWN_TYPES = frozenset(
    {type(None), bool, int, float, complex, str, bytes, bytearray}
    | {list, tuple, dict, set, frozenset}
)

# From Python 3.14 on, pickle adds a note (PEP 678) to an error for each object
# it was saving ("when serializing list item 0"): their prefix, None before.
PICKLE_NOTE = "when serializing " if sys.version_info >= (3, 14) else None

# From Python 3.12 on, recursion in C code (the C pickler saving nested data) has
# a limit of its own that sys.setrecursionlimit() does not raise (3.12 and 3.13:
# a fixed count; 3.14+: the C stack); before, it counted against that limit.
C_RECURSION_APART = sys.version_info >= (3, 12)

# From Python 3.13 on, traceback prints every line an instruction spans (3.11
# and 3.12: the first line, underlined to its end).
TRACEBACK_SPANS = sys.version_info >= (3, 13)
# Types of objects new Python versions put in payloads; None where the running
# Python lacks them. ``type X = ...`` makes a TypeAliasType (3.12, PEP 695);
# ``sentinel("MISSING")`` a sentinel (3.15, PEP 661); ``lazy import json`` binds
# a LazyImportType in the module's globals until first use (3.15, PEP 810).
TYPE_ALIAS_TYPE: type | None = getattr(typing, "TypeAliasType", None)
SENTINEL_TYPE: type | None = getattr(builtins, "sentinel", None)
LAZY_IMPORT_TYPE: type | None = getattr(types, "LazyImportType", None)


def full_traceback() -> bool:
    """Whether errors keep picklable's internal exception chain: the environment
    variable ``PICKLABLE_TRACEBACK`` is ``full`` (read at each error)."""
    return os.environ.get("PICKLABLE_TRACEBACK", "").strip().lower() == "full"


E = TypeVar("E", bound=BaseException)


def chained(error: E, cause: BaseException) -> E:
    """``error``, to be raised for ``cause``: with ``cause`` as its context,
    printed only under ``PICKLABLE_TRACEBACK=full`` (one traceback otherwise)."""
    if error is cause:
        return error
    error.__context__ = cause
    if full_traceback():
        error.__cause__ = cause
    else:
        error.__suppress_context__ = True
    return error


def is_heap_type(t: type) -> bool:
    """Whether ``t`` was made at run time (a class statement), not a static C type."""
    return bool(t.__flags__ & HEAPTYPE)


def written_in_c(t: type) -> bool:
    """Whether ``t`` is a C type, static or an extension's heap type: no copy of
    it can be made (its methods are C code, its layout a C struct)."""
    return not t.__flags__ & HEAPTYPE or bool(t.__flags__ & IMMUTABLETYPE)


# wrapt's proxy fields that hold objects, never the proxy's own dict.
_WRAPT_FIELDS = ("_self_instance", "_self_enabled", "_self_wrapper", "_self_parent", "_self_owner")


def proxy_own_dict(proxy: Any) -> dict[str, Any] | None:
    """A wrapt proxy's own ``__dict__`` (``vars(proxy)`` is the wrapped object's).

    wrapt 2 exposes it as ``__self_dict__``; wrapt 1 keeps it in the C object's
    dict slot, reachable only as a GC referent that is none of its fields.
    """
    try:
        own = object.__getattribute__(proxy, "__self_dict__")  # wrapt 2
    except AttributeError:
        own = None
    if isinstance(own, dict):
        return own
    fields = set()
    for name in _WRAPT_FIELDS:
        try:
            fields.add(id(object.__getattribute__(proxy, name)))
        except AttributeError:
            pass
    for referent in gc.get_referents(proxy):
        if type(referent) is dict and id(referent) not in fields:
            return referent
    return None
