"""Loading payloads in fresh interpreters, a crash or a hang costing one object.

A few persistent children (``jobs``) take batches from a shared queue. Each
child streams one result per payload, so when its pipe closes early (a crash)
or stays silent longer than ``timeout`` (a hang, and the child is killed), the
payload in flight is the culprit: it is reported as ``crash`` or ``hang``, and
the rest of its batch goes back to the front of the queue for a new child.
"""

from __future__ import annotations

import atexit
import collections
import dataclasses
import math
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from .compare import Fingerprint
from .model import Outcome, Result
from .wire import read_frame, write_frame

_START_TIMEOUT = 120.0
_EOF = object()
_TIMEOUT = object()


class ChildError(RuntimeError):
    """A loading interpreter could not be started."""


@dataclasses.dataclass(frozen=True)
class LoadJob:
    """One payload to load in a child, and what to compare it with."""

    index: int
    serializer: str
    payload: bytes
    module: str
    path: tuple[Any, ...]  # as picklable's locator: str = attribute, int = index, (key,) = item
    stable: bool
    expected: Fingerprint

    def message(self) -> tuple[Any, ...]:
        return (
            self.index,
            self.serializer,
            self.payload,
            self.module,
            self.path,
            self.stable,
            self.expected,
        )


def child_environment() -> dict[str, str]:
    """This environment, with ``PYTHONPATH`` set to this interpreter's ``sys.path``,
    so that children import the audited code from where this process did."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.pop("PYTHONSTARTUP", None)
    return env


_LIVE: weakref.WeakSet[Child] = weakref.WeakSet()


@atexit.register
def _kill_leftovers() -> None:
    # An audit interrupted (Ctrl-C) leaves its children; one stuck in a hang
    # would outlive this process, since it never reads the closed stdin.
    for child in list(_LIVE):
        try:
            child.process.kill()
        except OSError:
            pass


class Child:
    """One loading interpreter and the thread that reads its frames."""

    def __init__(self) -> None:
        # Lives as long as the child, closed in close(): no with-block can hold it.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        self.process = subprocess.Popen(
            [sys.executable, "-m", "picklable._audit._child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=child_environment(),
        )
        _LIVE.add(self)
        self._frames: queue.Queue[Any] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        ready = self.receive(_START_TIMEOUT)
        if not (isinstance(ready, tuple) and ready[0] == "ready"):
            self.kill()
            raise ChildError(
                f"could not start a loading interpreter ({sys.executable} -m "
                f"picklable._audit._child): {self.last_words() or 'no output'}"
            )

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        try:
            while True:
                frame = read_frame(stream)
                if frame is None:
                    break
                self._frames.put(frame)
        except Exception:  # a torn frame: the child died mid-write
            pass
        self._frames.put(_EOF)

    def send(self, batch: Sequence[LoadJob]) -> bool:
        """Send a batch; False if the child is already gone."""
        stream = self.process.stdin
        assert stream is not None
        try:
            write_frame(stream, [job.message() for job in batch])
        except (BrokenPipeError, OSError):
            return False
        return True

    def receive(self, timeout: float) -> Any:
        """The next frame, ``_EOF`` when the child is gone, ``_TIMEOUT`` if silent."""
        try:
            return self._frames.get(timeout=timeout)
        except queue.Empty:
            return _TIMEOUT

    def last_words(self) -> str:
        """The last non-empty line the child wrote to stderr."""
        try:
            self._stderr.seek(0)
            lines = [
                line.strip() for line in self._stderr.read().decode("utf-8", "replace").splitlines()
            ]
        except (OSError, ValueError):
            return ""
        lines = [line for line in lines if line]
        # faulthandler prints the fatal error first, then the stacks.
        for line in lines:
            if line.startswith("Fatal Python error"):
                return line
        return lines[-1] if lines else ""

    def exit_description(self) -> str:
        """``exit code 3`` or ``killed by SIGSEGV``, after the child ended."""
        try:
            code = self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.process.returncode
        if code is not None and code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit code {code}"

    def kill(self) -> None:
        """End the child now."""
        try:
            self.process.kill()
        except OSError:
            pass
        self.process.wait()
        self._close_pipes()

    def close(self) -> None:
        """Let the child finish (it exits at end of input), or kill it."""
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._close_pipes()

    def _close_pipes(self) -> None:
        _LIVE.discard(self)
        for stream in (self.process.stdin, self.process.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        self._reader.join(timeout=5)
        self._stderr.close()


def _batches(jobs: Sequence[LoadJob], processes: int) -> list[list[LoadJob]]:
    # Small enough that the last batches spread over the children, large enough
    # that a pipe round trip per batch costs nothing.
    size = max(1, min(64, math.ceil(len(jobs) / (processes * 4))))
    return [list(jobs[i : i + size]) for i in range(0, len(jobs), size)]


def run_loads(
    jobs: Sequence[LoadJob],
    *,
    processes: int,
    timeout: float,
    on_result: Callable[[LoadJob, Result], None],
) -> None:
    """Load every job in fresh interpreters and report each result.

    Parameters
    ----------
    jobs:
        Payloads to load.
    processes:
        How many children load at the same time.
    timeout:
        Seconds a single payload may take before it counts as a hang.
    on_result:
        Called once per job (from worker threads, one call at a time).

    Raises
    ------
    ChildError
        If a child interpreter cannot be started at all.
    """
    if not jobs:
        return
    pending: collections.deque[list[LoadJob]] = collections.deque(_batches(jobs, processes))
    lock = threading.Lock()
    failures: list[BaseException] = []

    def next_batch() -> list[LoadJob] | None:
        with lock:
            if failures or not pending:
                return None
            return pending.popleft()

    def requeue(batch: list[LoadJob]) -> None:
        if batch:
            with lock:
                pending.appendleft(batch)

    def report(job: LoadJob, result: Result) -> None:
        with lock:
            on_result(job, result)

    def work() -> None:
        child: Child | None = None
        try:
            while True:
                batch = next_batch()
                if batch is None:
                    return
                if child is None:
                    child = Child()
                if not child.send(batch):
                    requeue(batch)
                    child.kill()
                    child = None
                    continue
                for position, job in enumerate(batch):
                    frame = child.receive(timeout)
                    if frame is _TIMEOUT:
                        child.kill()
                        error = f"no result after {timeout:g} s: loading hung, the child was killed"
                        report(job, Result(Outcome.HANG, error, size=len(job.payload)))
                    elif frame is _EOF:
                        how = child.exit_description()
                        words = child.last_words()
                        child.kill()
                        error = f"the loading interpreter died ({how})"
                        error = f"{error}: {words}" if words else error
                        report(job, Result(Outcome.CRASH, error, size=len(job.payload)))
                    else:
                        index, outcome, error, hint, detail = frame[1]
                        assert index == job.index, (index, job.index)
                        report(job, Result(Outcome(outcome), error, hint, detail, len(job.payload)))
                        continue
                    child = None
                    requeue(batch[position + 1 :])
                    break
        except BaseException as exc:
            with lock:
                failures.append(exc)
        finally:
            if child is not None:
                child.close()

    count = max(1, min(processes, len(pending)))
    threads = [
        threading.Thread(target=work, name=f"picklable-audit-{i}", daemon=True)
        for i in range(count)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
