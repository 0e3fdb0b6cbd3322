"""Find *where* a payload fails: the attribute path from the root to the culprit.

The C pickler stops at the first object it cannot save and says only what that
object is. To say where it sits, walk the same graph in Python: take each piece
of an object (closure cells, referenced globals, defaults, instance state, items)
the way the reducers would, try each piece alone, and descend into the one that
fails until its pieces all pickle. That leaf is the culprit.
"""

from __future__ import annotations

import copyreg
import io
import types
from collections.abc import Iterator
from typing import Any

from . import _byvalue, _hints, _wrappers
from ._locator import importable_by_own_name
from .exceptions import PicklingError

_MAX_CHILDREN = 10_000


def type_name(obj: Any) -> str:
    t = type(obj)
    module = getattr(t, "__module__", "?")
    return t.__qualname__ if module == "builtins" else f"{module}.{t.__qualname__}"


def root_name(obj: Any) -> str:
    name = getattr(obj, "__name__", None)
    if isinstance(name, str) and name.isidentifier():
        return name
    return "obj"


def _pickles(obj: Any) -> BaseException | None:
    """None if ``obj`` pickles alone, else the error."""
    from ._pickler import Pickler

    try:
        Pickler(io.BytesIO()).dump(obj)
    except RecursionError as exc:
        return exc
    except Exception as exc:
        return exc
    return None


def children(obj: Any) -> Iterator[tuple[str, Any]]:
    """(path suffix, piece) for each piece that shipping ``obj`` would ship."""
    t = type(obj)
    pieces = _wrappers.wrapper_children(obj)
    if pieces is not None:  # wrapt proxies lie about their type: before any isinstance
        yield from pieces
        return
    if t is types.FunctionType:
        if not _byvalue.ships_by_value(obj.__module__) and importable_by_own_name(obj):
            return
        for i, cell in enumerate(obj.__closure__ or ()):
            try:
                yield f".__closure__[{i}].cell_contents", cell.cell_contents
            except ValueError:
                pass
        home = obj.__globals__
        for name in _byvalue.code_info(obj.__code__)[2]:
            if name in home:
                yield f".__globals__[{name!r}]", home[name]
        for i, default in enumerate(obj.__defaults__ or ()):
            yield f".__defaults__[{i}]", default
        for key, value in (obj.__kwdefaults__ or {}).items():
            yield f".__kwdefaults__[{key!r}]", value
        for key, value in obj.__dict__.items():
            yield f".{key}", value
        return
    if t in (list, tuple, set, frozenset):
        for i, item in enumerate(obj):
            if i >= _MAX_CHILDREN:
                return
            yield (f"[{i}]" if t in (list, tuple) else f"{{item {i}}}"), item
        return
    if t is dict:
        for i, (key, value) in enumerate(obj.items()):
            if i >= _MAX_CHILDREN:
                return
            yield f"[{key!r}]", value
        return
    if t is types.MethodType:
        yield ".__self__", obj.__self__
        yield ".__func__", obj.__func__
        return
    if isinstance(obj, type):
        if importable_by_own_name(obj):
            return
        for key, value in list(vars(obj).items()):
            if key not in ("__dict__", "__weakref__"):
                yield f".{key}", value
        return
    if isinstance(obj, (classmethod, staticmethod)):
        yield ".__func__", obj.__func__
        return
    if isinstance(obj, property):
        for name in ("fget", "fset", "fdel"):
            if getattr(obj, name) is not None:
                yield f".{name}", getattr(obj, name)
        return
    # Any other instance: what its reduction would ship.
    try:
        reduced = obj.__reduce_ex__(5)
    except Exception:
        return
    if isinstance(reduced, str) or not isinstance(reduced, tuple):
        return
    args = reduced[1] if len(reduced) > 1 else ()
    state = reduced[2] if len(reduced) > 2 else None
    if reduced[0] is copyreg.__newobj__ or getattr(reduced[0], "__name__", "") == "__newobj__":
        args = args[1:]  # the class itself
    for i, arg in enumerate(args or ()):
        yield f".__reduce__()[1][{i}]", arg
    if isinstance(state, tuple) and len(state) == 2:
        dict_state, slot_state = state
    else:
        dict_state, slot_state = state, None
    for part in (dict_state, slot_state):
        if isinstance(part, dict):
            for key, value in part.items():
                yield (f".{key}" if isinstance(key, str) else f"[{key!r}]"), value
        elif part is not None:
            yield ".__getstate__()", part
    if len(reduced) > 3 and reduced[3] is not None:
        for i, item in enumerate(reduced[3]):
            if i >= _MAX_CHILDREN:
                break
            yield f"[{i}]", item
    if len(reduced) > 4 and reduced[4] is not None:
        for i, (key, value) in enumerate(reduced[4]):
            if i >= _MAX_CHILDREN:
                break
            yield f"[{key!r}]", value


def find_culprit(root: Any, error: BaseException | None = None) -> tuple[str, Any, BaseException]:
    """Return (path, culprit, its error) for an object that fails to pickle."""
    path = root_name(root)
    current = root
    current_error = error if error is not None else _pickles(root)
    seen: set[int] = set()
    while current_error is not None and id(current) not in seen:
        seen.add(id(current))
        for suffix, child in children(current):
            child_error = _pickles(child)
            if child_error is not None:
                path += suffix
                current, current_error = child, child_error
                break
        else:
            break
    assert current_error is not None
    return path, current, current_error


def pickling_error(root: Any, error: BaseException) -> PicklingError:
    """Build the error that ``dumps`` raises: what, where, why, fix."""
    try:
        path, culprit, cause = find_culprit(root, error)
    except Exception:  # the walk itself must never hide the original error
        path, culprit, cause = root_name(root), root, error
    if isinstance(cause, PicklingError) and cause.reason:
        reason, hint = cause.reason, cause.hint
        what = cause.type_name or type_name(culprit)
    else:
        what = type_name(culprit)
        reason, hint = _hints.explain_failure(culprit, cause)
    message = f"Cannot pickle {what} - at {path}: {reason}."
    if hint:
        message += f" Fix: {hint}."
    return PicklingError(message, path=path, type_name=what, reason=reason, hint=hint)
