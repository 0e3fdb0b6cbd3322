"""Jobs: what a call on a pool becomes, and the results callers hold.

A job is split into *units* (one task, or one chunk of a map) that the manager
thread sends to workers. The manager reports each unit back to its job
(:meth:`Job.settle`); callers wait on the job from their own threads.

* :class:`CallJob` -> :class:`AsyncResult` (``apply_async``)
* :class:`FutureJob` -> :class:`concurrent.futures.Future` (``submit``)
* :class:`ItemsJob` -> :class:`MapResult`, :class:`IMapIterator`,
  :class:`IMapUnorderedIterator` and the executor's ``map`` generator
"""

from __future__ import annotations

import collections
import reprlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .._progress import Progress

if TYPE_CHECKING:
    from concurrent.futures import Future

    from ._protocol import FunctionPayload

__all__ = [
    "AsyncResult",
    "CallJob",
    "FutureJob",
    "IMapIterator",
    "IMapUnorderedIterator",
    "ItemsJob",
    "MapResult",
    "Unit",
]

_PENDING: Any = object()
_TAKEN: Any = object()  # an outcome the caller has had: released, as the stdlib does
_repr = reprlib.Repr()
_repr.maxstring = 40
_repr.maxother = 40
_repr.maxlist = _repr.maxtuple = _repr.maxdict = 4


class Failure:
    """An item's error, kept where its value would be."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


class Unit:
    """One task as sent to a worker: a call, or a chunk of a map."""

    __slots__ = (
        "id",
        "job",
        "digest",
        "function",
        "frame",
        "start",
        "count",
        "args",
        "attempts",
        "retries",
        "est",
        "started",
        "timeout",
    )

    def __init__(
        self,
        unit_id: int,
        job: Job,
        digest: bytes,
        function: FunctionPayload,
        frame: bytes | bytearray,
        start: int,
        count: int,
        args: Any,
        retries: int,
        timeout: float | None = None,
    ) -> None:
        self.id = unit_id
        self.job = job
        self.digest = digest
        self.function = function  # the function's payload, sent once per worker
        self.frame = frame  # the task frame, ready to send
        self.start = start  # index of the unit's first item in its job
        self.count = count
        self.args = args  # kept to name the task in errors
        self.attempts = 0
        self.retries = retries
        self.est = 0.0
        self.started = False
        # task_timeout: seconds each item may run (a chunk: this times its count), or None.
        self.timeout = timeout


def call_repr(name: str, args: Any, kwargs: Any = None) -> str:
    """``name(args...)``, shortened, for error messages."""
    parts = [_safe_repr(a) for a in args]
    if kwargs:
        parts += [f"{k}={_safe_repr(v)}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


def _safe_repr(obj: Any) -> str:
    try:
        return _repr.repr(obj)
    except Exception:
        return f"<{type(obj).__name__}>"


class Job:
    """Base: what the manager calls, from its thread only."""

    name = "task"
    owner: Any = None  # the pool, kept alive while the job runs
    single = False  # one call -> one value (not a list per chunk)

    def dispatchable(self, unit: Unit) -> bool:
        """False if the unit must be dropped (cancelled) instead of sent."""
        return True

    def describe(self, unit: Unit, index: int | None = None) -> str:
        """The unit (or its item ``index``) as a task name for errors, e.g.
        ``work(3) (item 3 of map(work))``."""
        return self.name

    def settle(self, unit: Unit, outcomes: list[Any]) -> None:
        """Record a unit's outcomes: values, or :class:`Failure` for failed items."""
        raise NotImplementedError

    def fail(self, unit: Unit, exc: BaseException) -> None:
        """Fail every item of ``unit`` with ``exc``."""
        self.settle(unit, [Failure(exc)] * unit.count)

    def refuse(self, exc: BaseException) -> None:
        """The call could not be sent (its function or arguments do not ship):
        fail it now, in the caller's thread (one-call jobs only)."""
        raise NotImplementedError

    def cancel_unsent(self, unit: Unit) -> bool:
        """Cancel ``unit``, queued and not sent, if the job allows it (a future
        not running yet); True if it is cancelled and must be dropped."""
        return False


def _call_back(fn: Callable[[Any], Any] | None, arg: Any) -> None:
    if fn is None:
        return
    try:
        fn(arg)
    except Exception:
        # A failing callback must not stop the pool's manager thread.
        import traceback

        sys.stderr.write("Exception in a picklable pool callback:\n")
        traceback.print_exc()


# ------------------------------------------------------------------ apply


class AsyncResult:
    """The result of :meth:`Pool.apply_async`, as in :mod:`multiprocessing.pool`."""

    def __init__(self, owner: Any = None) -> None:
        self._event = threading.Event()
        self._ok = False
        self._value: Any = None
        self._owner = owner

    def ready(self) -> bool:
        """Whether the call has completed."""
        return self._event.is_set()

    def successful(self) -> bool:
        """Whether the call completed without raising.

        Raises
        ------
        ValueError
            If the result is not ready.
        """
        if not self.ready():
            raise ValueError(f"{self!r} not ready")
        return self._ok

    def wait(self, timeout: float | None = None) -> None:
        """Wait until the result is available or ``timeout`` seconds pass."""
        self._event.wait(timeout)

    def get(self, timeout: float | None = None) -> Any:
        """Return the result when it arrives; raise the task's exception if it failed.

        Raises
        ------
        multiprocessing.TimeoutError
            If the result does not arrive within ``timeout`` seconds.
        """
        if not self._event.wait(timeout):
            raise _mp_timeout()
        if self._ok:
            return self._value
        raise self._value

    def _finish(self, ok: bool, value: Any) -> None:
        self._ok = ok
        self._value = value
        self._event.set()
        self._owner = None


class CallJob(Job):
    """``apply_async``: one call, one :class:`AsyncResult`."""

    single = True

    def __init__(
        self,
        name: str,
        result: AsyncResult,
        callback: Callable[[Any], Any] | None,
        error_callback: Callable[[BaseException], Any] | None,
    ) -> None:
        self.name = name
        self.result = result
        self.callback = callback
        self.error_callback = error_callback

    def describe(self, unit: Unit, index: int | None = None) -> str:
        args, kwargs = unit.args
        return call_repr(self.name, args, kwargs)

    def settle(self, unit: Unit, outcomes: list[Any]) -> None:
        (outcome,) = outcomes
        if isinstance(outcome, Failure):
            self.result._finish(False, outcome.exc)
            _call_back(self.error_callback, outcome.exc)
        else:
            self.result._finish(True, outcome)
            _call_back(self.callback, outcome)

    def refuse(self, exc: BaseException) -> None:
        self.result._finish(False, exc)
        _call_back(self.error_callback, exc)


class FutureJob(Job):
    """``submit``: one call, one :class:`concurrent.futures.Future`."""

    single = True

    def __init__(self, name: str, future: Future[Any], owner: Any) -> None:
        self.name = name
        self.future = future
        self.owner = owner

    def dispatchable(self, unit: Unit) -> bool:
        if unit.started:
            return True
        unit.started = True
        return self.future.set_running_or_notify_cancel()

    def cancel_unsent(self, unit: Unit) -> bool:
        return not unit.started and self.future.cancel()

    def refuse(self, exc: BaseException) -> None:
        self.future.set_running_or_notify_cancel()
        self.future.set_exception(exc)

    def describe(self, unit: Unit, index: int | None = None) -> str:
        args, kwargs = unit.args
        return call_repr(self.name, args, kwargs)

    def settle(self, unit: Unit, outcomes: list[Any]) -> None:
        (outcome,) = outcomes
        self.owner = None
        if not unit.started:
            # Failed before it ever ran (pool broken or shut down): a cancelled
            # future stays cancelled, the others get the error.
            unit.started = True
            if not self.future.set_running_or_notify_cancel():
                return
        if isinstance(outcome, Failure):
            self.future.set_exception(outcome.exc)
        else:
            self.future.set_result(outcome)


# ------------------------------------------------------------------- map


def _ran(outcomes: list[Any]) -> int:
    """How many of ``outcomes`` ran: items failed by the pool breaking or being
    terminated did not, and the progress bar must stop at the count reached."""
    broken = sys.modules.get("picklable._pool._broken")  # imported once a pool breaks
    if broken is None:
        return len(outcomes)
    error = broken.BrokenPoolError
    return sum(1 for o in outcomes if not (type(o) is Failure and isinstance(o.exc, error)))


class ItemsJob(Job):
    """The map family: many items, sent in chunks, collected in order.

    The list of items may still be growing (``imap`` feeds it from a thread)
    until :meth:`seal` fixes the total.
    """

    def __init__(
        self,
        name: str,
        owner: Any,
        *,
        star: bool = False,
        unordered: bool = False,
        progress: bool = False,
        callback: Callable[[Any], Any] | None = None,
        error_callback: Callable[[BaseException], Any] | None = None,
    ) -> None:
        self.name = name
        self.owner = owner
        self.star = star
        self.cond = threading.Condition(threading.Lock())
        self.values: list[Any] = []
        self.total: int | None = None
        self.done = 0
        self.first_error: BaseException | None = None
        self.arrivals: collections.deque[Any] | None = collections.deque() if unordered else None
        self.cancelled = False
        self.waiting = 0
        self.callback = callback
        self.error_callback = error_callback
        self.progress = Progress(name, unit="items") if progress else None

    # --- feeder side (any thread)

    def reserve(self, count: int) -> int:
        """Make room for ``count`` more items; return the index of the first."""
        with self.cond:
            start = len(self.values)
            self.values.extend([_PENDING] * count)
            return start

    def seal(self) -> None:
        """No more items will come: the total is known."""
        with self.cond:
            self.total = len(self.values)
            if self.progress is not None:
                self.progress.set_total(self.total)
            finished = self._check_finished()
        if finished:
            self._finished()

    def fail_range(self, start: int, count: int, exc: BaseException) -> None:
        """Items that could not be read, shipped or run fail where they stand."""
        self._settle(start, [Failure(exc)] * count)

    # --- manager side

    def dispatchable(self, unit: Unit) -> bool:
        return not self.cancelled

    def describe(self, unit: Unit, index: int | None = None) -> str:
        if unit.count == 1 or index is not None:
            offset = index or 0
            item = unit.args[offset]
            call = call_repr(self.fn_name, item if self.star else (item,))
            return f"{call} (item {unit.start + offset} of {self.name})"
        return f"items {unit.start}-{unit.start + unit.count - 1} of {self.name}"

    @property
    def fn_name(self) -> str:
        return self.name[self.name.index("(") + 1 : -1] if "(" in self.name else self.name

    def settle(self, unit: Unit, outcomes: list[Any]) -> None:
        self._settle(unit.start, outcomes)

    def _settle(self, start: int, outcomes: list[Any]) -> None:
        first_error = None
        with self.cond:
            if self.arrivals is not None:
                # Unordered: outcomes live in the arrivals queue only.
                self.values[start : start + len(outcomes)] = [_TAKEN] * len(outcomes)
                self.arrivals.extend(outcomes)
            else:
                self.values[start : start + len(outcomes)] = outcomes
            self.done += len(outcomes)
            if self.first_error is None:
                for outcome in outcomes:
                    if type(outcome) is Failure:
                        first_error = self.first_error = outcome.exc
                        break
            if self.waiting:
                self.cond.notify_all()
            finished = self._check_finished()
        if self.progress is not None:
            self.progress.advance(_ran(outcomes))
        if first_error is not None:
            # As multiprocessing does: a map fails as soon as one item fails.
            _call_back(self.error_callback, first_error)
        if finished:
            self._finished()

    def _check_finished(self) -> bool:
        return self.total is not None and self.done >= self.total

    def _finished(self) -> None:
        self.owner = None
        if self.progress is not None:
            self.progress.close()
        if self.first_error is None and self.callback is not None:
            _call_back(self.callback, list(self.values))
        with self.cond:
            self.cond.notify_all()

    def cancel(self) -> None:
        """Units not yet sent to a worker are dropped (items already running finish)."""
        self.cancelled = True

    # --- waiting (any thread)

    def wait_item(self, index: int, deadline: float | None, take: bool = False) -> Any:
        """The outcome of item ``index`` (a value or a :class:`Failure`), or raise TimeoutError.

        ``take``: the job lets go of it (iterators hand each result over once).
        Raises IndexError past the end of a sealed job.
        """
        with self.cond:
            while True:
                if index < len(self.values):
                    value = self.values[index]
                    if value is not _PENDING:
                        if take:
                            self.values[index] = _TAKEN
                        return value
                elif self.total is not None:
                    raise IndexError(index)
                if not self._wait(deadline):
                    raise TimeoutError

    def wait_arrival(self, deadline: float | None) -> Any:
        """The next outcome to arrive (unordered), or raise TimeoutError / IndexError at the end."""
        assert self.arrivals is not None
        with self.cond:
            while True:
                if self.arrivals:
                    return self.arrivals.popleft()
                if self.total is not None and self.done >= self.total:
                    raise IndexError("done")
                if not self._wait(deadline):
                    raise TimeoutError

    def wait_done(self, deadline: float | None, stop_on_error: bool) -> bool:
        """Wait until every item is done (or one failed, with ``stop_on_error``)."""
        with self.cond:
            while not self._check_finished():
                if stop_on_error and self.first_error is not None:
                    return True
                if not self._wait(deadline):
                    return False
            return True

    def _wait(self, deadline: float | None) -> bool:
        # Called with the lock held. The manager notifies only when someone waits.
        if deadline is None:
            timeout = None
        else:
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                return False
        self.waiting += 1
        try:
            self.cond.wait(timeout)
        finally:
            self.waiting -= 1
        return True


class MapResult(AsyncResult):
    """The result of :meth:`Pool.map_async` and ``starmap_async``.

    Ready when every item is done, or as soon as one failed (as in
    :mod:`multiprocessing.pool`); the other items still run to the end.
    """

    def __init__(self, job: ItemsJob) -> None:
        super().__init__()
        self._job = job

    def ready(self) -> bool:
        job = self._job
        return job.first_error is not None or job._check_finished()

    def successful(self) -> bool:
        if not self.ready():
            raise ValueError(f"{self!r} not ready")
        return self._job.first_error is None

    def wait(self, timeout: float | None = None) -> None:
        self._job.wait_done(_deadline(timeout), stop_on_error=True)

    def get(self, timeout: float | None = None) -> Any:
        job = self._job
        if not job.wait_done(_deadline(timeout), stop_on_error=True):
            raise _mp_timeout()
        if job.first_error is not None:
            raise job.first_error
        return list(job.values)


def _mp_timeout() -> Exception:
    # multiprocessing's own TimeoutError (not the builtin), imported when needed.
    from multiprocessing import TimeoutError as MPTimeoutError

    return MPTimeoutError()


def _deadline(timeout: float | None) -> float | None:
    return None if timeout is None else time.monotonic() + timeout


class IMapIterator:
    """Results of :meth:`Pool.imap`, in order; ``next(timeout)`` as in multiprocessing."""

    def __init__(self, job: ItemsJob) -> None:
        self._job = job
        self._index = 0

    def __iter__(self) -> Iterator[Any]:
        return self

    def next(self, timeout: float | None = None) -> Any:
        """The next result, waiting at most ``timeout`` seconds.

        Raises
        ------
        multiprocessing.TimeoutError
            If it does not arrive in time.
        """
        try:
            outcome = self._job.wait_item(self._index, _deadline(timeout), take=True)
        except IndexError:
            raise StopIteration from None
        except TimeoutError:
            raise _mp_timeout() from None
        self._index += 1
        if type(outcome) is Failure:
            raise outcome.exc
        return outcome

    __next__ = next


class IMapUnorderedIterator(IMapIterator):
    """Results of :meth:`Pool.imap_unordered`, as they arrive."""

    def next(self, timeout: float | None = None) -> Any:
        try:
            outcome = self._job.wait_arrival(_deadline(timeout))
        except IndexError:
            raise StopIteration from None
        except TimeoutError:
            raise _mp_timeout() from None
        if type(outcome) is Failure:
            raise outcome.exc
        return outcome

    __next__ = next
