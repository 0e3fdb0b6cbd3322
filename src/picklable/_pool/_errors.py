"""Errors a pool reports: a dead worker, a broken pool, an exception that could not travel.

All of them pickle with their fields, so they can be shipped on in turn.
"""

from __future__ import annotations

import signal
from concurrent.futures.process import BrokenProcessPool
from typing import Any

__all__ = ["BrokenPoolError", "RemoteError", "RemoteTraceback", "WorkerDiedError", "describe_exit"]


class RemoteTraceback(Exception):
    """The traceback text of an exception raised in a worker.

    Attached as ``__cause__`` of the exception the parent re-raises, so the
    traceback printed in the parent shows where it happened in the worker
    (what ``concurrent.futures`` does). The text shows the whole chain; the
    original exception's own ``__cause__``, when it came back rebuilt, is kept
    in :attr:`cause`.

    Attributes
    ----------
    text:
        The traceback, formatted in the worker.
    cause:
        The original exception's ``__cause__`` as rebuilt in the parent, or None.
    """

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text
        self.cause: BaseException | None = None

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


class BrokenPoolError(BrokenProcessPool):
    """The pool cannot run tasks any more (terminated, or workers cannot start).

    A :class:`concurrent.futures.process.BrokenProcessPool`, so code written for
    the stdlib executor catches it.

    Attributes
    ----------
    reason:
        What broke the pool.
    """

    def __init__(self, message: str, *, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_broken, (type(self), self.args[0], self.reason))


def _rebuild_broken(cls: type[BrokenPoolError], message: str, reason: str) -> BrokenPoolError:
    return cls(message, reason=reason)


class WorkerDiedError(BrokenProcessPool):
    """The worker running a task died (``os._exit``, a signal, the OOM killer).

    Only that task fails: the worker is replaced and the other tasks run on.
    A :class:`concurrent.futures.process.BrokenProcessPool`, so code written for
    the stdlib executor (which fails *every* pending task then) still catches it.

    Attributes
    ----------
    task:
        The task that was running, e.g. ``work(3) (item 3 of map(work))``.
    exitcode:
        The worker's exit code; negative for a signal, as in ``multiprocessing``.
    signal:
        Name of the signal that killed it (``'SIGKILL'``), or None.
    pid:
        The dead worker's process id.
    worker_index:
        Its slot in the pool (see :func:`picklable.worker_index`).
    attempts:
        How many times the task was started (``retries + 1`` when all failed).
    """

    def __init__(
        self,
        task: str,
        exitcode: int | None,
        *,
        pid: int | None = None,
        worker_index: int | None = None,
        attempts: int = 1,
    ) -> None:
        self.task = task
        self.exitcode = exitcode
        self.signal = _signal_name(exitcode)
        self.pid = pid
        self.worker_index = worker_index
        self.attempts = attempts
        who = "the worker" if worker_index is None else f"worker {worker_index}"
        if pid is not None:
            who += f" (pid {pid})"
        tries = "" if attempts == 1 else f" on each of {attempts} attempts"
        super().__init__(
            f"{who[0].upper()}{who[1:]} died while running task {task}{tries}: "
            f"{describe_exit(exitcode)}. The worker was replaced and the other tasks "
            "carry on. Fix: find what ends the process (memory use, a crash in native "
            "code, a call to os._exit); if the task is idempotent, pass retries=N to run "
            "it again on a fresh worker."
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_died,
            (type(self), self.task, self.exitcode, self.pid, self.worker_index, self.attempts),
        )


def _rebuild_died(
    cls: type[WorkerDiedError],
    task: str,
    exitcode: int | None,
    pid: int | None,
    worker_index: int | None,
    attempts: int,
) -> WorkerDiedError:
    return cls(task, exitcode, pid=pid, worker_index=worker_index, attempts=attempts)


def _signal_name(exitcode: int | None) -> str | None:
    if exitcode is None or exitcode >= 0:
        return None
    try:
        return signal.Signals(-exitcode).name
    except ValueError:
        return f"signal {-exitcode}"


_SIGNAL_HINTS = {
    "SIGKILL": "usually the kernel's OOM killer (out of memory) or kill -9",
    "SIGSEGV": "a crash in native code",
    "SIGBUS": "a crash in native code",
    "SIGABRT": "an abort in native code",
    "SIGFPE": "a crash in native code",
    "SIGILL": "a crash in native code",
    "SIGTERM": "terminated from outside",
}


def describe_exit(exitcode: int | None) -> str:
    """Say how a process ended, from its ``multiprocessing``-style exit code."""
    if exitcode is None:
        return "it stopped answering and was killed"
    name = _signal_name(exitcode)
    if name is not None:
        hint = _SIGNAL_HINTS.get(name)
        return f"killed by signal {name}" + (f" ({hint})" if hint else "")
    return f"it exited with code {exitcode} (os._exit, sys.exit outside a task, or a crash)"
