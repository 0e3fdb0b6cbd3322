"""Checks that run inside the child interpreter (shipped by reference)."""

from __future__ import annotations

import importlib
import inspect
import pickle
import types
from typing import Any

import picklable


def walk(module: str, qualname: str) -> Any:
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = obj[int(part)] if part.isdigit() else getattr(obj, part)
    return obj


def is_importable_object(payload: bytes, module: str, path: str) -> bool:
    """Loading yields the very object found at ``module:path`` here."""
    return picklable.loads(payload) is walk(module, path)


def attribute_is_importable_object(payload: bytes, attribute: str, module: str, path: str) -> bool:
    """The loaded object's ``attribute`` is the very object at ``module:path`` here."""
    return getattr(picklable.loads(payload), attribute) is walk(module, path)


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


def call_method(payload: bytes, name: str, *args: Any) -> Any:
    """Load an object and call one of its methods."""
    return getattr(picklable.loads(payload), name)(*args)


def run_pool_with_payloads(payloads: list[bytes], processes: int = 2) -> list[Any]:
    """Run picklable payloads of (fn, args) as tasks of a stdlib spawn Pool."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        return [picklable.loads(r) for r in pool.map(run_payload, payloads)]


def run_payload(payload: bytes) -> bytes:
    """Pool task: load (fn, args), call, ship the result back with picklable."""
    fn, args = picklable.loads(payload)
    return picklable.dumps(fn(*args))


def class_facts(payload: bytes) -> dict[str, Any]:
    """Metadata of a class and what its instances do."""
    cls = picklable.loads(payload)
    return {
        "name": cls.__name__,
        "qualname": cls.__qualname__,
        "module": cls.__module__,
        "doc": cls.__doc__,
        "slots": cls.__dict__.get("__slots__"),
        "mro": [c.__name__ for c in cls.__mro__],
    }


def attribute(payload: bytes, name: str) -> Any:
    """An attribute of the loaded object."""
    return getattr(picklable.loads(payload), name)


def counter_pair(payload: bytes) -> tuple[int, int]:
    """Closures sharing state: increment twice through one, read through the other."""
    increment, read = picklable.loads(payload)
    increment()
    increment()
    return read(), increment()


def cell_numbers(items: Any) -> list[list[int]]:
    """Each item's closure cells (a bare cell: itself), numbered by first
    appearance: equal numbers are one cell object."""
    numbers: dict[int, int] = {}
    return [
        [
            numbers.setdefault(id(cell), len(numbers))
            for cell in getattr(item, "__closure__", (item,))
        ]
        for item in items
    ]


class SameClosure:
    """Reduces to a new function over ``func``'s very closure (its cells met
    again only when this object is reduced)."""

    def __init__(self, func: Any) -> None:
        self.func = func

    def __reduce__(self) -> Any:
        f = self.func
        return (
            _same,
            (types.FunctionType(f.__code__, f.__globals__, "again", None, f.__closure__),),
        )


def _same(value: Any) -> Any:
    return value


def loaded_cell_numbers(payload: bytes) -> list[list[int]]:
    """:func:`cell_numbers` of the loaded list."""
    return cell_numbers(picklable.loads(payload))


def exception_facts(payload: bytes) -> dict[str, Any]:
    """What a loaded exception says: its type, message, fields, notes, cause and,
    for a group, the same of each member."""
    error = picklable.loads(payload)

    def facts(exc: BaseException) -> dict[str, Any]:
        return {
            "type": type(exc).__qualname__,
            "str": str(exc),
            "args": repr(exc.args),  # exceptions compare by identity
            "fields": {k: v for k, v in vars(exc).items() if not k.startswith("__")},
            "notes": getattr(exc, "__notes__", None),
            "cause": None if exc.__cause__ is None else facts(exc.__cause__),
            "members": [facts(e) for e in getattr(exc, "exceptions", ())],
        }

    return facts(error)
