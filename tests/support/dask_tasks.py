"""Task functions for the Dask and Ray tests: importable, so they travel by reference."""

from __future__ import annotations

import os
import threading
from typing import Any

from picklable_testpkg import api
from picklable_testpkg.errors import FrozenError, KwOnlyError


def is_frame_mean(fn: Any) -> bool:
    """Whether ``fn`` is this worker's own ``Frame.mean`` (a factory-made method)."""
    return fn is api.Frame.mean


def frame_mean() -> Any:
    """Return the factory-made method itself (the result must come back by identity)."""
    return api.Frame.mean


def fail_kw_only(code: int) -> None:
    """Raise an exception whose ``__init__`` has a keyword-only argument, with a cause."""
    try:
        int("not a number")
    except ValueError as exc:
        raise KwOnlyError(f"task {code} failed", code=code) from exc


def fail_frozen() -> None:
    """Raise an exception whose ``__setattr__`` refuses (an attrs-style frozen exception)."""
    raise FrozenError("frozen on the worker", field="x")


class HoldsLock(Exception):
    """An exception with an attribute nothing can pickle."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.lock = threading.Lock()


def fail_with_lock() -> None:
    raise HoldsLock("cannot travel")


def pid() -> int:
    return os.getpid()


def call_with(fn: Any, x: Any) -> Any:
    """Call ``fn(x)``: a plain task function that takes a function (an envelope) as argument."""
    return fn(x)
