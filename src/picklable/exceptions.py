"""Public error types.

Both derive from what callers already catch: :class:`pickle.PicklingError` and
:class:`pickle.UnpicklingError`. Each carries structured fields so that programs
(``explain``, the audit, a pool) can render the same facts the message shows.
"""

from __future__ import annotations

import pickle
from typing import Any

__all__ = ["PicklingError", "UnpicklingError"]


class PicklingError(pickle.PicklingError):
    """An object could not be shipped.

    Attributes
    ----------
    path:
        Attribute path from the root object to the culprit, e.g.
        ``job.__closure__[0].cell_contents._lock``.
    type_name:
        Qualified name of the culprit's type, e.g. ``_thread.lock``.
    reason:
        Why it cannot ship.
    hint:
        What to do instead.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str = "",
        type_name: str = "",
        reason: str = "",
        hint: str = "",
    ) -> None:
        super().__init__(message)
        self.path = path
        self.type_name = type_name
        self.reason = reason
        self.hint = hint

    def __reduce__(self) -> tuple[Any, ...]:
        # Errors travel between processes too: keep the structured fields.
        return (
            _rebuild_error,
            (type(self), self.args[0], self.path, self.type_name, self.reason, self.hint),
        )


class UnpicklingError(pickle.UnpicklingError):
    """A payload could not be loaded in this interpreter.

    Attributes
    ----------
    reason:
        What could not be imported or built here.
    hint:
        How to fix it (install a module, match versions, ...).
    """

    def __init__(self, message: str, *, reason: str = "", hint: str = "") -> None:
        super().__init__(message)
        self.reason = reason
        self.hint = hint
        self.path = ""
        self.type_name = ""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_error, (type(self), self.args[0], "", "", self.reason, self.hint))


def _rebuild_error(cls, message, path, type_name, reason, hint):  # type: ignore[no-untyped-def]
    if issubclass(cls, PicklingError):
        return cls(message, path=path, type_name=type_name, reason=reason, hint=hint)
    return cls(message, reason=reason, hint=hint)
