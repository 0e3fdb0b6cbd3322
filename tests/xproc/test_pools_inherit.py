"""What reaches pool workers as with the stdlib (issue 19): objects shared by
inheritance through ``initargs``, Manager proxies anywhere, the arguments a task
released, and the errors in the user's terms.

Every test runs under spawn, forkserver and fork.
"""

from __future__ import annotations

import concurrent.futures
import gc
import multiprocessing
import signal
import threading
import weakref

import pytest

import picklable
from picklable.executors import TaskLoadError
from picklable_testpkg import pool_state, pool_tasks
from support.child import FORK_AMONG_THREADS

METHODS = ["spawn", "forkserver", "fork"]
pytestmark = pytest.mark.filterwarnings(FORK_AMONG_THREADS)
WAIT = 60


@pytest.fixture(params=METHODS)
def method(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def manager():
    with multiprocessing.get_context("spawn").Manager() as m:
        yield m


class TestInheritedObjects:
    def test_sync_objects_in_initargs(self, method):
        """Queue, Lock, Event, Semaphore, Value and Array reach the initializer and work."""
        ctx = multiprocessing.get_context(method)
        shared = (
            ctx.Queue(),
            ctx.Lock(),
            ctx.Event(),
            ctx.Semaphore(2),
            ctx.Value("i", 0),
            ctx.Array("i", 4),
        )
        with picklable.Pool(
            2, initializer=pool_state.keep, initargs=shared, context=method
        ) as pool:
            assert sorted(pool.map(pool_state.use_shared, range(4), chunksize=1)) == [0, 1, 2, 3]
            queue, _, event, _, value, array = shared
            # Read before the pool is terminated: a worker's queue feeder thread may not
            # have flushed yet (a stdlib queue loses what a terminated process did not).
            assert sorted(queue.get(timeout=WAIT) for _ in range(4)) == [
                ("done", i) for i in range(4)
            ]
        assert event.is_set() and value.value == 6 and list(array) == [0, 10, 20, 30]

    def test_queue_in_executor_initargs(self, method):
        """The executor's initializer gets a multiprocessing Queue as well."""
        ctx = multiprocessing.get_context(method)
        queue = ctx.Queue()
        with picklable.ProcessPoolExecutor(
            2, mp_context=method, initializer=lambda q: q.put("ready"), initargs=(queue,)
        ) as ex:
            assert ex.submit(pool_tasks.identity, 1).result(WAIT) == 1
        assert [queue.get(timeout=WAIT) for _ in range(2)] == ["ready", "ready"]

    def test_queue_as_task_argument_says_initargs(self, method):
        """A multiprocessing Queue as a task argument cannot ship; the fix names initargs."""
        queue = multiprocessing.get_context(method).Queue()
        with (
            picklable.Pool(1, context=method) as pool,
            pytest.raises(picklable.PicklingError) as info,
        ):
            pool.apply(pool_tasks.identity, (queue,))
        assert "argument 0 of identity" in str(info.value)
        assert "initargs" in info.value.hint

    def test_fork_context_queue_under_spawn(self):
        """A queue of the fork context cannot reach spawn workers: the error says why."""
        queue = multiprocessing.get_context("fork").Queue()
        with pytest.raises(picklable.PicklingError) as info:
            picklable.Pool(1, initializer=pool_state.keep, initargs=(1, queue))
        assert str(info.value).startswith(
            "Cannot pickle multiprocessing.queues.Queue - at initargs[1]"
        )
        assert "get_context('spawn').Queue()" in info.value.hint


class TestManagerProxies:
    def test_manager_queue_as_task_argument(self, method, manager):
        """A Manager().Queue() proxy as a task argument works in every worker."""
        queue = manager.Queue()
        with picklable.Pool(2, context=method) as pool:
            pool.map(queue.put, range(4))
        assert sorted(queue.get(timeout=WAIT) for _ in range(4)) == [0, 1, 2, 3]

    def test_manager_queue_in_initargs(self, method, manager):
        """A Manager().Queue() proxy in initargs works too."""
        queue = manager.Queue()
        with picklable.ProcessPoolExecutor(
            2, mp_context=method, initializer=pool_state.keep, initargs=(queue,)
        ) as ex:
            ex.submit(pool_state.put_worker_index).result(WAIT)
        assert queue.get(timeout=WAIT) in (0, 1)


class _Tracked:
    """Sets a Manager event when the worker lets go of it."""

    def __init__(self, event):
        self.event = event

    def __del__(self):
        self.event.set()


def _made(x):
    return pool_tasks.CountsLoads()


class TestReferences:
    def test_worker_releases_arguments(self, method, manager):
        """A task's argument is released in the worker once the task is done."""
        event = manager.Event()
        with picklable.ProcessPoolExecutor(1, mp_context=method) as ex:
            assert ex.submit(id, _Tracked(event)).result(WAIT)
            assert event.wait(WAIT)

    def test_executor_map_releases_results(self):
        """executor.map keeps no result once the caller has it."""
        with picklable.ProcessPoolExecutor(1) as ex:
            for result in ex.map(_made, range(3)):
                ref = weakref.ref(result)
                del result
                gc.collect()
                assert ref() is None

    def test_imap_releases_results(self):
        """Pool.imap keeps no result once the caller has it."""
        with picklable.Pool(1) as pool:
            for result in pool.imap(_made, range(3)):
                ref = weakref.ref(result)
                del result
                gc.collect()
                assert ref() is None


class _ExitAtUnpickle:
    def __reduce__(self):
        return (exit, (3,))


class TestUserTerms:
    def test_map_item_index(self, method):
        """An unshippable item is named by its index in the map, not a payload path."""
        with (
            picklable.Pool(1, context=method) as pool,
            pytest.raises(picklable.PicklingError) as info,
        ):
            pool.map(pool_tasks.identity, [1, {"c": threading.Lock()}], chunksize=2)
        assert info.value.path == "item 1 of map(identity)['c']"
        assert str(info.value).startswith(
            "Cannot pickle _thread.lock - at item 1 of map(identity)['c']"
        )

    def test_starmap_and_keyword_arguments(self, method):
        """starmap items and keyword arguments are named the same way."""
        lock = threading.Lock()
        with picklable.Pool(1, context=method) as pool:
            with pytest.raises(picklable.PicklingError) as info:
                pool.starmap(max, [(1, 2), (3, lock)])
            assert info.value.path == "item 1 of starmap(max)[1]"
            with pytest.raises(picklable.PicklingError) as info:
                pool.apply(pool_tasks.identity, (1,), {"x": lock})
            assert info.value.path == "keyword argument 'x' of identity"

    def test_result_that_cannot_ship_has_its_own_fix(self, method):
        """A result that cannot ship back is said as the result, with a fix for results."""
        with (
            picklable.Pool(1, context=method) as pool,
            pytest.raises(picklable.PicklingError) as info,
        ):
            pool.apply(pool_tasks.return_lock)
        err = info.value
        assert (
            err.path == "the result of return_lock()['lock']" and "results travel back" in err.hint
        )
        assert "pool initializer" not in str(err)

    def test_task_that_cannot_load_in_the_worker(self, method):
        """SystemExit while loading a task: that task fails with TaskLoadError (a BrokenProcessPool)."""
        with picklable.ProcessPoolExecutor(1, mp_context=method) as ex:
            with pytest.raises(TaskLoadError) as info:
                ex.submit(id, _ExitAtUnpickle()).result(WAIT)
            assert isinstance(info.value, concurrent.futures.process.BrokenProcessPool)
            assert isinstance(info.value, picklable.UnpicklingError)
            text = str(info.value)
            assert text.startswith("Task id(<") and text.endswith(
                ">) could not start: its arguments failed to load in the worker: SystemExit: 3"
            )
            assert type(info.value.__cause__) is SystemExit
            assert ex.submit(pool_tasks.identity, 2).result(WAIT) == 2

    def test_result_that_cannot_load_in_the_parent(self, method):
        """SystemExit while loading a result fails that task at once, not the pool."""
        with picklable.ProcessPoolExecutor(1, mp_context=method) as ex:
            with pytest.raises(TaskLoadError) as info:
                ex.submit(_ExitAtUnpickle).result(WAIT)
            assert info.value.where == "parent"
            assert "could not be loaded in the parent: SystemExit: 3" in str(info.value)
            assert ex.submit(pool_tasks.identity, 2).result(WAIT) == 2

    def test_public_names(self):
        """Errors show their public names, and the signal is a signal.Signals."""
        assert picklable.RemoteError.__module__ == "picklable"
        assert picklable.WorkerDiedError.__module__ == "picklable"
        assert TaskLoadError.__module__ == "picklable.executors"
        err = picklable.WorkerDiedError("t()", -signal.SIGKILL)
        assert err.signal == signal.SIGKILL and err.signal is signal.Signals.SIGKILL
        assert picklable.WorkerDiedError("t()", 3).signal is None

    def test_remote_traceback_tb(self):
        """The cause of a task's exception has .tb, the stdlib's attribute."""
        with picklable.Pool(1) as pool, pytest.raises(ZeroDivisionError) as info:
            pool.apply(lambda: 1 / 0)
        cause = info.value.__cause__
        assert isinstance(cause, picklable.RemoteTraceback)
        assert cause.tb.startswith('\n"""\nTraceback') and "ZeroDivisionError" in cause.tb


class TestStdlibSemantics:
    def test_imap_error_replaces_its_chunk(self):
        """imap(chunksize=2): the error of the iterable takes the place of its chunk."""

        def items():
            yield from range(7)
            raise KeyError("stop")

        with picklable.Pool(1) as pool:
            it = pool.imap(pool_tasks.identity, items(), chunksize=2)
            assert [next(it) for _ in range(6)] == list(range(6))
            with pytest.raises(KeyError):
                next(it)

    def test_unclosed_running_pool_warns(self):
        """A running Pool collected without close() or terminate() warns, as multiprocessing's."""
        pools = [picklable.Pool(1)]
        with pytest.warns(ResourceWarning, match="unclosed running multiprocessing pool"):
            pools.clear()

    def test_pool_process_makes_fork_workers(self):
        """Pool.Process is what fork and forkserver workers are made with (a subclass may override)."""
        made = []

        class Recording(picklable.Pool):
            @staticmethod
            def Process(ctx, *args, **kwds):  # the stdlib's name
                made.append(kwds["name"])
                return ctx.Process(*args, **kwds)

        with Recording(2, context="fork") as pool:
            assert pool.apply(pool_tasks.identity, (5,)) == 5
        assert made == ["picklable.Pool-worker-0", "picklable.Pool-worker-1"]
        assert picklable.Pool.Process(multiprocessing.get_context("spawn")).name.startswith(
            "SpawnProcess"
        )
