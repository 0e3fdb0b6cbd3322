"""What "the same object" and "an exact copy" mean, computed on both sides.

The auditing process takes the fingerprint of the original; the child that
loads the payload compares the loaded object with it. Both sides run this
module, so the rules are the same everywhere.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

from .._compat import class_module
from .wire import ADDRESS

#: Fields compared for "exact copy", in report order.
FIELDS = ("type", "__name__", "__qualname__", "__module__", "signature")

Fingerprint = tuple[str | None, ...]

_MAX_TEXT = 300


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        try:
            value = repr(value)
        except Exception:
            return f"<unrepresentable {type(value).__qualname__}>"
    return ADDRESS.sub("", value)[:_MAX_TEXT]


def type_name(obj: Any) -> str:
    """``module.qualname`` of ``type(obj)`` (never ``obj.__class__``: proxies lie)."""
    t = type(obj)
    module = class_module(t)
    name = getattr(t, "__qualname__", t.__name__)
    # Not a str: a descriptor (wrapt's pure-Python proxies, which report the
    # wrapped object's module); the name alone then, as type's own repr does.
    return name if module in (None, "builtins") or type(module) is not str else f"{module}.{name}"


def _attribute(obj: Any, name: str) -> str | None:
    try:
        return _text(getattr(obj, name, None))
    except Exception:  # a property or proxy that raises: treat as absent
        return None


def signature(obj: Any) -> str | None:
    """``str(inspect.signature(obj))`` without addresses, or None if it has none."""
    if not callable(obj):
        return None
    try:
        return _text(str(inspect.signature(obj)))
    except Exception:  # builtins without text signatures, broken __signature__ ...
        return None


def fingerprint(obj: Any) -> Fingerprint:
    """The values of :data:`FIELDS` for ``obj``, as text."""
    return (
        type_name(obj),
        _attribute(obj, "__name__"),
        _attribute(obj, "__qualname__"),
        _attribute(obj, "__module__"),
        signature(obj),
    )


def differences(expected: Fingerprint, got: Fingerprint) -> list[str]:
    """``field: expected -> got`` for each field that differs."""
    return [
        f"{field}: {_show(a)} -> {_show(b)}" for field, a, b in zip(FIELDS, expected, got) if a != b
    ]


def _show(value: str | None) -> str:
    return "(none)" if value is None else repr(value) if value == "" else value


def same_object(loaded: Any, home: Any, stable: bool) -> bool:
    """Whether ``loaded`` is the object found at its home path.

    ``stable`` says the attribute lookup returns the very same object each
    time. When it does not (``cls.some_classmethod`` builds a new bound method
    on every access) identity is impossible by construction, so two bound
    methods with the same ``__self__`` and ``__func__`` count as the same.
    """
    if loaded is home:
        return True
    if stable or type(loaded) is not type(home):
        return False
    if isinstance(loaded, types.MethodType):
        return loaded.__self__ is home.__self__ and loaded.__func__ is home.__func__
    if isinstance(loaded, types.BuiltinMethodType):
        return loaded.__self__ is home.__self__ and loaded.__name__ == home.__name__
    try:
        return bool((loaded == home) is True)
    except Exception:
        return False
