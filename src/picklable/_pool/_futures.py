"""``picklable.ProcessPoolExecutor``: the API of :mod:`concurrent.futures`, with picklable."""

from __future__ import annotations

import collections
import concurrent.futures
import itertools
import os
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future
from typing import Any

from . import _failures as F
from . import _protocol as P
from ._jobs import Failure, FutureJob, ItemsJob
from ._submit import (
    callable_name,
    interpreter_exiting,
    start_core,
    start_items,
    start_method,
    submit_call,
)

__all__ = ["ProcessPoolExecutor"]


class ProcessPoolExecutor(Executor):
    """A :class:`concurrent.futures.Executor` over worker processes, shipping with picklable.

    Unlike :class:`concurrent.futures.ProcessPoolExecutor`, a worker that dies
    fails only the future it was running (with :class:`~picklable.WorkerDiedError`,
    a ``BrokenProcessPool``); the worker is replaced and every other future
    completes.

    Parameters
    ----------
    max_workers:
        Number of workers; defaults to ``os.cpu_count()``.
    mp_context:
        Start method: ``'spawn'`` (default), ``'forkserver'``, ``'fork'``, or a
        :mod:`multiprocessing` context.
    initializer, initargs:
        ``initializer(*initargs)`` runs in each worker when it starts;
        :func:`picklable.worker_index` tells it which worker it is. If it
        raises, the executor is broken (:class:`~picklable.BrokenPoolError`).
    max_tasks_per_child:
        Replace each worker after it ran this many tasks; None: never. Not
        with ``'fork'`` (as in the stdlib: forking a process that runs threads).
    retries:
        Run a task whose worker died up to this many more times (idempotent
        tasks only).
    import_main:
        Spawned workers import the main script as ``__mp_main__`` before they
        run anything, as :mod:`multiprocessing`'s do (its ``if __name__ ==
        "__main__"`` block does not run there): module-level setup (logging,
        locks, connections, data) exists in the workers. ``False`` skips it, for
        a script that must not be imported again.
    task_timeout:
        Seconds each task may run before its worker is killed and replaced and
        its future fails with :class:`~picklable.TaskTimeoutError`; None (the
        default): no limit. :meth:`schedule` and :meth:`map` take their own.

    Raises
    ------
    ValueError
        For a bad ``max_workers``, ``max_tasks_per_child`` or start method.

    .. versionchanged:: 0.2.0
        Spawned workers import the main script (``import_main``); objects that
        multiprocessing shares by inheritance (queues, locks, shared values)
        reach the initializer through ``initargs``; ``task_timeout`` and
        :meth:`schedule`; after ``shutdown(wait=False, cancel_futures=True)``
        the interpreter's exit kills the workers still running instead of
        waiting for them; Python 3.14's ``map(buffersize=)``,
        :meth:`terminate_workers` and :meth:`kill_workers` on every version.
    """

    def __init__(
        self,
        max_workers: int | None = None,
        mp_context: Any = None,
        initializer: Callable[..., Any] | None = None,
        initargs: tuple[Any, ...] = (),
        *,
        max_tasks_per_child: int | None = None,
        retries: int = 0,
        import_main: bool = True,
        task_timeout: float | None = None,
    ) -> None:
        self._shutdown = True
        method = start_method(mp_context)
        if max_workers is None:
            max_workers = os.cpu_count() or 1
        if max_workers <= 0:
            raise ValueError("max_workers must be greater than 0")
        if max_tasks_per_child is not None and (
            not isinstance(max_tasks_per_child, int) or max_tasks_per_child <= 0
        ):
            raise ValueError("max_tasks_per_child must be >= 1")
        if max_tasks_per_child is not None and method == "fork":
            raise ValueError(
                "max_tasks_per_child is incompatible with the 'fork' start method; "
                "supply a different mp_context."
            )
        self._task_timeout = P.check_task_timeout(task_timeout)
        self._max_workers = max_workers
        self._retries = retries
        self._core = start_core(
            max_workers,
            method,
            initializer,
            initargs,
            max_tasks_per_child,
            retries,
            "picklable.ProcessPoolExecutor",
            import_main=import_main,
            log_initializer_errors=True,
        )
        self._shutdown = False
        # Collected without shutdown(): finish the queued work in the background.
        self._finalizer = weakref.finalize(self, self._core.close)
        self._finalizer.atexit = False

    def __repr__(self) -> str:
        state = "shutdown" if self._shutdown else "running"
        return (
            f"<picklable.ProcessPoolExecutor {state} max_workers={self._max_workers} "
            f"method={self._core.method}>"
        )

    def __reduce__(self) -> Any:
        raise NotImplementedError("executor objects cannot be passed between processes or pickled")

    def _check(self) -> None:
        if self._core.broken is not None:
            raise self._core.broken
        if self._shutdown:
            raise RuntimeError("cannot schedule new futures after shutdown")
        if interpreter_exiting():
            raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        """Schedule ``fn(*args, **kwargs)``; return a :class:`~concurrent.futures.Future`.

        Every keyword argument goes to ``fn``, as in :mod:`concurrent.futures`:
        the executor's ``task_timeout`` applies; :meth:`schedule` sets one per call.

        Raises
        ------
        RuntimeError
            After :meth:`shutdown`, or once the interpreter exits (in an
            ``atexit`` hook).
        BrokenPoolError
            If the executor is broken (its initializer failed).
        """
        return self._submit(fn, args, kwargs, self._task_timeout)

    def schedule(
        self,
        fn: Callable[..., Any],
        args: Iterable[Any] = (),
        kwargs: dict[str, Any] | None = None,
        *,
        task_timeout: float | None = None,
    ) -> Future[Any]:
        """Schedule ``fn(*args, **kwargs)`` with its own ``task_timeout``; return its future.

        :meth:`submit` with the call's arguments apart from the executor's own
        (as in pebble's ``ProcessPool.schedule``), so that ``submit`` stays the
        stdlib's, where every keyword argument is ``fn``'s.

        Parameters
        ----------
        task_timeout:
            Seconds the call may run once started, after which its worker is
            killed and replaced and the future fails with
            :class:`~picklable.TaskTimeoutError`; None: the executor's
            ``task_timeout``; ``math.inf``: no limit.

        Raises
        ------
        RuntimeError
            After :meth:`shutdown`, or once the interpreter exits.
        BrokenPoolError
            If the executor is broken (its initializer failed).

        .. versionadded:: 0.2.0
        """
        timeout = P.task_timeout(task_timeout, self._task_timeout)
        return self._submit(fn, tuple(args), dict(kwargs or {}), timeout)

    def _submit(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        timeout: float | None,
    ) -> Future[Any]:
        self._check()
        future: Future[Any] = Future()
        job = FutureJob(callable_name(fn), future, self)
        submit_call(self._core, job, fn, args, kwargs, self._retries, timeout)
        return future

    def map(
        self,
        fn: Callable[..., Any],
        *iterables: Iterable[Any],
        timeout: float | None = None,
        chunksize: int = 1,
        progress: bool = False,
        task_timeout: float | None = None,
        buffersize: int | None = None,
    ) -> Iterator[Any]:
        """``fn`` over the zipped ``iterables``: results in order, as in :meth:`Executor.map`.

        Parameters
        ----------
        timeout:
            Seconds from this call after which ``next()`` raises
            :class:`TimeoutError` for a result not yet there.
        chunksize:
            Items per task sent to a worker.
        progress:
            Show a progress bar on stderr.
        task_timeout:
            Seconds each item may run (a chunk of n items: n times this) before
            its worker is killed and replaced and the chunk's items fail with
            :class:`~picklable.TaskTimeoutError`; None: the executor's;
            ``math.inf``: no limit. (``timeout`` is the stdlib's: how long the
            caller waits.)
        buffersize:
            At most this many items submitted and not yet yielded (Python
            3.14's ``buffersize``, on every version): the iterables are read as
            results are taken, so they may be endless. One item per task then
            (``chunksize`` and ``progress`` are not used).

        Raises
        ------
        TimeoutError
            From the iterator, when ``timeout`` has passed.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        if buffersize is not None and (type(buffersize) is not int):
            raise TypeError("buffersize must be an integer or None")
        if buffersize is not None and buffersize < 1:
            raise ValueError("buffersize must be None or > 0")
        self._check()
        limit = P.task_timeout(task_timeout, self._task_timeout)
        if chunksize < 1:
            raise ValueError("chunksize must be >= 1.")
        if buffersize is not None:
            return _buffered(self, fn, zip(*iterables), buffersize, deadline, task_timeout)
        items = list(zip(*iterables))
        job = ItemsJob(f"map({callable_name(fn)})", self, star=True, progress=progress)
        start_items(self._core, job, fn, items, chunksize, True, self._retries, limit)
        return _results(job, len(items), deadline)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop accepting work; let queued work finish (or cancel it), then stop the workers.

        Parameters
        ----------
        wait:
            Return only when the workers have exited. With ``wait=False`` the
            work goes on in the background, and the interpreter's exit waits
            for the tasks running then, as the stdlib's does.
        cancel_futures:
            Cancel the futures that have not started running. With
            ``wait=False`` too, the interpreter's exit does not wait for the
            tasks still running (unlike the stdlib's, which a hung task keeps
            from exiting): their workers are killed, and their futures fail
            with :class:`~picklable.BrokenPoolError`.
        """
        self._shutdown = True
        core = self._core
        if not wait and cancel_futures:
            core.exit_action = "kill"
        if cancel_futures:
            core.request(core.cancel_queued)
        core.close()
        if wait:
            core.join()

    def terminate_workers(self) -> None:
        """Stop every worker now (``SIGTERM``), as Python 3.14's ``terminate_workers``.

        The executor shuts down, the futures not started are cancelled, and the
        running ones fail with :class:`~picklable.BrokenPoolError` ("forcefully
        shut down"). Available on every supported Python.
        """
        self._force_shutdown("terminate_workers")

    def kill_workers(self) -> None:
        """Kill every worker now (``SIGKILL``), as Python 3.14's ``kill_workers``;
        otherwise as :meth:`terminate_workers`."""
        self._force_shutdown("kill_workers")

    def _force_shutdown(self, operation: str) -> None:
        self._shutdown = True
        core = self._core
        core.kill_at_once = operation == "kill_workers"
        core.request(core.cancel_queued)
        core.terminate(F.forcefully_shut_down(operation))


def _buffered(
    executor: ProcessPoolExecutor,
    fn: Callable[..., Any],
    items: Iterator[tuple[Any, ...]],
    size: int,
    deadline: float | None,
    task_timeout: float | None,
) -> Iterator[Any]:
    """``map(..., buffersize=size)``: ``size`` futures ahead of the caller, the
    next item submitted as each result is taken. The first ones are submitted
    now, as the stdlib's are; the executor is held weakly, so dropping it ends
    the submissions, not the results already asked for."""
    ahead = collections.deque(
        executor.schedule(fn, args, task_timeout=task_timeout)
        for args in itertools.islice(items, size)
    )
    owner = weakref.ref(executor)
    del executor

    def results() -> Iterator[Any]:
        try:
            while ahead:
                current = owner()
                if current is not None:
                    args = next(items, None)
                    if args is not None:
                        ahead.append(current.schedule(fn, args, task_timeout=task_timeout))
                del current
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                yield ahead.popleft().result(left)
        finally:
            for future in ahead:
                future.cancel()

    return results()


def _results(job: ItemsJob, count: int, deadline: float | None) -> Iterator[Any]:
    try:
        for index in range(count):
            # No local holds the value while the caller has it: once the caller
            # drops a result it is gone (as in concurrent.futures).
            yield _take(job, index, deadline)
    finally:
        job.cancel()


def _take(job: ItemsJob, index: int, deadline: float | None) -> Any:
    try:
        outcome = job.wait_item(index, deadline, take=True)
    except TimeoutError:
        raise concurrent.futures.TimeoutError from None
    if type(outcome) is Failure:
        raise outcome.exc
    return outcome
