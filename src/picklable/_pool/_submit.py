"""How a call on either front end becomes work for the manager.

``Pool`` (:mod:`._mp`) and ``ProcessPoolExecutor`` (:mod:`._futures`) differ in
what they hand back (an :class:`~._jobs.AsyncResult`, a ``Future``, an
iterator); what they hand the manager is the same, made here, in the caller's
thread:

* :func:`start_core`: the pool's codec (its key), the initializer's payload and
  the :class:`~._core.Core` that runs the workers;
* :func:`submit_call`: one call -> its function's payload (kept by digest,
  sent once per worker) and a :class:`~._jobs.Unit` with its arguments encoded
  (what cannot ship fails the call now, in the caller's thread);
* :func:`start_items`: the map family -> a :class:`~._dispatch.Feed` that the
  manager cuts into chunks as workers need them (a generator is read by a
  feeder thread, :func:`feed_iterable`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

try:
    from _blake2 import blake2b  # what hashlib.blake2b is, without importing OpenSSL
except ImportError:  # pragma: no cover - Pythons built without it
    from hashlib import blake2b

from . import _core
from . import _failures as F
from . import _protocol as P
from ._core import Core
from ._dispatch import Feed, FeedError
from ._jobs import ItemsJob, Job, Unit

__all__ = [
    "callable_name",
    "encode_function",
    "feed_iterable",
    "interpreter_exiting",
    "start_core",
    "start_items",
    "start_method",
    "submit_call",
]


def start_method(context: Any) -> str:
    """The start method named by ``context``: a name, a multiprocessing context, or None (spawn)."""
    if context is None:
        return "spawn"
    if isinstance(context, str):
        method = context
    else:
        getter = getattr(context, "get_start_method", None)
        if getter is None:
            raise TypeError(
                f"context must be a start method name or a multiprocessing context, not {context!r}"
            )
        method = getter()
    if method not in ("spawn", "forkserver", "fork"):
        raise ValueError(f"unknown start method {method!r}: use 'spawn', 'forkserver' or 'fork'")
    return method


def callable_name(fn: Any) -> str:
    """A short name for ``fn`` in task descriptions."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if isinstance(name, str):
        return name
    return type(fn).__name__


def interpreter_exiting() -> bool:
    """Whether the interpreter has started to exit (executors then refuse new work)."""
    return _core.exiting


def start_core(
    processes: int,
    method: str,
    initializer: Any,
    initargs: Any,
    maxtasks: int | None,
    retries: int,
    name: str,
    *,
    import_main: bool = True,
    log_initializer_errors: bool = False,
    make_process: Any = None,
) -> Core:
    """The manager and workers of a new pool, its codec made and its initializer checked.

    Raises
    ------
    TypeError, ValueError
        For a bad initializer, ``retries`` or start method.
    picklable.PicklingError
        If the initializer or its arguments cannot reach a worker.
    """
    codec, init = P.start_codec(initializer, initargs, retries, method)
    return Core(
        processes,
        method,
        init,
        maxtasks,
        name,
        codec,
        import_main=import_main,
        log_initializer_errors=log_initializer_errors,
        make_process=make_process,
    )


def encode_function(core: Core, fn: Any) -> tuple[bytes, P.FunctionPayload]:
    """(digest, payload) of a function: what workers cache it by.

    Raises
    ------
    picklable.PicklingError
        If the function cannot be shipped.
    """
    codec = core.codec
    encode = getattr(codec, "encode_function", None)
    if encode is None:  # a codec of another kind: every object through encode()
        payload: P.FunctionPayload = (codec.encode(fn),)
    else:
        payload = encode(fn, core.workers_import_script)
    digest = getattr(codec, "digest", None)
    if digest is None:
        return blake2b(b"".join(payload), digest_size=16).digest(), payload
    return digest(payload), payload


def call_unit(
    core: Core,
    job: Job,
    digest: bytes,
    function: P.FunctionPayload,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    retries: int,
    timeout: float | None = None,
) -> Unit:
    """A unit for one call; raises if the arguments cannot be shipped."""
    unit_id = next(core.ids)
    try:
        payload = core.codec.encode((args, kwargs))
    except Exception as exc:
        error = F.call_arguments_error(core.codec, exc, job.name, args, kwargs)
        raise error from error.__cause__
    frame = P.task_frame(P.CALL, unit_id, digest, payload)
    return Unit(unit_id, job, digest, function, frame, 0, 1, (args, kwargs), retries, timeout)


def submit_call(
    core: Core,
    job: Job,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    retries: int,
    timeout: float | None,
) -> None:
    """Queue ``fn(*args, **kwargs)`` as ``job``; a function or arguments that cannot
    ship fail the job now (:meth:`~._jobs.Job.refuse`), before anything is queued."""
    try:
        digest, payload = encode_function(core, fn)
        unit = call_unit(core, job, digest, payload, args, kwargs, retries, timeout)
    except Exception as exc:
        job.refuse(exc)
        return
    core.submit(unit)


def start_items(
    core: Core,
    job: ItemsJob,
    func: Callable[..., Any],
    iterable: Iterable[Any],
    chunksize: int,
    star: bool,
    retries: int,
    timeout: float | None = None,
) -> ItemsJob:
    """Hand the items of a map job to the pool.

    Lists go to the manager directly; other iterables through a feeder thread.
    """
    kind = P.STARMAP if star else P.MAP
    items: list[Any] | None = None
    if isinstance(iterable, (list, tuple, range)):
        items = list(iterable) if not isinstance(iterable, list) else iterable
    try:
        digest, payload = encode_function(core, func)
    except Exception as exc:
        # Every item fails with the reason (a generator is not read at all).
        count = 1 if items is None else len(items)
        if count:
            job.fail_range(job.reserve(count), count, exc)
        job.seal()
        return job
    if items is not None:
        job.reserve(len(items))
        job.seal()
        if items:
            core.submit_feed(Feed(job, digest, payload, kind, items, chunksize, retries, timeout))
        return job
    feed = Feed(job, digest, payload, kind, None, chunksize, retries, timeout)
    core.submit_feed(feed)
    feed_iterable(core, feed, iterable, chunksize)
    return job


def feed_iterable(core: Core, feed: Feed, iterable: Iterable[Any], chunksize: int) -> None:
    """Read ``iterable`` in a thread into ``feed`` (what ``imap`` does with a generator)."""

    def run() -> None:
        chunk: list[Any] = []
        try:
            for item in iterable:
                if feed.closed:
                    return
                chunk.append(item)
                if len(chunk) >= chunksize:
                    feed.chunks.append(chunk)
                    chunk = []
                    core.wake()
        except BaseException as exc:
            # As multiprocessing: the error takes the place of the chunk it broke
            # (the items read before it in that chunk are not run).
            chunk = []
            feed.chunks.append(FeedError(exc))
        finally:
            if chunk:
                feed.chunks.append(chunk)
            feed.done = True
            core.wake()

    threading.Thread(target=run, name=f"{core.name}-feeder", daemon=True).start()
