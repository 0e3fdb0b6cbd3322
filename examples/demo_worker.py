"""Runs in the spawn-pool worker: load a payload with one serializer and report."""

from __future__ import annotations

import importlib
import pickle
from typing import Any


def _loaders() -> dict[str, Any]:
    out: dict[str, Any] = {"pickle": pickle.loads}
    for name in ("cloudpickle", "dill", "picklable"):
        try:
            out[name] = importlib.import_module(name).loads
        except ImportError:
            pass
    return out


def run(
    serializer: str, payload: bytes, args: tuple[Any, ...], home: str | None
) -> tuple[str, Any, str]:
    """Load and call; say whether the object is the worker's own importable one."""
    try:
        obj = _loaders()[serializer](payload)
    except Exception as exc:
        return ("load fails", None, f"{type(exc).__name__}: {exc}".splitlines()[0][:70])
    try:
        result = obj(*args)
    except Exception as exc:
        return ("call fails", None, f"{type(exc).__name__}: {exc}".splitlines()[0][:70])
    same = False
    if home is not None:
        module, _, path = home.partition(":")
        target: Any = importlib.import_module(module)
        for part in path.split("."):
            target = getattr(target, part)
        same = target is obj
    described = getattr(obj, "__qualname__", type(obj).__qualname__)
    return ("same" if same else "copy", result, described)
