"""Constants and version shims, one copy of each.

Every module that needs to know what ``__main__`` is called in a spawn worker,
whether a class is a heap type, or how to reach a wrapt proxy's own
``__dict__`` imports it from here.
"""

from __future__ import annotations

import builtins
import gc
import importlib
import os
import sys
import types
import typing
from types import FunctionType
from typing import Any, TypeVar

__all__ = [
    "CLASSDICT_CELL",
    "CLASSDICT_GLOBAL_OP",
    "CLASSDICT_SCOPES",
    "C_RECURSION_APART",
    "FROZENDICT",
    "HEAPTYPE",
    "IMMUTABLETYPE",
    "LAZY_ANNOTATIONS",
    "LAZY_IMPORT_TYPE",
    "MAIN_MODULES",
    "PICKLE_NOTE",
    "PICKLE_OWN_TYPES",
    "SENTINEL_TYPE",
    "TEMPLATE_TYPES",
    "TRACEBACK_SPANS",
    "TYPE_ALIAS_TYPE",
    "TYPE_PARAMS",
    "chained",
    "class_module",
    "class_namespace",
    "full_traceback",
    "is_heap_type",
    "proxy_own_dict",
    "wrapt_proxy_roots",
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

# type's own __dict__ descriptor: a class's namespace, read without running
# anything the class (or its metaclass) defines.
_TYPE_DICT = type.__dict__["__dict__"]

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
# a LazyImportType in the module's globals until first use (3.15, PEP 810);
# ``frozendict(a=1)`` is an immutable dict (3.15, PEP 814).
TYPE_ALIAS_TYPE: type | None = getattr(typing, "TypeAliasType", None)
SENTINEL_TYPE: type | None = getattr(builtins, "sentinel", None)
FROZENDICT: type | None = getattr(builtins, "frozendict", None)
LAZY_IMPORT_TYPE: type | None = getattr(types, "LazyImportType", None)


# Python 3.14 (PEP 649): a function's and a class's annotations are computed on
# first access by an ``__annotate__`` function, which a copy ships instead.
LAZY_ANNOTATIONS = sys.version_info >= (3, 14)

# The free variable through which an annotation scope inside a class body (3.12:
# type parameters and type aliases; 3.14: every ``__annotate__``) reads the
# class's namespace: its cell holds the dict behind ``cls.__dict__``.
CLASSDICT_CELL = "__classdict__"
CLASSDICT_SCOPES = sys.version_info >= (3, 12)
# How those scopes read a name their class does not define: from the globals.
CLASSDICT_GLOBAL_OP = "LOAD_FROM_DICT_OR_GLOBALS"

# Python 3.12 (PEP 695): functions and classes have ``__type_params__``.
TYPE_PARAMS = sys.version_info >= (3, 12)


def class_namespace(cls: type) -> dict[str, Any]:
    """The dict behind ``cls.__dict__`` (a read-only view of it): what a
    ``__classdict__`` cell holds once the class is made."""
    (namespace,) = gc.get_referents(_TYPE_DICT.__get__(cls, type))
    return namespace  # type: ignore[no-any-return]


def _template_types() -> tuple[type, ...]:
    try:
        templatelib = importlib.import_module("string.templatelib")
    except ImportError:
        return ()
    return (templatelib.Template, templatelib.Interpolation)


# ``t"hello {name}"`` makes a Template of strings and Interpolations (3.14, PEP
# 750): data, whose interpolated values are any objects. Empty before 3.14,
# without trying the import there: it would load the module ``string`` (and
# compile its Template's pattern) in every process, only to fail.
TEMPLATE_TYPES: tuple[type, ...] = _template_types() if sys.version_info >= (3, 14) else ()


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


def class_module(cls: type) -> str | None:
    """The module whose class statement made ``cls``: its ``__module__``, or, where
    that is not a string, the module its body's functions name (None if none).

    wrapt's pure-Python proxy classes (its fallback where no compiled wheel fits
    the interpreter, or under ``WRAPT_DISABLE_EXTENSIONS``) replace the class
    statement's ``__module__`` with a property that shows the wrapped object's, so
    that on the class itself ``__module__`` is that property.
    """
    module = getattr(cls, "__module__", None)
    if type(module) is str:
        return module
    prefix = f"{cls.__qualname__}."
    try:  # read without running anything the class holds (the allow-list asks too)
        namespace = _TYPE_DICT.__get__(cls, type)
    except TypeError:  # not a class (a proxy that claims to be one)
        return None
    for value in namespace.values():
        kind = type(value)
        if kind is classmethod or kind is staticmethod:
            func = value.__func__
        elif kind is property:
            func = value.fget
        else:
            func = value
        if type(func) is FunctionType and func.__qualname__.startswith(prefix):
            module = func.__module__
            return module if type(module) is str else None
    return None


def wrapt_proxy_roots() -> tuple[type, ...]:
    """The root classes of wrapt's proxies that the imported wrapt has (1.x or
    2.x, compiled or pure-Python); none before wrapt is imported.

    Found by identity in wrapt's modules, never by ``__module__``: the compiled
    types say ``builtins`` or ``_wrappers``, the pure-Python ones have a property
    there (see :func:`class_module`).
    """
    roots: list[type] = []
    for module_name, names in (
        ("wrapt", ("BaseObjectProxy", "ObjectProxy")),
        ("wrapt.wrappers", ("ObjectProxy",)),  # the pure-Python implementation
    ):
        module = sys.modules.get(module_name)
        for name in names:
            candidate = getattr(module, name, None)
            if isinstance(candidate, type) and candidate not in roots:
                roots.append(candidate)
    return tuple(roots)


# wrapt's proxy fields that hold objects, never the proxy's own dict.
_WRAPT_FIELDS = ("_self_instance", "_self_enabled", "_self_wrapper", "_self_parent", "_self_owner")


def proxy_own_dict(proxy: Any) -> dict[str, Any] | None:
    """A wrapt proxy's own ``__dict__`` (``vars(proxy)`` is the wrapped object's);
    None when it has none yet.

    wrapt 2 exposes it as ``__self_dict__``. wrapt 1 puts a property showing the
    wrapped object's dict where ``__dict__`` would be; ``object.__getstate__``
    reads the instance's own (compiled or pure-Python proxy alike). Anything else
    (a payload may name any object): the dict that is a GC referent and none of
    wrapt's fields, as for a compiled wrapt 1 proxy (whose dict is a C slot).
    """
    try:
        own = object.__getattribute__(proxy, "__self_dict__")  # wrapt 2
    except AttributeError:
        own = None
    if isinstance(own, dict):
        return own
    roots = wrapt_proxy_roots()
    if roots and issubclass(type(proxy), roots):
        try:
            state = object.__getstate__(proxy)
        except Exception:
            return None
        if type(state) is tuple:  # (dict, slots)
            state = state[0]
        return state if type(state) is dict else None
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
