"""Dispatch: which worker gets which unit, and when.

Each worker has its own socket, so the manager knows which worker holds which
units, in order. A worker gets a unit when it is idle, and more queued behind
the running one while the estimated run time of those queued (learned per
function from the times workers report) is under :data:`QUEUE_BUDGET`: short
tasks stream with no round trip between them. Units estimated over
:data:`QUEUE_MAX_UNIT` are never queued behind another, nor behind one: long
tasks are not stuck behind each other, nor short ones behind a long one, while
a worker idles.

Late units. An estimate can be wrong: the unit running on a worker may hang (or
its process be stopped) with short units queued behind it. Once it has run
:data:`OVERDUE_FACTOR` times its estimate (and at least :data:`OVERDUE_MIN`),
the manager takes back the units queued behind it that the worker has not
started, reading their tickets back from the worker's ticket pipe (see
:mod:`._protocol`: the kernel gives each ticket to one reader, so a unit is
started by its worker or taken back, never both), and gives them to the
other workers under new ids; nothing more is queued on that worker until its
unit ends.

The map family arrives as a :class:`Feed`, cut into units here, in the manager
thread, as workers need them. :class:`Dispatcher` is the part of the manager
(:class:`~._core.Core`, which runs it in its thread) that holds the queues.
"""

from __future__ import annotations

import collections
import itertools
import os
import select
import time
from typing import Any

from . import _failures as F
from . import _protocol as P
from ._jobs import ItemsJob, Unit
from ._link import IN, OUT, Link, first

__all__ = [
    "FUNCTION_CACHE",
    "MAX_INFLIGHT",
    "OVERDUE_FACTOR",
    "OVERDUE_MIN",
    "QUEUE_BUDGET",
    "QUEUE_MAX_UNIT",
    "Dispatcher",
    "Feed",
    "FeedError",
    "may_queue",
    "overdue_after",
]

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
# The units queued behind a running one are taken back once it has run this many
# times its estimated time...
OVERDUE_FACTOR = 4.0
# ...and at least this many seconds (a scheduling hiccup is not a hang).
OVERDUE_MIN = 0.1


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
        if type(chunk) is FeedError:
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
            count = 1 if type(chunk) is FeedError else len(chunk)
            job.fail_range(job.reserve(count), count, error)
        job.seal()


class FeedError:
    """Put in a feed where the user's iterable raised."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


class Dispatcher:
    """The queues of one pool and how they go out to its workers (manager thread only).

    :class:`~._core.Core` sets these attributes and runs the methods in its
    thread; callers append to :attr:`pending` and :attr:`feeds` through it.
    """

    codec: P.Codec
    maxtasks: int | None
    pending: collections.deque[Unit]
    feeds: collections.deque[Feed]
    workers: list[Link | None]
    cost: dict[bytes, float]  # digest -> estimated seconds per item
    holding: int  # units held for workers still starting (see _hand_out)
    sent_bytes: int  # queued for the workers so far, frames of every kind
    ids: itertools.count[int]
    _poller: select.poll

    def dispatch(self) -> None:
        """Hand workers what they can take now (manager thread only)."""
        self._dispatch()

    def cancel_queued(self) -> None:
        """Cancel what is queued and not started, where its job allows it (manager
        thread only; ``shutdown(cancel_futures=True)``).

        What the workers can take now runs (the stdlib's call queue holds a task
        per worker too); of the rest, the units whose job cancels them
        (:meth:`~._jobs.Job.cancel_unsent`: futures not running) are dropped, and
        every map's items not sent yet are cancelled.
        """
        self._dispatch()
        keep = [unit for unit in self.pending if not unit.job.cancel_unsent(unit)]
        self.pending.clear()
        self.pending.extend(keep)
        for feed in self.feeds:
            feed.job.cancel()
        self.feeds.clear()

    def _dispatch(self) -> None:
        if self.pending or self.feeds:
            self._hand_out()
        if self.holding:
            self._release_held()

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
            if type(chunk) is FeedError:
                feed.job.fail_range(feed.job.reserve(1), 1, chunk.exc)
                continue
            unit_id = next(self.ids)
            try:
                payload = self.codec.encode(chunk)
            except Exception as exc:
                job = feed.job
                job.fail_range(
                    start, len(chunk), F.items_error(self.codec, exc, job.name, start, chunk)
                )
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

    def _hand_out(self) -> None:
        pending = self.pending
        cost = self.cost
        workers = [
            w
            for w in self.workers
            if w is not None and not w.eof and not w.stopped and w.timed_out is None
        ]
        touched: list[Link] = []
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
                self.assign(worker, unit)
                if not touched or touched[-1] is not worker:
                    touched.append(worker)
            workers = [w for w in workers if not w.stopped]
        for worker in set(touched):
            self.flush(worker)

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
                self.assign(worker, self.take_held(holder))
                self.flush(worker)

    def take_held(self, worker: Link) -> Unit:
        unit = worker.held
        assert unit is not None
        worker.held = None
        self.holding -= 1
        return unit

    def assign(self, worker: Link, unit: Unit) -> None:
        known = worker.known
        digest = unit.digest
        if digest in known:
            known.move_to_end(digest)
        else:
            if len(known) >= FUNCTION_CACHE:
                old, _ = known.popitem(last=False)
                self.queue_frame(worker, P.forget_frame(old))
            known[digest] = None
            for piece in P.func_frame(digest, unit.function):
                self.queue_frame(worker, piece)
        self.queue_frame(worker, unit.frame)
        if not worker.inflight:
            worker.running_since = time.monotonic()
        worker.inflight.append(unit)
        worker.tickets.append(unit.id)  # written before the frame goes out (flush)
        worker.load += unit.est
        worker.dispatched += 1
        if self.maxtasks is not None and worker.dispatched >= self.maxtasks:
            worker.stopped = True
            self.queue_frame(worker, P.STOP_FRAME)

    def queue_frame(self, worker: Link, data: bytes | bytearray) -> None:
        worker.out.append(data)
        worker.out_size += len(data)
        self.sent_bytes += len(data)

    def flush(self, worker: Link) -> None:
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
                sent = sock.send(out[0]) if len(out) == 1 else sock.sendmsg(first(out, 512))
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
            self._poller.modify(worker.fd, IN | (OUT if out else 0))
        except (KeyError, OSError, ValueError):
            pass

    def take_back(self, worker: Link) -> None:
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

    def deadline(self, worker: Link) -> float | None:
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
