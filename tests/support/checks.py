"""Checks that run inside the child interpreter (shipped by reference)."""

from __future__ import annotations

import importlib
import inspect
import pickle
from typing import Any

import picklable


def walk(module: str, qualname: str) -> Any:
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def is_importable_object(payload: bytes, module: str, path: str) -> bool:
    """Loading yields the very object found at ``module:path`` here."""
    return picklable.loads(payload) is walk(module, path)


def call(payload: bytes, *args: Any, **kwargs: Any) -> Any:
    """Load a callable and call it."""
    return picklable.loads(payload)(*args, **kwargs)


def call_with_stdlib_pickle(payload: bytes, *args: Any) -> Any:
    """Load with plain pickle.loads (picklable only importable) and call."""
    return pickle.loads(payload)(*args)


def metadata(payload: bytes) -> dict[str, Any]:
    """What a function or class looks like after loading."""
    obj = picklable.loads(payload)
    return describe(obj)


def describe(obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("__name__", "__qualname__", "__module__", "__doc__"):
        out[name] = getattr(obj, name, None)
    if callable(obj) and not isinstance(obj, type):
        try:
            out["signature"] = str(inspect.signature(obj))
        except (TypeError, ValueError):
            out["signature"] = None
    for name in ("__defaults__", "__kwdefaults__", "__annotations__", "__dict__"):
        value = getattr(obj, name, None)
        if name == "__dict__" and value is not None and not isinstance(value, dict):
            value = dict(value)
        if name == "__dict__" and isinstance(value, dict):
            value = sorted(k for k in value if not k.startswith("__"))
        out[name] = value
    return out


def load_and_apply(payload: bytes, fn_payload: bytes) -> Any:
    """Load an object and a function, return fn(obj) (both shipped)."""
    return picklable.loads(fn_payload)(picklable.loads(payload))


def echo(payload: bytes) -> bytes:
    """Load and dump again: the object's round trip back to the parent."""
    return picklable.dumps(picklable.loads(payload))
