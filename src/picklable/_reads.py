"""The globals an object of a script reads, directly or through the script's
own functions and classes that it reads.

Both ends of a payload ask. The receiver: does its copy of the script define
them all (a name set inside ``if __name__ == "__main__":`` is not defined in a
spawn worker)? The sender: does its main guard rebind one (then a worker's
copy of the script holds another value, and the worker's own function would
compute something else)?
"""

from __future__ import annotations

import builtins
import types
import weakref
from collections.abc import Collection, Iterator
from typing import Any

from . import _caches, _code

__all__ = ["missing_globals", "script_reads"]

# A bound on the walk: a script's call graph is small; a pathological one
# (thousands of functions reading each other) is cut short, never slow.
_MAX_CHECKED = 256


# A class's annotations function (3.14): evaluated when asked for, it may name
# what is defined later or nowhere; a name it reads is not one the class needs.
_ANNOTATIONS = frozenset({"__annotate_func__", "__annotate__"})


# Builtins through which code reads globals by a name its code does not hold
# (``globals()["X"]``, ``eval("X")``).
_NAMESPACE_READS = frozenset({"globals", "vars", "eval", "exec"})


def script_reads(
    obj: Any, modules: Collection[str], *, literal: bool = False
) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(name, namespace)`` for each global that ``obj`` reads, and that the
    functions and classes of the script it reads read in turn.

    ``literal``: a function that reads its namespace itself (``globals()``,
    ``eval``) reads, as far as can be told, the names its code spells out as
    strings too (``globals()["SCALE"]``); a name chosen at run time
    (``globals()[name]``) is not known.

    ``modules`` are the names the script goes by (``__main__``, ``__mp_main__``);
    a function whose globals are another module's is not followed. A wrapper
    is followed to what it wraps (``__wrapped__``). Each function is read in
    its own ``__globals__`` (a spawn worker runs the script in another dict than
    its ``__mp_main__`` module's).
    """
    seen: set[int] = set()
    todo = [obj]
    while todo and len(seen) < _MAX_CHECKED:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if type(current) is not type:
            try:
                inner = current.__wrapped__
            except Exception:
                inner = None
            if inner is not None:
                todo.append(inner)
        if type(current) is types.FunctionType:
            namespace = current.__globals__
            if namespace.get("__name__") not in modules:
                continue  # defined elsewhere: its own module's globals
            reads = _code.global_reads(current.__code__)
            for name in reads:
                yield name, namespace
                value = namespace.get(name)
                if getattr(value, "__module__", None) in modules:
                    todo.append(value)
            if literal and not _NAMESPACE_READS.isdisjoint(reads):
                for name in _spelled_names(current.__code__):
                    yield name, namespace
        elif isinstance(current, type) and current.__module__ in modules:
            for key, value in vars(current).items():
                kind = type(value)
                if key in _ANNOTATIONS:
                    continue
                if kind is types.FunctionType:
                    todo.append(value)
                elif kind is classmethod or kind is staticmethod:
                    todo.append(value.__func__)
                elif kind is property:
                    todo.extend(f for f in (value.fget, value.fset, value.fdel) if f is not None)


def _spelled_names(code: types.CodeType) -> Iterator[str]:
    """The strings ``code`` (and code made in it) holds that could name a global."""
    for const in code.co_consts:
        if type(const) is str and const.isidentifier():
            yield const
        elif isinstance(const, types.CodeType):
            yield from _spelled_names(const)


# id(function) -> (a weak reference to it, its code, what the answer rests on):
# functions of the script whose reads were all defined when last asked. Each
# load of a payload with a script's function asks again (issue 29): the answer
# is kept with every (namespace, name, value or _ABSENT) the walk read, and
# holds while each is unchanged (a name defined, deleted or rebound since is
# seen). Not kept when the walk went through a class (its methods may change
# in place) or a wrapper other than the function's own ``__wrapped__``; a
# ``__code__`` replaced on a function it reads is not seen (one on the function
# itself is).
_complete: dict[int, tuple[Any, Any, tuple[tuple[dict[str, Any], str, Any], ...]]] = {}
_COMPLETE_LIMIT = 1024
_ABSENT: Any = object()
_caches.register("reads.complete", _complete.clear)


def missing_globals(obj: Any, modules: Collection[str]) -> set[str]:
    """The globals ``obj`` reads (directly, or through the script's functions
    and classes it reads) that its namespace does not define, builtins aside.

    ``modules``: the names the script goes by here (see :func:`script_reads`)."""
    known = _complete.get(id(obj))
    if known is not None and known[0]() is obj and obj.__code__ is known[1]:
        for namespace, name, value in known[2]:
            if namespace.get(name, _ABSENT) is not value:
                break
        else:
            return set()
    missing: set[str] = set()
    deps: list[tuple[dict[str, Any], str, Any]] = []
    keep = type(obj) is types.FunctionType
    if keep:
        inner = obj.__dict__.get("__wrapped__", _ABSENT)
        if inner is not _ABSENT:
            # A decorator's wrapper: what it wraps is read too (one level is kept).
            deps.append((obj.__dict__, "__wrapped__", inner))
            keep = type(inner) is types.FunctionType and "__wrapped__" not in inner.__dict__
    for name, namespace in script_reads(obj, modules):
        value = namespace.get(name, _ABSENT)
        deps.append((namespace, name, value))
        if value is _ABSENT:
            if not hasattr(builtins, name):
                missing.add(name)
        elif isinstance(value, type) or (
            type(value) is types.FunctionType and "__wrapped__" in value.__dict__
        ):
            keep = False
    if keep and not missing:
        if len(_complete) >= _COMPLETE_LIMIT:
            _complete.clear()
        _complete[id(obj)] = (weakref.ref(obj), obj.__code__, tuple(deps))
    return missing
