"""picklable.ray on a real local Ray: tasks and actors shipped through picklable.

One Ray session for the module (``ray.init(address="local", num_cpus=2)``: its
own, whatever Ray runs on the machine; no dashboard, no usage stats, offline),
shut down at the end. Each test shows what plain Ray does with the same object
where it matters. The ``__main__`` scripts connect to this session by its
address, as a program connects to a Ray cluster.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from support.engines import RAY_ENV, init_ray, ray_environment, require

require("ray")  # skips this module where Ray has no wheel (Python 3.15)

import ray
import ray.exceptions

import picklable
import picklable.ray as pray
from picklable_testpkg import api, wrapped
from picklable_testpkg.errors import KwOnlyError
from picklable_testpkg.wrapped import tagged
from support import dask_tasks
from support.child import TESTS, child_env, run_script
from support.ray_actors import Counter


@pytest.fixture(scope="module")
def session() -> Iterator[str]:
    """A local Ray of 2 CPUs for the module; yields the address other drivers connect to."""
    # Ray's workers inherit this environment: they import the tests' helper packages.
    with ray_environment([str(TESTS / "testpkg"), str(TESTS)]):
        try:
            yield init_ray()
        finally:
            ray.shutdown()


class TestRemoteFunction:
    """picklable.ray.remote(fn).remote(...): functions Ray's cloudpickle cannot ship exactly."""

    def test_local_wrapt_function_keeps_its_wrapper(self, session):
        """A wrapt-decorated local function runs its wrapper in the worker; plain Ray drops it."""

        @tagged
        def double(x):
            return 2 * x

        assert ray.get(pray.remote(double).remote(4)) == ("tagged", 8)
        assert ray.get(ray.remote(double).remote(4)) == 8  # cloudpickle copied the inner function

    def test_decorator_forms_and_options(self, session):
        """@remote, @remote(**options), .options(num_returns=2) as with ray.remote."""

        @pray.remote
        def plain(x):
            return x + 1

        @pray.remote(num_cpus=1, max_retries=0)
        def pair(x):
            return (lambda: x), x * 2

        assert ray.get(plain.remote(1)) == 2
        first, second = pair.options(num_returns=2).remote(5)
        assert ray.get(first)() == 5 and ray.get(second) == 10
        whole = ray.get(pair.remote(3))
        assert whole[0]() == 3 and whole[1] == 6

    def test_arguments_and_results_by_identity(self, session):
        """A factory-made method goes in and comes out as the receiver's own object."""
        assert ray.get(pray.remote(dask_tasks.is_frame_mean).remote(api.Frame.mean)) is True
        assert ray.get(ray.remote(dask_tasks.is_frame_mean).remote(api.Frame.mean)) is False
        assert ray.get(pray.remote(dask_tasks.frame_mean).remote()) is api.Frame.mean

    def test_object_refs_between_tasks(self, session):
        """A ref of a boxed result, top level or nested in a list, reaches the next task."""
        make = pray.remote(lambda: lambda y: y * 3).remote()
        assert ray.get(pray.remote(lambda fn: fn(5)).remote(make)) == 15
        # Nested refs are passed as refs (Ray's rule): the task gets them itself.
        nested = pray.remote(lambda refs, k: [ray.get(r)(k) for r in refs]).remote([make], 2)
        assert ray.get(nested) == [6]

    def test_put(self, session):
        """picklable.ray.put: ray.get gives the object itself, wrapper included."""

        @tagged
        def inc(x):
            return x + 1

        ref = pray.put(inc)
        assert ray.get(ref)(1) == ("tagged", 2)
        assert ray.get(pray.remote(lambda f: f(2)).remote(ref)) == ("tagged", 3)

    def test_generator_function(self, session):
        """A generator function streams its items, each shipped with picklable."""

        def gen(n):
            for i in range(n):
                yield lambda i=i: i * 10

        refs = pray.remote(gen).remote(3)
        assert [ray.get(r)() for r in refs] == [0, 10, 20]

    def test_envelope(self, session):
        """ray.remote refuses a ship() envelope; picklable.ray.remote takes its payload."""
        envelope = picklable.ship(wrapped.double)
        with pytest.raises(TypeError, match="must be applied to either a function or a class"):
            ray.remote(envelope)
        assert ray.get(pray.remote(envelope).remote(2)) == ("tagged", 4)
        # As an argument, an envelope rides Ray's pickles sealed and opens on call.
        assert ray.get(pray.remote(lambda f: f(3)).remote(envelope)) == ("tagged", 6)
        assert ray.get(ray.remote(dask_tasks.call_with).remote(envelope, 5)) == ("tagged", 10)
        mean = picklable.ship(api.Frame.mean)  # opened for a picklable.ray task
        assert ray.get(pray.remote(dask_tasks.is_frame_mean).remote(mean)) is True

    def test_with_state(self, session):
        """with_state(fn): a copy of the worker's own fn carrying the sender's
        attributes (the worker's own is left as it was)."""
        before = wrapped.counted_add.calls
        wrapped.counted_add.calls = 41
        try:
            marker = picklable.with_state(wrapped.counted_add)
            assert ray.get(pray.remote(marker).remote(1, 2)) == ("counted", 3)
            probe = pray.remote(lambda f: (f(1, 2), f.calls, f is wrapped.counted_add))
            assert ray.get(probe.remote(marker)) == (("counted", 3), 42, False)
        finally:
            wrapped.counted_add.calls = before

    def test_wrong_calls(self, session):
        """Direct calls, bad arguments and coroutine functions are refused here, as Ray does."""
        task = pray.remote(dask_tasks.call_with)
        with pytest.raises(TypeError, match=r"running 'call_with\(\)', try 'call_with.remote\(\)'"):
            task(len, 2)
        with pytest.raises(TypeError, match="missing a required argument"):
            task.remote(1)

        async def later():
            return 1

        with pytest.raises(TypeError, match="later is a coroutine function"):
            pray.remote(later)
        with pytest.raises(TypeError, match="takes a function or a class"):
            pray.remote(api.add, num_cpus=1)


class TestExceptions:
    """A task's exception is raised by ray.get as Ray does it: RayTaskError(TheClass)."""

    def test_keyword_only_init_with_cause(self, session):
        """except KwOnlyError catches it, attributes and cause intact; plain Ray cannot rebuild it."""
        with pytest.raises(KwOnlyError) as info:
            ray.get(pray.remote(dask_tasks.fail_kw_only).remote(7))
        exc = info.value
        assert isinstance(exc, ray.exceptions.RayTaskError)
        assert exc.code == 7 and type(exc.cause) is KwOnlyError
        assert exc.cause.args == ("task 7 failed",) and type(exc.cause.__cause__) is ValueError
        text = "".join(traceback.format_exception(exc.cause))
        assert "in fail_kw_only" in text and "invalid literal for int()" in text
        assert "fail_kw_only" in str(exc)  # Ray's own message names the task

        with pytest.raises(ray.exceptions.UnserializableException):
            ray.get(ray.remote(dask_tasks.fail_kw_only).remote(7))

    def test_unpicklable_exception_is_a_remote_error(self, session):
        """An exception holding a lock arrives as RemoteError naming it."""
        with pytest.raises(picklable.RemoteError) as info:
            ray.get(pray.remote(dask_tasks.fail_with_lock).remote())
        assert info.value.type_name == "support.dask_tasks.HoldsLock"
        assert "lock" in info.value.reason


class TestActors:
    """picklable.ray.remote(cls): an actor whose methods ship through picklable."""

    def test_state_options_and_methods(self, session):
        """Constructor arguments, Ray options, keyword calls, num_returns, generators."""
        counter = pray.remote(Counter).options(name="counter", num_cpus=0).remote(10, step=2)
        assert ray.get(counter.incr.remote()) == 12
        assert ray.get(counter.incr.remote(by=5)) == 17
        plus, minus = counter.split.options(num_returns=2).remote()
        assert ray.get([plus, minus]) == [17, -17]
        assert [ray.get(r) for r in counter.countdown.remote(3)] == [3, 2, 1]
        assert ray.get(counter.wrapper.remote())(2) == ("tagged", 34)
        with pytest.raises(AttributeError, match="actor Counter has no method 'nope'"):
            counter.nope  # noqa: B018
        ray.kill(counter.ray_handle)

    def test_handle_passed_to_a_task(self, session):
        """A handle given to a task calls the same actor."""
        counter = pray.remote(Counter).remote()
        bump = pray.remote(lambda c: ray.get(c.incr.remote(by=3)))
        assert ray.get(bump.remote(counter)) == 3
        assert ray.get(counter.incr.remote()) == 4

    def test_exceptions_of_methods_and_constructor(self, session):
        """A method's exception and the constructor's arrive as their own class."""
        counter = pray.remote(Counter).remote()
        with pytest.raises(KwOnlyError) as info:
            ray.get(counter.fail.remote(4))
        assert info.value.code == 4
        broken = pray.remote(Counter).remote(-1)
        with pytest.raises(ray.exceptions.RayActorError) as failed:
            ray.get(broken.incr.remote())
        assert "negative start" in str(failed.value)


class TestWorkerEnvironment:
    """A Ray worker that cannot import picklable fails the task at once, saying so."""

    def test_worker_without_picklable(self, session, tmp_path):
        """Ray's import error for the task function names picklable; nothing hangs."""
        # Workers of this runtime env start with a sitecustomize that hides picklable.
        (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['picklable'] = None\n")
        task = pray.remote(lambda x: x + 1).options(
            runtime_env={"env_vars": {"PYTHONPATH": str(tmp_path)}}
        )
        with pytest.raises(ray.exceptions.RayTaskError) as info:
            ray.get(task.remote(1), timeout=120)
        message = str(info.value)
        assert "The remote function failed to import on the worker" in message
        assert "No module named 'picklable.ray'" in message


OWN_SESSION_SCRIPT = textwrap.dedent(
    """
    import json, os
    import ray
    from support.engines import init_ray

    # A bare ray.init() joins the machine's Ray (ray_current_cluster in RAY_TMPDIR).
    ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
    joined = ray.get_runtime_context().gcs_address
    ray.shutdown()
    os.environ["RAY_ADDRESS"] = joined  # and RAY_ADDRESS names it too
    own = init_ray()  # what the session fixture runs
    cpus = ray.cluster_resources().get("CPU")
    ray.shutdown()
    print(json.dumps({"joined": joined, "own": own, "cpus": cpus}))
    """
)


@pytest.fixture
def running_head() -> Iterator[tuple[str, str]]:
    """`ray start --head` of 1 CPU, as a machine may run one: (its address, its RAY_TMPDIR).

    In a temporary directory of its own (RAY_TMPDIR, short: Ray's Unix sockets
    live there), where a bare ``ray.init()`` finds it as it finds a head in
    /tmp/ray; the machine's own Ray state is left alone.
    """
    temp = tempfile.mkdtemp(prefix="rayhead")
    env = {**child_env(), **RAY_ENV, "RAY_TMPDIR": temp}
    env.pop("RAY_ADDRESS", None)
    ray_cli = str(Path(sys.executable).parent / "ray")
    command = [ray_cli, "start", "--head", "--block", "--port=0", "--num-cpus=1"]
    command += ["--include-dashboard=false", "--disable-usage-stats"]
    command += ["--object-store-memory=100000000"]
    head = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    address_file = Path(temp) / "ray" / "ray_current_cluster"
    try:
        deadline = time.monotonic() + 120
        while not address_file.exists() or not address_file.read_text().strip():
            assert head.poll() is None, f"ray start --head exited with {head.returncode}"
            assert time.monotonic() < deadline, "ray start --head: no address after 120 s"
            time.sleep(0.2)
        yield address_file.read_text().strip(), temp
    finally:
        # Its processes and the workers its raylet started (in sessions of their own),
        # killed at once: a SIGTERM makes `ray start` drain for up to 30 s.
        started = [psutil.Process(head.pid)]
        try:
            started += started[0].children(recursive=True)
        except psutil.NoSuchProcess:
            pass
        for process in started:
            try:
                process.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(started, timeout=30)
        head.wait()
        shutil.rmtree(temp, ignore_errors=True)


class TestOwnSession:
    """The session fixture's Ray is its own, whatever Ray already runs on the machine."""

    @pytest.mark.timeout(300)
    def test_with_a_head_running(self, running_head, tmp_path, monkeypatch):
        """With `ray start --head` running (and RAY_ADDRESS naming it), init_ray starts its own."""
        head, temp = running_head
        monkeypatch.setenv("RAY_TMPDIR", temp)
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
        for key, value in RAY_ENV.items():
            monkeypatch.setenv(key, value)
        out = run_script(OWN_SESSION_SCRIPT, tmp_path, timeout=240)
        report = json.loads(out.strip().splitlines()[-1])
        assert report["joined"] == head  # the head is there to be joined
        assert report["own"] != head and report["cpus"] == 2.0


MAIN_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import ray, wrapt
    import picklable.ray

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

    def fail(job):
        raise JobError(job, attempt=3)

    def give_wrapper():
        return double

    if __name__ == "__main__":
        ray.init(address=sys.argv[1], log_to_driver=False, configure_logging=False)
        report = {}
        task = picklable.ray.remote(double)
        report["doubled"] = ray.get([task.remote(x) for x in (1, 2, 3)])
        report["plain"] = ray.get(ray.remote(double).remote(1))
        try:
            ray.get(picklable.ray.remote(fail).remote(7))
        except JobError as exc:  # the script's own class, through RayTaskError(JobError)
            report["error"] = {"job": exc.job, "attempt": exc.attempt,
                               "cause_is_main": type(exc.cause) is JobError}
        returned = ray.get(picklable.ray.remote(give_wrapper).remote())
        report["wrapper"] = [type(returned).__name__, returned(4)]
        print(json.dumps(report))
        ray.shutdown()
    """
)


class TestMainScript:
    """A __main__ script, as a user runs one, connecting to the Ray session by address."""

    def test_main_wrapt_function_exception_and_returned_wrapper(self, session, tmp_path):
        """1002, 1004, 1006; except JobError with attributes; a working wrapper comes back."""
        out = run_script(MAIN_SCRIPT, tmp_path, args=(session,), timeout=180)
        report = json.loads(out.strip().splitlines()[-1])
        assert report["doubled"] == [1002, 1004, 1006]
        assert report["plain"] == 2  # plain Ray ran double without its wrapper
        assert report["error"] == {"job": 7, "attempt": 3, "cause_is_main": True}
        assert report["wrapper"] == ["FunctionWrapper", 1008]

    def test_docs_program_on_a_running_ray(self, session, tmp_path):
        """The program of docs/ray.md, given the address of a running Ray."""
        run_script(docs_program(), tmp_path, args=(session,), timeout=180)


def docs_program() -> str:
    """The first Python block of docs/ray.md: the program run on one machine or a cluster."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "ray.md").read_text()
    match = re.search(r"^```python\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    assert match and "sys.argv[1]" in match.group(1)
    return match.group(1)
