"""Checks run in a fresh interpreter for the never-wrong tests (shipped by reference)."""

from __future__ import annotations

import pickle
from typing import Any

import picklable


def apply_loaded(payload: bytes, stdlib: bool, *args: Any) -> Any:
    """Load a callable (with stdlib pickle or picklable) and call it."""
    fn = pickle.loads(payload) if stdlib else picklable.loads(payload)
    return fn(*args)


def use_loaded(payload: bytes, stdlib: bool, x: Any) -> Any:
    """Load ``(use, model)`` and compute ``use(model, x)``."""
    use, model = pickle.loads(payload) if stdlib else picklable.loads(payload)
    return use(model, x)


def loaded_is(payload: bytes, module: str, name: str) -> bool:
    """Loading yields the object at ``module.name`` here (not a copy, not its target)."""
    import importlib

    return picklable.loads(payload) is getattr(importlib.import_module(module), name)


def type_and_call(payload: bytes, *args: Any) -> tuple[str, Any]:
    """The real type of what loads, and what calling it gives."""
    obj = picklable.loads(payload)
    return f"{type(obj).__module__}.{type(obj).__qualname__}", obj(*args)


def call_method(payload: bytes, name: str) -> Any:
    """Load an object and call its method ``name``."""
    return getattr(picklable.loads(payload), name)()


def settings_value(payload: bytes, key: str) -> Any:
    """Load a Settings object and read one of its values."""
    return getattr(picklable.loads(payload), key)


def loaded_state(payload: bytes, names: list[str]) -> dict[str, Any]:
    """Load an object and read some of its attributes."""
    obj = picklable.loads(payload)
    return {name: getattr(obj, name) for name in names}


def digest(obj: Any, depth: int = 0) -> Any:
    """A structural description of ``obj`` that two equal copies share (no ids)."""
    import types as _types

    t = type(obj)
    if t in (int, str, bytes, bool, type(None), complex):
        return (t.__name__, obj)
    if t is float:
        return ("float", repr(obj))
    if depth > 5:
        return ("deep", f"{t.__module__}.{t.__qualname__}")
    if t in (list, tuple):
        return (t.__name__, [digest(x, depth + 1) for x in obj])
    if t in (set, frozenset):
        return (t.__name__, sorted(repr(digest(x, depth + 1)) for x in obj))
    if t is dict:
        return ("dict", [(digest(k, depth + 1), digest(v, depth + 1)) for k, v in obj.items()])
    if isinstance(obj, type):
        names = sorted(k for k in vars(obj) if not (k.startswith("__") and k.endswith("__")))
        return ("class", obj.__module__, obj.__qualname__, names)
    if t is _types.FunctionType:
        return (
            "function",
            obj.__module__,
            obj.__qualname__,
            obj.__name__,
            obj.__doc__,
            digest(obj.__defaults__, depth + 1),
            sorted(obj.__dict__),
        )
    if isinstance(obj, BaseException):
        return ("exception", f"{t.__module__}.{t.__qualname__}", digest(obj.args, depth + 1))
    description: list[Any] = [f"{t.__module__}.{t.__qualname__}"]
    try:
        description.append(digest(dict(vars(obj)), depth + 1))
    except TypeError:
        try:
            description.append(repr(obj) if " at 0x" not in repr(obj) else "<opaque>")
        except Exception:
            description.append("<unrepresentable>")
    return ("instance", description)


def both_loaded(stdlib_payload: bytes | None, ours: bytes) -> dict[str, Any]:
    """Load stdlib pickle's payload and picklable's; describe and compare them."""
    out: dict[str, Any] = {}
    theirs = None
    if stdlib_payload is not None:
        try:
            theirs = pickle.loads(stdlib_payload)
            out["pickle"] = digest(theirs)
        except Exception as exc:
            out["pickle_error"] = f"{type(exc).__name__}: {exc}"
    mine = picklable.loads(ours)
    out["picklable"] = digest(mine)
    out["same_object"] = stdlib_payload is not None and "pickle" in out and theirs is mine
    return out
