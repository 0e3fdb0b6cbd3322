"""picklable.Pool and picklable.ProcessPoolExecutor with real workers (issue 6).

Every test runs under the three start methods (spawn, forkserver, fork): the
module-scoped fixtures are parametrized, so each method gets one pool and one
executor for the whole module. Tasks that must be importable in the workers
live in ``picklable_testpkg.pool_tasks``; lambdas and local classes here travel
by value on purpose.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures.process import BrokenProcessPool

import pytest

import picklable
from picklable import BrokenPoolError, RemoteError, RemoteTraceback, WorkerDiedError
from picklable_testpkg import api, errors, pool_tasks
from support.child import FORK_AMONG_THREADS

METHODS = ["spawn", "forkserver", "fork"]
pytestmark = pytest.mark.filterwarnings(FORK_AMONG_THREADS)
# Generous: a loaded 2-core machine starts a spawn worker in well under a second.
WAIT = 60


@pytest.fixture(scope="module", params=METHODS)
def method(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def pool(method: str):
    with picklable.Pool(2, context=method) as p:
        yield p


@pytest.fixture(scope="module")
def executor(method: str):
    with picklable.ProcessPoolExecutor(2, mp_context=method) as ex:
        yield ex


def worker_pids(pool: picklable.Pool) -> set[int]:
    return {w.process.pid for w in pool._core.workers if w is not None}


def wait_for(predicate, timeout: float = WAIT) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "condition not reached"
        time.sleep(0.01)


# ----------------------------------------------------------------- the API


class TestPoolAPI:
    def test_map_lambda(self, pool):
        """A lambda ships and maps in order."""
        assert pool.map(lambda x: x * 3, range(10)) == [x * 3 for x in range(10)]

    def test_map_closure_and_decorated(self, pool):
        """A closure over a local and functions decorated without wraps ship."""
        offset = 7
        assert pool.map(lambda x: x + offset, [1, 2]) == [8, 9]
        assert pool.starmap(api.add, [(1, 2), (3, 4)]) == [3, 7]
        assert pool.map(api.counted_square, [3]) == [9]

    @pytest.mark.parametrize("chunksize", [1, 3, 100])
    def test_map_chunksize_keeps_order(self, pool, chunksize):
        """Chunks of any size come back in input order."""
        assert pool.map(str, range(50), chunksize=chunksize) == [str(x) for x in range(50)]

    def test_starmap(self, pool):
        """starmap unpacks each tuple into arguments."""
        assert pool.starmap(lambda a, b: a - b, [(5, 1), (9, 3)]) == [4, 6]

    def test_imap_reads_a_generator_in_order(self, pool):
        """imap consumes a generator and yields in input order."""
        gen = (x for x in range(30))
        assert list(pool.imap(lambda x: x * x, gen, chunksize=4)) == [x * x for x in range(30)]

    def test_imap_unordered_yields_every_item(self, pool):
        """imap_unordered yields each result exactly once."""
        assert sorted(pool.imap_unordered(lambda x: -x, iter(range(40)))) == sorted(
            -x for x in range(40)
        )

    def test_imap_generator_error_raised_in_place(self, pool):
        """An exception from the input iterable is raised where it happened."""

        def items():
            yield 1
            yield 2
            raise KeyError("input broke")

        it = pool.imap(lambda x: x, items())
        assert [next(it), next(it)] == [1, 2]
        with pytest.raises(KeyError, match="input broke"):
            next(it)
        with pytest.raises(StopIteration):
            next(it)

    def test_imap_next_timeout(self, pool):
        """next(timeout) raises multiprocessing.TimeoutError for a slow item."""
        it = pool.imap(lambda x: pool_tasks.sleep_then(x, 0.5), [1])
        with pytest.raises(multiprocessing.TimeoutError):
            it.next(timeout=0.01)
        assert it.next(timeout=WAIT) == 1

    def test_apply_with_kwargs(self, pool):
        """apply passes positional and keyword arguments."""
        assert pool.apply(lambda a, *, b: (a, b), (1,), {"b": 2}) == (1, 2)

    def test_apply_async_callback(self, pool):
        """callback gets the value; error_callback gets the exception."""
        got: list[object] = []
        done = threading.Event()

        def on_value(value):
            got.append(value)

        def on_error(exc):
            got.append(type(exc))
            done.set()

        assert pool.apply_async(lambda: 5, callback=on_value).get(WAIT) == 5
        pool.apply_async(lambda: 1 / 0, error_callback=on_error)
        assert done.wait(WAIT)
        assert got == [5, ZeroDivisionError]

    def test_map_async_get_and_ready(self, pool):
        """map_async returns a MapResult with get, ready and successful."""
        result = pool.map_async(lambda x: x + 1, [1, 2, 3])
        assert result.get(WAIT) == [2, 3, 4]
        assert result.ready() and result.successful()

    def test_map_raises_an_item_error(self, pool):
        """map raises the exception of a failed item."""
        with pytest.raises(ZeroDivisionError):
            pool.map(lambda x: 1 / x, [1, 0, 2])

    def test_map_unpicklable_argument(self, pool):
        """An argument whose __reduce__ raises: that exception's type, no hang (as the
        stdlib Pool's test_map_unplicklable expects), and the pool goes on."""

        class Refuses:
            def __reduce__(self):
                raise RuntimeError("cannot pickle")

        with pytest.raises(RuntimeError, match="cannot pickle") as info:
            pool.map(lambda x: x, [Refuses()] * 10)
        assert isinstance(info.value, picklable.PicklingError)
        assert pool.map(lambda x: x * x, [1, 2]) == [1, 4]

    def test_large_payloads_both_ways(self, pool):
        """Arguments and results far larger than socket buffers, many at once, never deadlock."""
        blobs = [bytes([i]) * 8_000_000 for i in range(4)]
        out = pool.map(lambda b: b[:1] * len(b), blobs, chunksize=1)
        assert [(len(b), b[0]) for b in out] == [(8_000_000, i) for i in range(4)]

    def test_empty_map(self, pool):
        """An empty iterable gives an empty list."""
        assert pool.map(lambda x: x, []) == []
        assert list(pool.imap(lambda x: x, iter([]))) == []

    def test_function_loaded_once_per_worker(self, pool):
        """The function of a map is loaded once per worker, not once per task."""
        counter = pool_tasks.CountsLoads()
        results = pool.map(counter, range(60), chunksize=1)
        loads_by_pid: dict[int, set[int]] = {}
        for worker_pid, loads in results:
            loads_by_pid.setdefault(worker_pid, set()).add(loads)
        first = {pid: min(seen) for pid, seen in loads_by_pid.items()}
        assert all(seen == {first[pid]} for pid, seen in loads_by_pid.items())

    def test_local_class_comes_back_as_itself(self, pool):
        """Instances of a local class (by value) come back as that same class."""

        class Point:
            def __init__(self, x):
                self.x = x

        out = pool.map(lambda x: Point(x * 2), [1, 2])
        assert all(type(p) is Point for p in out)
        assert [p.x for p in out] == [2, 4]

    def test_progress_bar(self, pool, capsys):
        """progress=True draws a bar on stderr that ends at 100%."""
        assert pool.map(lambda x: x, range(20), chunksize=1, progress=True) == list(range(20))
        err = capsys.readouterr().err
        assert "map(" in err and "100%" in err and "20/20" in err

    def test_worker_index_inside_tasks(self, pool):
        """worker_index() is the worker's slot in tasks, None in the parent."""
        indexes = {pool.apply(picklable.worker_index) for _ in range(20)}
        assert indexes <= {0, 1} and indexes
        assert picklable.worker_index() is None


# -------------------------------------------------------------- worker death


DEATHS = {
    "exit": (3, None),
    "kill": (-signal.SIGKILL, signal.SIGKILL),
    "segv": (-signal.SIGSEGV, signal.SIGSEGV),
    "term": (-signal.SIGTERM, signal.SIGTERM),
    "abort": (-signal.SIGABRT, signal.SIGABRT),
}


class TestWorkerDeath:
    @pytest.mark.parametrize("how", sorted(DEATHS))
    def test_dying_task_fails_alone(self, pool, how):
        """The task whose worker dies fails naming it and the exit; the others complete."""
        others = [pool.apply_async(pool_tasks.sleep_then, (i, 0.01)) for i in range(6)]
        doomed = pool.apply_async(pool_tasks.die, (how,))
        more = [pool.apply_async(lambda i=i: i * 10) for i in range(6)]
        with pytest.raises(WorkerDiedError) as info:
            doomed.get(WAIT)
        exitcode, name = DEATHS[how]
        err = info.value
        assert (err.exitcode, err.signal, err.task) == (exitcode, name, f"die({how!r})")
        assert f"task die({how!r})" in str(err) and "retries=N" in str(err)
        assert isinstance(err, BrokenProcessPool)
        assert [r.get(WAIT) for r in others] == list(range(6))
        assert [r.get(WAIT) for r in more] == [i * 10 for i in range(6)]
        assert pool.apply(lambda: "still working") == "still working"

    def test_killed_from_outside(self, pool, tmp_path):
        """SIGKILL from outside (what the OOM killer sends) fails that task only."""
        marker = tmp_path / "pid"
        doomed = pool.apply_async(pool_tasks.write_pid_then_sleep, (str(marker), 30))
        wait_for(lambda: marker.exists() and marker.read_text())
        os.kill(int(marker.read_text()), signal.SIGKILL)
        with pytest.raises(WorkerDiedError) as info:
            doomed.get(WAIT)
        assert info.value.signal == signal.SIGKILL and "OOM killer" in str(info.value)
        assert "write_pid_then_sleep(" in info.value.task
        assert pool.map(lambda x: x, range(4)) == [0, 1, 2, 3]

    def test_replacement_takes_the_index(self, pool):
        """A dead worker is replaced by a new process under the same index."""
        before = worker_pids(pool)
        with pytest.raises(WorkerDiedError) as info:
            pool.apply(pool_tasks.die, ("exit",))
        dead_index = info.value.worker_index
        wait_for(lambda: pool._core.workers[dead_index] is not None)
        after = worker_pids(pool)
        assert len(after) == 2 and info.value.pid in before and info.value.pid not in after
        assert {pool.apply(picklable.worker_index) for _ in range(20)} <= {0, 1}

    def test_death_in_a_chunk_fails_that_chunk(self, pool):
        """With chunks, the items of the chunk that was running fail; the rest complete."""
        out = []
        for_items = pool.imap(
            lambda x: pool_tasks.die_if(x, frozenset({5})), range(12), chunksize=4
        )
        while True:
            try:
                out.append(next(for_items))
            except WorkerDiedError as exc:
                out.append(exc)
            except StopIteration:
                break
        assert out[:4] == [0, 1, 2, 3] and out[8:] == [8, 9, 10, 11]
        assert all(isinstance(e, WorkerDiedError) for e in out[4:8])
        assert out[4].task.startswith("items 4-7 of imap(")

    def test_ten_thousand_tasks_none_lost(self, pool):
        """10,000 tasks while two workers die: each ends in its result or its error."""
        bad = frozenset({2500, 7500})
        outcomes: list[object] = []
        it = pool.imap(lambda x: pool_tasks.die_if(x, bad), range(10_000))
        for _ in range(10_000):
            try:
                outcomes.append(it.next(WAIT))
            except WorkerDiedError as exc:
                outcomes.append(exc)
        with pytest.raises(StopIteration):
            next(it)
        assert [i for i, o in enumerate(outcomes) if isinstance(o, WorkerDiedError)] == sorted(bad)
        assert all(o == i for i, o in enumerate(outcomes) if i not in bad)

    def test_retries_run_again_on_a_fresh_worker(self, method, tmp_path):
        """retries=1: a task whose worker died runs again and succeeds."""
        with picklable.Pool(2, context=method, retries=1) as pool:
            assert pool.apply(pool_tasks.die_once, (str(tmp_path / "m"), 42)) == 42
            assert pool.map(lambda x: pool_tasks.die_once(str(tmp_path / "n"), x), [7]) == [7]
            with pytest.raises(WorkerDiedError) as info:
                pool.apply(pool_tasks.die, ("exit",))
            assert info.value.attempts == 2 and "on each of 2 attempts" in str(info.value)


# ---------------------------------------------------------------- exceptions


_raise = pool_tasks.raise_from


class TestExceptions:
    @pytest.mark.parametrize(
        ("factory", "check"),
        [
            (lambda: errors.KwOnlyError("bad", code=2), lambda e: e.code == 2),
            (
                lambda: errors.ExtraArgsError("a.toml", 3, "oops"),
                lambda e: (e.path, e.line) == ("a.toml", 3),
            ),
            (lambda: errors.SlottedError([1], "h"), lambda e: (e.detail, e.hidden) == ([1], "h")),
            (lambda: errors.FrozenError("f", field="x"), lambda e: e.field == "x"),
            (
                lambda: errors.MissingConfigError("/x.toml", hint="make it"),
                lambda e: e.filename == "/x.toml",
            ),
            (lambda: errors.OwnReduceError(1, b=2), lambda e: (e.a, e.b) == (1, 2)),
        ],
        ids=["kw_only", "extra_args", "slots", "frozen", "oserror", "own_reduce"],
    )
    def test_hard_exception_kinds_keep_type_and_attributes(self, pool, factory, check):
        """Exceptions pickle cannot rebuild arrive with their type and attributes."""
        expected = type(factory())
        with pytest.raises(expected) as info:
            pool.apply(_raise, (factory,))
        assert type(info.value) is expected
        assert check(info.value)
        assert isinstance(info.value.__cause__, RemoteTraceback)

    def test_remote_traceback_text(self, pool):
        """The worker's traceback text is the __cause__, as in concurrent.futures."""
        with pytest.raises(errors.KwOnlyError) as info:
            pool.apply(_raise, (lambda: errors.KwOnlyError("x", code=1),))
        text = str(info.value.__cause__)
        assert "Traceback (most recent call last)" in text and "in raise_from" in text
        assert "KwOnlyError: x" in text
        assert "_serve" not in text  # the worker loop's frame is left out

    def test_exception_chain_survives(self, pool):
        """A raised-from chain: the text shows both, the rebuilt cause stays reachable."""

        def chained():
            try:
                raise KeyError("inner")
            except KeyError as exc:
                raise errors.KwOnlyError("outer", code=9) from exc

        with pytest.raises(errors.KwOnlyError) as info:
            pool.apply(chained)
        remote = info.value.__cause__
        assert isinstance(remote, RemoteTraceback)
        assert "KeyError: 'inner'" in remote.text
        assert isinstance(remote.cause, KeyError)

    def test_exception_group(self, pool):
        """An ExceptionGroup subclass with a keyword-only argument arrives whole."""
        with pytest.raises(errors.StagedGroup) as info:
            pool.apply(_raise, (errors.fail_group,))
        assert info.value.stage == "init" and len(info.value.exceptions) == 3

    def test_local_exception_class(self, pool):
        """An exception class defined in a function (by value) is caught by its class."""

        class LocalError(Exception):
            def __init__(self, *, why):
                super().__init__(why)
                self.why = why

        def fail():
            raise LocalError(why="local")

        with pytest.raises(LocalError) as info:
            pool.apply(fail)
        assert info.value.why == "local"

    def test_unshippable_exception_is_a_clear_error(self, pool):
        """An exception holding a lock comes back as RemoteError saying why."""

        def fail():
            exc = ValueError("has a lock")
            exc.lock = threading.Lock()
            raise exc

        with pytest.raises(RemoteError) as info:
            pool.apply(fail)
        err = info.value
        assert err.type_name == "ValueError" and err.message == "has a lock"
        assert "lock" in err.reason
        assert (
            isinstance(err.__cause__, RemoteTraceback)
            and "ValueError: has a lock" in err.remote_traceback
        )
        assert pool.apply(lambda: 1) == 1

    def test_exception_with_broken_str(self, pool):
        """An exception whose __str__ raises still arrives."""

        class Ugly(Exception):
            def __str__(self):
                raise RuntimeError("no str")

        with pytest.raises(Ugly):
            pool.apply(_raise, (Ugly,))

    def test_system_exit_in_a_task(self, pool):
        """sys.exit() in a task is that task's error; the worker stays."""
        with pytest.raises(SystemExit) as info:
            pool.apply(lambda: __import__("sys").exit(4))
        assert info.value.code == 4
        assert pool.apply(lambda: 2) == 2

    def test_unpicklable_result_fails_that_item(self, pool):
        """A result that cannot ship fails its own item, naming the culprit."""
        it = pool.imap(lambda x: pool_tasks.return_lock() if x == 1 else x, range(3))
        assert next(it) == 0
        with pytest.raises(picklable.PicklingError) as info:
            next(it)
        assert "lock" in str(info.value)
        assert next(it) == 2

    def test_unpicklable_argument_fails_that_item(self, pool):
        """An argument that cannot ship fails its own item; the others run."""
        it = pool.imap(lambda x: x, [1, threading.Lock(), 3])
        assert next(it) == 1
        with pytest.raises(picklable.PicklingError):
            next(it)
        assert next(it) == 3
        result = pool.apply_async(lambda x: x, (threading.Lock(),))
        with pytest.raises(picklable.PicklingError):
            result.get(WAIT)

    def test_argument_that_cannot_load_in_the_worker(self, pool):
        """A payload that fails to load in the worker fails that task."""
        with pytest.raises(picklable.UnpicklingError) as info:
            pool.apply(pool_tasks.identity, (pool_tasks.ParentOnly(),))
        assert "cannot be loaded in a worker" in str(info.value)

    def test_result_that_cannot_load_in_the_parent(self, pool):
        """A result that fails to load here fails its task, naming it."""
        with pytest.raises(picklable.UnpicklingError) as info:
            pool.apply(pool_tasks.make_worker_only, (1,))
        assert "make_worker_only(1)" in str(info.value)
        assert pool.apply(lambda: 3) == 3

    def test_unpicklable_function(self, pool):
        """A function that cannot ship fails the call with PicklingError."""
        lock = threading.Lock()
        with pytest.raises(picklable.PicklingError):
            pool.apply(lambda: lock)
        with pytest.raises(picklable.PicklingError):
            pool.map(lambda x: lock, [1, 2])


# ---------------------------------------------------------------- life cycle


class TestLifecycle:
    def test_initializer_learns_worker_index(self, method):
        """The initializer sees worker_index(); a replacement takes the same index."""
        with picklable.Pool(
            2, initializer=pool_tasks.remember_index, initargs=(100,), context=method
        ) as pool:
            seen = {pool.apply(pool_tasks.init_index) for _ in range(30)}
            assert seen <= {100, 101} and seen
            with pytest.raises(WorkerDiedError) as info:
                pool.apply(pool_tasks.die, ("exit",))
            index = info.value.worker_index
            wait_for(
                lambda: pool._core.workers[index] is not None and pool._core.workers[index].ready
            )
            pairs = {pool.apply(pool_tasks.index_and_pid)[0] for _ in range(30)}
            assert pairs <= {0, 1}
            assert {pool.apply(pool_tasks.init_index) for _ in range(30)} <= {100, 101}

    def test_a_worker_still_starting_gets_no_task(self, method):
        """A map is done by the workers that are ready; one still in its initializer
        is handed nothing to wait on (issue 18: spawn workers start ~0.1 s apart)."""
        pool = picklable.Pool(
            2, initializer=pool_tasks.slow_start_for, initargs=(1, 30.0), context=method
        )
        try:
            done_by = {index for index, _ in pool.map(pool_tasks.index_and_pid, range(8))}
            assert done_by == {0}
            assert not pool._core.workers[1].ready
        finally:
            pool.terminate()
            pool.join()

    def test_cancel_futures_keeps_the_task_each_starting_worker_holds(self, method):
        """shutdown(cancel_futures=True) while the workers start: each holds one task,
        which runs (the stdlib's call queue holds one per worker too); the rest are
        cancelled."""
        executor = picklable.ProcessPoolExecutor(
            2, mp_context=method, initializer=pool_tasks.slow_start_for, initargs=(None, 2.0)
        )
        futures = [executor.submit(pool_tasks.identity, i) for i in range(10)]
        executor.shutdown(cancel_futures=True)
        ran = [f.result() for f in futures if not f.cancelled()]
        assert len(ran) == 2 and set(ran) <= set(range(10))

    def test_initializer_exception_breaks_the_pool(self, method):
        """An initializer that raises fails every task with BrokenPoolError (cause: its error)."""
        with picklable.Pool(2, initializer=pool_tasks.failing_init, context=method) as pool:
            # Raised by get(), or by apply_async() itself once the pool knows.
            with pytest.raises(BrokenPoolError) as info:
                pool.apply_async(pool_tasks.identity, (1,)).get(WAIT)
            assert isinstance(info.value.__cause__, errors.KwOnlyError)
            assert info.value.__cause__.code == 5
            with pytest.raises(BrokenPoolError):
                pool.apply(pool_tasks.identity, (1,))

    def test_initializer_that_exits_breaks_the_pool(self, method):
        """Workers that die before they are ready break the pool instead of looping."""
        with picklable.Pool(1, initializer=pool_tasks.exiting_init, context=method) as pool:
            with pytest.raises(BrokenPoolError) as info:
                pool.apply_async(pool_tasks.identity, (1,)).get(WAIT)
            assert "before they were ready" in str(info.value) and "code 4" in str(info.value)

    def test_maxtasksperchild(self, method):
        """Workers are replaced after maxtasksperchild tasks; nothing is lost."""
        with picklable.Pool(2, maxtasksperchild=2, context=method) as pool:
            pids = pool.map(pool_tasks.pid, range(12), chunksize=1)
            assert len(set(pids)) >= 6
            assert pool.map(lambda x: x, range(5)) == list(range(5))

    def test_close_then_join_finishes_queued_work(self, method):
        """close() lets queued tasks finish; join() waits; new tasks are refused."""
        pool = picklable.Pool(2, context=method)
        results = [pool.apply_async(pool_tasks.sleep_then, (i, 0.02)) for i in range(8)]
        with pytest.raises(ValueError, match="still running"):
            pool.join()
        pool.close()
        with pytest.raises(ValueError, match="Pool not running"):
            pool.apply_async(pool_tasks.identity, (1,))
        pool.join(WAIT)
        assert [r.get(0) for r in results] == list(range(8))
        assert not pool._core.thread.is_alive()

    def test_terminate_fails_unfinished_tasks(self, method):
        """terminate() stops the workers now; unfinished tasks fail, none hangs."""
        pool = picklable.Pool(1, context=method)
        running = pool.apply_async(pool_tasks.sleep_then, (1, 30))
        queued = pool.apply_async(pool_tasks.identity, (2,))
        pool.terminate()
        for result in (running, queued):
            with pytest.raises(BrokenPoolError, match="terminated"):
                result.get(WAIT)
        pool.join()

    def test_context_object(self, method):
        """A multiprocessing context selects the start method."""
        with picklable.Pool(1, context=multiprocessing.get_context(method)) as pool:
            assert pool._core.method == method
            assert pool.apply(lambda: "ok") == "ok"


class TestCodecHook:
    def test_every_payload_goes_through_the_codec(self, method, monkeypatch):
        """A pool's codec sees every payload both ways (the hook for signing)."""
        from picklable._pool import _protocol

        monkeypatch.setattr(_protocol, "Codec", pool_tasks.TaggingCodec)
        before = pool_tasks.TaggingCodec.calls
        with picklable.Pool(
            2, initializer=pool_tasks.remember_index, initargs=(0,), context=method
        ) as pool:
            assert pool.map(lambda x: x + 1, range(10), chunksize=2) == list(range(1, 11))
            with pytest.raises(errors.KwOnlyError):
                pool.apply(_raise, (lambda: errors.KwOnlyError("tagged", code=1),))
            assert pool.apply(pool_tasks.codec_calls) > 0  # the worker decoded with it
        assert pool_tasks.TaggingCodec.calls - before >= 10


# ------------------------------------------------------------------ executor


class TestExecutor:
    def test_submit(self, executor):
        """submit ships a lambda with positional and keyword arguments."""
        assert executor.submit(lambda a, b=0: a + b, 1, b=2).result(WAIT) == 3

    def test_map_chunksize_order(self, executor):
        """map zips iterables and keeps order whatever the chunksize."""
        assert list(executor.map(lambda a, b: a * b, range(20), range(20), chunksize=3)) == [
            x * x for x in range(20)
        ]

    def test_map_buffersize_reads_as_it_yields(self, executor):
        """map(buffersize=n), Python 3.14's, on every version: an endless iterable,
        read no more than n items ahead of the caller; bad sizes refused as the
        stdlib refuses them."""
        read = []

        def endless():
            for n in itertools.count():
                read.append(n)
                yield n

        results = executor.map(lambda x: x * 10, endless(), buffersize=3)
        assert [next(results) for _ in range(5)] == [0, 10, 20, 30, 40]
        assert len(read) <= 5 + 3
        results.close()
        assert list(executor.map(lambda a, b: a + b, [1, 2], [3], buffersize=1)) == [4]
        with pytest.raises(ValueError, match="buffersize must be None or > 0"):
            executor.map(str, [1], buffersize=0)
        with pytest.raises(TypeError, match="buffersize must be an integer or None"):
            executor.map(str, [1], buffersize=2.0)

    def test_map_timeout(self, executor):
        """map's timeout counts from the call; next() raises TimeoutError."""
        results = executor.map(lambda x: pool_tasks.sleep_then(x, 2), [1], timeout=0.05)
        with pytest.raises(concurrent.futures.TimeoutError):
            next(results)

    def test_exception_on_the_future(self, executor):
        """A task's exception is the future's, with the remote traceback."""
        future = executor.submit(_raise, lambda: errors.KwOnlyError("f", code=3))
        exc = future.exception(WAIT)
        assert isinstance(exc, errors.KwOnlyError) and exc.code == 3
        assert isinstance(exc.__cause__, RemoteTraceback)

    def test_death_fails_one_future(self, executor):
        """A dead worker fails its future only (BrokenProcessPool), the rest complete."""
        futures = [executor.submit(pool_tasks.sleep_then, i, 0.01) for i in range(4)]
        doomed = executor.submit(pool_tasks.die, "kill")
        futures += [executor.submit(pool_tasks.identity, i) for i in range(4, 8)]
        with pytest.raises(BrokenProcessPool) as info:
            doomed.result(WAIT)
        assert isinstance(info.value, WorkerDiedError) and info.value.signal == signal.SIGKILL
        assert [f.result(WAIT) for f in futures] == list(range(8))
        assert executor.submit(lambda: "alive").result(WAIT) == "alive"

    def test_progress(self, executor, capsys):
        """progress=True on map draws the bar."""
        assert list(executor.map(lambda x: x, range(5), progress=True)) == list(range(5))
        assert "5/5" in capsys.readouterr().err

    def test_shutdown_cancel_futures(self, method):
        """shutdown(cancel_futures=True) cancels what has not started."""
        ex = picklable.ProcessPoolExecutor(1, mp_context=method)
        first = ex.submit(pool_tasks.sleep_then, 1, 1.5)
        wait_for(first.running)
        rest = [ex.submit(pool_tasks.identity, i) for i in range(5)]
        ex.shutdown(wait=True, cancel_futures=True)
        assert first.result(0) == 1
        assert all(f.cancelled() for f in rest)
        with pytest.raises(RuntimeError, match="after shutdown"):
            ex.submit(pool_tasks.identity, 1)

    def test_initializer_failure_breaks_the_executor(self, method):
        """A failing initializer fails futures with BrokenProcessPool."""
        with picklable.ProcessPoolExecutor(
            1, mp_context=method, initializer=pool_tasks.failing_init
        ) as ex:
            with pytest.raises(BrokenProcessPool):
                ex.submit(pool_tasks.identity, 1).result(WAIT)
            with pytest.raises(BrokenProcessPool):
                ex.submit(pool_tasks.identity, 1)

    def test_max_tasks_per_child(self, method):
        """max_tasks_per_child replaces workers; results are complete; not with fork (stdlib)."""
        if method == "fork":
            with pytest.raises(ValueError, match="incompatible with the 'fork' start method"):
                picklable.ProcessPoolExecutor(1, mp_context=method, max_tasks_per_child=1)
            return
        with picklable.ProcessPoolExecutor(1, mp_context=method, max_tasks_per_child=1) as ex:
            pids = [ex.submit(pool_tasks.pid).result(WAIT) for _ in range(3)]
            assert len(set(pids)) == 3


def test_workers_do_not_import_the_test_module(pool, method):
    """Lambdas of this module travel by value: spawned workers never import it."""
    name = __name__
    assert pool.apply(lambda: name in __import__("sys").modules) is (method == "fork")


def test_fork_pool_without_its_template_says_so():
    """A fork pool whose template was killed cannot replace a dead worker: the next
    task fails with BrokenPoolError saying why, and nothing hangs."""
    with picklable.Pool(1, context="fork") as pool:
        template = pool._core.template._process
        os.kill(template.pid, signal.SIGKILL)
        template.join(WAIT)
        with pytest.raises(WorkerDiedError):
            pool.apply(pool_tasks.die, ("exit",))
        with pytest.raises(BrokenPoolError, match=r"replace worker 0: .*fork template .* is gone"):
            pool.apply(pool_tasks.identity, (1,))
