"""picklable.dask on a real LocalCluster: 2 worker processes, tasks shipped through picklable.

One cluster for the module (about a second to start). Each test shows what plain
Dask does with the same object where it matters: for wrapt-wrapped functions it
silently drops the wrapper, for factory-made methods it hands the worker a copy.
The sacred test runs a real ``__main__`` script that connects to this cluster.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import sysconfig
import textwrap
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import dask
import distributed
import pytest

import picklable
import picklable.dask as pdask
from picklable._code import interpreter_record as _interpreter_record
from picklable_testpkg import api, wrapped
from picklable_testpkg.errors import FrozenError, KwOnlyError
from picklable_testpkg.wrapped import tagged
from support import dask_tasks, sacred_runs
from support.child import child_env, run_script
from support.engines import local_cluster


def start_cluster() -> distributed.LocalCluster:
    """The module's cluster: two worker processes, one thread each, on free ports."""
    return local_cluster(n_workers=2, threads_per_worker=1, processes=True)


@pytest.fixture(scope="module")
def cluster() -> Iterator[distributed.LocalCluster]:
    with start_cluster() as running:
        yield running


@pytest.fixture(scope="module")
def client(cluster: distributed.LocalCluster) -> Iterator[distributed.Client]:
    with distributed.Client(cluster) as connected:
        connected.wait_for_workers(2)
        yield connected


@pytest.fixture(scope="module")
def workers(client: distributed.Client) -> list[str]:
    return sorted(client.scheduler_info()["workers"])


class TestSubmit:
    """picklable.dask.submit: functions Dask cannot ship exactly."""

    def test_lambda_and_closure(self, client):
        """A lambda and a closure over a local object run on a worker."""
        offset = {"by": 40}
        assert pdask.submit(client, lambda x: x + offset["by"], 2).result() == 42

    def test_runs_on_worker_processes(self, client, workers):
        """Tasks run in the worker processes, not in the test process."""
        pids = {
            pdask.submit(client, dask_tasks.pid, workers=[w], pure=False).result() for w in workers
        }
        assert len(pids) == 2 and os.getpid() not in pids

    def test_local_wrapt_function_keeps_its_wrapper(self, client):
        """A wrapt-decorated local function runs its wrapper on the worker; plain Dask drops it."""

        @tagged
        def double(x):
            return 2 * x

        assert pdask.submit(client, double, 4).result() == ("tagged", 8)
        # Plain Dask: pickle refuses the proxy, cloudpickle copies the inner function.
        assert client.submit(double, 4).result() == 8

    def test_module_object_proxy_keeps_its_proxy(self, client):
        """An ObjectProxy subclass from a module runs as itself; plain Dask runs the inner function."""
        assert pdask.submit(client, wrapped.traced_square, 3).result() == ("traced", 9)
        assert client.submit(wrapped.traced_square, 3).result() == 9  # silently wrong

    def test_factory_method_arrives_by_identity(self, client):
        """Frame.mean (made by a factory) is the worker's own object; plain Dask sends a copy."""
        assert pdask.submit(client, dask_tasks.is_frame_mean, api.Frame.mean).result() is True
        assert client.submit(dask_tasks.is_frame_mean, api.Frame.mean).result() is False

    def test_factory_method_as_the_task(self, client):
        """The factory-made method itself is the submitted function."""
        assert pdask.submit(client, api.Frame.mean, api.Frame([1, 2]), 3).result() == (
            "mean",
            [1, 2],
            (3,),
        )

    def test_result_arrives_by_identity(self, client):
        """A result only picklable ships exactly (Frame.mean) is the client's own object."""
        assert pdask.submit(client, dask_tasks.frame_mean).result() is api.Frame.mean

    def test_future_arguments_resolve_through_boxes(self, client, workers):
        """Boxed results of futures reach later tasks opened, top level and nested."""
        make = pdask.submit(client, lambda: lambda y: y * 3, workers=[workers[0]])
        assert pdask.submit(client, lambda fn: fn(5), make, workers=[workers[0]]).result() == 15
        nested = pdask.submit(
            client, lambda d: [f(2) for f in d["fns"]], {"fns": [make, make]}, workers=[workers[1]]
        )
        assert nested.result() == [6, 6]

    def test_ship_envelope_passes_the_scheduler_sealed(self, client):
        """Plain client.map of ship(fn): the scheduler passes the envelope on; the wrapper runs."""

        @tagged
        def double(x):
            return 2 * x

        futures = client.map(picklable.ship(double), [1, 2, 3])
        assert client.gather(futures) == [("tagged", 2), ("tagged", 4), ("tagged", 6)]
        assert futures[0].key.startswith("double-")  # named after the function

    def test_ship_of_a_module_wrapt_function_does_not_hang(self, client):
        """A module-level wrapt function through ship() runs (it stayed pending before)."""
        future = client.submit(picklable.ship(wrapped.double), 4)
        assert future.result(timeout=60) == ("tagged", 8)
        later = client.submit(dask_tasks.pid, pure=False)  # the worker still serves
        assert later.result(timeout=60) != os.getpid()

    def test_shipped_function_in_a_bag(self, client):
        """ShippedFunction.of(fn) serves other Dask APIs that take a function (dask.bag.map)."""
        import dask.bag

        @tagged
        def double(x):
            return 2 * x

        bag = dask.bag.from_sequence(range(4), npartitions=2)
        assert bag.map(pdask.ShippedFunction.of(double)).compute() == [
            ("tagged", 2 * x) for x in range(4)
        ]
        assert bag.map(double).compute() == [0, 2, 4, 6]  # plain Dask: wrapper lost

    def test_gather(self, client):
        """client.gather unwraps boxed results like Future.result."""
        futures = [pdask.submit(client, dask_tasks.frame_mean, pure=False) for _ in range(3)]
        assert all(r is api.Frame.mean for r in client.gather(futures))


class TestMap:
    """picklable.dask.map: one shipped function for many items."""

    def test_map_closure(self, client):
        """A closure mapped over 200 items gives Dask's answer."""
        k = 3
        futures = pdask.map(client, lambda x: x * k, range(200))
        assert client.gather(futures) == [x * 3 for x in range(200)]

    def test_function_loaded_once_per_worker(self, client):
        """Every task on a worker calls the same loaded function (load-once cache)."""
        marker = object()

        def who(_):
            return os.getpid(), id(marker)

        seen: dict[int, set[int]] = {}
        for pid, ident in client.gather(pdask.map(client, who, range(40))):
            seen.setdefault(pid, set()).add(ident)
        assert seen and all(len(idents) == 1 for idents in seen.values())

    def test_items_needing_picklable(self, client):
        """Items that Dask would copy (wrapt-wrapped local functions) travel with picklable."""

        @tagged
        def inc(x):
            return x + 1

        futures = pdask.map(client, lambda f, x: f(x), [inc, inc], [1, 2])
        assert client.gather(futures) == [("tagged", 2), ("tagged", 3)]


class TestPicklableWrappers:
    """with_state markers, ship() envelopes and shipped functions are taken as the function."""

    def test_with_state_carries_the_state(self, client, workers):
        """with_state(counted_add) runs a copy of the worker's own object carrying the
        sender's state; the worker's own object is left as it was."""
        before = wrapped.counted_add.calls
        one = [workers[0]]
        own = pdask.submit(client, lambda: wrapped.counted_add.calls, workers=one, pure=False)
        own_calls = own.result()
        wrapped.counted_add.calls = 41
        try:
            marker = picklable.with_state(wrapped.counted_add)
            probe = pdask.submit(
                client, lambda f: (f(1, 2), f.calls), marker, workers=one, pure=False
            )
            assert probe.result() == (("counted", 3), 42)
            calls = pdask.submit(client, lambda: wrapped.counted_add.calls, workers=one, pure=False)
            assert calls.result() == own_calls
            mapped = pdask.map(client, marker, [1], [1], workers=one, pure=False)
            assert client.gather(mapped) == [("counted", 2)]
        finally:
            wrapped.counted_add.calls = before

    def test_envelope_and_shipped_function(self, client):
        """An envelope's payload and a ShippedFunction are used as they are."""
        offset = 7
        envelope = picklable.ship(lambda x: x + offset)
        assert pdask.ShippedFunction.of(envelope).digest == envelope.digest
        assert pdask.submit(client, envelope, 1).result() == 8
        assert client.gather(pdask.map(client, envelope, [1, 2])) == [8, 9]
        shipped = pdask.ShippedFunction.of(lambda x: -x)
        assert pdask.submit(client, shipped, 3).result() == -3
        # Envelopes among the arguments are opened for the function.
        mean = picklable.ship(api.Frame.mean)
        assert pdask.submit(client, dask_tasks.is_frame_mean, mean).result() is True

    def test_not_callable_inside_with_state(self, client):
        """with_state of a non-callable is refused, naming the marker."""
        with pytest.raises(TypeError, match="must be callable, got WithState"):
            pdask.submit(client, picklable.with_state(3))


class TestExceptions:
    """A task's exception reaches the client as itself, with the worker's traceback."""

    def test_keyword_only_init_with_cause(self, client):
        """Type, attributes, cause and the worker's frames (function name, line) arrive."""
        future = pdask.submit(client, dask_tasks.fail_kw_only, 7)
        exc = future.exception()
        assert type(exc) is KwOnlyError
        assert (exc.args, exc.code) == (("task 7 failed",), 7)
        assert type(exc.__cause__) is ValueError
        text = "".join(traceback.format_exception(exc))
        assert 'dask_tasks.py", line' in text and "in fail_kw_only" in text
        assert 'raise KwOnlyError(f"task {code} failed", code=code) from exc' in text
        assert "invalid literal for int()" in text  # the cause, with its own frames

        with pytest.raises(KwOnlyError) as info:
            future.result()
        assert info.value.code == 7
        raised = "".join(traceback.format_exception(info.value))
        assert "in fail_kw_only" in raised and "test_dask.py" in raised  # worker and client frames

    def test_frozen_exception(self, client):
        """An exception that refuses setattr survives Dask's tblib (which sets its chain)."""
        exc = pdask.submit(client, dask_tasks.fail_frozen).exception()
        assert type(exc) is FrozenError and exc.field == "x"
        assert "in fail_frozen" in "".join(traceback.format_exception(exc))

    def test_unpicklable_exception_is_a_remote_error(self, client):
        """An exception holding a lock arrives as RemoteError naming it, with the traceback text."""
        exc = pdask.submit(client, dask_tasks.fail_with_lock).exception()
        assert type(exc) is picklable.RemoteError
        assert exc.type_name == "support.dask_tasks.HoldsLock"
        assert exc.message == "cannot travel"
        assert "lock" in exc.reason
        assert "in fail_with_lock" in exc.remote_traceback
        assert "in fail_with_lock" in "".join(traceback.format_exception(exc))

    def test_code_from_another_python_is_refused(self, client):
        """Code from another Python minor version: UnpicklingError naming both sides."""
        shipped = pdask.ShippedFunction.of(lambda: 1)
        ours = _interpreter_record()
        impl, version = ours.split(" ")
        major, minor = version.split(".")
        theirs = f"{impl} {major}.{int(minor) + 1}"
        assert len(theirs) == len(ours) and ours.encode() in shipped.payload
        payload = shipped.payload.replace(ours.encode(), theirs.encode())
        forged = pdask.ShippedFunction(
            payload, b"forged-digest-01", "forged", shipped.origin, False
        )
        with pytest.raises(picklable.UnpicklingError) as info:
            distributed.Client.submit(client, forged).result()
        message = str(info.value)
        assert f"{impl} {major}.{int(minor) + 1}" in message
        assert f"this interpreter is {impl} {version}" in message
        assert "same Python minor version" in message


class TestDelayed:
    """picklable.dask.delayed builds Delayed objects that compute on the cluster."""

    def test_compute_on_cluster_mixed_with_plain_delayed(self, client):
        """Picklable tasks feed a plain dask.delayed sum; wrapt wrappers run on the workers."""

        @tagged
        def square(x):
            return x * x

        step = pdask.delayed(lambda x: square(x)[1])
        total = dask.delayed(sum)([step(i) for i in range(5)])
        assert total.compute() == 30

    def test_result_and_exception(self, client):
        """A boxed result and a task's exception come back from dask.compute."""
        (result,) = dask.compute(pdask.delayed(dask_tasks.frame_mean)())
        assert result is api.Frame.mean
        with pytest.raises(KwOnlyError) as info:
            dask.compute(pdask.delayed(dask_tasks.fail_kw_only)(3))
        assert info.value.code == 3

    def test_nout(self, client):
        """nout=2 splits a result, boxed or not."""
        pair = pdask.delayed(lambda: (api.Frame.mean, 2), nout=2)()
        first, second = pair
        assert dask.compute(first, second) == (api.Frame.mean, 2)


class TestInProcessCluster:
    """LocalCluster(processes=False): workers in the client's process, nothing pickled back."""

    def test_results_and_exceptions(self):
        """Results arrive unboxed (never pickled) and exceptions as themselves."""
        with (
            local_cluster(n_workers=1, processes=False) as cluster,
            distributed.Client(cluster) as client,
        ):
            assert pdask.submit(client, dask_tasks.frame_mean).result() is api.Frame.mean
            scale = 2
            assert client.gather(pdask.map(client, lambda x: x * scale, [1, 2])) == [2, 4]
            with pytest.raises(KwOnlyError) as info:
                pdask.submit(client, dask_tasks.fail_kw_only, 4).result()
            assert info.value.code == 4 and type(info.value.__cause__) is ValueError


class TestClient:
    """picklable.dask.Client: submit and map of a distributed.Client, through picklable."""

    def test_submit_and_map(self, cluster):
        """A second client (by address) submits and maps local functions."""
        with pdask.Client(cluster.scheduler_address) as client:
            assert isinstance(client, distributed.Client)

            @tagged
            def double(x):
                return 2 * x

            assert client.submit(double, 5).result() == ("tagged", 10)
            assert client.gather(client.map(double, [1, 2])) == [("tagged", 2), ("tagged", 4)]
            with pytest.raises(KwOnlyError):
                client.submit(dask_tasks.fail_kw_only, 1).result()


SACRED_TASKS = sacred_runs.TASKS
SACRED_EXPECTED = sacred_runs.EXPECTED


MAIN_SCRIPT = (
    textwrap.dedent(
        """
        import json, os, sys, traceback
        import distributed
        import wrapt
        from sacred import Experiment
        from sacred.observers import FileStorageObserver
        import picklable
        import picklable.dask

        ex = Experiment("dask_main_experiment", save_git_info=False)
        """
    )
    + sacred_runs.EXPERIMENT_BODY
    + textwrap.dedent(
        """
        def run_config(experiment, updates, named):
            run = experiment.run(config_updates=updates, named_configs=named,
                                 options={"--loglevel": "ERROR", "--capture": "sys"})
            return {"result": run.result, "run_id": run._id, "pid": os.getpid(),
                    "experiment": experiment.path}

        @wrapt.decorator
        def marked(wrapped, instance, args, kwargs):
            return ["marked", wrapped(*args, **kwargs)]

        @marked
        def triple(x):
            return 3 * x

        @wrapt.decorator
        def plus_1000(wrapped, instance, args, kwargs):
            return wrapped(*args, **kwargs) + 1000

        @plus_1000
        def double(x):
            return 2 * x

        class JobError(Exception):
            def __init__(self, job, *, attempt):
                super().__init__(f"job {job} failed")
                self.job, self.attempt = job, attempt

        def explode(job):
            raise JobError(job, attempt=2)

        if __name__ == "__main__":
            address, runs, tasks = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
            ex.observers.append(FileStorageObserver(runs))
            report = {}
            with picklable.dask.Client(address) as client:
                workers = sorted(client.scheduler_info()["workers"])
                futures = [client.submit(run_config, ex, updates, named, workers=[workers[i % 2]])
                           for i, (updates, named) in enumerate(tasks)]
                report["runs"] = client.gather(futures)
                report["wrapped"] = client.submit(triple, 3).result()
                report["plain_wrapped"] = distributed.Client.submit(client, triple, 3).result()
                shipped = distributed.Client.map(client, picklable.ship(double), [1, 2, 3])
                report["ship_map"] = client.gather(shipped)
                try:
                    client.submit(explode, 9).result()
                except JobError as exc:  # the __main__ class itself comes back
                    report["error"] = {"job": exc.job, "attempt": exc.attempt,
                                       "text": "".join(traceback.format_exception(exc))}
            print(json.dumps(report))
        """
    )
)


HELPERS = textwrap.dedent(
    """
    import functools
    import wrapt

    def plain(x):
        return x * 10

    @wrapt.decorator
    def tagged(wrapped, instance, args, kwargs):
        return ["tagged", wrapped(*args, **kwargs)]

    @tagged
    def wrapt_function(x):
        return x * 10

    class Counted:
        def __init__(self, func):
            functools.update_wrapper(self, func)
            self.calls = 0

        def __call__(self, *args):
            self.calls += 1
            return ["counted", self.__wrapped__(*args)]

    @Counted
    def class_decorated(x):
        return x * 10

    class Traced(wrapt.ObjectProxy):
        def __call__(self, *args):
            return ["traced", self.__wrapped__(*args)]

    def _inner(x):
        return x * 10

    proxy = Traced(_inner)
    """
)

HELPERS_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import distributed
    import picklable, picklable.dask
    import dask_script_helpers as helpers

    if __name__ == "__main__":
        report = {}
        picklable.register_by_value(helpers)
        with distributed.Client(sys.argv[1]) as client:
            for name in ["plain", "wrapt_function", "class_decorated", "proxy"]:
                try:
                    report[name] = picklable.dask.submit(client, getattr(helpers, name), 3).result()
                except Exception as exc:
                    report[name] = f"{type(exc).__name__}: {exc}"
            # Without registration, the module uploaded to the workers: by reference.
            picklable.unregister_by_value(helpers)
            client.upload_file(helpers.__file__)
            # pure=False: the same payload as above, which Dask would key as that failed task.
            uploaded = picklable.dask.submit(client, helpers.wrapt_function, 3, pure=False)
            report["uploaded"] = uploaded.result()
        print(json.dumps(report))
    """
)


@pytest.fixture(scope="module")
def helper_module_report(cluster, tmp_path_factory) -> dict:
    """A script whose helper module sits next to it (not on the workers), run once."""
    directory = tmp_path_factory.mktemp("helpers")
    (directory / "dask_script_helpers.py").write_text(HELPERS)
    out = run_script(HELPERS_SCRIPT, directory, args=(cluster.scheduler_address,), timeout=180)
    return json.loads(out.strip().splitlines()[-1])


class TestHelperModule:
    """A module next to the script: register_by_value ships it, upload_file installs it."""

    def test_plain_function_by_value(self, helper_module_report):
        """A registered module's plain function runs where the module does not exist."""
        assert helper_module_report["plain"] == 30

    @pytest.mark.parametrize(
        ("name", "expected"),
        [
            ("wrapt_function", ["tagged", 30]),
            ("class_decorated", ["counted", 30]),
            ("proxy", ["traced", 30]),
        ],
    )
    def test_decorator_products_by_value(self, helper_module_report, name, expected):
        """Wrappers, class-decorator instances and proxies of a registered module ship by value."""
        assert helper_module_report[name] == expected

    def test_uploaded_module_by_reference(self, helper_module_report):
        """After client.upload_file, the module's wrapt function is the workers' own."""
        assert helper_module_report["uploaded"] == ["tagged", 30]


class TestMainScript:
    """A __main__ script, as a user runs one, connecting to the cluster by address."""

    def test_sacred_experiment_wrapt_and_exception(self, cluster, client, tmp_path):
        """4 configs of a __main__ Experiment run on both workers; wrapper and exception arrive."""
        runs = tmp_path / "runs"
        out = run_script(
            MAIN_SCRIPT,
            tmp_path,
            args=(cluster.scheduler_address, str(runs), json.dumps(SACRED_TASKS)),
            timeout=180,
        )
        report = json.loads(out.strip().splitlines()[-1])
        results = report["runs"]
        assert [r["result"] for r in results] == SACRED_EXPECTED
        assert {r["experiment"] for r in results} == {"dask_main_experiment"}
        worker_pids = set(client.run(os.getpid).values())
        assert {r["pid"] for r in results} == worker_pids and len(worker_pids) == 2
        check_run_directories(results, runs)

        assert report["wrapped"] == ["marked", 9]
        assert report["plain_wrapped"] == 9  # plain Dask dropped the wrapper
        assert report["ship_map"] == [1002, 1004, 1006]  # plain client.map of ship(double)

        error = report["error"]
        assert (error["job"], error["attempt"]) == (9, 2)
        assert 'script.py", line' in error["text"] and "in explode" in error["text"]
        assert "raise JobError(job, attempt=2)" in error["text"]


# A `dask worker` process that cannot import picklable: -S skips site-packages'
# .pth files (the editable install of picklable is one), PYTHONPATH still finds
# distributed and the rest of the environment.
WITHOUT_PICKLABLE = [sys.executable, "-S", "-m", "distributed.cli.dask_worker"]
# One that imports picklable but reports another version.
OTHER_VERSION = [
    sys.executable,
    "-c",
    (
        "import sys, picklable; picklable.__version__ = '0.0.1'; "
        "from distributed.cli.dask_worker import main; sys.argv[0] = 'dask-worker'; main()"
    ),
]


@pytest.fixture
def scheduler_only() -> Iterator[distributed.LocalCluster]:
    """A scheduler in this process with no workers: each test brings its own."""
    with local_cluster(n_workers=0) as running:
        yield running


def start_worker(command: list[str], address: str, name: str, tmp_path: Path, env: dict):
    log = open(tmp_path / f"{name}.log", "wb")  # noqa: SIM115 - closed by the caller
    worker = subprocess.Popen(
        [*command, address, "--no-nanny", "--nthreads", "1", "--no-dashboard", "--name", name],
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    return worker, log


def stop_worker(worker: subprocess.Popen, log) -> None:
    worker.terminate()
    try:
        worker.wait(timeout=30)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait()
    log.close()


def within(seconds: float, call: Callable[[], object]) -> object:
    """Run ``call`` in a thread; fail if it has not returned or raised after ``seconds``."""
    outcome: list = []

    def run() -> None:
        try:
            outcome.append(("value", call()))
        except BaseException as exc:
            outcome.append(("error", exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"still waiting after {seconds} s"
    kind, value = outcome[0]
    if kind == "error":
        raise value
    return value


class TestWorkerEnvironment:
    """Workers that cannot run picklable tasks are named before any task is sent."""

    @pytest.mark.timeout(180)
    def test_worker_without_picklable(self, scheduler_only, tmp_path):
        """A real `dask worker` that cannot import picklable: an error within 30 s, naming it."""
        env = dict(child_env(), PYTHONPATH=sysconfig.get_paths()["purelib"])
        worker, log = start_worker(
            WITHOUT_PICKLABLE, scheduler_only.scheduler_address, "bare", tmp_path, env
        )
        try:
            with distributed.Client(scheduler_only) as client:
                client.wait_for_workers(1, timeout=120)
                (address,) = client.scheduler_info()["workers"]
                with pytest.raises(pdask.IncompatibleWorkersError) as info:
                    within(30, lambda: pdask.submit(client, lambda x: x + 1, 1))
                assert within(30, lambda: client.run(os.getpid))  # the worker is alive
                with pytest.raises(pdask.IncompatibleWorkersError):
                    within(30, lambda: pdask.Client(scheduler_only.scheduler_address))
        finally:
            stop_worker(worker, log)
        message = str(info.value)
        assert message.startswith("picklable.dask: 1 of 1 workers cannot run picklable tasks")
        assert (
            f"{address} (name 'bare'): cannot import picklable.dask (ModuleNotFoundError" in message
        )
        assert "Fix: install picklable " in message and "no task was sent" in message
        assert list(info.value.workers) == [f"{address} (name 'bare')"]

    @pytest.mark.timeout(180)
    def test_worker_with_another_version(self, scheduler_only, tmp_path):
        """A worker with another picklable version is named with both versions."""
        worker, log = start_worker(
            OTHER_VERSION, scheduler_only.scheduler_address, "old", tmp_path, child_env()
        )
        try:
            with distributed.Client(scheduler_only) as client:
                client.wait_for_workers(1, timeout=120)
                with pytest.raises(pdask.IncompatibleWorkersError) as info:
                    within(30, lambda: client.gather(pdask.map(client, str, [1])))
        finally:
            stop_worker(worker, log)
        message = str(info.value)
        assert f"(this client: {pdask.ENVIRONMENT})" in message
        assert "(name 'old'): runs picklable 0.0.1, cpython 3." in message


LOOPBACK = ("--host", "127.0.0.1", "--port", "0")


class TestCommandLineCluster:
    """The program of docs/dask.md against `dask scheduler` and `dask worker` processes."""

    def test_docs_program_on_dask_cli_cluster(self, tmp_path):
        """Workers started from another directory run the program's __main__ code."""
        program = docs_program()
        dask_cli = str(Path(sys.executable).parent / "dask")
        scheduler_file = tmp_path / "scheduler.json"
        worker_dir = tmp_path / "worker"
        worker_dir.mkdir()
        started: list[subprocess.Popen[bytes]] = []
        logs = []
        try:
            for name, command, cwd in [
                # Its HTTP server on a free port of loopback: 8787 may be taken.
                (
                    "scheduler",
                    ["scheduler", *LOOPBACK, "--dashboard-address", "127.0.0.1:0"],
                    tmp_path,
                ),
                (
                    "worker",
                    ["worker", "--nworkers", "1", "--nthreads", "2", "--no-dashboard"],
                    worker_dir,
                ),
            ]:
                log = open(tmp_path / f"{name}.log", "wb")  # noqa: SIM115 - closed below
                logs.append(log)
                started.append(
                    subprocess.Popen(
                        [
                            dask_cli,
                            *command,
                            "--scheduler-file",
                            str(scheduler_file),
                        ],
                        cwd=cwd,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env=child_env(),
                    )
                )
                if name == "scheduler":
                    wait_for(lambda: written_address(scheduler_file), 60, "the scheduler file")
            address = written_address(scheduler_file)
            run_script(program, tmp_path, args=(address,), timeout=120)
        finally:
            for process in reversed(started):
                process.terminate()
            for process in reversed(started):
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            for log in logs:
                log.close()


# Where `dask scheduler` listens by default (its dashboard: 8787).
DEFAULT_PORT = 8786


@pytest.fixture
def default_port_scheduler(tmp_path: Path) -> Iterator[str | None]:
    """`dask scheduler` on Dask's default ports, as a machine may run one; its address.

    None when something else already listens on 8786: the machine is in that
    state already (another program's scheduler), and this test leaves it alone.
    """
    dask_cli = str(Path(sys.executable).parent / "dask")
    scheduler_file = tmp_path / "default.json"
    with open(tmp_path / "default.log", "wb") as log:
        process = subprocess.Popen(
            [
                dask_cli,
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(DEFAULT_PORT),
                "--dashboard-address",
                "127.0.0.1:8787",
                "--scheduler-file",
                str(scheduler_file),
            ],
            cwd=tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=child_env(),
        )
        try:
            wait_for(
                lambda: written_address(scheduler_file) or process.poll() is not None,
                60,
                "the scheduler",
            )
            if process.poll() is None:
                yield written_address(scheduler_file)
            else:
                with socket.create_connection(("127.0.0.1", DEFAULT_PORT), timeout=10):
                    pass  # taken by another program, or this test has nothing to prove
                yield None
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class TestOwnCluster:
    """The module's cluster is its own, whatever already runs on the machine."""

    @pytest.mark.timeout(180)
    def test_with_a_scheduler_on_the_default_port(self, default_port_scheduler):
        """With a scheduler on 8786 (its dashboard on 8787), the cluster starts its own."""
        with start_cluster() as cluster, distributed.Client(cluster) as client:
            client.wait_for_workers(2)
            assert not cluster.scheduler_address.endswith(f":{DEFAULT_PORT}")
            pids = set(client.run(os.getpid).values())
            tasks = [pdask.submit(client, dask_tasks.pid, pure=False) for _ in range(4)]
            assert len(pids) == 2 and set(client.gather(tasks)) <= pids
            own = client.scheduler_info()["id"]
        if default_port_scheduler is not None:
            with distributed.Client(default_port_scheduler) as other:
                info = other.scheduler_info()
            assert info["id"] != own and info["workers"] == {}  # none of the cluster's


def docs_program() -> str:
    """The first Python block of docs/dask.md: the program run on one machine or many."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "dask.md").read_text()
    match = re.search(r"^```python\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    assert match and "sys.argv[1]" in match.group(1)
    return match.group(1)


def written_address(scheduler_file: Path) -> str | None:
    """The address in a scheduler file once the scheduler has written it whole
    (the file exists, empty, for a moment before its JSON is in it)."""
    try:
        return json.loads(scheduler_file.read_text())["address"]
    except (OSError, ValueError, KeyError):
        return None


def wait_for(condition: Callable[[], Any], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def check_run_directories(results: list[dict], runs: Path) -> None:
    """One FileStorageObserver directory per run, holding that run's config and result."""
    run_dirs = sorted(p for p in runs.iterdir() if p.name.isdigit())
    assert [p.name for p in run_dirs] == ["1", "2", "3", "4"]
    by_id = {str(r["run_id"]): r for r in results}
    assert set(by_id) == {"1", "2", "3", "4"}
    for run_dir in run_dirs:
        result = by_id[run_dir.name]
        updates, _ = SACRED_TASKS[SACRED_EXPECTED.index(result["result"])]
        config = json.loads((run_dir / "config.json").read_text())
        assert all(config[key] == value for key, value in updates.items())
        info = json.loads((run_dir / "run.json").read_text())
        assert info["status"] == "COMPLETED" and info["result"] == result["result"]
        metrics = json.loads((run_dir / "metrics.json").read_text())
        assert metrics["a"]["values"] == [config["a"]]


# A script whose task raises an exception class of the script, sent with plain
# ship() through plain client.submit to a `dask worker` that does not run the
# script (started from another directory): the worker builds the class from the
# payload, and Dask pickles what the task raised with its own pickler.
CLASS_COMES_HOME = textwrap.dedent(
    """
    import subprocess
    import sys
    import tempfile

    import distributed
    import picklable
    from support.engines import local_cluster


    class JobError(Exception):
        def __init__(self, job):
            super().__init__(f"job {job} failed")
            self.job = job


    def run(job):
        if job < 0:
            raise JobError(job)
        return job


    if __name__ == "__main__":
        with local_cluster(n_workers=0) as cluster, distributed.Client(cluster) as client:
            worker = subprocess.Popen(
                [
                    sys.executable, "-m", "distributed.cli.dask_worker",
                    cluster.scheduler_address,
                    "--no-nanny", "--nthreads", "1", "--no-dashboard",
                ],
                cwd=tempfile.mkdtemp(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                client.wait_for_workers(1, timeout=60)
                task = picklable.ship(run)
                assert client.submit(task, 3).result() == 3
                try:
                    client.submit(task, -1).result()
                except JobError as exc:
                    print("caught", exc.job, type(exc) is JobError, str(exc))
                except Exception as exc:
                    print("missed", type(exc).__module__, type(exc).__qualname__)
            finally:
                worker.terminate()
                worker.wait(30)
    """
)


def test_a_scripts_exception_class_comes_home(tmp_path):
    """Raised on a worker that does not run the script, the script's JobError comes
    back to the script as JobError itself: `except JobError` catches it (issue 27)."""
    out = run_script(CLASS_COMES_HOME, tmp_path, timeout=180)
    assert out.splitlines()[-1] == "caught -1 True job -1 failed"


ACTOR_SCRIPT = textwrap.dedent(
    """
    import json
    import distributed
    import picklable.dask
    from support.engines import local_cluster


    class Result:
        def __init__(self):
            self.total = 0

        def add(self, x):
            self.total += x
            return self.total


    if __name__ == "__main__":
        with local_cluster(n_workers=1) as cluster, distributed.Client(cluster) as client:
            said = []
            for call in (
                lambda: picklable.dask.submit(client, Result, actor=True),
                lambda: picklable.dask.map(client, Result, [1], actors=True),
                lambda: picklable.dask.Client.submit(client, Result, actor=True),
            ):
                try:
                    call()
                    said.append("submitted")
                except TypeError as error:
                    said.append(str(error))
            # The fix the error gives: Dask's own submit makes the actor.
            actor = distributed.Client.submit(client, Result, actor=True).result()
            print(json.dumps([said, actor.add(2).result(), len(client.who_has())]))
    """
)


def test_actors_are_refused_up_front(tmp_path):
    """A script's class submitted as an actor (issue 27): before, the handle failed
    on its first call ("type object 'Result' has no attribute 'add'"); now submit
    and map refuse at once, submit nothing, and name the way that works."""
    out = run_script(ACTOR_SCRIPT, tmp_path, timeout=180)
    said, total, stored = json.loads(out.strip().splitlines()[-1])
    assert said[0].startswith("picklable.dask.submit: Dask actors are not shipped")
    assert "distributed.Client.submit(client, cls, ..., actor=True)" in said[0]
    assert said[1].startswith("picklable.dask.map: Dask actors are not shipped")
    assert said[2].startswith("picklable.dask.submit: Dask actors are not shipped")
    assert (total, stored) == (2, 1)
