"""Receiver side of tests/xproc/test_receiver_untouched.py: what a module's
objects hold, before and after loading payloads into this interpreter."""

from __future__ import annotations

import importlib
import types
from typing import Any

import picklable
from picklable._compat import LAZY_IMPORT_TYPE, proxy_own_dict, wrapt_proxy_roots

_SCALARS = (int, float, complex, str, bytes, bool, type(None))
# Caches the interpreter itself keeps on classes: not state a payload sets.
_CLASS_CACHES = frozenset({"__slotnames__", "_abc_impl"})


def fingerprint(obj: Any, depth: int = 0, seen: set[int] | None = None) -> Any:
    """What ``obj`` holds, as ids and plain values: equal before and after
    exactly when nothing reachable from it (a few levels deep) was replaced,
    added, removed or changed in place."""
    t = type(obj)
    if t in _SCALARS:
        return repr(obj)
    seen = set() if seen is None else seen
    head: tuple[Any, ...] = (t.__qualname__, id(obj))
    if id(obj) in seen or depth > 5 or t is types.ModuleType or t is LAZY_IMPORT_TYPE:
        return head
    seen.add(id(obj))

    def inner(value: Any) -> Any:
        return fingerprint(value, depth + 1, seen)

    parts: list[Any] = []
    if t in (list, tuple):
        parts = [inner(v) for v in obj]
    elif t in (set, frozenset):
        parts = sorted(repr(inner(v)) for v in obj)
    elif isinstance(obj, (dict, types.MappingProxyType)):
        parts = [(inner(k), inner(v)) for k, v in obj.items()]
        if hasattr(obj, "default_factory"):
            parts.append(inner(obj.default_factory))
    elif t in (bytearray, memoryview):
        parts = [bytes(obj)]
    elif t is types.FunctionType:
        closure = []
        for cell in obj.__closure__ or ():
            try:
                closure.append(inner(cell.cell_contents))
            except ValueError:
                closure.append("<empty>")
        parts = [
            id(obj.__code__),
            inner(obj.__defaults__),
            inner(obj.__kwdefaults__),
            closure,
            inner(obj.__dict__),
            obj.__name__,
            obj.__qualname__,
        ]
    elif t is types.CellType:
        try:
            parts = [inner(obj.cell_contents)]
        except ValueError:
            parts = ["<empty>"]
    elif isinstance(obj, type):
        parts = [
            (name, inner(value))
            for name, value in vars(obj).items()
            if name not in _CLASS_CACHES and name not in ("__dict__", "__weakref__")
        ]
    elif wrapt_proxy_roots() and isinstance(obj, wrapt_proxy_roots()):
        parts = [inner(obj.__wrapped__), inner(proxy_own_dict(obj))]
    else:
        try:
            own = object.__getattribute__(obj, "__dict__")
        except AttributeError:
            own = None
        if type(own) is dict:
            parts.append(inner(own))
        if isinstance(obj, list):  # a list subclass's items
            parts.append([inner(v) for v in obj])
        for klass in t.__mro__:
            for name in vars(klass).get("__slots__", ()):
                try:
                    parts.append((name, inner(object.__getattribute__(obj, name))))
                except AttributeError:
                    pass
        if isinstance(obj, BaseException):
            parts += [inner(obj.args), id(obj.__traceback__)]
        if hasattr(obj, "getvalue"):
            parts += [obj.getvalue(), obj.tell()]
        if isinstance(obj, functools_partial()):
            parts += [inner(obj.func), inner(obj.args), inner(obj.keywords)]
        for attribute in ("tb_frame", "tb_lineno", "data"):
            try:
                value = object.__getattribute__(obj, attribute)
            except AttributeError:
                continue
            parts.append((attribute, id(value) if attribute == "tb_frame" else inner(value)))
    return (*head, parts)


def functools_partial() -> type:
    import functools

    return functools.partial


def snapshot(module_names: list[str]) -> dict[str, Any]:
    """``module.name`` -> fingerprint, for every object of each module."""
    found = {}
    for module_name in module_names:
        module = importlib.import_module(module_name)
        for name, value in dict.items(vars(module)):
            if not name.startswith("__"):
                found[f"{module_name}.{name}"] = fingerprint(value)
    return found


def load_untouched(
    module_names: list[str], payloads: list[tuple[str, bytes, str | None]]
) -> dict[str, Any]:
    """Load every payload after importing the modules; report what each loaded
    (``probe``: that attribute of it) and which module objects changed."""
    before = snapshot(module_names)
    outcomes: dict[str, Any] = {}
    for label, payload, probe in payloads:
        try:
            loaded = picklable.loads(payload)
        except picklable.UnpicklingError as exc:
            outcomes[label] = ("refused", str(exc))
            continue
        value = None
        if probe is not None:
            value = fingerprint_value(getattr(loaded, probe))
        outcomes[label] = ("loaded", value)
    after = snapshot(module_names)
    changed = sorted(name for name in before if before[name] != after.get(name))
    return {"changed": changed, "outcomes": outcomes}


def fingerprint_value(value: Any) -> Any:
    """A plain rendering of a probed value (it travels back to the test)."""
    if isinstance(value, (list, tuple)):
        return [fingerprint_value(v) for v in value]
    if isinstance(value, dict):
        return {k: fingerprint_value(v) for k, v in value.items()}
    return value if isinstance(value, _SCALARS) else repr(value)
