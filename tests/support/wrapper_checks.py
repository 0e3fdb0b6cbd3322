"""Checks for wrapper payloads, run inside a child interpreter (shipped by reference)."""

from __future__ import annotations

import inspect
import sys
from typing import Any

import picklable


def loaded_is(payload: bytes, module: str, path: str) -> bool:
    """Loading yields the very object at ``module:path`` (walked through ``__dict__``)."""
    import importlib

    obj: Any = importlib.import_module(module)
    for part in path.split("."):
        obj = vars(obj)[part] if isinstance(obj, type) else getattr(obj, part)
    return picklable.loads(payload) is obj


def call_each(payload: bytes, calls: list[tuple[str, tuple[Any, ...]]]) -> list[Any]:
    """Load a dict of callables and call ``name(*args)`` for each (name, args)."""
    objs = picklable.loads(payload)
    return [objs[name](*args) for name, args in calls]


def describe_callable(payload: bytes) -> dict[str, Any]:
    """Type name, metadata and signature of a loaded callable."""
    obj = picklable.loads(payload)
    try:
        signature = str(inspect.signature(obj))
    except (TypeError, ValueError):
        signature = None
    return {
        "type": type(obj).__name__,
        "__name__": getattr(obj, "__name__", None),
        "__qualname__": getattr(obj, "__qualname__", None),
        "__doc__": getattr(obj, "__doc__", None),
        "signature": signature,
        "has_wrapped": hasattr(obj, "__wrapped__"),
    }


def wrapt_version() -> str:
    import wrapt

    return str(wrapt.__version__)


def state_after_load(payload: bytes, names: list[str]) -> dict[str, Any]:
    """Attributes of the loaded object (through proxies, as a user sees them)."""
    obj = picklable.loads(payload)
    return {name: getattr(obj, name, "<missing>") for name in names}


def modules_loaded(prefix: str) -> list[str]:
    return sorted(name for name in sys.modules if name.startswith(prefix))


def call_with_pickle(payload: bytes, args: tuple[Any, ...]) -> Any:
    """Load with stdlib pickle (for other libraries' payloads) and call."""
    import pickle

    return pickle.loads(payload)(*args)


def describe_item(payload: bytes, name: str) -> dict[str, Any]:
    """describe_callable for one item of a loaded dict."""
    return describe_callable(picklable.dumps(picklable.loads(payload)[name]))


def exercise_shop(payload: bytes) -> dict[str, Any]:
    """Call every wrapped method of the script's ``Shop`` class after loading."""
    Shop = picklable.loads(payload)["Shop"]
    shop = Shop(2)
    return {
        "price": shop.price(3),
        "make": Shop.make(4),
        "counted_rate": Shop.counted_rate(2),
        "free": Shop.free(7),
        "tip": shop.tip(3),
        "logged_rate": Shop.logged_rate(1),
        "both": shop.both(9),
        "total": shop.total,
        "name": (shop.price.__name__, shop.price.__qualname__),
    }
