"""The engine behind both pools: one manager thread that owns every worker.

Callers turn calls into :class:`~._jobs.Unit` objects (payloads encoded in the
calling thread) and append them to :attr:`Core.pending`; the manager thread does
all socket I/O with non-blocking sockets and ``poll``, so a large payload in
one direction can never deadlock against another in the other direction.

Dispatch. Each worker has its own socket, so the manager knows which worker
holds which units, in order. A worker gets a unit when it is idle, and more
queued behind the running one while the estimated run time of those queued
(learned per function from the times workers report) is under
:data:`QUEUE_BUDGET`: short tasks stream with no round trip between them. Units
estimated over :data:`QUEUE_MAX_UNIT` are never queued behind another, nor
behind one: long tasks are not stuck behind each other, nor short ones behind
a long one, while a worker idles.

Late units. An estimate can be wrong: the unit running on a worker may hang (or
its process be stopped) with short units queued behind it. Once it has run
:data:`OVERDUE_FACTOR` times its estimate (and at least :data:`OVERDUE_MIN`),
the manager takes back the units queued behind it that the worker has not
started, reading their tickets back from the worker's ticket pipe (see
:mod:`._protocol`: the kernel gives each ticket to one reader, so a unit is
started by its worker or taken back, never both), and gives them to the
other workers under new ids; nothing more is queued on that worker until its
unit ends. A unit with a ``task_timeout`` that runs past it is taken out the
same way: the units behind it are taken back first (so that nothing else can
start there), then the worker is killed, the unit fails with
:class:`TaskTimeoutError`, and the worker is replaced.

Death. When a worker's sentinel fires, its socket is drained (results it sent
before dying count), then the first unit it still holds is the one that was
running: it fails with :class:`WorkerDiedError` (or runs again, ``retries``);
the units queued behind it go back to the front of the queue untouched. The
worker is replaced under the same index. Every unit ends settled exactly once.
"""

from __future__ import annotations

import collections
import itertools
import math
import os
import select
import socket
import sys
import threading
import time
import weakref
from typing import Any

try:
    from _blake2 import blake2b  # what hashlib.blake2b is, without importing OpenSSL
except ImportError:  # pragma: no cover - Pythons built without it
    from hashlib import blake2b

from .._compat import chained
from .._reduce.scripts import recheck_scripts
from . import _launch
from . import _protocol as P
from ._broken import BrokenPoolError, TaskLoadError, TaskTimeoutError, WorkerDiedError
from ._errors import describe_exit
from ._jobs import Failure, ItemsJob, Job, Unit
from ._template import ForkTemplate
from ._worker import WorkerConfig

# A worker gets more units queued behind its running one while the estimated
# work already queued is under this many seconds...
QUEUE_BUDGET = 0.005
# ...but never units estimated to run longer than this: a round trip between
# them costs little, and one queued behind another long unit could wait while
# another worker idles.
QUEUE_MAX_UNIT = 0.05
# Most units a worker may hold at once, however short.
MAX_INFLIGHT = 256
# Functions a worker keeps loaded (the parent mirrors the LRU and says what to forget).
FUNCTION_CACHE = 64
# Consecutive workers dying before they are ready, after which the pool is broken.
MAX_START_FAILURES = 3
# The units queued behind a running one are taken back once it has run this many
# times its estimated time...
OVERDUE_FACTOR = 4.0
# ...and at least this many seconds (a scheduling hiccup is not a hang).
OVERDUE_MIN = 0.1

_RUN, _CLOSE, _TERMINATE = 0, 1, 2

_IN = select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR
_OUT = select.POLLOUT


class _Worker:
    __slots__ = (
        "index",
        "process",
        "sock",
        "fd",
        "inflight",
        "held",
        "known",
        "out",
        "out_size",
        "inbox",
        "ready",
        "retiring",
        "stopped",
        "dispatched",
        "load",
        "eof",
        "eof_at",
        "lines",
        "tickets",
        "running_since",
        "overdue",
        "timed_out",
    )

    def __init__(
        self,
        index: int,
        process: _launch.Process,
        sock: socket.socket,
        boot: bytes,
        lines: _launch.Lines,
    ) -> None:
        self.index = index
        self.process = process
        self.sock = sock
        self.fd = sock.fileno()
        self.lines = lines  # the parent's ends of its ticket pipe and life line
        self.tickets: list[int] = []  # ids of units assigned, tickets not yet written
        # When the unit at the head of inflight could start (the previous one ended).
        self.running_since = 0.0
        self.overdue = False  # its running unit is late: its queue was taken back
        self.timed_out: Unit | None = None  # the unit it was killed for (task_timeout)
        self.inflight: collections.deque[Unit] = collections.deque()
        # Until it is ready: one unit kept for it, not sent (see Core._dispatch).
        self.held: Unit | None = None
        self.known: collections.OrderedDict[bytes, None] = collections.OrderedDict()
        self.out: collections.deque[bytes | bytearray | memoryview] = collections.deque()
        self.out_size = 0
        if boot:
            self.out.append(boot)
            self.out_size = len(boot)
        self.inbox = _Inbox()
        self.ready = False
        self.retiring = False  # got its last unit (maxtasksperchild): a stop frame follows
        self.stopped = False  # a stop frame was queued
        self.dispatched = 0
        self.load = 0.0  # estimated seconds of its units, running one included
        self.eof = False
        self.eof_at = 0.0


class _Inbox:
    """Splits the bytes read from a socket into frames (bodies after the length)."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def feed(self, chunk: bytes) -> list[Any]:
        unpack = P.LENGTH.unpack_from
        frames: list[Any] = []
        if not self.buf:
            # The usual case: parse the fresh chunk in place, no copies.
            view = memoryview(chunk)
            pos, end = 0, len(chunk)
            while end - pos >= 8:
                stop = pos + 8 + unpack(chunk, pos)[0]
                if stop > end:
                    break
                frames.append(view[pos + 8 : stop])
                pos = stop
            if pos < end:
                self.buf += view[pos:]
            return frames
        buf = self.buf
        buf += chunk
        pos, end = 0, len(buf)
        while end - pos >= 8:
            stop = pos + 8 + unpack(buf, pos)[0]
            if stop > end:
                break
            frames.append(bytes(buf[pos + 8 : stop]))
            pos = stop
        if pos:
            del buf[:pos]
        return frames


class Feed:
    """The items of one map, turned into units by the manager as workers need them.

    Encoding here, in the thread that also sends, keeps the caller's thread out
    of the way (no GIL hand-offs per item). ``items`` is a list (map, starmap:
    the job is sealed up front) or None for ``imap``, whose feeder thread
    appends chunks to :attr:`chunks` and sets :attr:`done` at the end.
    """

    __slots__ = (
        "job",
        "digest",
        "function",
        "kind",
        "items",
        "pos",
        "chunksize",
        "retries",
        "chunks",
        "done",
        "closed",
        "timeout",
    )

    def __init__(
        self,
        job: ItemsJob,
        digest: bytes,
        function: P.FunctionPayload,
        kind: bytes,
        items: list[Any] | None,
        chunksize: int,
        retries: int,
        timeout: float | None = None,
    ) -> None:
        self.job = job
        self.digest = digest
        self.function = function
        self.kind = kind
        self.items = items
        self.pos = 0
        self.chunksize = chunksize
        self.retries = retries
        self.chunks: collections.deque[Any] = collections.deque()
        self.done = items is not None
        self.closed = False  # the pool stopped: the feeder thread should stop too
        self.timeout = timeout  # task_timeout of each item

    def next_chunk(self) -> tuple[int, Any] | None:
        """(index of the first item, chunk), or None when nothing is available now."""
        items = self.items
        if items is not None:
            pos = self.pos
            if pos >= len(items):
                return None
            chunk = items[pos : pos + self.chunksize]
            self.pos = pos + len(chunk)
            return pos, chunk
        if not self.chunks:
            return None
        chunk = self.chunks.popleft()
        if type(chunk) is _FeedError:
            return -1, chunk
        return self.job.reserve(len(chunk)), chunk

    def exhausted(self) -> bool:
        if self.items is not None:
            return self.pos >= len(self.items)
        return self.done and not self.chunks

    def fail_rest(self, error: BaseException) -> None:
        """The pool stopped: every item not sent yet fails, and the job is sealed."""
        self.closed = True
        job = self.job
        if self.items is not None:
            if self.pos < len(self.items):
                job.fail_range(self.pos, len(self.items) - self.pos, error)
                self.pos = len(self.items)
            return
        while self.chunks:
            chunk = self.chunks.popleft()
            count = 1 if type(chunk) is _FeedError else len(chunk)
            job.fail_range(job.reserve(count), count, error)
        job.seal()


class _FeedError:
    """Put in a feed where the user's iterable raised."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


_cores: weakref.WeakSet[Core] = weakref.WeakSet()


def _close_in_forked_child() -> None:
    # A forked child has no manager thread: the wake pipe is of no use there.
    for core in list(_cores):
        core._forget_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_in_forked_child)


# Set when the interpreter starts to exit: from then on (atexit hooks included)
# executors refuse new work, as concurrent.futures' do.
exiting = False


def _at_exit() -> None:
    # Runs before the interpreter joins threads and before atexit handlers (and
    # so before multiprocessing joins its children): executors finish their
    # work, as concurrent.futures' do; pools are terminated, as
    # multiprocessing's are.
    global exiting
    exiting = True
    for core in list(_cores):
        thread = getattr(core, "thread", None)
        if thread is None or not thread.is_alive():
            continue
        if core.exit_action == "close":
            core.close()
            core.join()
        elif core.exit_action == "kill":
            # shutdown(wait=False): the caller chose not to wait, and the exit
            # does not either (a hung task would keep the interpreter forever).
            core.terminate(
                BrokenPoolError(
                    "the interpreter exited after shutdown(wait=False) before this task "
                    "finished: its worker was killed. Fix: call shutdown(wait=True) (or "
                    "wait for the futures) before the end of the program to let it finish.",
                    reason="interpreter exit after shutdown(wait=False)",
                )
            )
        else:
            core.terminate()


threading._register_atexit(_at_exit)  # type: ignore[attr-defined]


class Core:
    """Workers, queue and manager thread of one pool."""

    def __init__(
        self,
        processes: int,
        method: str,
        initializer: Any,
        maxtasks: int | None,
        name: str,
        codec: P.Codec | None = None,
        *,
        import_main: bool = True,
        log_initializer_errors: bool = False,
        make_process: Any = None,
    ) -> None:
        if method not in _launch.START_METHODS:
            raise ValueError(f"start method must be one of {_launch.START_METHODS}, not {method!r}")
        self.processes = processes
        self.method = method
        # Every payload of this pool, both ways, goes through this one object.
        self.codec = codec if codec is not None else P.Codec()
        self.initializer = initializer  # a StartPayload, or None
        self.import_main = import_main
        # Every worker has the sender's script as a module (spawned ones import it;
        # forked ones inherit it); forkserver's server may not have imported it.
        self.workers_import_script = method == "fork" or (method == "spawn" and import_main)
        self.log_initializer_errors = log_initializer_errors
        self.make_process = make_process  # (context, **kwds) -> Process, for fork/forkserver
        self.maxtasks = maxtasks
        self.name = name
        self.pending: collections.deque[Unit] = collections.deque()
        self.feeds: collections.deque[Feed] = collections.deque()
        self.state = _RUN
        self.broken: BaseException | None = None
        self.workers: list[_Worker | None] = [None] * processes
        self.cost: dict[bytes, float] = {}  # digest -> estimated seconds per item
        self.holding = 0  # units held for workers still starting (see _dispatch)
        self.sent_bytes = 0  # queued for the workers so far, frames of every kind
        self.start_failures = 0
        # At interpreter exit: "close" (finish the work), "terminate", or "kill"
        # (terminate, saying so: an executor shut down with wait=False).
        self.exit_action = "close"
        self.requests: collections.deque[Any] = collections.deque()  # callables run by the manager
        self.ids = itertools.count(1)
        self._woken = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        # Closed when the core is collected, never while a caller may still wake it.
        self._fd_finalizer = weakref.finalize(self, _close_fds, self._wake_r, self._wake_w)
        self._poller = select.poll()
        self._poller.register(self._wake_r, select.POLLIN)
        self._by_fd: dict[int, tuple[bool, _Worker]] = {}  # fd -> (is sentinel, worker)
        # fork: forks the workers started once the manager thread runs (see _template).
        self.template: ForkTemplate | None = None
        # Stop workers with SIGKILL rather than SIGTERM first (kill_workers()).
        self.kill_at_once = False
        _cores.add(self)
        try:
            for index in range(processes):
                self._start_worker(index)
            if method == "fork":
                # From this thread, before the manager thread starts: the
                # template has only the threads the caller's process had.
                self.template = ForkTemplate(
                    self._worker_config, f"{name}-fork-template", make_process
                )
        except BaseException:
            self._kill_all()
            self._release_workers()
            raise
        self.thread = threading.Thread(target=self._run, name=f"{name}-manager", daemon=True)
        self.thread.start()

    # ------------------------------------------------------ caller threads

    def encode_function(self, fn: Any) -> tuple[bytes, P.FunctionPayload]:
        """(digest, payload) of a function: what workers cache it by.

        Raises
        ------
        picklable.PicklingError
            If the function cannot be shipped.
        """
        encode = getattr(self.codec, "encode_function", None)
        if encode is None:  # a codec of another kind: every object through encode()
            payload: P.FunctionPayload = (self.codec.encode(fn),)
        else:
            payload = encode(fn, self.workers_import_script)
        digest = getattr(self.codec, "digest", None)
        if digest is None:
            return blake2b(b"".join(payload), digest_size=16).digest(), payload
        return digest(payload), payload

    def call_unit(
        self,
        job: Job,
        digest: bytes,
        function: P.FunctionPayload,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        retries: int,
        timeout: float | None = None,
    ) -> Unit:
        """A unit for one call; raises if the arguments cannot be shipped."""
        unit_id = next(self.ids)
        try:
            payload = self.codec.encode((args, kwargs))
        except Exception as exc:
            pieces = [(f"argument {i} of {job.name}", arg) for i, arg in enumerate(args)]
            pieces += [(f"keyword argument {k!r} of {job.name}", v) for k, v in kwargs.items()]
            error = arguments_error(self.codec, exc, pieces)
            raise error from error.__cause__
        frame = P.task_frame(P.CALL, unit_id, digest, payload)
        return Unit(unit_id, job, digest, function, frame, 0, 1, (args, kwargs), retries, timeout)

    def submit(self, unit: Unit) -> None:
        """Queue one unit for dispatch (thread-safe)."""
        if self.broken is not None:
            unit.job.fail(unit, self.broken)
            return
        self.pending.append(unit)
        self.wake()
        if not self.thread.is_alive():
            self._orphaned()

    def submit_feed(self, feed: Feed) -> None:
        """Queue the items of a map (thread-safe)."""
        if self.broken is not None:
            feed.fail_rest(self.broken)
            return
        self.feeds.append(feed)
        self.wake()
        if not self.thread.is_alive():
            self._orphaned()

    def _orphaned(self) -> None:

        # Submitted while the pool was closing down (a race with close() in
        # another thread): nobody will run it, so it fails instead of waiting.
        error = self.broken or BrokenPoolError(
            "the pool was shut down before this task ran", reason="shut down"
        )
        while self.pending:
            unit = self.pending.popleft()
            unit.job.fail(unit, error)
        while self.feeds:
            self.feeds.popleft().fail_rest(error)

    def wake(self) -> None:
        # One byte per sleep, not per submission: the manager resets the flag
        # before it looks at the queues again.
        if not self._woken:
            self._woken = True
            try:
                os.write(self._wake_w, b"\0")
            except OSError:
                pass

    def request(self, fn: Any) -> None:
        """Run ``fn()`` in the manager thread (which owns the queues)."""
        self.requests.append(fn)
        self.wake()

    def close(self) -> None:
        """Run what is queued, then stop the workers and the manager thread."""
        if self.state == _RUN:
            self.state = _CLOSE
        self.wake()

    def terminate(self, error: BaseException | None = None) -> None:
        """Stop the workers now; units not finished fail with ``error``
        (a BrokenPoolError saying the pool was terminated, by default)."""
        if error is not None and self.broken is None:
            self.broken = error
        self.state = _TERMINATE
        self.wake()
        self.join()

    def join(self, timeout: float | None = None) -> None:
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout)

    # ------------------------------------------------------ manager thread

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # a bug here must not leave callers waiting forever
            error = BrokenPoolError(
                f"the pool's manager thread failed: {type(exc).__name__}: {exc}",
                reason="manager thread failed",
            )
            error.__cause__ = exc
            self.broken = error
            try:
                self._kill_all()
            finally:
                self._fail_everything(error)
        finally:
            if self.template is not None:
                self.template.close()

    def _loop(self) -> None:
        poll = self._poller.poll
        by_fd = self._by_fd
        wake_r = self._wake_r
        while True:
            if self.state == _TERMINATE or self.broken is not None:
                error = self.broken or BrokenPoolError(
                    "the pool was terminated before this task finished", reason="terminated"
                )
                self._kill_all()
                self._fail_everything(error)
                return
            while self.requests:
                self.requests.popleft()()
            self._dispatch()
            if self.state == _CLOSE and self._closing_done():
                return
            try:
                events = poll(self._poll_timeout())
            except InterruptedError:
                continue
            for fd, mask in events:
                if fd == wake_r:
                    try:
                        while os.read(wake_r, 4096):
                            pass
                    except OSError:
                        pass
                    self._woken = False
                    continue
                entry = by_fd.get(fd)
                if entry is None:
                    continue
                is_sentinel, worker = entry
                if is_sentinel:
                    self._reap(worker)
                    continue
                if mask & _OUT:
                    self._flush(worker)
                if mask & _IN:
                    self._read(worker)
            self._check_timers()

    def _deadline(self, worker: _Worker) -> float | None:
        """When the manager must look at ``worker`` again, with no event from it."""
        if worker.eof:
            return worker.eof_at + 5.0
        inflight = worker.inflight
        if not inflight or worker.timed_out is not None:
            return None
        unit = inflight[0]
        deadline = None
        if unit.timeout is not None:
            deadline = worker.running_since + unit.timeout * unit.count
        if len(inflight) > 1 and not worker.overdue:
            late = worker.running_since + overdue_after(unit.est)
            if deadline is None or late < deadline:
                deadline = late
        return deadline

    def _poll_timeout(self) -> int | None:
        deadline = None
        for worker in self.workers:
            if worker is not None:
                when = self._deadline(worker)
                if when is not None and (deadline is None or when < deadline):
                    deadline = when
        if deadline is None:
            return None
        # Rounded up: woken a little early, the loop would spin until the deadline.
        return max(0, math.ceil((deadline - time.monotonic()) * 1000))

    def _check_timers(self) -> None:
        now = time.monotonic()
        for worker in self.workers:
            if worker is None:
                continue
            if worker.eof:
                if now - worker.eof_at > 5.0:
                    # It closed its socket but did not exit: it can no longer answer.
                    worker.process.kill()
                    worker.eof_at = now  # the sentinel will fire; do not kill again at once
                continue
            inflight = worker.inflight
            if not inflight or worker.timed_out is not None:
                continue
            unit = inflight[0]
            ran = now - worker.running_since
            if unit.timeout is not None and ran >= unit.timeout * unit.count:
                self._time_out(worker, unit)
            elif len(inflight) > 1 and not worker.overdue and ran >= overdue_after(unit.est):
                # Late: what waits behind it goes to the other workers.
                worker.overdue = True
                self._take_back(worker)

    def _take_back(self, worker: _Worker) -> None:
        """Take back the units queued on ``worker`` that it has not started.

        Each one whose ticket is still in the worker's ticket pipe (or not yet
        written to it) is the parent's again: the worker skips its frame when
        it gets there. They go to the front of the queue under new ids, so
        that the stale frames never match a ticket sent later.
        """
        taken = set(worker.tickets)  # not written yet: their frames were not sent either
        worker.tickets.clear()
        fd = worker.lines.tickets_r
        while True:
            try:
                data = os.read(fd, 4096)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break
            if not data:
                break
            taken.update(unit_id for (unit_id,) in P.TICKET.iter_unpack(data))
        if not taken:
            return
        keep: collections.deque[Unit] = collections.deque()
        back: list[Unit] = []
        for unit in worker.inflight:
            (back if unit.id in taken else keep).append(unit)
        worker.inflight = keep
        worker.load = sum(unit.est for unit in keep)
        for unit in reversed(back):
            unit.id = next(self.ids)
            unit.frame = P.retag_frame(unit.frame, unit.id)
            self.pending.appendleft(unit)

    def _time_out(self, worker: _Worker, unit: Unit) -> None:
        """``unit`` ran past its task_timeout: end its worker (``_reap`` fails it)."""
        # First, nothing else may start there: a unit that does not run cannot
        # be killed by mistake in its place.
        self._take_back(worker)
        if not worker.inflight or worker.inflight[0] is not unit:
            return  # it had not started after all: it runs elsewhere, on a fresh clock
        worker.timed_out = unit
        worker.process.kill()

    # --- workers

    def _worker_config(self, index: int) -> WorkerConfig:
        return WorkerConfig(index, self.codec, self.initializer, self.log_initializer_errors)

    def _start_worker(self, index: int) -> None:
        # The worker imports the script's file as it is now: look at it now, not
        # up to 0.1 s later (a script edited since this process started ships
        # its objects as copies; see picklable._reduce.scripts).
        recheck_scripts()
        process, sock, boot, lines = _launch.start(
            self.method,
            self._worker_config(index),
            f"{self.name}-worker-{index}",
            self.import_main,
            self.make_process,
            self.template,
        )
        worker = _Worker(index, process, sock, boot, lines)
        self.workers[index] = worker
        self._by_fd[worker.fd] = (False, worker)
        self._by_fd[process.sentinel] = (True, worker)
        self._poller.register(worker.fd, _IN | (_OUT if worker.out else 0))
        self._poller.register(process.sentinel, select.POLLIN)

    def _replace(self, index: int) -> None:

        try:
            self._start_worker(index)
        except Exception as exc:
            error = BrokenPoolError(
                f"cannot start a new worker to replace worker {index}: "
                f"{type(exc).__name__}: {exc}. "
                "Fix: check the resources of the machine (processes, open files, memory).",
                reason="cannot start workers",
            )
            error.__cause__ = exc
            self.broken = error

    def _needs_workers(self) -> bool:
        return self.state == _RUN or bool(self.pending) or bool(self.feeds)

    # --- dispatch

    def _head(self) -> Unit | None:
        """The next unit to send, made from the oldest map feed if none is queued."""
        pending = self.pending
        if pending:
            return pending[0]
        feeds = self.feeds
        idle = 0  # feeds in a row with nothing to give right now
        while feeds and idle < len(feeds):
            feed = feeds[0]
            if feed.job.cancelled:
                feeds.popleft()
                continue
            got = feed.next_chunk()
            if got is None:
                if feed.exhausted():
                    feeds.popleft()
                    if feed.items is None:
                        feed.job.seal()
                    continue
                # An imap feeder has not produced more yet: try the next feed.
                feeds.rotate(-1)
                idle += 1
                continue
            start, chunk = got
            if type(chunk) is _FeedError:
                feed.job.fail_range(feed.job.reserve(1), 1, chunk.exc)
                continue
            unit_id = next(self.ids)
            try:
                payload = self.codec.encode(chunk)
            except Exception as exc:
                job = feed.job
                pieces = [(f"item {start + i} of {job.name}", item) for i, item in enumerate(chunk)]
                feed.job.fail_range(start, len(chunk), arguments_error(self.codec, exc, pieces))
                continue
            frame = P.task_frame(feed.kind, unit_id, feed.digest, payload)
            unit = Unit(
                unit_id,
                feed.job,
                feed.digest,
                feed.function,
                frame,
                start,
                len(chunk),
                chunk,
                feed.retries,
                feed.timeout,
            )
            pending.append(unit)
            return unit
        return None

    def dispatch(self) -> None:
        """Hand workers what they can take now (manager thread only)."""
        self._dispatch()

    def _dispatch(self) -> None:
        if self.pending or self.feeds:
            self._hand_out()
        if self.holding:
            self._release_held()

    def _hand_out(self) -> None:
        pending = self.pending
        cost = self.cost
        workers = [
            w
            for w in self.workers
            if w is not None and not w.eof and not w.stopped and w.timed_out is None
        ]
        touched: list[_Worker] = []
        progress = True
        while progress and workers:
            progress = False
            for worker in workers:
                unit = pending[0] if pending else self._head()
                if unit is None:
                    progress = False
                    break
                inflight = worker.inflight
                per_item = cost.get(unit.digest)
                est = per_item * unit.count if per_item is not None else None
                if not worker.ready:
                    # A worker still starting (importing the script, in its
                    # initializer) holds one unit, unsent: it counts as running,
                    # as a task in the stdlib's call queue does, and goes to the
                    # first worker that is ready with nothing to do, this one or
                    # another. Sent now, it would wait there while a started
                    # worker idles (spawn workers come up ~0.1 s apart).
                    if worker.held is not None:
                        continue
                # Queued work = everything but the running unit; none behind a late one.
                elif inflight and (
                    worker.overdue
                    or not may_queue(
                        len(inflight), worker.load - inflight[0].est, est, inflight[0].est
                    )
                ):
                    continue
                if est is None:
                    est = 2 * QUEUE_MAX_UNIT  # unknown: nothing will queue behind it
                pending.popleft()
                progress = True
                if not unit.job.dispatchable(unit):
                    continue
                unit.est = est
                if not worker.ready:
                    worker.held = unit
                    self.holding += 1
                    continue
                self._assign(worker, unit)
                if not touched or touched[-1] is not worker:
                    touched.append(worker)
            workers = [w for w in workers if not w.stopped]
        for worker in set(touched):
            self._flush(worker)

    def _release_held(self) -> None:
        """Give units held for workers still starting to ready ones with nothing to do."""
        idle = [
            w
            for w in self.workers
            if w is not None
            and w.ready
            and not w.inflight
            and not w.eof
            and not w.stopped
            and w.timed_out is None
        ]
        for holder in self.workers:
            if not idle:
                return
            if holder is not None and holder.held is not None:
                worker = idle.pop()
                self._assign(worker, self._take_held(holder))
                self._flush(worker)

    def _take_held(self, worker: _Worker) -> Unit:
        unit = worker.held
        assert unit is not None
        worker.held = None
        self.holding -= 1
        return unit

    def _assign(self, worker: _Worker, unit: Unit) -> None:
        known = worker.known
        digest = unit.digest
        if digest in known:
            known.move_to_end(digest)
        else:
            if len(known) >= FUNCTION_CACHE:
                old, _ = known.popitem(last=False)
                self._queue(worker, P.forget_frame(old))
            known[digest] = None
            for piece in P.func_frame(digest, unit.function):
                self._queue(worker, piece)
        self._queue(worker, unit.frame)
        if not worker.inflight:
            worker.running_since = time.monotonic()
        worker.inflight.append(unit)
        worker.tickets.append(unit.id)  # written before the frame goes out (_flush)
        worker.load += unit.est
        worker.dispatched += 1
        if self.maxtasks is not None and worker.dispatched >= self.maxtasks:
            worker.stopped = True
            self._queue(worker, P.STOP_FRAME)

    def _queue(self, worker: _Worker, data: bytes | bytearray) -> None:
        worker.out.append(data)
        worker.out_size += len(data)
        self.sent_bytes += len(data)

    def _flush(self, worker: _Worker) -> None:
        out = worker.out
        sock = worker.sock
        if worker.eof or sock.fileno() < 0:
            out.clear()
            worker.out_size = 0
            worker.tickets.clear()
            return
        if worker.tickets:
            # Before the frames: a worker that has a task's frame finds its
            # ticket in the pipe, unless the parent took it back. One write of
            # at most MAX_INFLIGHT tickets: never more than the pipe holds.
            data = b"".join([P.TICKET.pack(unit_id) for unit_id in worker.tickets])
            worker.tickets.clear()
            try:
                os.write(worker.lines.tickets_w, data)
            except OSError:
                pass  # the pipe is closed: the worker is being reaped
        while out:
            try:
                sent = sock.send(out[0]) if len(out) == 1 else sock.sendmsg(_first(out, 512))
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                # The worker is gone; its sentinel will tell the rest.
                out.clear()
                worker.out_size = 0
                break
            worker.out_size -= sent
            while sent:
                head = out[0]
                if sent >= len(head):
                    sent -= len(head)
                    out.popleft()
                else:
                    out[0] = memoryview(head)[sent:]
                    sent = 0
        try:
            self._poller.modify(worker.fd, _IN | (_OUT if out else 0))
        except (KeyError, OSError, ValueError):
            pass

    # --- results

    def _read(self, worker: _Worker) -> None:
        sock = worker.sock
        for _ in range(16):
            try:
                chunk = sock.recv(1 << 18)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                chunk = b""
            if not chunk:
                self._eof(worker)
                return
            for frame in worker.inbox.feed(chunk):
                self._handle(worker, frame)
            if len(chunk) < 1 << 18:
                return

    def _eof(self, worker: _Worker) -> None:
        if worker.eof:
            return
        worker.eof = True
        worker.eof_at = time.monotonic()
        try:
            self._poller.unregister(worker.fd)
        except (KeyError, OSError, ValueError):
            pass
        self._by_fd.pop(worker.fd, None)

    def _handle(self, worker: _Worker, frame: Any) -> None:
        kind = frame[0]
        if kind == 86 or kind == 69 or kind == 76:  # b"V", b"E", b"L"
            _, unit_id, elapsed = P.RESULT_BODY.unpack_from(frame)
            inflight = worker.inflight
            if not inflight or inflight[0].id != unit_id:
                self._protocol_error(worker, f"result for unknown task {unit_id}")
                return
            unit = inflight.popleft()
            worker.load = worker.load - unit.est if inflight else 0.0
            if inflight:
                worker.running_since = time.monotonic()
            worker.overdue = False
            if elapsed > 0.0:
                per_item = elapsed / unit.count
                old = self.cost.get(unit.digest)
                self.cost[unit.digest] = per_item if old is None else 0.7 * old + 0.3 * per_item
            try:
                self._settle(unit, kind, frame[17:])
            except Exception as exc:  # never lose a unit to a bug or a hostile object
                _settle_failed(unit, exc)
            return
        if kind == 82:  # b"R"
            worker.ready = True
            self.start_failures = 0
            if worker.held is not None:  # its own now (put back in line, it could
                # queue behind another worker's long task)
                self._assign(worker, self._take_held(worker))
                self._flush(worker)
            return
        if kind == 73:  # b"I"
            self._initializer_failed(worker, frame[1:])
            return
        self._protocol_error(worker, f"unknown frame kind {kind!r}")

    def _settle(self, unit: Unit, kind: int, payload: Any) -> None:
        job = unit.job
        codec = self.codec
        try:
            decoded = codec.decode(payload)
        except BaseException as exc:  # SystemExit from a hostile __reduce__ too
            job.fail(unit, _load_error(job, unit, exc, "parent"))
            return
        if kind == 86:  # b"V"
            job.settle(unit, [decoded] if job.single else decoded)
            return
        if kind == 76:  # b"L": its function or arguments did not load in the worker
            what, info = decoded
            job.fail(unit, _load_error(job, unit, P.rebuild_error(info, codec), "worker", what))
            return
        outcomes: list[Any] = []
        for index, (outcome, data) in enumerate(decoded):
            if outcome == P.OUTCOME_VALUE:
                try:
                    outcomes.append(codec.decode(data))
                except BaseException as exc:
                    outcomes.append(Failure(_load_error(job, unit, exc, "parent")))
            elif outcome == P.OUTCOME_RAISED:
                outcomes.append(Failure(P.rebuild_error(data, codec)))
            else:
                error = P.rebuild_error(data, codec)
                outcomes.append(Failure(result_error(job.describe(unit, index), error)))
        job.settle(unit, outcomes)

    def _protocol_error(self, worker: _Worker, what: str) -> None:
        sys.stderr.write(
            f"picklable pool: worker {worker.index} broke the protocol ({what}); replacing it\n"
        )
        worker.process.kill()

    def _initializer_failed(self, worker: _Worker, payload: Any) -> None:

        stage = P.STAGE_INITIALIZER
        try:
            stage, info = self.codec.decode(payload)
            cause = P.rebuild_error(info, self.codec)
        except Exception as exc:
            cause = exc
        said = f"{type(cause).__name__}: {_first_line(cause)}"
        if stage == P.STAGE_MAIN:
            error = BrokenPoolError(
                f"worker {worker.index} could not import the main module "
                f"{main_description()} as __mp_main__ (workers import it the way "
                f"multiprocessing's spawn workers do, so that its functions and module-level "
                f"setup are there): {said}. No task can run. Fix: put the code that starts "
                'the pool under `if __name__ == "__main__":`, or pass import_main=False '
                "(the main module's error is this error's __cause__).",
                reason="main module failed to import",
            )
        else:
            error = BrokenPoolError(
                f"the pool's initializer raised in worker {worker.index}: {said}. "
                "No task can run. Fix the initializer (its exception is this "
                "error's __cause__).",
                reason="initializer failed",
            )
        error.__cause__ = cause
        self.broken = error

    # --- death

    def _reap(self, worker: _Worker) -> None:

        if self.workers[worker.index] is not worker or not _readable(worker.process.sentinel):
            # A stale event: from the same poll() batch, for a file descriptor
            # number that a replacement worker has reused since.
            return
        if not worker.eof:
            self._drain(worker)  # results it sent before it ended still count
        exitcode = worker.process.wait(1.0)
        for fd in (worker.fd, worker.process.sentinel):
            self._by_fd.pop(fd, None)
            try:
                self._poller.unregister(fd)
            except (KeyError, OSError, ValueError):
                pass
        worker.sock.close()
        worker.lines.close()
        worker.process.release()
        self.workers[worker.index] = None
        if worker.held is not None:  # never sent: it goes back untouched
            self.pending.appendleft(self._take_held(worker))
        inflight = worker.inflight
        if not worker.ready:
            # It never ran anything: its units go back untouched.
            self.pending.extendleft(reversed(inflight))
            inflight.clear()
            if self.broken is None and not worker.stopped:
                self.start_failures += 1
                if self.start_failures >= MAX_START_FAILURES:
                    self.broken = BrokenPoolError(
                        f"{self.start_failures} workers in a row ended before they were ready "
                        f"(the last one: {describe_exit(exitcode)}). Fix: check that picklable and "
                        "the initializer work in a fresh interpreter (see the workers' stderr).",
                        reason="workers cannot start",
                    )
                    return
        elif inflight:
            running = inflight.popleft()
            self.pending.extendleft(reversed(inflight))
            inflight.clear()
            if running is worker.timed_out:
                self._fail_timed_out(worker, running)
            elif running.attempts < running.retries:
                running.attempts += 1
                self.pending.appendleft(running)
            else:
                try:
                    running.job.fail(
                        running,
                        WorkerDiedError(
                            running.job.describe(running),
                            exitcode,
                            pid=worker.process.pid,
                            worker_index=worker.index,
                            attempts=running.attempts + 1,
                        ),
                    )
                except Exception as exc:
                    _settle_failed(running, exc)
        if self.broken is None and self.state != _TERMINATE and self._needs_workers():
            self._replace(worker.index)

    def _fail_timed_out(self, worker: _Worker, unit: Unit) -> None:
        assert unit.timeout is not None
        try:
            unit.job.fail(
                unit,
                TaskTimeoutError(
                    unit.job.describe(unit),
                    unit.timeout,
                    count=unit.count,
                    pid=worker.process.pid,
                    worker_index=worker.index,
                ),
            )
        except Exception as exc:
            _settle_failed(unit, exc)

    def _drain(self, worker: _Worker) -> None:
        sock = worker.sock
        while True:
            try:
                chunk = sock.recv(1 << 18)
            except OSError:
                return
            if not chunk:
                return
            for frame in worker.inbox.feed(chunk):
                self._handle(worker, frame)

    # --- shutdown

    def _closing_done(self) -> bool:
        if self.pending or self.feeds:
            return False
        alive = False
        for worker in self.workers:
            if worker is None:
                continue
            alive = True
            if worker.inflight or worker.held is not None:
                return False
        if not alive:
            return True
        for worker in self.workers:
            if worker is not None and not worker.stopped:
                worker.stopped = True
                self._queue(worker, P.STOP_FRAME)
                self._flush(worker)
        return False

    def _kill_all(self) -> None:
        workers = [w for w in self.workers if w is not None]
        for worker in workers:
            if self.kill_at_once:
                worker.process.kill()
            else:
                worker.process.terminate()
        deadline = time.monotonic() + 1.0
        for worker in workers:
            if worker.process.wait(max(0.0, deadline - time.monotonic())) is None:
                worker.process.kill()
                worker.process.wait(1.0)

    def _fail_everything(self, error: BaseException) -> None:
        self.broken = self.broken or error
        units: list[Unit] = []
        for worker in self.workers:
            if worker is not None:
                if worker.held is not None:
                    units.append(self._take_held(worker))
                units.extend(worker.inflight)
                worker.inflight.clear()
        while self.pending:
            units.append(self.pending.popleft())
        for unit in units:
            try:
                unit.job.fail(unit, error)
            except Exception:
                pass
        while self.feeds:
            try:
                self.feeds.popleft().fail_rest(error)
            except Exception:
                pass
        self._release_workers()

    def _release_workers(self) -> None:
        for index, worker in enumerate(self.workers):
            if worker is not None:
                worker.sock.close()
                worker.lines.close()
                worker.process.release()
                self.workers[index] = None

    def _forget_after_fork(self) -> None:
        # The workers' sockets (and the template's) are closed by _launch's own fork hook.
        self._fd_finalizer()
        self.template = None


def overdue_after(est: float) -> float:
    """Seconds after which a unit estimated to run ``est`` seconds is late."""
    return max(OVERDUE_FACTOR * est, OVERDUE_MIN)


def may_queue(inflight: int, queued: float, est: float | None, running: float = 0.0) -> bool:
    """Whether a busy worker may take one more unit now.

    Parameters
    ----------
    inflight:
        Units the worker holds, the running one included.
    queued:
        Estimated seconds of the units queued behind the running one.
    est:
        Estimated seconds of the new unit, None if its function never ran yet.
    running:
        Estimated seconds of the running unit (of a function never run yet:
        ``2 * QUEUE_MAX_UNIT``). Nothing queues behind a long one: it would wait
        for all of it while another worker may be free.
    """
    return (
        est is not None
        and est <= QUEUE_MAX_UNIT
        and running <= QUEUE_MAX_UNIT
        and queued < QUEUE_BUDGET
        and inflight < MAX_INFLIGHT
    )


def _settle_failed(unit: Unit, exc: BaseException) -> None:

    error = BrokenPoolError(
        f"the result of task {unit.job.describe(unit)} could not be delivered: "
        f"{type(exc).__name__}: {exc}",
        reason="result could not be delivered",
    )
    error.__cause__ = exc
    try:
        unit.job.fail(unit, error)
    except Exception:
        pass


def _readable(fd: int) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


def _close_fds(*fds: int) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _first(out: collections.deque[Any], n: int) -> list[Any]:
    if len(out) <= n:
        return list(out)
    return list(itertools.islice(out, n))


def _first_line(exc: BaseException) -> str:
    """The first paragraph of ``str(exc)`` on one line (multiprocessing's are indented)."""
    paragraph = P.safe_str(exc).strip().split("\n\n")[0]
    text = " ".join(paragraph.split())
    return text if len(text) <= 300 else text[:297] + "..."


def main_description() -> str:
    """The parent's main module as a worker imports it: its file, or its name (``-m``)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    name = getattr(spec, "name", None)
    if isinstance(name, str) and name:
        return name
    return str(getattr(main, "__file__", None) or "__main__")


_LOADING = {P.LOADING_FUNCTION: "its function", P.LOADING_ARGUMENTS: "its arguments"}


def _load_error(
    job: Job, unit: Unit, exc: BaseException, where: str, what: int = P.LOADING_ARGUMENTS
) -> BaseException:
    """A task that could not be loaded in its worker, or its result in the parent."""

    task = job.describe(unit)
    said = f"{type(exc).__name__}: {_first_line(exc)}"
    if where == "worker":
        message = (
            f"Task {task} could not start: {_LOADING[what]} failed to load in the worker: {said}"
        )
    else:
        message = f"The result of task {task} could not be loaded in the parent: {said}"
    error = TaskLoadError(
        message, task=task, where=where, reason=getattr(exc, "reason", "") or said
    )
    error.__cause__ = exc
    return error


def arguments_error(codec: P.Codec, exc: Exception, pieces: list[tuple[str, Any]]) -> BaseException:
    """The error for arguments that cannot ship, naming the one that fails.

    ``pieces`` are (name in the user's terms, object): the first that fails
    alone is diagnosed again under its name, e.g. ``item 1 of map(work)['c']``
    rather than a path into the payload (``obj[0][1]['c']``).
    """
    from .._diagnostics.errors import dump_error
    from ..exceptions import PicklingError

    for name, piece in pieces:
        try:
            codec.encode(piece)
        except Exception as piece_exc:
            # What the pickler raised: the cause, or the context dumps kept unprinted.
            cause = piece_exc.__cause__ or piece_exc.__context__
            if not isinstance(piece_exc, PicklingError) or not isinstance(cause, Exception):
                cause = piece_exc
            error = dump_error(piece, cause, name)  # of the type users catch, as dumps's
            # One traceback, as dumps prints (PICKLABLE_TRACEBACK=full: the chain).
            return chained(error, cause)
    return exc


def result_error(task: str, error: BaseException) -> BaseException:
    """A result that could not be pickled in the worker, said as the result of ``task``."""
    from .._diagnostics.errors import relocated_error, rerooted
    from ..exceptions import PicklingError

    if not isinstance(error, PicklingError) or not error.path:
        return error
    where = rerooted(error.path, f"the result of {task}")
    hint = (
        "return what the parent needs as data that pickles (results travel back to the "
        "parent), or give the result's class a __reduce__ that rebuilds it there"
    )
    # Of the type users catch, as the worker's error was.
    rebuilt = relocated_error(error, where, hint, _first_line(error))
    rebuilt.__cause__ = error.__cause__
    return rebuilt
