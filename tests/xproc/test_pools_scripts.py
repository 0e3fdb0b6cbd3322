"""Pools used from real ``__main__`` scripts (issues 6 and 19).

Lambdas, classes and exception classes of ``__main__`` ship; what comes back is
the script's own class again, so ``isinstance`` and ``except`` work in the
script. Workers import the script as ``__mp_main__`` the way multiprocessing's
spawn workers do (its ``if __name__ == "__main__"`` block does not run there),
unless the pool is made with ``import_main=False``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from support.child import child_env, run_command, run_script

SCRIPT = """
import os
import sys
import picklable

class Point:
    def __init__(self, x):
        self.x = x

class MainError(Exception):
    def __init__(self, message, *, code):
        super().__init__(message)
        self.code = code

def make(x):
    return Point(x)

def fail(code):
    raise MainError("from main", code=code)

def main(method):
    with picklable.Pool(2, context=method) as pool:
        assert pool.map(lambda x: x * 2, range(5)) == [0, 2, 4, 6, 8]
        points = pool.map(make, [1, 2])
        assert all(type(p) is Point for p in points), [type(p) for p in points]
        try:
            pool.apply(fail, (7,))
        except MainError as exc:
            assert exc.code == 7
            assert "in fail" in exc.__cause__.text
        else:
            raise AssertionError("no MainError")
        try:
            pool.apply(lambda: os._exit(3))
        except picklable.WorkerDiedError as exc:
            assert exc.exitcode == 3 and "<lambda>()" in exc.task
        # The worker has the script: imported as __mp_main__ (spawn, forkserver), or the
        # parent's own __main__ (fork).
        seen = pool.apply(lambda: (sys.modules["__main__"].__name__, sys.modules["__main__"].__file__))
        expected = "__main__" if method == "fork" else "__mp_main__"
        assert seen[0] == expected and os.path.samefile(seen[1], __file__), seen
    with picklable.ProcessPoolExecutor(2, mp_context=method) as ex:
        assert type(ex.submit(make, 3).result()) is Point
        assert list(ex.map(lambda p: p.x, points)) == [1, 2]
    print("ok", method)

if __name__ == "__main__":
    main(sys.argv[1])
"""

UNGUARDED = """
import sys
import picklable

pool = picklable.Pool(2, import_main=sys.argv[1] == "import")
square = lambda x: x * x
try:
    print(sum(pool.map(square, range(10))))
except picklable.BrokenPoolError as exc:
    print(exc)
    print(type(exc.__cause__).__name__)
pool.close()
pool.join()
"""


@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_main_objects_through_pools(tmp_path, method):
    """__main__ lambdas, classes and exceptions round-trip; a dying worker is reported."""
    assert run_script(SCRIPT, tmp_path, args=(method,)).split() == ["ok", method]


def test_unguarded_script_runs_with_import_main_false(tmp_path):
    """A script without the __main__ guard runs with import_main=False (workers skip it)."""
    assert run_script(UNGUARDED, tmp_path, args=("skip",)).strip() == "285"


def test_unguarded_script_gets_a_clear_error(tmp_path):
    """Without the guard, the worker's import starts a pool: the error says how to fix it."""
    message, cause = run_script(UNGUARDED, tmp_path, args=("import",)).strip().splitlines()
    assert message.startswith(("worker 0 could not import ", "worker 1 could not import "))
    assert "script.py as __mp_main__" in message
    assert (
        "RuntimeError: An attempt has been made to start a new process before the current process has finished its bootstrapping phase."
        in message
    )
    assert (
        'Fix: put the code that starts the pool under `if __name__ == "__main__":`, or pass import_main=False'
        in message
    )
    assert cause == "RuntimeError"


LEFT_OPEN = """
import sys
import time
import picklable

if __name__ == "__main__":
    if sys.argv[1] == "pool":
        pool = picklable.Pool(2)
        pool.apply_async(time.sleep, (60,))  # still running at exit: terminated
    else:
        ex = picklable.ProcessPoolExecutor(2)
        ex.submit(lambda: (time.sleep(0.3), print("task done", flush=True)))
    print("leaving", flush=True)
"""


@pytest.mark.parametrize(("kind", "out"), [("pool", "leaving"), ("executor", "leaving task done")])
def test_left_open_at_exit(tmp_path, kind, out):
    """At exit an open Pool is terminated, an open executor finishes its work; no traceback."""
    script = tmp_path / "left_open.py"
    script.write_text(LEFT_OPEN)
    done = run_command([str(script), kind], tmp_path, timeout=60)
    assert (done.returncode, done.stdout.split(), done.stderr) == (0, out.split(), "")


# A script as users write them (issue 19): module-level setup that its tasks use.
SETUP = """
import logging
import multiprocessing
import sys
import threading

import picklable

logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", stream=sys.stdout)
log = logging.getLogger("job")
SQUARES = {i: i * i for i in range(4)}  # computed when the script is imported
LOCK = threading.Lock()


def work(x):
    log.info("work %d", x)
    # The worker imported the script: its module-level data is there.
    return sys.modules["__mp_main__"].SQUARES[x]


def locked(x):
    with LOCK:  # the worker's own lock, made when it imported the script
        return x + 1


def make_pool(which, method):
    if which == "stdlib":
        return multiprocessing.get_context(method).Pool(2)
    return picklable.Pool(2, context=method)


if __name__ == "__main__":
    which, task, method = sys.argv[1:]
    with make_pool(which, method) as pool:
        print(sorted(pool.map(work if task == "work" else locked, range(4), chunksize=1)))
"""


@pytest.mark.parametrize("how", ["script", "module"])
def test_module_level_setup_runs_in_workers(tmp_path, how):
    """logging.basicConfig and module-level data of the script are in the workers, as with the stdlib."""
    outputs = {}
    for which in ("stdlib", "picklable"):
        if how == "script":
            out = run_script(SETUP, tmp_path, args=(which, "work", "spawn"))
        else:  # python -m: the workers import it by its module name
            (tmp_path / "setupmod.py").write_text(SETUP)
            done = run_command(["-m", "setupmod", which, "work", "spawn"], tmp_path)
            assert done.returncode == 0, done.stderr
            out = done.stdout
        outputs[which] = sorted(out.splitlines())
    assert outputs["picklable"] == outputs["stdlib"]
    assert outputs["picklable"] == [
        "INFO work 0",
        "INFO work 1",
        "INFO work 2",
        "INFO work 3",
        "[0, 1, 4, 9]",
    ]


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_module_level_lock_used_by_the_task(tmp_path, method):
    """A task using the script's module-level lock runs as under the stdlib pool."""
    stdlib = run_script(SETUP, tmp_path, args=("stdlib", "locked", method))
    assert run_script(SETUP, tmp_path, args=("picklable", "locked", method)) == stdlib
    assert stdlib == "[1, 2, 3, 4]\n"


SKIP_MAIN = """
import sys
import picklable

IMPORTED_BY = __name__

if __name__ == "__main__":
    with picklable.Pool(1, import_main=sys.argv[1] == "import") as pool:
        print(pool.apply(lambda: getattr(sys.modules["__main__"], "IMPORTED_BY", None)))
"""


@pytest.mark.parametrize(("mode", "out"), [("import", "__mp_main__"), ("skip", "None")])
def test_import_main_opt_out(tmp_path, mode, out):
    """import_main=False: workers do not import the script."""
    assert run_script(SKIP_MAIN, tmp_path, args=(mode,)).strip() == out


FAILING_INITIALIZER = """
import logging
import picklable

logging.basicConfig(format="%(levelname)s %(message)s")


def init():
    raise ValueError("no database here")


if __name__ == "__main__":
    with picklable.ProcessPoolExecutor(1, initializer=init) as ex:
        try:
            ex.submit(print, "never").result()
        except picklable.BrokenPoolError as exc:
            print(type(exc.__cause__).__name__, exc.__cause__)
"""


def test_executor_logs_initializer_errors(tmp_path):
    """The executor's workers log an initializer's exception to concurrent.futures, as the stdlib's."""
    script = tmp_path / "failing_init.py"
    script.write_text(FAILING_INITIALIZER)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=child_env()
    )
    assert done.stdout == "ValueError no database here\n"
    assert done.stderr.startswith("CRITICAL Exception in initializer:\nTraceback")
    assert "ValueError: no database here" in done.stderr


SUBMIT_AT_EXIT = """
import atexit
import picklable


@atexit.register
def late():
    try:
        ex.submit(id, None)
    except RuntimeError as exc:
        print("RuntimeError:", exc)


if __name__ == "__main__":
    ex = picklable.ProcessPoolExecutor(1)
    print(ex.submit(abs, -3).result())
"""


def test_submit_in_atexit_raises(tmp_path):
    """submit() in an atexit hook raises RuntimeError, as concurrent.futures' does."""
    out = run_script(SUBMIT_AT_EXIT, tmp_path)
    assert out == "3\nRuntimeError: cannot schedule new futures after interpreter shutdown\n"


INITIALIZER_GLOBAL = """
import multiprocessing
import sys

import picklable


def setup(queue):
    global results
    results = queue  # a module global of the worker's own __mp_main__


def work(x):
    results.put(x * x)


if __name__ == "__main__":
    queue = multiprocessing.get_context(sys.argv[1]).Queue()
    with picklable.Pool(2, initializer=setup, initargs=(queue,), context=sys.argv[1]) as pool:
        pool.map(work, range(4))
        # Before the pool ends: leaving `with` terminates the workers (as the
        # stdlib's does), and an item may still be in a worker's queue feeder.
        print(sorted(queue.get(timeout=60) for _ in range(4)))
"""


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_initializer_sets_a_global_the_tasks_read(tmp_path, method):
    """The stdlib idiom: the initializer stores a queue in a global of the script; tasks use it."""
    assert run_script(INITIALIZER_GLOBAL, tmp_path, args=(method,)) == "[0, 1, 4, 9]\n"


SENDERS_STATE = """
import sys
import picklable


class Counted:
    def __init__(self, func):
        self.func = func
        self.calls = 0

    def __call__(self, *args):
        self.calls += 1
        return self.func(*args)


@Counted
def square(x):
    return x * x


def scale(x):
    return x * scale.factor


scale.factor = 1  # import time: what a worker has before the task arrives


def in_worker(wrapper, function):
    wrapper(1)
    return wrapper is square, wrapper.calls, function is scale, function(2)


if __name__ == "__main__":
    square(2)
    square(3)
    scale.factor = 10
    with picklable.Pool(1, context=sys.argv[1]) as pool:
        print(pool.apply(in_worker, (square, scale)))
"""


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_script_objects_are_the_workers_own_with_the_senders_state(tmp_path, method):
    """The wrapper carries the count the sender set on it (state policy, case 2),
    on a copy: the worker's own has another count, which a load never changes.
    The function whose attribute the main guard set is not the worker's own (its
    copy of the script never ran the guard): a copy, with factor 10, where
    pickle would hand back the worker's function with factor 1."""
    out = run_script(SENDERS_STATE, tmp_path, args=(method,))
    assert out == "(False, 3, False, 20)\n"


GUARD_REBINDS = """
import functools
import sys
import threading
import picklable


def make(n):
    def add(x):
        return x + n
    return add


scale = make(1)  # rebound by the guard
CONFIG = {"k": 1}  # rebound by the guard
SETTINGS = {"k": 1}  # changed in place by the guard
LOCK = threading.Lock()


def reads_config(x):
    return x * CONFIG["k"]


def reads_settings(x):
    return x * SETTINGS["k"]


def indirect(x):
    return reads_config(x)


def locked(x):
    with LOCK:
        return x + 1


def plain(x):
    return x - 1


MODE = "import"


def configure():
    global MODE
    MODE = "sender"


def reads_mode(x):
    return f"{MODE} {x}"


def who(f):
    main = sys.modules["__mp_main__"]
    return f(3), any(f is v for v in vars(main).values())


if __name__ == "__main__":
    scale = make(10)
    CONFIG = {"k": 100}
    SETTINGS.update(k=7)
    configure()
    with picklable.Pool(1, context=sys.argv[1]) as pool:
        for f in (scale, reads_config, reads_settings, indirect, reads_mode, locked, plain):
            print(f.__name__, *pool.apply(who, (f,)))
"""


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_what_the_main_guard_rebinds_travels_as_the_senders_value(tmp_path, method):
    """The worker's copy of the script never runs its main guard: a name the
    guard rebinds, a global it or a function it calls changes, and every
    function reading one (also through another function) give the sender's
    values, as copies; a function
    using a lock made at import time, and one reading nothing the guard
    touches, stay the worker's own (pickle's semantics)."""
    out = run_script(GUARD_REBINDS, tmp_path, args=(method,))
    assert out.splitlines() == [
        "add 13 False",
        "reads_config 300 False",
        "reads_settings 21 False",
        "indirect 300 False",
        "reads_mode sender 3 False",
        "locked 4 True",
        "plain 2 True",
    ]


FORK_TEMPLATE = """
import os
import threading
import warnings

import picklable

warnings.simplefilter("error")  # Python 3.12+ warns when a process with threads forks
threads_at_fork = []
os.register_at_fork(before=lambda: threads_at_fork.append(threading.active_count()))


def state(_):
    return os.environ["STATE"]  # what the process inherited, not what the task carries


def die():
    os._exit(3)


if __name__ == "__main__":
    os.environ["STATE"] = "when the pool was made"
    with picklable.Pool(2, context="fork", maxtasksperchild=1) as pool:
        os.environ["STATE"] = "changed since"
        seen = pool.map(state, range(6))  # one task per worker: 4 replacements at least
        try:
            pool.apply(die)
        except picklable.WorkerDiedError as exc:
            print("pool", exc.exitcode)
        seen += pool.map(state, range(2))
    os.environ["STATE"] = "when the pool was made"
    with picklable.ProcessPoolExecutor(1, mp_context="fork") as ex:
        os.environ["STATE"] = "changed since"
        try:
            ex.submit(die).result()
        except picklable.WorkerDiedError as exc:
            print("executor", exc.exitcode)
        seen += list(ex.map(state, range(2)))
    print(sorted(set(seen)))
    print(threads_at_fork)
"""


def test_fork_workers_never_fork_among_threads(tmp_path):
    """A fork pool forks replacement workers in its template, not from a process
    running its manager thread; every worker starts from the state the pool was made in."""
    out = run_script(FORK_TEMPLATE, tmp_path).splitlines()
    assert out[:3] == ["pool 3", "executor 3", "['when the pool was made']"]
    # The first workers and the template of each pool, from the main thread alone.
    assert out[3] == str([1, 1, 1, 1, 1]), out


LOADING_ONLY = """
import sys
import picklable
picklable.Pool  # named at the top, as scripts do: a worker's import of the script runs it too

PICKLER = ("picklable._api", "picklable._pickler", "picklable._reduce", "picklable._locator")

def pickler_modules():
    return [name for name in PICKLER if name in sys.modules]

if __name__ == "__main__":
    with picklable.Pool(1) as pool:
        before = pool.apply(lambda: pickler_modules() == [])
        value = pool.apply(lambda: {"k": [1, 2]})  # a result the pickler makes
        after = pool.apply(lambda: pickler_modules() == list(PICKLER))
    print(before, value, after, pickler_modules() == list(PICKLER))
"""


def test_a_spawned_worker_imports_the_pickler_when_a_result_needs_it(tmp_path):
    """A spawn worker starts with picklable's loading side alone: a plain result
    goes back without the pickler's modules, which load with the first result that
    needs them (issue 29: the first result of a new pool comes sooner). The
    parent has them before its first task."""
    out = run_script(LOADING_ONLY, tmp_path).strip()
    assert out == "True {'k': [1, 2]} True True"


def test_import_picklable_loads_the_loading_side_alone(tmp_path):
    """``import picklable`` leaves the pickler for its first use (``picklable.dumps``)."""
    code = (
        "import sys, picklable\n"
        "print('picklable._pickler' in sys.modules, picklable.loads(picklable.dumps(1)))\n"
        "print('picklable._pickler' in sys.modules)\n"
    )
    done = run_command(["-c", code], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "1", "True"]


GUARD_SHAPES = """
import sys
import picklable

SCALE = A = B = C = E = SCALE_R = 1

class Model:
    def scaled(self):
        return SCALE * 2

def through_class():
    return Model().scaled()

def f_and():
    return A

def f_try():
    return B

def f_modules():
    return C

def f_after():
    return E

def f_namespace():
    return globals()["SCALE_R"]

def attempt(func):
    try:
        return func()
    except KeyError as exc:
        return f"KeyError {exc}"

if __name__ == "__main__" and len(sys.argv) < 5:
    A = 10

try:
    if __name__ == "__main__":
        B = 10
except Exception:
    pass

if __name__ == "__main__":
    SCALE = SCALE_R = 10
    sys.modules[__name__].C = 10
    funcs = [f_and, f_try, f_modules, f_after, through_class, f_namespace]
    with picklable.Pool(1, context="spawn") as pool:
        here = [attempt(f) for f in funcs]
        there = pool.map(attempt, funcs)
        print(here)
        print(there)
        print(pool.apply(Model().scaled), pool.apply(Model.scaled, (Model(),)))

E = 10
"""


def test_a_guard_the_reading_used_to_miss_ships_the_senders_values(tmp_path):
    """Names a guard changes in other shapes (mixed with another test, inside a
    ``try``, through ``sys.modules``), a name set after the guard (a worker's
    import sets it before any task), a global a class's method reads: a spawn
    worker computes what the sender does, never with its own import-time value.
    A function reading ``globals()[name]`` is a copy that lacks what it did not
    name: an error, not the worker's value."""
    here, there, methods = run_script(GUARD_SHAPES, tmp_path).strip().splitlines()
    assert here == "[10, 10, 10, 1, 20, 10]"
    assert there == "[10, 10, 10, 1, 20, \"KeyError 'SCALE_R'\"]"
    assert methods == "20 20"


GUARD_BY_ALIAS = """
import picklable

D = 1
{alias}

def read():
    return D

if __name__ == "__main__":
    {write}
    with picklable.Pool(1, context="spawn") as pool:
        print(read(), pool.apply(read))
"""


@pytest.mark.parametrize(
    ("alias", "write"),
    [
        ("G = globals()", 'G["D"] = 10'),
        ("import sys; this = sys.modules[__name__]", "this.D = 10"),
    ],
    ids=["globals()", "sys.modules"],
)
def test_a_guard_writing_through_another_name_for_the_module(tmp_path, alias, write):
    """The module level names the module (``G = globals()``); the guard writes
    through that name: a spawn worker computes with the sender's value."""
    assert run_script(GUARD_BY_ALIAS.format(alias=alias, write=write), tmp_path).split() == [
        "10",
        "10",
    ]


GUARD_MATCH = """
import picklable

SCALE = 1

def scaled():
    return SCALE * 2

match __name__:
    case "__main__":
        SCALE = 10
        with picklable.Pool(1, context="spawn") as pool:
            print(scaled(), pool.apply(scaled))
"""


def test_a_match_on_the_module_name_is_a_guard(tmp_path):
    assert run_script(GUARD_MATCH, tmp_path).split() == ["20", "20"]


DISPATCHED = """
import picklable

class App:
    \"\"\"A command-line library's app: the commands it dispatches to are registered.\"\"\"

    def __init__(self):
        self.commands = []

    def command(self):
        def register(func):
            self.commands.append(func)
            return func
        return register

    def __call__(self):
        for command in self.commands:
            command()

app = App()
SCALE = 1

def scaled(x):
    return x * SCALE

@app.command()
def run():
    global SCALE
    SCALE = 10
    with picklable.Pool(1, context="spawn") as pool:
        print(scaled(2), pool.apply(scaled, (2,)))

if __name__ == "__main__":
    app()
"""


def test_a_global_a_dispatched_command_sets_ships_the_senders_value(tmp_path):
    """A command registered on an app the guard calls (typer, click groups) runs
    in the sender: the global it sets is the sender's, and a function reading it
    travels as a copy (the worker's own would read its import-time value)."""
    assert run_script(DISPATCHED, tmp_path).strip() == "20 20"


WORKERS_OWN = """
import multiprocessing
import picklable

if __name__ == "__main__":
    multiprocessing.set_start_method("spawn", force=True)

FACTOR = None

def init(value):
    global FACTOR
    FACTOR = value

def scaled(x):
    return FACTOR * x + helper()

def double(x):
    return 2 * x

def dispatch(name, x):
    return globals()[name](x)

if __name__ == "__main__":
    with picklable.Pool(1, context="spawn", initializer=init, initargs=(3,)) as pool:
        print(pool.apply(scaled, (2,)), pool.apply(dispatch, ("double", 21)))

def helper():
    return 100
"""


def test_what_only_the_worker_binds_stays_the_workers(tmp_path):
    """A global first set after an earlier guard by a pool's initializer, a helper
    defined after the guard, a function looked up through ``globals()[name]``:
    the worker's own function reads the worker's own, as pickle's reference does
    (a copy would carry the sender's None, lack the helper, or the function)."""
    assert run_script(WORKERS_OWN, tmp_path).strip() == "106 42"


TWO_GUARDS = """
import multiprocessing
import picklable

SCALE = 1
FACTOR = None

def scaled(x):
    return SCALE * x

def init(value):
    global FACTOR
    FACTOR = value

def factored(x):
    return FACTOR * x

def logged(func):
    def wrapper(x):
        return func(x) + 1000
    return wrapper

if __name__ == "__main__":
    multiprocessing.set_start_method("spawn", force=True)
    with picklable.Pool(1, context="spawn") as pool:
        print(scaled(2), pool.apply(scaled, (2,)))

SCALE = 10
FACTOR = 0
factored = logged(factored)

if __name__ == "__main__":
    with picklable.Pool(1, context="spawn", initializer=init, initargs=(3,)) as pool:
        print(scaled(2), pool.apply(scaled, (2,)), pool.apply(factored, (2,)))
"""


def test_a_name_bound_again_between_two_guards(tmp_path):
    """Where the sender's module level is at the dump decides: in the first
    guard, ``SCALE = 10`` has run in the worker (on import) and not yet in the
    sender, so ``scaled`` travels with the sender's 1 (pickle's reference gives
    the worker's 10); in the second guard both have run it, and the worker's own
    functions read what its initializer set (a copy would carry the sender's
    ``FACTOR = 0``), as with pickle."""
    first, second = run_script(TWO_GUARDS, tmp_path).strip().splitlines()
    assert first == "2 2"
    assert second == "20 20 1006"


SAME_NAME_CLASSES = """
import collections
import dataclasses
import multiprocessing
import picklable

class Config:
    version = 1

legacy = Config()

class Config:
    version = 2

def make_unit(unit):
    class Length:
        def describe(self, n):
            return f"{n} {unit}"
    return Length

Length = make_unit("m")
Imperial = make_unit("ft")
Point = collections.namedtuple("Point", "x y")
Point3 = collections.namedtuple("Point", "x y z")

@dataclasses.dataclass(frozen=True, slots=True)
class Frozen:
    v: int

def replaced(cls):
    namespace = {k: v for k, v in vars(cls).items() if k not in ("__dict__", "__weakref__")}
    namespace["old"] = cls
    return type(cls.__name__, cls.__bases__, namespace)

@replaced
class Model:
    def __init__(self, v):
        self.v = v

def look(legacy, imperial, point):
    return (type(legacy).version, imperial.describe(3), point._fields)

def bump(frozen, model):
    return Frozen(frozen.v + 1), Model(model.v + 1)

def made_there():
    return picklable.dumps(Model(5))  # the worker's own Model (pickle sent this function)

if __name__ == "__main__":
    {guard}
    with picklable.Pool(1, context="spawn") as pool:
        print(pool.apply(look, (legacy, Imperial(), Point3(1, 2, 3))))
        frozen, model = pool.apply(bump, (Frozen(1), Model(1)))
        print(frozen, type(model) is Model, model.v)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        model = picklable.loads(pool.apply(made_there))
        print(type(model) is Model, model.v)
"""


def test_two_classes_under_one_name_of_a_script(tmp_path):
    """A class defined again under its name, two classes a factory made under
    one name (a namedtuple's too), the class a class decorator replaced (a
    frozen slots dataclass's): each instance loads in a spawn worker with its
    own class, never the one the worker's script holds at that name; and the
    worker's instances come home as the parent's classes, also where the guard
    cannot be read."""
    for guard in ("pass", 'exec("")'):  # exec: the guard cannot be read, all copies
        script = SAME_NAME_CLASSES.replace("{guard}", guard)
        shipped, home, made_there = run_script(script, tmp_path).strip().splitlines()
        assert shipped == "(1, '3 ft', ('x', 'y', 'z'))", guard
        assert home == "Frozen(v=2) True 2", guard
        assert made_there == "True 5", guard


LOOKS_LIKE_THE_MODULE = """
import sys
import picklable

SCALE = None

def init(value):
    global SCALE
    SCALE = value

def work(x):
    return SCALE * x

if __name__ == "__main__":
    modules = ["alpha", "beta"]
    first = modules[0]
    json_module = sys.modules.get("json")
    with picklable.Pool(1, context="spawn", initializer=init, initargs=(3,)) as pool:
        print(first, pool.map(work, [1, 2]))
"""


def test_a_list_named_modules_leaves_the_guard_readable(tmp_path):
    """``modules[0]`` of a list, another module's ``sys.modules`` entry: the
    guard is read as ever, so ``work`` is the worker's own and reads what the
    initializer set (a copy would carry the sender's None)."""
    assert run_script(LOOKS_LIKE_THE_MODULE, tmp_path).strip() == "alpha [3, 6]"


GUARD_REDEFINES_A_CLASS = """
import picklable

class Shape:
    kind = "module-level"

REGISTRY = {"shape": Shape}

def build(key):
    return REGISTRY[key]()  # the worker's own Shape

if __name__ == "__main__":
    original = Shape
    class Shape:
        kind = "guard"
    with picklable.Pool(1, context="spawn") as pool:
        back = pool.apply(build, ("shape",))
    print(back.kind, type(back) is Shape)
"""


def test_a_worker_s_class_does_not_come_home_as_the_guard_s_class(tmp_path):
    """The parent's guard binds another class under the name: the worker's
    instance comes home with an exact copy of its own class, not as the
    guard's class (pickle gives the guard's)."""
    assert run_script(GUARD_REDEFINES_A_CLASS, tmp_path).strip() == "module-level False"
