"""Hung tasks, per-task timeouts, exit and orphans, with real workers (issue 28).

- A task that hangs (sleeps forever, or stops its own process) holds its own
  worker only: the short tasks queued behind it are taken back and run on the
  other one, each exactly once.
- ``task_timeout`` ends a hung task's worker, replaces it, and fails that task
  alone, naming it.
- After ``shutdown(wait=False, cancel_futures=True)`` the interpreter exits
  within seconds whatever runs.
- Workers (and a fork pool's template) end when their parent is killed, busy
  or not.

The bounds (10 s, 5 s) are the issue's; a loaded 2-core machine meets them by far.
"""

from __future__ import annotations

import collections
import concurrent.futures
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import wait as wait_futures
from pathlib import Path

import pytest

import picklable
from picklable import TaskTimeoutError
from picklable_testpkg import pool_tasks
from support.child import FORK_AMONG_THREADS, child_env

METHODS = ["spawn", "forkserver", "fork"]
pytestmark = pytest.mark.filterwarnings(FORK_AMONG_THREADS)
WAIT = 60


def runs(directory: Path) -> collections.Counter[int]:
    """How many times each item ran (``pool_tasks.mark`` leaves a file per run)."""
    return collections.Counter(int(path.name.split("-")[0]) for path in directory.iterdir())


class TestHungTask:
    @pytest.mark.parametrize("how", ["sleep", "stop"])
    @pytest.mark.parametrize("method", METHODS)
    def test_pool_quick_tasks_finish(self, method, how, tmp_path):
        """Pool(2): 200 quick tasks submitted behind a hung one all finish within 10 s, once each."""
        task = pool_tasks.mark_or_hang  # the hung task is one of them: estimated quick
        with picklable.Pool(2, context=method) as pool:
            pool.starmap(task, [(str(tmp_path), -1)] * 20, 1)  # learn their cost
            for path in tmp_path.iterdir():
                path.unlink()
            hung = pool.apply_async(task, (str(tmp_path), -2, how))
            start = time.monotonic()
            quick = [pool.apply_async(task, (str(tmp_path), i)) for i in range(200)]
            for result in quick:
                result.wait(max(0.0, start + 10 - time.monotonic()))
            done = sum(result.ready() for result in quick)
            assert done == 200, f"{done} of 200 quick tasks finished in 10 s"
            assert [result.get(0) for result in quick] == list(range(200))
            assert runs(tmp_path) == collections.Counter(range(200))
            assert not hung.ready()

    @pytest.mark.parametrize("how", ["sleep", "stop"])
    @pytest.mark.parametrize("method", METHODS)
    def test_executor_quick_tasks_finish(self, method, how, tmp_path):
        """ProcessPoolExecutor(2): the same, with futures."""
        task = pool_tasks.mark_or_hang
        ex = picklable.ProcessPoolExecutor(2, mp_context=method)
        try:
            list(ex.map(task, [str(tmp_path)] * 20, [-1] * 20))  # learn their cost
            for path in tmp_path.iterdir():
                path.unlink()
            hung = ex.submit(task, str(tmp_path), -2, how)
            quick = [ex.submit(task, str(tmp_path), i) for i in range(200)]
            done, _ = wait_futures(quick, timeout=10)
            assert len(done) == 200, f"{len(done)} of 200 quick tasks finished in 10 s"
            assert [f.result(0) for f in quick] == list(range(200))
            assert runs(tmp_path) == collections.Counter(range(200))
            assert not hung.done()
        finally:
            ex.shutdown(wait=False, cancel_futures=True)
            ex._core.terminate()

    def test_late_tasks_taken_back_run_once(self, tmp_path):
        """3,000 short tasks, every 50th late: each runs exactly once, results in order."""
        with picklable.Pool(2) as pool:
            fn = pool_tasks.mark_then_sleep
            results = pool.starmap(fn, [(str(tmp_path), i, 50, 0.3) for i in range(3000)], 1)
            assert results == list(range(3000))
            assert runs(tmp_path) == collections.Counter(range(3000))

    @pytest.mark.parametrize("method", METHODS)
    def test_stopped_and_continued_worker_runs_each_task_once(self, method, tmp_path):
        """A worker stopped and continued from outside, again and again, while 2,000
        short tasks stream: each runs exactly once."""
        with picklable.Pool(2, context=method) as pool:
            pool.starmap(pool_tasks.mark, [(str(tmp_path), -1)] * 20, 1)
            for path in tmp_path.iterdir():
                path.unlink()
            victim = pool._core.workers[0].process.pid
            done = threading.Event()

            def stop_and_continue() -> None:
                while not done.is_set():
                    os.kill(victim, signal.SIGSTOP)
                    time.sleep(0.25)
                    os.kill(victim, signal.SIGCONT)
                    time.sleep(0.05)

            thread = threading.Thread(target=stop_and_continue)
            thread.start()
            try:
                it = pool.imap_unordered(
                    lambda x: pool_tasks.mark(str(tmp_path), x), range(2000), chunksize=1
                )
                results = sorted(it.next(WAIT) for _ in range(2000))
            finally:
                done.set()
                thread.join()
                os.kill(victim, signal.SIGCONT)
            assert results == list(range(2000))
            assert runs(tmp_path) == collections.Counter(range(2000))


class TestTaskTimeout:
    @pytest.mark.parametrize("method", METHODS)
    def test_apply_async_times_out_alone(self, method):
        """The task past its task_timeout fails naming it; its worker is replaced; others run."""
        with picklable.Pool(2, context=method) as pool:
            pids = {w.process.pid for w in pool._core.workers if w is not None}
            hung = pool.apply_async(pool_tasks.sleep_then, ("x", 3600), task_timeout=0.5)
            others = [pool.apply_async(pool_tasks.sleep_then, (i, 0.05)) for i in range(10)]
            with pytest.raises(TaskTimeoutError) as info:
                hung.get(WAIT)
            err = info.value
            assert (err.task, err.timeout, err.count) == ("sleep_then('x', 3600)", 0.5, 1)
            assert err.pid in pids and err.worker_index in (0, 1)
            assert str(err).startswith(
                "Task sleep_then('x', 3600) did not finish within its task_timeout (0.5 s): "
                f"worker {err.worker_index} (pid {err.pid}) was killed and replaced"
            )
            assert isinstance(err, TimeoutError)
            assert [r.get(WAIT) for r in others] == list(range(10))
            assert pool.apply(pool_tasks.pid) != err.pid
            assert pool.apply(pool_tasks.sleep_then, (7, 0.2), task_timeout=5) == 7

    def test_pool_default_and_map(self):
        """The pool's task_timeout applies to each item of a map; math.inf lifts it."""
        with picklable.Pool(2, task_timeout=1) as pool:
            it = pool.imap(lambda i: pool_tasks.sleep_then(i, 30 if i == 3 else 0.01), range(8))
            out: list[object] = []
            for _ in range(8):
                try:
                    out.append(it.next(WAIT))
                except TaskTimeoutError as exc:
                    out.append(exc)
            assert out[:3] + out[4:] == [0, 1, 2, 4, 5, 6, 7]
            assert isinstance(out[3], TaskTimeoutError)
            assert out[3].task.endswith(
                ">(3) (item 3 of imap(TestTaskTimeout.test_pool_default_and_map.<locals>.<lambda>))"
            )
            assert pool.apply(pool_tasks.sleep_then, (1, 1.5), task_timeout=float("inf")) == 1

    def test_chunk_gets_its_items_share(self):
        """A chunk of n items has n times the task_timeout; past it, the chunk fails."""
        with picklable.Pool(1) as pool:
            values = pool.starmap(
                pool_tasks.sleep_then, [(i, 0.3) for i in range(4)], 4, task_timeout=0.5
            )
            assert values == [0, 1, 2, 3]  # 1.2 s for the chunk, under 4 x 0.5 s
            result = pool.starmap_async(
                pool_tasks.sleep_then, [(0, 0.01), (1, 60)], 2, task_timeout=0.5
            )
            with pytest.raises(TaskTimeoutError) as info:
                result.get(WAIT)
            assert info.value.count == 2 and info.value.task.startswith("items 0-1 of starmap_")
            assert "(0.5 s per item, 1 s)" in str(info.value)

    @pytest.mark.parametrize("method", METHODS)
    def test_executor(self, method):
        """schedule() takes a task_timeout; the executor's applies to submit()."""
        with picklable.ProcessPoolExecutor(2, mp_context=method, task_timeout=30) as ex:
            hung = ex.schedule(pool_tasks.sleep_then, ("h",), {"seconds": 3600}, task_timeout=0.5)
            fine = ex.submit(pool_tasks.sleep_then, 1, 0.2)
            with pytest.raises(TaskTimeoutError, match=r"Task sleep_then\('h', seconds=3600\) "):
                hung.result(WAIT)
            assert fine.result(WAIT) == 1
            assert list(ex.map(pool_tasks.identity, range(5), task_timeout=10)) == list(range(5))
        with picklable.ProcessPoolExecutor(1, task_timeout=0.5) as ex:
            with pytest.raises(TaskTimeoutError):
                ex.submit(pool_tasks.sleep_then, 0, 3600).result(WAIT)
            assert ex.submit(pool_tasks.identity, 2).result(WAIT) == 2

    @pytest.mark.parametrize("operation", ["terminate_workers", "kill_workers"])
    def test_force_shutdown(self, operation):
        """terminate_workers() and kill_workers() (Python 3.14's API, on every version):
        the hung tasks' workers stop at once, every future not done fails, named so."""
        ex = picklable.ProcessPoolExecutor(2)
        pids = {ex.submit(pool_tasks.pid).result(WAIT) for _ in range(4)}
        hung = [ex.submit(pool_tasks.sleep_then, i, 3600) for i in range(4)]
        time.sleep(0.5)
        began = time.monotonic()
        getattr(ex, operation)()
        running, waiting = hung[:2], hung[2:]
        for future in running:
            with pytest.raises(picklable.BrokenPoolError, match="forcefully shut down"):
                future.result(WAIT)
        for future in waiting:  # cancelled, as the stdlib's are, or failed with the pool
            with pytest.raises((concurrent.futures.CancelledError, picklable.BrokenPoolError)):
                future.result(WAIT)
        assert time.monotonic() - began < 10
        assert not any(alive(pid) for pid in pids)
        with pytest.raises(RuntimeError):
            ex.submit(pool_tasks.identity, 1)

    @pytest.mark.parametrize("value", [0, -1, "1", True])
    def test_bad_values(self, value):
        """task_timeout must be a positive number of seconds."""
        with pytest.raises((TypeError, ValueError), match="task_timeout"):
            picklable.Pool(1, task_timeout=value)


EXIT_SCRIPT = """
import sys
import time

import picklable
from picklable_testpkg import pool_tasks

if __name__ == "__main__":
    ex = picklable.ProcessPoolExecutor(2, mp_context=sys.argv[1])
    hung = ex.submit(pool_tasks.sleep_then, 0, 3600)
    queued = [ex.submit(pool_tasks.identity, i) for i in range(100)]
    while not hung.running():
        time.sleep(0.01)
    pids = [w.process.pid for w in ex._core.workers if w is not None]
    ex.shutdown(wait=False, cancel_futures=True)
    print(*pids, flush=True)
"""


FINISH_SCRIPT = """
import sys
import time

import picklable


def late(path):
    time.sleep(1.0)
    with open(path, "w") as out:
        out.write("done")


if __name__ == "__main__":
    ex = picklable.ProcessPoolExecutor(2, mp_context=sys.argv[1])
    ex.submit(late, sys.argv[2])
    ex.shutdown(wait=False)
"""


@pytest.mark.parametrize("method", METHODS)
def test_exit_after_shutdown_without_wait_alone_finishes_the_tasks(tmp_path, method):
    """shutdown(wait=False) without cancel_futures: the exit waits for the tasks, as the
    stdlib's does (CPython's gh-83386 test)."""
    script = tmp_path / "script.py"
    script.write_text(FINISH_SCRIPT)
    marker = tmp_path / "pid"
    done = subprocess.run(
        [sys.executable, str(script), method, str(marker)],
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=tmp_path,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert marker.read_text() == "done"


@pytest.mark.parametrize("method", METHODS)
def test_exit_after_shutdown_without_wait(tmp_path, method):
    """After shutdown(wait=False, cancel_futures=True) the interpreter exits within 5 s."""
    script = tmp_path / "script.py"
    script.write_text(EXIT_SCRIPT)
    process = subprocess.Popen(
        [sys.executable, str(script), method],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
        cwd=tmp_path,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        shut = time.monotonic()
        process.wait(30)
        elapsed = time.monotonic() - shut
        assert process.stderr is not None
        assert (process.returncode, process.stderr.read()) == (0, "")
    finally:
        process.kill()
        process.communicate()
    assert elapsed < 5, f"exit took {elapsed:.1f} s after shutdown(wait=False)"
    pids = [int(pid) for pid in line.split()]
    assert len(pids) == 2
    assert not [pid for pid in pids if alive(pid)]


ORPHAN_SCRIPT = """
import sys
import time
from pathlib import Path

import picklable
from picklable_testpkg import pool_tasks

if __name__ == "__main__":
    kind, method, here = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    if kind == "pool":
        pool = picklable.Pool(3, context=method)
        core = pool._core
        pool.apply_async(pool_tasks.write_pid_then_sleep, (str(here / "a"), 3600))
        pool.apply_async(pool_tasks.write_pid_then_spin, (str(here / "b"),))
    else:
        ex = picklable.ProcessPoolExecutor(3, mp_context=method)
        core = ex._core
        ex.submit(pool_tasks.write_pid_then_sleep, str(here / "a"), 3600)
        ex.submit(pool_tasks.write_pid_then_spin, str(here / "b"))
    while not ((here / "a").exists() and (here / "b").exists()):
        time.sleep(0.01)
    pids = [w.process.pid for w in core.workers if w is not None]
    if core.template is not None:
        pids.append(core.template._process.pid)
    print(*pids, flush=True)
    time.sleep(3600)
"""


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for a reaper does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
@pytest.mark.parametrize(
    ("kind", "method", "sig"),
    [("pool", method, signal.SIGKILL) for method in METHODS]
    + [("pool", method, signal.SIGTERM) for method in METHODS]
    + [("executor", "spawn", signal.SIGKILL)],
)
def test_no_orphans_when_the_parent_dies(tmp_path, kind, method, sig):
    """Killed parent: its workers, busy (sleeping, or in C code holding the GIL)
    or idle, and a fork pool's template, are gone within 10 s."""
    script = tmp_path / "script.py"
    script.write_text(ORPHAN_SCRIPT)
    process = subprocess.Popen(
        [sys.executable, str(script), kind, method, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env=child_env(),
        cwd=tmp_path,
    )
    try:
        assert process.stdout is not None
        pids = [int(pid) for pid in process.stdout.readline().split()]
        assert len(pids) == (4 if method == "fork" else 3)
        assert all(alive(pid) for pid in pids)
        process.send_signal(sig)
        process.wait(30)
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        orphans = [pid for pid in pids if alive(pid)]
        assert not orphans, f"{len(orphans)} orphans 10 s after the parent got {sig.name}"
    finally:
        process.kill()
        process.communicate()
        for pid in pids if "pids" in locals() else []:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
