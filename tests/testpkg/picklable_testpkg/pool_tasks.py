"""Tasks for the pool tests: they run in pool workers, so they live in a light module.

(A function of a test module travels by reference, and would make every worker
import pytest and the test module.)
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import picklable

INIT_INDEX: int | None = None
LOADS = 0


def identity(x: Any) -> Any:
    return x


def raise_from(factory: Any) -> None:
    """Raise what ``factory()`` returns."""
    raise factory()


def pid(_: Any = None) -> int:
    return os.getpid()


def index_and_pid(_: Any = None) -> tuple[int | None, int]:
    return picklable.worker_index(), os.getpid()


def sleep_then(x: Any, seconds: float) -> Any:
    time.sleep(seconds)
    return x


def die(how: str) -> None:
    """End this worker process the way ``how`` says."""
    import faulthandler

    faulthandler.disable()  # a fork worker inherits pytest's: keep the test output clean
    if how == "exit":
        os._exit(3)
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if how == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if how == "term":
        os.kill(os.getpid(), signal.SIGTERM)
    if how == "abort":
        os.abort()
    time.sleep(60)  # "hang": killed from outside by the test
    raise AssertionError("still alive")


def die_if(x: int, bad: frozenset[int]) -> int:
    if x in bad:
        os._exit(9)
    return x


def die_once(marker: str, x: Any) -> Any:
    """Kill the worker the first time (per marker file), succeed after."""
    path = Path(marker)
    if not path.exists():
        path.write_text("died once")
        os._exit(5)
    return x


def write_pid_then_sleep(path: str, seconds: float) -> int:
    Path(path).write_text(str(os.getpid()))
    time.sleep(seconds)
    return os.getpid()


def remember_index(base: int) -> None:
    """Initializer: keep this worker's index (plus ``base``), as a per-worker resource would."""
    global INIT_INDEX
    index = picklable.worker_index()
    assert index is not None
    INIT_INDEX = base + index


def slow_start_for(index: int | None, seconds: float) -> None:
    """Initializer: the worker of that index (every worker: None) takes
    ``seconds`` more to be ready."""
    if index is None or picklable.worker_index() == index:
        time.sleep(seconds)


def init_index(_: Any = None) -> int | None:
    return INIT_INDEX


def failing_init() -> None:
    from picklable_testpkg.errors import KwOnlyError

    raise KwOnlyError("initializer failed", code=5)


def exiting_init() -> None:
    os._exit(4)


def return_lock(_: Any = None) -> Any:
    return {"ok": 1, "lock": threading.Lock()}


class CountsLoads:
    """A callable whose every load in a process is counted (in ``LOADS``)."""

    def __init__(self) -> None:
        self.tag = "counted"

    def __setstate__(self, state: dict[str, Any]) -> None:
        global LOADS
        LOADS += 1
        self.__dict__.update(state)

    def __call__(self, x: Any) -> tuple[int, int]:
        return os.getpid(), LOADS


def _only_in_parent(value: Any) -> Any:
    if picklable.worker_index() is not None:
        raise RuntimeError("this object cannot be loaded in a worker")
    return value


def _only_in_worker(value: Any) -> Any:
    if picklable.worker_index() is None:
        raise RuntimeError("this object cannot be loaded outside a worker")
    return value


class ParentOnly:
    """Loads in the parent, fails to load in a worker."""

    def __reduce__(self) -> Any:
        return (_only_in_parent, ("parent-only",))


class WorkerOnly:
    """Loads in a worker, fails to load in the parent."""

    def __reduce__(self) -> Any:
        return (_only_in_worker, ("worker-only",))


def make_worker_only(_: Any = None) -> WorkerOnly:
    return WorkerOnly()


def same_as_frame_mean(fn: Any) -> bool:
    """Whether ``fn`` is this process's ``api.Frame.mean`` (a factory-made method)."""
    from picklable_testpkg import api

    return fn is api.Frame.mean


def load_twice_and_call(payload: bytes, arg: Any) -> tuple[bool, Any]:
    """Unpickle ``payload`` twice with stdlib pickle: same object? and its call on ``arg``."""
    import pickle

    first = pickle.loads(payload)
    return first is pickle.loads(payload), first(arg)


class TaggingCodec:
    """A pool codec that tags every payload and refuses untagged ones.

    Stands in for a signing codec (issue 8): tasks only work if *every*
    payload, both ways, goes through the pool's codec.
    """

    calls = 0  # encodes + decodes in this process

    def encode(self, obj: Any) -> bytes:
        TaggingCodec.calls += 1
        return b"TAG:" + picklable.dumps(obj)

    def decode(self, data: Any) -> Any:
        TaggingCodec.calls += 1
        data = bytes(data)
        if not data.startswith(b"TAG:"):
            raise ValueError("untagged payload")
        return picklable.loads(data[4:])

    def __reduce__(self) -> Any:
        return (TaggingCodec, ())


def codec_calls(_: Any = None) -> int:
    return TaggingCodec.calls


# --- hung tasks, timeouts, orphans (issue 28)


def stop_self(_: Any = None) -> None:
    """Stop this worker's process (SIGSTOP): a task that hangs however it is asked to end."""
    os.kill(os.getpid(), signal.SIGSTOP)


def mark(directory: str, x: Any) -> Any:
    """Record one run of item ``x`` (a file per run), then return it."""
    Path(directory, f"{x}-{os.getpid()}-{time.perf_counter_ns()}").touch()
    return x


def mark_then_sleep(directory: str, x: int, every: int, seconds: float) -> int:
    """``mark``, and sleep ``seconds`` on every ``every``-th item (a late one)."""
    mark(directory, x)
    if x % every == every - 1:
        time.sleep(seconds)
    return x


def write_pid_then_spin(path: str) -> None:
    """Busy forever in C code that holds the GIL (no thread of this process can run)."""
    import collections
    import itertools

    Path(path).write_text(str(os.getpid()))
    collections.deque(itertools.count(), maxlen=0)


def mark_or_hang(directory: str, x: Any, how: str = "") -> Any:
    """``mark`` (a quick task), or hang as ``how`` says: "sleep" (forever) or "stop"
    (SIGSTOP its own process). One function: its estimate is a quick task's."""
    if how == "sleep":
        time.sleep(3600)
    elif how == "stop":
        stop_self()
    return mark(directory, x)
