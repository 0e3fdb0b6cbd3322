"""``picklable.Pool``: the API of :class:`multiprocessing.pool.Pool`, shipping with picklable."""

from __future__ import annotations

import os
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from . import _protocol as P
from ._jobs import (
    AsyncResult,
    CallJob,
    IMapIterator,
    IMapUnorderedIterator,
    ItemsJob,
    MapResult,
)
from ._submit import callable_name, start_core, start_items, start_method, submit_call

__all__ = ["Pool"]

if TYPE_CHECKING:
    from typing import Self


class Pool:
    """A process pool with the API of :class:`multiprocessing.pool.Pool`.

    Functions, arguments, results and exceptions travel with picklable, so
    lambdas, closures, decorated functions and ``__main__`` objects all ship.
    The function of a map travels once per worker. A worker that dies fails
    only the task it was running (:class:`~picklable.WorkerDiedError`) and is
    replaced; nothing hangs and no task is lost.

    Parameters
    ----------
    processes:
        Number of workers; defaults to ``os.cpu_count()``.
    initializer, initargs:
        ``initializer(*initargs)`` runs in each worker when it starts. Inside
        it, :func:`picklable.worker_index` gives the worker's index
        (``0 .. processes - 1``; a replacement takes over the index of the
        worker it replaces). If it raises, the pool is broken: every task fails
        with :class:`~picklable.BrokenPoolError` whose ``__cause__`` is that
        exception.
    maxtasksperchild:
        Replace each worker after it ran this many tasks (chunks); None: never.
    context:
        Start method: ``'spawn'`` (default), ``'forkserver'``, ``'fork'``, or a
        :mod:`multiprocessing` context.
    retries:
        Run a task whose worker died up to this many more times, on fresh
        workers. Only for idempotent tasks; the default 0 fails it at once.
    import_main:
        Spawned workers import the main script as ``__mp_main__`` before they
        run anything, as :mod:`multiprocessing`'s do (its ``if __name__ ==
        "__main__"`` block does not run there): module-level setup (logging,
        locks, connections, data) exists in the workers. ``False`` skips it, for
        a script that must not be imported again (one without the guard).
    task_timeout:
        Seconds each task may run before its worker is killed and replaced and
        the task fails with :class:`~picklable.TaskTimeoutError`; None (the
        default): no limit. The methods' own ``task_timeout`` overrides it.

    Raises
    ------
    ValueError
        For a bad ``processes``, ``maxtasksperchild`` or start method.
    picklable.PicklingError
        If the initializer or its arguments cannot be shipped.

    .. versionchanged:: 0.2.0
        Spawned workers import the main script (``import_main``); objects that
        multiprocessing shares by inheritance (queues, locks, shared values)
        reach the initializer through ``initargs``; ``Pool.Process``;
        ``task_timeout``.
    """

    @staticmethod
    def Process(ctx: Any, *args: Any, **kwds: Any) -> Any:
        """Make a worker process of context ``ctx`` (fork and forkserver workers).

        As :meth:`multiprocessing.pool.Pool.Process`: a subclass may override
        it to customise the worker processes. Spawned workers are started
        without a ``Process`` object.
        """
        return ctx.Process(*args, **kwds)

    def __init__(
        self,
        processes: int | None = None,
        initializer: Callable[..., Any] | None = None,
        initargs: Iterable[Any] = (),
        maxtasksperchild: int | None = None,
        context: Any = None,
        *,
        retries: int = 0,
        import_main: bool = True,
        task_timeout: float | None = None,
    ) -> None:
        self._state = "INIT"
        method = start_method(context)
        if processes is None:
            processes = os.cpu_count() or 1
        if processes < 1:
            raise ValueError("Number of processes must be at least 1")
        if maxtasksperchild is not None and (
            not isinstance(maxtasksperchild, int) or maxtasksperchild <= 0
        ):
            raise ValueError("maxtasksperchild must be a positive int or None")
        self._task_timeout = P.check_task_timeout(task_timeout)
        self._processes = processes
        self._retries = retries
        self._core = start_core(
            processes,
            method,
            initializer,
            initargs,
            maxtasksperchild,
            retries,
            "picklable.Pool",
            import_main=import_main,
            make_process=self.Process,
        )
        self._core.exit_action = "terminate"
        self._state = "RUN"
        self._finalizer = weakref.finalize(self, self._core.terminate)
        self._finalizer.atexit = False  # _core's exit hook handles interpreter exit

    def __repr__(self) -> str:
        return (
            f"<picklable.Pool state={self._state} processes={self._processes} "
            f"method={self._core.method}>"
        )

    def __reduce__(self) -> Any:
        raise NotImplementedError("pool objects cannot be passed between processes or pickled")

    def __del__(self, _warn: Any = warnings.warn) -> None:
        # As multiprocessing.Pool (same words, which warning filters may match).
        if self._state == "RUN":
            _warn(f"unclosed running multiprocessing pool {self!r}", ResourceWarning, source=self)

    def _check_running(self) -> None:
        if self._state != "RUN":
            raise ValueError("Pool not running")
        broken = self._core.broken
        if broken is not None:
            raise broken

    # --- one call

    def apply(
        self,
        func: Callable[..., Any],
        args: Iterable[Any] = (),
        kwds: Mapping[str, Any] | None = None,
        *,
        task_timeout: float | None = None,
    ) -> Any:
        """Call ``func(*args, **kwds)`` in a worker and return its result.

        ``task_timeout`` as in :meth:`apply_async`.
        """
        return self.apply_async(func, args, kwds, task_timeout=task_timeout).get()

    def apply_async(
        self,
        func: Callable[..., Any],
        args: Iterable[Any] = (),
        kwds: Mapping[str, Any] | None = None,
        callback: Callable[[Any], Any] | None = None,
        error_callback: Callable[[BaseException], Any] | None = None,
        *,
        task_timeout: float | None = None,
    ) -> AsyncResult:
        """Start ``func(*args, **kwds)`` in a worker; return an :class:`AsyncResult`.

        ``callback`` / ``error_callback`` run in the pool's manager thread.
        ``task_timeout``: seconds the call may run once started, after which its
        worker is killed and replaced and it fails with
        :class:`~picklable.TaskTimeoutError`; None: the pool's ``task_timeout``;
        ``math.inf``: no limit.
        """
        self._check_running()
        timeout = P.task_timeout(task_timeout, self._task_timeout)
        result = AsyncResult(self)
        job = CallJob(callable_name(func), result, callback, error_callback)
        submit_call(self._core, job, func, tuple(args), dict(kwds or {}), self._retries, timeout)
        return result

    # --- the map family

    def map(
        self,
        func: Callable[[Any], Any],
        iterable: Iterable[Any],
        chunksize: int | None = None,
        *,
        progress: bool = False,
        task_timeout: float | None = None,
    ) -> list[Any]:
        """``[func(x) for x in iterable]``, computed by the workers.

        Parameters
        ----------
        chunksize:
            Items per task; by default about four tasks per worker, as in
            :mod:`multiprocessing`.
        progress:
            Show a progress bar on stderr.
        task_timeout:
            Seconds each item may run (a chunk of n items: n times this) before
            its worker is killed and replaced and the chunk's items fail with
            :class:`~picklable.TaskTimeoutError`; None: the pool's
            ``task_timeout``; ``math.inf``: no limit. The same in every method
            of the map family.
        """
        values: list[Any] = self._map_async(
            func, iterable, chunksize, None, None, False, progress, "map", task_timeout
        ).get()
        return values

    def map_async(
        self,
        func: Callable[[Any], Any],
        iterable: Iterable[Any],
        chunksize: int | None = None,
        callback: Callable[[Any], Any] | None = None,
        error_callback: Callable[[BaseException], Any] | None = None,
        *,
        progress: bool = False,
        task_timeout: float | None = None,
    ) -> MapResult:
        """Like :meth:`map`, returning a :class:`MapResult`."""
        return self._map_async(
            func,
            iterable,
            chunksize,
            callback,
            error_callback,
            False,
            progress,
            "map_async",
            task_timeout,
        )

    def starmap(
        self,
        func: Callable[..., Any],
        iterable: Iterable[Iterable[Any]],
        chunksize: int | None = None,
        *,
        progress: bool = False,
        task_timeout: float | None = None,
    ) -> list[Any]:
        """``[func(*args) for args in iterable]``, computed by the workers."""
        values: list[Any] = self._map_async(
            func, iterable, chunksize, None, None, True, progress, "starmap", task_timeout
        ).get()
        return values

    def starmap_async(
        self,
        func: Callable[..., Any],
        iterable: Iterable[Iterable[Any]],
        chunksize: int | None = None,
        callback: Callable[[Any], Any] | None = None,
        error_callback: Callable[[BaseException], Any] | None = None,
        *,
        progress: bool = False,
        task_timeout: float | None = None,
    ) -> MapResult:
        """Like :meth:`starmap`, returning a :class:`MapResult`."""
        return self._map_async(
            func,
            iterable,
            chunksize,
            callback,
            error_callback,
            True,
            progress,
            "starmap_async",
            task_timeout,
        )

    def imap(
        self,
        func: Callable[[Any], Any],
        iterable: Iterable[Any],
        chunksize: int = 1,
        *,
        progress: bool = False,
        task_timeout: float | None = None,
    ) -> IMapIterator:
        """Results of ``func`` over ``iterable``, in order, as they become available."""
        return IMapIterator(
            self._items_job(func, iterable, chunksize, False, False, progress, "imap", task_timeout)
        )

    def imap_unordered(
        self,
        func: Callable[[Any], Any],
        iterable: Iterable[Any],
        chunksize: int = 1,
        *,
        progress: bool = False,
        task_timeout: float | None = None,
    ) -> IMapUnorderedIterator:
        """Results of ``func`` over ``iterable``, in the order they finish."""
        return IMapUnorderedIterator(
            self._items_job(
                func, iterable, chunksize, True, False, progress, "imap_unordered", task_timeout
            )
        )

    def _map_async(
        self,
        func: Callable[..., Any],
        iterable: Iterable[Any],
        chunksize: int | None,
        callback: Callable[[Any], Any] | None,
        error_callback: Callable[[BaseException], Any] | None,
        star: bool,
        progress: bool,
        method: str,
        task_timeout: float | None = None,
    ) -> MapResult:
        self._check_running()
        timeout = P.task_timeout(task_timeout, self._task_timeout)
        items = iterable if isinstance(iterable, list) else list(iterable)
        if chunksize is None:
            chunksize, extra = divmod(len(items), self._processes * 4)
            if extra:
                chunksize += 1
        chunksize = max(1, chunksize)
        job = self._start(
            func, items, chunksize, star, False, progress, callback, error_callback, method, timeout
        )
        return MapResult(job)

    def _items_job(
        self,
        func: Callable[..., Any],
        iterable: Iterable[Any],
        chunksize: int,
        unordered: bool,
        star: bool,
        progress: bool,
        method: str,
        task_timeout: float | None = None,
    ) -> ItemsJob:
        self._check_running()
        timeout = P.task_timeout(task_timeout, self._task_timeout)
        if chunksize < 1:
            raise ValueError(f"Chunksize must be 1+, not {chunksize:n}")
        return self._start(
            func, iterable, chunksize, star, unordered, progress, None, None, method, timeout
        )

    def _start(
        self,
        func: Callable[..., Any],
        iterable: Iterable[Any],
        chunksize: int,
        star: bool,
        unordered: bool,
        progress: bool,
        callback: Callable[[Any], Any] | None,
        error_callback: Callable[[BaseException], Any] | None,
        method: str,
        timeout: float | None = None,
    ) -> ItemsJob:
        # Named after the call the user made (imap_unordered(work)): the progress
        # bar's label and the "item 3 of ..." of errors.
        name = f"{method}({callable_name(func)})"
        job = ItemsJob(
            name,
            self,
            star=star,
            unordered=unordered,
            progress=progress,
            callback=callback,
            error_callback=error_callback,
        )
        return start_items(self._core, job, func, iterable, chunksize, star, self._retries, timeout)

    # --- life cycle

    def close(self) -> None:
        """Accept no more tasks; workers exit once the queued tasks are done."""
        if self._state == "RUN":
            self._state = "CLOSE"
            self._core.close()

    def terminate(self) -> None:
        """Stop the workers now; unfinished tasks fail with :class:`~picklable.BrokenPoolError`."""
        if self._state == "INIT":
            return
        self._state = "TERMINATE"
        self._core.terminate()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the workers to exit; call :meth:`close` or :meth:`terminate` first.

        Raises
        ------
        ValueError
            If the pool is still running.
        """
        if self._state == "RUN":
            raise ValueError("Pool is still running")
        self._core.join(timeout)

    def __enter__(self) -> Self:
        if self._state != "RUN":
            raise ValueError("Pool not running")
        return self

    def __exit__(self, *exc_info: object) -> None:
        # As multiprocessing.Pool: leaving the block terminates the pool.
        self.terminate()
