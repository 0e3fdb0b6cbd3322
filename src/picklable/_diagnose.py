"""Find *where* a payload fails: the attribute path from the root to the culprit.

The C pickler stops at the first object it cannot save and says only what that
object is. To say where it sits, walk the same graph in Python: take each piece
of an object (closure cells, referenced globals, defaults, instance state, items,
an exception's cause and context) the way the reducers would, try each piece
alone, and descend into the one that fails until its pieces all pickle, or until
an object of a kind that never ships (a lock, an open file, a running generator:
see :mod:`picklable._hints`). That object is the culprit; its path reads like the
Python expression that reaches it: ``job.__closure__[0].cell_contents._lock``.

:func:`shipping` answers the other question ``explain`` asks of every node: does
it go by reference (via which path), by value (and why it is not importable),
taken apart as a wrapper, or as plain data. It mirrors the dispatch of
:mod:`picklable._reducers` without pickling anything.
"""

from __future__ import annotations

import collections
import copyreg
import dataclasses
import functools
import sys
import types
from collections.abc import Iterator
from typing import Any

from . import _byvalue, _hints, _reducers, _wrappers
from ._locator import MAIN_MODULES, importable_by_own_name, locate
from ._reconstruct import _walk, format_path
from .exceptions import PicklingError

__all__ = [
    "Shipping",
    "children",
    "find_culprit",
    "pickling_error",
    "root_name",
    "shipping",
    "type_name",
]

_MAX_CHILDREN = 10_000
# Saved by the C pickler itself: never a culprit, never a wrapper.
PLAIN_TYPES = frozenset(
    {
        type(None),
        bool,
        int,
        float,
        complex,
        str,
        bytes,
        bytearray,
        list,
        tuple,
        dict,
        set,
        frozenset,
    }
)

type_name = _hints.type_name


def root_name(obj: Any) -> str:
    """The name a path starts with: the object's own name for functions,
    classes and modules, else ``obj``."""
    if (callable(obj) and not isinstance(obj, types.MethodType)) or isinstance(
        obj, types.ModuleType
    ):
        try:
            name = obj.__name__
        except Exception:
            name = None
        if isinstance(name, str) and name.isidentifier():
            return name
    return "obj"


class _Discard:
    """A write target that keeps nothing: trying a piece costs no memory."""

    __slots__ = ()

    def write(self, data: Any) -> int:
        return len(data)


def _out_of_band(buffer: Any) -> bool:
    return False  # large buffers (arrays) are never copied while probing


def _pickles(obj: Any) -> BaseException | None:
    """None if ``obj`` pickles alone, else the error."""
    from ._pickler import Pickler

    try:
        Pickler(_Discard(), buffer_callback=_out_of_band).dump(obj)  # type: ignore[arg-type]
    except RecursionError as exc:
        return exc
    except Exception as exc:
        return exc
    return None


# ------------------------------------------------------------- how it ships


@dataclasses.dataclass(frozen=True)
class Shipping:
    """How the pickler ships one object.

    Attributes
    ----------
    how:
        ``"reference"`` (by name: the receiver imports its own), ``"value"`` (a
        copy of its code or class), ``"wrapper"`` (taken apart and rebuilt),
        ``"data"`` (copied as pickle copies any data) or ``"fails"``.
    via:
        For ``"reference"``: where the receiver finds it, ``module:path``.
    why:
        For ``"value"``: why it is not importable; for ``"wrapper"``: what is
        shipped in its place; for ``"fails"``: the reason.
    """

    how: str
    via: str = ""
    why: str = ""


_DATA = Shipping("data")


def _registered_by_value(module: str) -> str | None:
    for name in _byvalue.list_registry_by_value():
        if module == name or module.startswith(name + "."):
            return name
    return None


def why_not_importable(obj: Any) -> str:
    """Why ``obj`` cannot be found by name in another process."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if module in MAIN_MODULES:
        return f"defined in {module}, and the receiving process has its own {module}"
    if isinstance(module, str):
        registered = _registered_by_value(module)
        if registered is not None:
            return f"module {registered!r} is registered with picklable.register_by_value()"
    if not isinstance(module, str) or not isinstance(qualname, str):
        return "it has no __module__ and __qualname__ to import it by"
    if "<lambda>" in qualname:
        return "a lambda has no importable name, and no importable path leads to it"
    if "<locals>" in qualname:
        outer = qualname.split(".<locals>")[0]
        return (
            f"defined inside {outer}() (<locals> in its qualname), "
            "and no importable path leads to it"
        )
    home = sys.modules.get(module)
    if home is None:
        return f"its module {module!r} is not imported here"
    try:
        found = _walk(home, tuple(qualname.split(".")))
    except Exception:
        return f"{module}.{qualname} does not exist (renamed or deleted after it was made?)"
    if found is not obj:
        return (
            f"{module}.{qualname} is another object (a wrapper that took its name?), "
            "and no importable path leads to this one"
        )
    return "the locator found no importable path to it"


def reference_path(obj: Any) -> str | None:
    """``module:path`` under which the receiver finds ``obj`` itself, or None."""
    if importable_by_own_name(obj):
        return f"{obj.__module__}:{obj.__qualname__}"
    found = locate(obj)
    if found is not None:
        return format_path(*found)
    return None


def _function(obj: types.FunctionType) -> Shipping:
    if _byvalue.ships_by_value(obj.__module__):
        return Shipping("value", why=why_not_importable(obj))
    via = reference_path(obj)
    if via is not None:
        return Shipping("reference", via)
    if _wrappers.function_reducer(obj) is not None:
        return Shipping(
            "wrapper", why="a singledispatch function: its base function and registry, rebuilt"
        )
    return Shipping("value", why=why_not_importable(obj))


def _class(cls: type) -> Shipping:
    module = getattr(cls, "__module__", None)
    if module == "builtins" and getattr(sys.modules["builtins"], cls.__name__, None) is cls:
        return Shipping("reference", f"builtins:{cls.__qualname__}")
    if cls in (types.FunctionType, types.CellType):
        return Shipping("reference", f"types:{cls.__name__}")
    if _byvalue.ships_by_value(module):
        return Shipping("value", why=why_not_importable(cls))
    via = reference_path(cls)
    if via is None:
        misnamed = _wrappers.locate_misnamed_type(cls)
        if misnamed is not None:
            via = format_path(*misnamed)
    if via is not None:
        return Shipping("reference", via)
    if not cls.__flags__ & (1 << 9):  # not a heap type: C code cannot be copied
        return Shipping("fails", why="a built-in type that no module exports")
    return Shipping("value", why=why_not_importable(cls))


def _module(module: types.ModuleType) -> Shipping:
    name = module.__name__
    if name in MAIN_MODULES:
        return Shipping("fails", why="the receiving process has its own __main__")
    if sys.modules.get(name) is module:
        return Shipping("reference", name)
    return Shipping(
        "value", why="a module built in memory, not importable: its namespace is copied"
    )


def _callable_instance(obj: Any) -> Shipping:
    try:
        own = obj.__dict__.get("__qualname__") is not None
    except AttributeError:
        own = False
    if own and importable_by_own_name(obj):
        return Shipping("reference", f"{obj.__module__}:{obj.__qualname__}")
    found = locate(obj)
    if found is not None:
        return Shipping("reference", format_path(*found))
    return _DATA


def shipping(obj: Any) -> Shipping:
    """How the pickler ships ``obj`` (see :class:`Shipping`); pickles nothing.

    Parameters
    ----------
    obj:
        Any object met in a payload.

    Returns
    -------
    Shipping
        ``how`` it goes, ``via`` which path, and ``why``.
    """
    t = type(obj)
    if t in PLAIN_TYPES:
        return _DATA
    handler = _reducers.handler_for(t)  # by type(obj): proxies lie about their class
    if handler is _wrappers.reduce_with_state:
        inner = shipping(obj.obj)
        if inner.how == "reference":
            return Shipping("reference", inner.via, "with its state (picklable.with_state)")
        return inner
    if handler in (_wrappers.reduce_wrapt_proxy, _wrappers.reduce_lru_cache):
        via = reference_path(obj)
        if via is not None:
            return Shipping("reference", via)
        kind = "an lru_cache wrapper" if handler is _wrappers.reduce_lru_cache else "a wrapt proxy"
        return Shipping("wrapper", why=f"{kind}: what it wraps and its settings, rebuilt")
    if t is types.FunctionType:
        return _function(obj)
    if isinstance(obj, type):
        return _class(obj)
    if t is types.ModuleType:
        return _module(obj)
    if t is types.MethodType:
        return Shipping("wrapper", why="a bound method: its object and its function")
    if t in (classmethod, staticmethod):
        return Shipping("wrapper", why=f"a {t.__name__}: its function")
    if isinstance(obj, property):
        return Shipping("wrapper", why="a property: fget, fset and fdel")
    if handler is _wrappers.reduce_cached_property:
        return Shipping("wrapper", why="a cached_property: its function (a new lock is made)")
    if t is functools.partial:
        return Shipping("wrapper", why="a partial: its function and arguments")
    if handler is _reducers.reduce_callable_instance:
        return _callable_instance(obj)
    if t is types.BuiltinFunctionType and isinstance(
        getattr(obj, "__self__", None), types.ModuleType
    ):
        return Shipping("reference", f"{obj.__self__.__name__}:{obj.__qualname__}")
    if handler is None and callable(obj):
        # Callables of C types (numpy ufuncs, array-function dispatchers) reduce to their name.
        try:
            reduced = obj.__reduce_ex__(5)
        except Exception:
            return _DATA
        if isinstance(reduced, str):
            module = getattr(obj, "__module__", None) or getattr(type(obj), "__module__", "?")
            return Shipping("reference", f"{module}:{reduced}")
    return _DATA


# ------------------------------------------------------------------ pieces


def _state_pieces(state: Any) -> Iterator[tuple[str, Any]]:
    if (
        isinstance(state, tuple)
        and len(state) == 2
        and (state[0] is None or isinstance(state[0], dict))
    ):
        dict_state, slot_state = state
    else:
        dict_state, slot_state = state, None
    for part in (dict_state, slot_state):
        if isinstance(part, dict):
            for key, value in part.items():
                yield (
                    (f".{key}" if isinstance(key, str) and key.isidentifier() else f"[{key!r}]"),
                    value,
                )
        elif part is not None:
            yield ".__getstate__()", part


def _function_pieces(obj: types.FunctionType) -> Iterator[tuple[str, Any]]:
    attributes = obj.__dict__
    # What a decorator wraps sits in a closure cell too: name it the readable way.
    wrapped = attributes.get("__wrapped__", _NOTHING)
    if wrapped is not _NOTHING:
        yield ".__wrapped__", wrapped
    for i, cell in enumerate(obj.__closure__ or ()):
        try:
            content = cell.cell_contents
        except ValueError:
            continue
        if content is not wrapped:
            yield f".__closure__[{i}].cell_contents", content
    home = obj.__globals__
    for name in _byvalue.code_info(obj.__code__)[2]:
        if name in home:
            yield f".__globals__[{name!r}]", home[name]
    for i, default in enumerate(obj.__defaults__ or ()):
        yield f".__defaults__[{i}]", default
    for key, value in (obj.__kwdefaults__ or {}).items():
        yield f".__kwdefaults__[{key!r}]", value
    for key, value in attributes.items():
        if key != "__wrapped__":
            yield f".{key}", value


_NOTHING = object()


def _instance_pieces(obj: Any) -> Iterator[tuple[str, Any]]:
    """What an ordinary instance's reduction ships, named after its attributes."""
    try:
        reduced = obj.__reduce_ex__(5)
    except Exception:
        return
    if isinstance(reduced, str) or not isinstance(reduced, tuple):
        return
    args = reduced[1] if len(reduced) > 1 else ()
    state = reduced[2] if len(reduced) > 2 else None
    if (
        reduced[0] is getattr(copyreg, "__newobj__", None)
        or getattr(reduced[0], "__name__", "") == "__newobj__"
    ):
        args = args[1:]  # the class itself
    fields = getattr(type(obj), "_fields", None)
    named = isinstance(obj, tuple) and isinstance(fields, tuple) and len(fields) == len(args or ())
    field_names: tuple[Any, ...] = fields if named and isinstance(fields, tuple) else ()
    try:
        attributes = dict(vars(obj))
    except TypeError:
        attributes = {}
    for i, arg in enumerate(args or ()):
        if named:
            yield f".{field_names[i]}", arg
            continue
        # Name an argument after the attribute that holds it, when one does.
        name = next((k for k, v in attributes.items() if v is arg and isinstance(k, str)), None)
        yield (f".{name}" if name is not None else f".__reduce__()[1][{i}]"), arg
    yield from _state_pieces(state)
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
    cls = type(obj)
    if _class(cls).how != "reference":  # a class shipped by value can hold the culprit
        yield ".__class__", cls


def children(obj: Any, how: Shipping | None = None) -> Iterator[tuple[str, Any]]:
    """(path suffix, piece) for each piece that shipping ``obj`` would ship.

    Parameters
    ----------
    obj:
        Any object.
    how:
        ``shipping(obj)`` when already known.

    Returns
    -------
    iterator of (str, object)
        Nothing for objects that go by reference: their pieces stay behind.
    """
    t = type(obj)
    pieces = _wrappers.wrapper_children(obj)
    if pieces is not None:  # wrapt proxies lie about their type: before any isinstance
        # with_state ships its object's state even when the object goes by reference.
        if t is _wrappers.WithState or (how or shipping(obj)).how != "reference":
            yield from pieces
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
    if t in (str, bytes, bytearray, int, float, complex, bool, type(None)):
        return
    how = how or shipping(obj)
    if how.how in ("reference", "fails"):
        return
    if t is types.FunctionType:
        yield from _function_pieces(obj)
        return
    if t is types.MethodType:
        yield ".__self__", obj.__self__
        yield ".__func__", obj.__func__
        return
    if isinstance(obj, type):
        for key, value in list(vars(obj).items()):
            if key not in ("__dict__", "__weakref__"):
                yield f".{key}", value
        return
    if t is types.ModuleType:
        for key, value in list(vars(obj).items()):
            if key not in ("__builtins__", "__loader__", "__spec__"):
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
    if t is functools.partial:
        yield ".func", obj.func
        for i, arg in enumerate(obj.args):
            yield f".args[{i}]", arg
        for key, value in obj.keywords.items():
            yield f".keywords[{key!r}]", value
        for key, value in vars(obj).items():
            yield f".{key}", value
        return
    if isinstance(obj, functools.cached_property):
        yield ".func", obj.func
        return
    if t is _wrappers._LRU_WRAPPER:
        yield ".__wrapped__", obj.__wrapped__
        return
    if isinstance(obj, BaseException):
        from ._exceptions import exception_children

        yield from exception_children(obj)
        return
    if isinstance(obj, collections.defaultdict):
        yield ".default_factory", obj.default_factory
        for key, value in obj.items():
            yield f"[{key!r}]", value
        return
    # Any other instance: what its reduction would ship.
    yield from _instance_pieces(obj)


# ----------------------------------------------------------------- culprit


def find_culprit(
    root: Any, error: BaseException | None = None, name: str | None = None
) -> tuple[str, Any, BaseException]:
    """Return (path, culprit, its error) for an object that fails to pickle.

    Parameters
    ----------
    root:
        The object whose pickling failed.
    error:
        Its error, when known (else it is pickled once more to get it).
    name:
        The name the path starts with (default: :func:`root_name`).
    """
    path = name or root_name(root)
    current = root
    current_error = error if error is not None else _pickles(root)
    seen: set[int] = set()
    while current_error is not None and id(current) not in seen:
        seen.add(id(current))
        if _hints.unshippable(current) is not None:
            break  # the lock inside an Event is not the news: the Event is
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


def message(what: str, path: str, reason: str, hint: str) -> str:
    """``Cannot pickle <what> - at <path>: <reason>. Fix: <hint>.``"""
    text = f"Cannot pickle {what} - at {path}: {reason}."
    if hint:
        text += f" Fix: {hint}."
    return text


def pickling_error(root: Any, error: BaseException, name: str | None = None) -> PicklingError:
    """Build the error that ``dumps`` raises: what, where, why, fix.

    Parameters
    ----------
    root:
        The object given to ``dumps``.
    error:
        What the pickler raised.
    name:
        The name the path starts with (default: :func:`root_name`).

    Returns
    -------
    PicklingError
        With ``.path``, ``.type_name``, ``.reason`` and ``.hint``.
    """
    try:
        path, culprit, cause = find_culprit(root, error, name)
    except Exception:  # the walk itself must never hide the original error
        path, culprit, cause = name or root_name(root), root, error
    known = _hints.unshippable(culprit)
    if known is not None:  # what it is tells more than how pickling it failed
        what = type_name(culprit)
        reason, hint = known
    elif isinstance(cause, PicklingError) and cause.reason:
        reason, hint = cause.reason, cause.hint
        what = cause.type_name or type_name(culprit)
    elif isinstance(cause, RecursionError):
        what = type_name(culprit)
        reason = f"nested deeper than the recursion limit ({sys.getrecursionlimit()})"
        hint = "flatten the structure, or raise sys.setrecursionlimit() on both sides"
    else:
        what = type_name(culprit)
        reason, hint = _hints.explain_failure(culprit, cause)
    return PicklingError(
        message(what, path, reason, hint), path=path, type_name=what, reason=reason, hint=hint
    )
