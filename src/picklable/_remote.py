"""A task's exception from another process: RemoteTraceback, RemoteError.

Raised by whatever runs a task elsewhere: the pools (:mod:`picklable._pool`)
and the engines' exception carriers (:mod:`picklable._envelope`, used by
:mod:`picklable._transit` for Dask and Ray). A leaf module: it imports nothing
of picklable, so each of them imports it from below.

The errors about a pool itself (a dead worker, a broken pool) derive from
``concurrent.futures``' BrokenProcessPool, whose module is slow to import: they
live in :mod:`picklable._pool._broken`. All of them pickle with their fields, so
they can be shipped on in turn.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RemoteError", "RemoteTraceback"]


class RemoteTraceback(Exception):
    """The traceback text of an exception raised in a worker.

    Attached as ``__cause__`` of the exception the parent re-raises, so the
    traceback printed in the parent shows where it happened in the worker
    (what ``concurrent.futures`` and ``multiprocessing.pool`` do, with the same
    :attr:`tb`). The text shows the whole chain; the original exception's own
    ``__cause__``, when it came back rebuilt, is kept in :attr:`cause`.

    Attributes
    ----------
    text:
        The traceback, formatted in the worker.
    tb:
        The same between triple quotes, as printed (the stdlib's attribute).
    cause:
        The original exception's ``__cause__`` as rebuilt in the parent, or None.

    .. versionchanged:: 0.2.0
        ``tb``, as in the stdlib.
    """

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text
        self.cause: BaseException | None = None

    @property
    def tb(self) -> str:
        return str(self)

    def __str__(self) -> str:
        return f'\n"""\n{self.text.rstrip()}\n"""'


class RemoteError(Exception):
    """Stands in for an exception raised in a worker that could not travel back.

    The worker could not pickle the exception, or the parent could not rebuild
    it (see :attr:`reason`). Its type name, message and traceback text are kept.

    Attributes
    ----------
    type_name:
        Qualified name of the original exception's type, e.g. ``mylib.Error``.
    message:
        ``str()`` of the original exception.
    reason:
        Why it could not travel as itself.
    remote_traceback:
        The traceback text, formatted in the worker.
    """

    def __init__(
        self, type_name: str, message: str, reason: str, remote_traceback: str = ""
    ) -> None:
        super().__init__(
            f"{type_name}: {message} (raised in a worker; the exception could not be shipped "
            f"back as itself: {reason}). Fix: let the exception class rebuild from its args "
            "(pass every __init__ argument on to super().__init__, or define __reduce__), "
            "and keep unpicklable objects out of its attributes. The worker's traceback is "
            "this error's __cause__."
        )
        self.type_name = type_name
        self.message = message
        self.reason = reason
        self.remote_traceback = remote_traceback

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.type_name, self.message, self.reason, self.remote_traceback))


# Shown as picklable.RemoteError in tracebacks (they are exported there), not as
# this private module; by reference they resolve through picklable's lazy names.
RemoteTraceback.__module__ = RemoteError.__module__ = "picklable"
