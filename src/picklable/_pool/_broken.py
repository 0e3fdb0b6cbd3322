"""Errors about the pool itself: a worker died, the pool is broken; how a process ended.

Both are :class:`concurrent.futures.process.BrokenProcessPool`, so code written
for the stdlib executor catches them. That module takes a while to import (it
brings ``multiprocessing.connection`` and queues along), so this one is
imported when a pool starts (``_core.Core``), not with the pool's modules (a
worker imports those with the user's script), and never by a worker; and so
before the interpreter shuts down, when a pool left open terminates and
nothing can be imported any more.
"""

from __future__ import annotations

import signal
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from ..exceptions import UnpicklingError

__all__ = [
    "BrokenPoolError",
    "TaskLoadError",
    "TaskTimeoutError",
    "WorkerDiedError",
    "describe_exit",
    "exit_signal",
]


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
        The signal that killed it, a :class:`signal.Signals` member (so
        ``err.signal == signal.SIGKILL`` and ``err.signal.name == 'SIGKILL'``),
        or None when it exited.
    pid:
        The dead worker's process id.
    worker_index:
        Its slot in the pool (see :func:`picklable.worker_index`).
    attempts:
        How many times the task was started (``retries + 1`` when all failed).

    .. versionchanged:: 0.2.0
        :attr:`signal` is a :class:`signal.Signals` member (it was the name).
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
        self.signal = exit_signal(exitcode)
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


class TaskTimeoutError(TimeoutError):
    """A task ran longer than its ``task_timeout``: its worker was killed and replaced.

    Only that task fails (with a chunk of a map, the items of that chunk): the
    other tasks carry on, and those that were queued on the same worker run
    on others. A :class:`TimeoutError`, which is also
    ``concurrent.futures.TimeoutError``.

    Attributes
    ----------
    task:
        The task, e.g. ``work(3) (item 3 of map(work))``.
    timeout:
        Its ``task_timeout``, in seconds per item.
    count:
        Items of the chunk that ran (1 outside a chunked map): the chunk had
        ``timeout * count`` seconds.
    pid:
        The killed worker's process id.
    worker_index:
        Its slot in the pool (see :func:`picklable.worker_index`).

    .. versionadded:: 0.2.0
    """

    def __init__(
        self,
        task: str,
        timeout: float,
        *,
        count: int = 1,
        pid: int | None = None,
        worker_index: int | None = None,
    ) -> None:
        self.task = task
        self.timeout = timeout
        self.count = count
        self.pid = pid
        self.worker_index = worker_index
        who = "its worker" if worker_index is None else f"worker {worker_index}"
        if pid is not None:
            who += f" (pid {pid})"
        limit = f"{timeout:g} s" if count == 1 else f"{timeout:g} s per item, {timeout * count:g} s"
        super().__init__(
            f"Task {task} did not finish within its task_timeout ({limit}): {who} was "
            "killed and replaced, and the other tasks carry on. Fix: make the task "
            "return sooner, or give it a larger task_timeout (math.inf: no limit)."
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_timeout,
            (type(self), self.task, self.timeout, self.count, self.pid, self.worker_index),
        )


def _rebuild_timeout(
    cls: type[TaskTimeoutError],
    task: str,
    timeout: float,
    count: int,
    pid: int | None,
    worker_index: int | None,
) -> TaskTimeoutError:
    return cls(task, timeout, count=count, pid=pid, worker_index=worker_index)


class TaskLoadError(UnpicklingError, BrokenProcessPool):
    """A task could not be loaded in its worker, or its result in the parent.

    Only that task fails; the pool goes on. The exception raised while loading
    (with the worker's traceback as its ``__cause__`` when it was raised
    there) is this error's ``__cause__``. It is a :class:`picklable.UnpicklingError`
    and a :class:`concurrent.futures.process.BrokenProcessPool`, which the stdlib
    executor raises then (for every pending task), so code written for either
    catches it.

    Attributes
    ----------
    task:
        The task, e.g. ``work(3) (item 3 of map(work))``.
    where:
        ``'worker'`` (its function or arguments) or ``'parent'`` (its result).

    .. versionadded:: 0.2.0
    """

    def __init__(self, message: str, *, task: str = "", where: str = "", reason: str = "") -> None:
        super().__init__(
            message,
            reason=reason,
            hint="see this error's __cause__ for what failed to load",
        )
        self.task = task
        self.where = where

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_load_error, (type(self), self.args[0], self.task, self.where, self.reason))


def _rebuild_load_error(
    cls: type[TaskLoadError], message: str, task: str, where: str, reason: str
) -> TaskLoadError:
    return cls(message, task=task, where=where, reason=reason)


# Shown under their public names in tracebacks.
BrokenPoolError.__module__ = WorkerDiedError.__module__ = TaskTimeoutError.__module__ = "picklable"
TaskLoadError.__module__ = "picklable.executors"


def exit_signal(exitcode: int | None) -> signal.Signals | int | None:
    """The signal that ended a process, from its ``multiprocessing``-style exit code.

    A :class:`signal.Signals` member (it compares equal to ``signal.SIGKILL``),
    the bare number for a signal Python does not name, or None for an exit.
    """
    if exitcode is None or exitcode >= 0:
        return None
    try:
        return signal.Signals(-exitcode)
    except ValueError:
        return -exitcode


def _signal_name(exitcode: int | None) -> str | None:
    number = exit_signal(exitcode)
    if number is None:
        return None
    return number.name if isinstance(number, signal.Signals) else f"signal {number}"


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
