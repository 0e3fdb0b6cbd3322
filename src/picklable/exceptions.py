"""Public error types.

Both derive from what callers already catch: :class:`pickle.PicklingError` and
:class:`pickle.UnpicklingError`. Each carries structured fields so that programs
(``explain``, the audit, a pool) can render the same facts the message shows.

**The type users catch is kept.** When pickling failed because some code raised
(an object's ``__reduce__`` raised ``ValueError``, a ``multiprocessing.Lock``
raised ``RuntimeError``, the C pickler raised ``TypeError``), ``dumps`` raises
an error that is both a :class:`PicklingError` and that exception's type
(:func:`combined`): ``except TypeError`` and ``except pickle.PicklingError``
both catch it, as each would catch what ``pickle.dumps`` or cloudpickle raise.
Loading does the same with ``ModuleNotFoundError`` and ``AttributeError``. The
combined classes are made once per pair of types and named after both
(``PicklingError[TypeError]``); they travel between processes as that pair.
"""

from __future__ import annotations

import copyreg
import pickle
import threading
from typing import Any, TypeVar

__all__ = ["PicklingError", "UnpicklingError", "combined", "relocated"]


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
    # Named by payloads and by stdlib pickle (errors a pool sends back): frozen.
    if issubclass(cls, PicklingError):
        return cls(message, path=path, type_name=type_name, reason=reason, hint=hint)
    return cls(message, reason=reason, hint=hint)


# ------------------------------------------------------------ combined types


class _Combined(type):
    """The metaclass of combined classes: each pickles as the pair it combines,
    so a receiver gets its own (``copyreg``'s table holds the reducer, which
    stdlib pickle consults before it would save a class by name)."""


def _reduce_combined_class(cls: type) -> tuple[Any, ...]:
    return (combined, cls.__bases__[:2])


copyreg.pickle(_Combined, _reduce_combined_class)

# (our base, the cause's type) -> the class that is both; None: they cannot be
# combined (a final type, or two C layouts). Strong references: exception
# types are few and live as long as their modules.
_combined: dict[tuple[type, type], type | None] = {}
_combined_lock = threading.Lock()


E = TypeVar("E", "PicklingError", "UnpicklingError")


def combined(base: type[E], cause: type[BaseException]) -> type[E] | None:
    """The class that is both ``base`` and ``cause`` (made once per pair), or None.

    ``base`` is :class:`PicklingError` or :class:`UnpicklingError`; ``cause`` is
    the type of the exception that made pickling or loading fail. None when
    ``cause`` is already a ``base``, or cannot be subclassed together with it.

    Instances are made with :func:`make_combined` (the cause's own ``__init__``
    is not called: it may take other arguments), print the message they were
    given, and pickle as the pair of types plus their fields.

    .. versionadded:: 0.2.0
    """
    if issubclass(cause, base):
        return None
    key = (base, cause)
    try:
        return _combined[key]
    except KeyError:
        pass
    with _combined_lock:
        if key in _combined:
            return _combined[key]
        try:
            made: Any = _Combined(
                f"{base.__name__}[{cause.__name__}]",
                (base, cause),
                {
                    "__module__": base.__module__,
                    "__doc__": f"A {base.__name__} that is also a {cause.__qualname__}.",
                    # The cause's __str__ or __init__ may read fields never set here.
                    "__str__": BaseException.__str__,
                    "__init__": BaseException.__init__,
                    "__reduce__": _reduce_combined,
                },
            )
        except TypeError:  # final type, or instance lay-out conflict
            made = None
        _combined[key] = made
        found: type[E] | None = made
        return found


def make_combined(
    base: type[E],
    cause: type[BaseException],
    message: str,
    *,
    path: str = "",
    type_name: str = "",
    reason: str = "",
    hint: str = "",
) -> E | None:
    """An instance of :func:`combined` ``(base, cause)``, or None when there is no such class."""
    cls = combined(base, cause)
    if cls is None:
        return None
    error = cls(message)
    error.path = path
    error.type_name = type_name
    error.reason = reason
    error.hint = hint
    return error


def relocated(
    error: PicklingError, message: str, *, path: str, type_name: str, reason: str, hint: str
) -> PicklingError:
    """A new error like ``error`` (its combined pair of types, or a plain
    :class:`PicklingError`) that says ``message``: for code that names the
    culprit in its own terms (a pool's "item 3 of map(work)")."""
    cls = type(error)
    if isinstance(cls, _Combined):
        base, cause = cls.__bases__[:2]
        made = make_combined(
            base, cause, message, path=path, type_name=type_name, reason=reason, hint=hint
        )
        if made is not None:
            found: PicklingError = made
            return found
    return PicklingError(message, path=path, type_name=type_name, reason=reason, hint=hint)


def _reduce_combined(self: Any) -> tuple[Any, ...]:
    base, cause = type(self).__bases__[:2]
    fields = (self.path, self.type_name, self.reason, self.hint)
    return (_rebuild_combined, (base, cause, self.args[0] if self.args else "", *fields))


def _rebuild_combined(
    base: Any, cause: Any, message: str, path: str, type_name: str, reason: str, hint: str
) -> BaseException:
    # Named by payloads and by stdlib pickle (errors a pool sends back): frozen.
    error = make_combined(
        base, cause, message, path=path, type_name=type_name, reason=reason, hint=hint
    )
    if error is None:
        rebuilt: BaseException = _rebuild_error(  # type: ignore[no-untyped-call]
            base, message, path, type_name, reason, hint
        )
        return rebuilt
    made: BaseException = error
    return made
