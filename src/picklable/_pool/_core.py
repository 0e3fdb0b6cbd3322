"""The engine behind both pools: one manager thread that owns every worker.

Callers turn calls into :class:`~._jobs.Unit` objects (payloads encoded in the
calling thread) and append them to :attr:`Core.pending`; the manager thread does
all socket I/O with non-blocking sockets and ``poll``, so a large payload in
one direction can never deadlock against another in the other direction.

Dispatch (which worker gets which unit, when; units taken back from behind a
late one): :mod:`._dispatch`, whose :class:`~._dispatch.Dispatcher` holds the
queues that :class:`Core` runs. A unit with a ``task_timeout`` that runs past
it is taken out the same way as a late unit's queue: the units behind it are
taken back first (so that nothing else can start there), then the worker is
killed, the unit fails with :class:`TaskTimeoutError`, and the worker is
replaced.

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
import sys
import threading
import time
import weakref
from typing import Any

from . import _failures as F
from . import _launch
from . import _protocol as P
from ._dispatch import Dispatcher, Feed, overdue_after
from ._jobs import Failure, Unit
from ._link import IN, OUT, Link, readable
from ._template import ForkTemplate
from ._worker import WorkerConfig, worker_index

# The pool's errors (see _failures) and picklable's pickler load with these
# modules in a pool's parent, before any pool starts the clock on its workers;
# not in a worker, which imports these modules with the user's script and
# needs neither to start (Core.__init__ makes sure of the errors for a pool
# started there; the codec imports the pickler when a payload needs it).
if worker_index() is None:
    from .. import _api  # noqa: F401
    from . import _broken  # noqa: F401

# Consecutive workers dying before they are ready, after which the pool is broken.
MAX_START_FAILURES = 3

_RUN, _CLOSE, _TERMINATE = 0, 1, 2

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
            core.terminate(F.exit_after_shutdown())
        else:
            core.terminate()


threading._register_atexit(_at_exit)  # type: ignore[attr-defined]


class Core(Dispatcher):
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
        self.workers: list[Link | None] = [None] * processes
        self.cost: dict[bytes, float] = {}  # digest -> estimated seconds per item
        self.holding = 0  # units held for workers still starting (see _hand_out)
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
        self._by_fd: dict[int, tuple[bool, Link]] = {}  # fd -> (is sentinel, worker)
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
        # The pool's errors, if not yet imported (a pool started in a worker):
        # a pool left open fails its tasks at the interpreter's exit, too late
        # to import concurrent.futures.process (it registers an exit hook of
        # its own, refused then).
        from . import _broken  # noqa: F401

    # ------------------------------------------------------ caller threads

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
        error = self.broken or F.shut_down()
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
            error = F.manager_failed(exc)
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
                error = self.broken or F.terminated()
                self._kill_all()
                self._fail_everything(error)
                return
            while self.requests:
                self.requests.popleft()()
            self.dispatch()
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
                if mask & OUT:
                    self.flush(worker)
                if mask & IN:
                    self._read(worker)
            self._check_timers()

    def _poll_timeout(self) -> int | None:
        deadline = None
        for worker in self.workers:
            if worker is not None:
                when = self.deadline(worker)
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
                self.take_back(worker)

    def _time_out(self, worker: Link, unit: Unit) -> None:
        """``unit`` ran past its task_timeout: end its worker (``_reap`` fails it)."""
        # First, nothing else may start there: a unit that does not run cannot
        # be killed by mistake in its place.
        self.take_back(worker)
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
        # (Imported here: see the imports for a parent at the top.)
        from .._reduce import recheck_scripts

        recheck_scripts()
        process, sock, boot, lines = _launch.start(
            self.method,
            self._worker_config(index),
            f"{self.name}-worker-{index}",
            self.import_main,
            self.make_process,
            self.template,
        )
        worker = Link(index, process, sock, boot, lines)
        self.workers[index] = worker
        self._by_fd[worker.fd] = (False, worker)
        self._by_fd[process.sentinel] = (True, worker)
        self._poller.register(worker.fd, IN | (OUT if worker.out else 0))
        self._poller.register(process.sentinel, select.POLLIN)

    def _replace(self, index: int) -> None:
        try:
            self._start_worker(index)
        except Exception as exc:
            self.broken = F.replace_failed(index, exc)

    def _needs_workers(self) -> bool:
        return self.state == _RUN or bool(self.pending) or bool(self.feeds)

    # --- results

    def _read(self, worker: Link) -> None:
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

    def _eof(self, worker: Link) -> None:
        if worker.eof:
            return
        worker.eof = True
        worker.eof_at = time.monotonic()
        try:
            self._poller.unregister(worker.fd)
        except (KeyError, OSError, ValueError):
            pass
        self._by_fd.pop(worker.fd, None)

    def _handle(self, worker: Link, frame: Any) -> None:
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
                self.assign(worker, self.take_held(worker))
                self.flush(worker)
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
            job.fail(unit, F.load_error(job.describe(unit), exc, "parent"))
            return
        if kind == 86:  # b"V"
            job.settle(unit, [decoded] if job.single else decoded)
            return
        if kind == 76:  # b"L": its function or arguments did not load in the worker
            what, info = decoded
            cause = P.rebuild_error(info, codec)
            job.fail(unit, F.load_error(job.describe(unit), cause, "worker", what))
            return
        outcomes: list[Any] = []
        for index, (outcome, data) in enumerate(decoded):
            if outcome == P.OUTCOME_VALUE:
                try:
                    outcomes.append(codec.decode(data))
                except BaseException as exc:
                    outcomes.append(Failure(F.load_error(job.describe(unit), exc, "parent")))
            elif outcome == P.OUTCOME_RAISED:
                outcomes.append(Failure(P.rebuild_error(data, codec)))
            else:
                error = P.rebuild_error(data, codec)
                outcomes.append(Failure(F.result_error(job.describe(unit, index), error)))
        job.settle(unit, outcomes)

    def _protocol_error(self, worker: Link, what: str) -> None:
        sys.stderr.write(
            f"picklable pool: worker {worker.index} broke the protocol ({what}); replacing it\n"
        )
        worker.process.kill()

    def _initializer_failed(self, worker: Link, payload: Any) -> None:
        stage = P.STAGE_INITIALIZER
        try:
            stage, info = self.codec.decode(payload)
            cause = P.rebuild_error(info, self.codec)
        except Exception as exc:
            cause = exc
        self.broken = F.start_failed(worker.index, stage, cause)

    # --- death

    def _reap(self, worker: Link) -> None:
        if self.workers[worker.index] is not worker or not readable(worker.process.sentinel):
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
            self.pending.appendleft(self.take_held(worker))
        inflight = worker.inflight
        if not worker.ready:
            # It never ran anything: its units go back untouched.
            self.pending.extendleft(reversed(inflight))
            inflight.clear()
            if self.broken is None and not worker.stopped:
                self.start_failures += 1
                if self.start_failures >= MAX_START_FAILURES:
                    self.broken = F.workers_cannot_start(self.start_failures, exitcode)
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
                from ._broken import WorkerDiedError  # imported at the pool's start

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

    def _fail_timed_out(self, worker: Link, unit: Unit) -> None:
        assert unit.timeout is not None
        from ._broken import TaskTimeoutError  # imported at the pool's start

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

    def _drain(self, worker: Link) -> None:
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
                self.queue_frame(worker, P.STOP_FRAME)
                self.flush(worker)
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
                    units.append(self.take_held(worker))
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


def _settle_failed(unit: Unit, exc: BaseException) -> None:
    try:
        unit.job.fail(unit, F.undelivered(unit.job.describe(unit), exc))
    except Exception:
        pass


def _close_fds(*fds: int) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
