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


def wrapt_compiled() -> bool:
    """Whether this interpreter's wrapt proxies are its compiled ones (static C
    types), not its pure-Python fallback (classes made by a class statement)."""
    import wrapt

    return not wrapt.FunctionWrapper.__flags__ & (1 << 9)


def wrapt_type_label(name: str) -> str:
    """How the audit and ``explain`` name wrapt's type ``name`` here: its compiled
    types say module builtins (the bare name), its pure-Python ones name theirs."""
    import wrapt

    from picklable._compat import class_module

    return name if wrapt_compiled() else f"{class_module(getattr(wrapt, name))}.{name}"


def wrapt_rules_here() -> tuple[dict[str, Any], bytes]:
    """The wrapper rules checked with this interpreter's wrapt: what holds after
    a round trip here, and a payload of local wrappers made here."""
    import functools

    from picklable_testpkg import wrapped as W

    def roundtrip(obj: Any) -> Any:
        return picklable.loads(picklable.dumps(obj))

    proxy = W.make_traced_local("P")
    copy = roundtrip(proxy)
    service = W.Service()
    found = {
        "importable": all(
            roundtrip(obj) is obj
            for obj in (W.double, W.tagged, W.traced_square, W.Traced, type(W.double))
        ),
        "local": roundtrip(W.make_wrapt_local(5))(1),
        "proxy": (type(copy) is W.Traced, copy._self_label, copy(2)),
        "proxy state on the proxy": hasattr(copy.__wrapped__, "_self_label"),
        "bound": roundtrip(service.scale)(3),
        "classmethod": roundtrip(W.Service.kind)(),
        "partial": roundtrip(functools.partial(W.make_wrapt_local(1), 1))(),
        "explained": str(picklable.explain(service.scale)).splitlines()[1].split()[1],
    }
    made = {
        "wrapt": W.make_wrapt_local(7),
        "proxy": W.make_traced_local("Q"),
        "bound": service.scale,
    }
    return found, picklable.dumps(made)
