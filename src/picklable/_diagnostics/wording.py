"""The words every diagnostic shares, each written once.

Low in the layers (with the payload format): the pickler reads pickle's own
"cannot pickle 'X' object" with :data:`CANNOT_PICKLE`, the loading half
(:mod:`picklable._diagnostics.loading`) names types with :func:`type_name`,
and every error that names a path is worded by :func:`message`.
"""

from __future__ import annotations

import re
from typing import Any

from .._compat import class_module

__all__ = ["CANNOT_PICKLE", "first_line", "message", "type_name"]

# What CPython says for an object of a type without pickle support (its
# C-level ``object.__reduce_ex__``), e.g. "cannot pickle '_thread.lock' object".
CANNOT_PICKLE = re.compile(r"cannot pickle '([^']+)' object")


def type_name(obj: Any) -> str:
    """``module.Qualname`` of ``type(obj)``; builtins without the module."""
    t = type(obj)
    module = class_module(t) or "?"
    qualname = getattr(t, "__qualname__", t.__name__)
    return qualname if module == "builtins" else f"{module}.{qualname}"


def first_line(cause: BaseException) -> str:
    """The first line of what ``cause`` says ("" when it says nothing)."""
    text = str(cause).strip()
    return text.splitlines()[0] if text else ""


def message(what: str, path: str, reason: str, hint: str) -> str:
    """``Cannot pickle <what> - at <path>: <reason>. Fix: <hint>.``"""
    text = f"Cannot pickle {what} - at {path}: {reason}."
    if hint:
        text += f" Fix: {hint}."
    return text
