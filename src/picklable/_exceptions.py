"""Exceptions that ship faithfully (type, args, attributes, chain, traceback)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def handler_for(t: type) -> Callable[[Any, Any], Any] | None:
    """The reducer for instances of ``t`` if ``t`` is an exception class."""
    return None
