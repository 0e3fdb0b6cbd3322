"""Checks for issue 8 (version guard, signing, allow-list) run in a child interpreter."""

from __future__ import annotations

import marshal
from typing import Any

import picklable
from picklable import _code


class _MarshalSpy:
    """Stands in for the marshal module inside picklable._reconstruct."""

    def __init__(self) -> None:
        self.calls = 0

    def loads(self, data: bytes, /) -> Any:
        self.calls += 1
        return marshal.loads(data)


def load_refused(payload: bytes, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Load a payload that should be refused; say how it failed and what ran before.

    Returns the error's type, message, ``reason``, whether ``marshal.loads`` ran,
    and how many code objects this interpreter built from payloads.
    """
    spy = _MarshalSpy()
    codes_before = len(_code.CODES)
    _code.marshal = spy  # type: ignore[assignment]
    try:
        picklable.loads(payload, **(options or {}))
    except Exception as exc:
        return {
            "type": f"{type(exc).__module__}.{type(exc).__qualname__}",
            "message": str(exc),
            "reason": getattr(exc, "reason", ""),
            "marshal_calls": spy.calls,
            "codes_built": len(_code.CODES) - codes_before,
        }
    finally:
        _code.marshal = marshal  # type: ignore[assignment]
    return {
        "type": None,
        "marshal_calls": spy.calls,
        "codes_built": len(_code.CODES) - codes_before,
    }


def load_class_report(payload: bytes) -> dict[str, Any]:
    """Load a class shipped by value and describe it."""
    cls = picklable.loads(payload)
    return {
        "name": cls.__qualname__,
        "module": cls.__module__,
        "bases": [b.__qualname__ for b in cls.__bases__],
        "own": sorted(k for k in vars(cls) if not k.startswith("__")),
        "instance": repr(cls(a=1)) if issubclass(cls, dict) else None,
    }


def load_and_call(
    payload: bytes, args: tuple[Any, ...], options: dict[str, Any] | None = None
) -> Any:
    """Load with options (key=, allowed=) and call the result with ``args``."""
    return picklable.loads(payload, **(options or {}))(*args)


def load_value(payload: bytes, options: dict[str, Any] | None = None) -> Any:
    """Load with options and return the object (shipped back with picklable)."""
    return picklable.loads(payload, **(options or {}))
