"""Never wrong, never worse than pickle (issue 16): the seven cases, in fresh
interpreters, against what stdlib pickle gives where pickle works."""

from __future__ import annotations

import json
import pickle
import textwrap
import types

import pytest

import picklable
from picklable_testpkg import neverwrong as N
from support import never_wrong_checks as checks
from support.child import run_script


class TestSenderState:
    """1. State the sender set travels: ordinary objects by value, decorator
    products by reference with what the program set on them."""

    def test_module_level_model_keeps_its_weights(self, child, monkeypatch):
        """MODEL.weights set by the program: 20.0 in the receiver, as with pickle."""
        monkeypatch.setattr(N.MODEL, "weights", [2.0])
        ours = picklable.dumps((N.use, N.MODEL))
        theirs = pickle.dumps((N.use, N.MODEL))
        assert child.run(checks.use_loaded, theirs, True, 10) == 20.0
        assert child.run(checks.use_loaded, ours, False, 10) == 20.0

    def test_decorator_config_travels(self, child, monkeypatch):
        """A class-based decorator's config set by the program: 30x, on a copy
        (the receiver's own object keeps its 3x); with the config the receiver
        has, the receiver's own object (pickle cannot ship it at all)."""
        payload = picklable.dumps(N.scaled_task)
        assert child.run(checks.loaded_is, payload, N.__name__, "scaled_task")
        monkeypatch.setattr(N.scaled_task, "config", 30)
        payload = picklable.dumps(N.scaled_task)
        with pytest.raises(pickle.PicklingError):
            pickle.dumps(N.scaled_task)
        assert child.run(checks.apply_loaded, payload, False, 2) == 60
        assert not child.run(checks.loaded_is, payload, N.__name__, "scaled_task")
        alone = picklable.dumps(picklable.without_state(N.scaled_task))
        assert child.run(checks.apply_loaded, alone, False, 2) == 6

    def test_no_wraps_config_travels(self, child, monkeypatch):
        """The same for a closure wrapper that the locator finds under the
        function's name."""
        monkeypatch.setattr(N.closure_task, "config", 7)
        assert child.run(checks.apply_loaded, picklable.dumps(N.closure_task), False, 3) == 21

    def test_lock_stays_behind_counter_travels(self, child, monkeypatch):
        """A lock on a decorator product stays (the receiver's own is the one that
        means something); the counter travels; explain says which is which."""
        monkeypatch.setattr(N.limited_task, "calls", 5)
        assert picklable.state_left_behind(N.limited_task) == ["lock"]
        state = child.run(
            checks.loaded_state, picklable.dumps(N.limited_task), ["calls", "__name__"]
        )
        assert state == {"calls": 5, "__name__": "limited_task"}

    def test_without_state_sends_the_reference_alone(self, child, monkeypatch):
        """without_state(obj): the receiver keeps its own configuration."""
        monkeypatch.setattr(N.scaled_task, "config", 99)
        payload = picklable.dumps(picklable.without_state(N.scaled_task))
        assert child.run(checks.loaded_state, payload, ["config"]) != {"config": 99}
        default = picklable.dumps(N.scaled_task)
        assert child.run(checks.loaded_state, default, ["config"]) == {"config": 99}


def _local_strptime():
    import time

    def parse(text):
        return time.strptime(text, "%Y-%m-%d").tm_mday

    return parse


def _local_pickler():
    import fractions

    def dump(n):
        return len(pickle.dumps(fractions.Fraction(1, n)))

    return dump


class TestBuiltins:
    """2. By-value functions get the builtins a receiver's C code looks up."""

    def test_strptime_in_a_fresh_interpreter(self, child):
        """time.strptime imports _strptime from C: it needs __builtins__."""
        assert (
            child.run(checks.apply_loaded, picklable.dumps(_local_strptime()), False, "2024-03-07")
            == 7
        )

    def test_pickle_inside_a_task(self, child):
        """pickle.dumps(Fraction) inside a by-value function imports from C too."""
        assert child.run(checks.apply_loaded, picklable.dumps(_local_pickler()), False, 3) > 0


class TestBoundMethods:
    """3 and 4. Methods held by an instance are its own, not the class's."""

    def test_per_instance_override(self, child):
        """c.handler = MethodType(handler, c) comes back as the override (pickle
        gives the class's method: getattr runs before the instance has its state)."""
        c = N.Handler()
        c.handler = types.MethodType(N.handler, c)
        assert pickle.loads(pickle.dumps(c)).handler() == "class"
        assert child.run(checks.call_method, picklable.dumps(c), "handler") == "instance"

    def test_self_referencing_bound_method_in_a_script(self, tmp_path):
        """self.f2 = f2.__get__(self) in a __main__ class loads and runs elsewhere."""
        out = run_script(
            SCRIPT_PRELUDE
            + textwrap.dedent(
                """
                class Holder:
                    def __init__(self):
                        def f2(self):
                            return 42 + self.base
                        self.base = 1
                        self.f2 = f2.__get__(self)

                if __name__ == "__main__":
                    print(json.dumps(elsewhere(Holder(), "h = obj; result = h.f2()")))
                """
            ),
            tmp_path,
        )
        assert json.loads(out) == {"ok": 43}


class TestProxiesAndDispatchers:
    """5. A proxy arrives as itself, a dispatcher with its name and docstring."""

    def test_lazy_proxy_is_itself(self, child):
        """pickle ships the target (another object); picklable the module's proxy."""
        assert type(pickle.loads(pickle.dumps(N.lazy_double))) is types.FunctionType
        payload = picklable.dumps(N.lazy_double)
        assert child.run(checks.loaded_is, payload, N.__name__, "lazy_double")
        assert child.run(checks.type_and_call, payload, 4) == (f"{N.__name__}.LazyProxy", 8)

    def test_local_proxy_is_a_proxy(self, child):
        """A proxy no module holds is copied as a proxy, never as its target."""
        proxy = N.LazyProxy(lambda: N.double)
        assert child.run(checks.type_and_call, picklable.dumps(proxy), 5) == (
            f"{N.__name__}.LazyProxy",
            10,
        )

    def test_dispatcher_by_reference(self, child):
        """A multipledispatch dispatcher (pickle refuses it) is the module's own."""
        with pytest.raises(pickle.PicklingError):
            pickle.dumps(N.describe)
        payload = picklable.dumps(N.describe)
        assert child.run(checks.loaded_is, payload, N.__name__, "describe")
        assert child.run(checks.apply_loaded, payload, False, "s") == "str"


class TestGetattrOnRebuild:
    """7c. An object whose __getattr__ recurses while empty gets its state safely."""

    def test_settings_object(self, child):
        """pickle recurses rebuilding it; picklable sets its state past __getattr__."""
        settings = N.Settings(limit=5)
        with pytest.raises(RecursionError):
            pickle.loads(pickle.dumps(settings))
        assert child.run(checks.settings_value, picklable.dumps(settings), "limit") == 5

    def test_settings_in_a_slot(self, child):
        """The same with its fields in a slot, and no __dict__ to set."""
        settings = N.SlottedSettings(limit=7)
        with pytest.raises(RecursionError):
            pickle.loads(pickle.dumps(settings))
        assert child.run(checks.settings_value, picklable.dumps(settings), "limit") == 7


# --------------------------------------------------------------- scripts
#
# 6 and 7: a real __main__ script ships its objects to a stdlib spawn pool
# (whose workers re-import the script as __mp_main__) and to a fresh
# interpreter that does not run the script.

SCRIPT_PRELUDE = textwrap.dedent(
    """
    import json, logging, multiprocessing, pickle, subprocess, sys, threading
    import picklable

    CHILD = '''
    import json, pickle, sys
    import picklable
    data = sys.stdin.buffer.read()
    try:
        obj = picklable.loads(data)
        scope = {"obj": obj}
        exec(sys.argv[1], scope)
        print(json.dumps({"ok": scope["result"]}))
    except Exception as exc:
        print(json.dumps({"error": type(exc).__name__, "reason": getattr(exc, "reason", "")}))
    '''

    def elsewhere(obj, statement):
        done = subprocess.run([sys.executable, "-c", CHILD, statement],
                              input=picklable.dumps(obj), capture_output=True)
        return json.loads(done.stdout)

    def in_worker(payload, statement):
        obj = picklable.loads(payload)
        scope = {"obj": obj, "main": sys.modules["__mp_main__"]}
        exec(statement, scope)
        return scope["result"]
    """
)


def test_script_objects_in_spawn_workers_and_elsewhere(tmp_path):
    """6. The script's own object in a spawn worker (module-level lock, logging
    set up at import, a registry), an exact copy elsewhere, a clear error where
    no copy can exist; a global set in the main guard makes the worker use the copy."""
    source = SCRIPT_PRELUDE + textwrap.dedent(
        """
        logging.basicConfig(level=logging.INFO, format="LOG %(processName)s %(message)s")
        LOCK = threading.Lock()
        REGISTRY = {}

        def registered(func):
            REGISTRY[func.__name__] = func
            return func

        @registered
        def work(x):
            with LOCK:
                logging.getLogger("work").info("working on %s", x)
                return x * 2

        def pure(x):
            return x + 100

        def scaled(x):
            return x * SCALE

        class Point:
            def __init__(self, x):
                self.x = x

        if __name__ == "__main__":
            SCALE = 3
            report = {}
            with multiprocessing.get_context("spawn").Pool(1) as pool:
                report["work"] = pool.apply(in_worker, (picklable.dumps(work),
                    "result = [obj(4), obj is main.work, main.REGISTRY['work'] is obj]"))
                report["point"] = pool.apply(in_worker, (picklable.dumps(Point(3)),
                    "result = [type(obj) is main.Point, obj.x]"))
                report["scaled"] = pool.apply(in_worker, (picklable.dumps(scaled),
                    "result = [obj(2), obj is main.scaled]"))
                # stdlib pickle: the same reference, and a NameError for SCALE
                report["pickle_scaled"] = pool.apply(in_worker, (picklable.dumps(pickle.dumps(scaled)),
                    "import pickle\\ntry:\\n    result = pickle.loads(obj)(2)\\nexcept NameError:\\n    result = 'NameError'"))
            report["work_elsewhere"] = elsewhere(work, "result = obj(4)")
            report["pure_elsewhere"] = elsewhere(pure, "result = obj(1)")
            report["point_elsewhere"] = elsewhere(Point(5), "result = [type(obj).__qualname__, obj.x]")
            report["same_here"] = picklable.loads(picklable.dumps([work, Point, pure])) == [work, Point, pure]
            print(json.dumps(report))
        """
    )
    lines = run_script(source, tmp_path).splitlines()
    report = json.loads(lines[-1])
    assert report["work"] == [8, True, True]
    assert report["point"] == [True, 3]
    assert report["scaled"] == [6, False]  # SCALE is set in the main guard: the copy runs
    assert report["pickle_scaled"] == "NameError"
    assert report["work_elsewhere"] == {
        "error": "UnpicklingError",
        "reason": "__main__:work: an object of the sender's script, not copyable",
    }
    assert report["pure_elsewhere"] == {"ok": 101}
    assert report["point_elsewhere"] == {"ok": ["Point", 5]}
    assert report["same_here"] is True


def test_log_lines_of_the_workers(tmp_path):
    """logging.basicConfig at module level makes the spawn worker log, as with pickle."""
    source = SCRIPT_PRELUDE + textwrap.dedent(
        """
        logging.basicConfig(level=logging.INFO, format="LOG %(processName)s %(message)s",
                            stream=sys.stdout)

        def work(x):
            logging.getLogger("work").info("working on %s", x)
            return x

        if __name__ == "__main__":
            with multiprocessing.get_context("spawn").Pool(1) as pool:
                print(pool.apply(in_worker, (picklable.dumps(work), "result = obj(7)")))
        """
    )
    out = run_script(source, tmp_path)
    assert "working on 7" in out and out.splitlines()[-1] == "7"


def test_third_party_decorators_of_script_functions(tmp_path):
    """7. Currying, caching (with a lock), validation and registry decorators of
    __main__ functions: the script's own in a spawn worker, a copy or a clear
    error elsewhere, never the wrapper's own reference to a __main__ the
    receiver lacks."""
    source = SCRIPT_PRELUDE + textwrap.dedent(
        """
        import cachetools, toolz
        from picklable_testpkg.neverwrong import Settings, validated

        @toolz.curry
        def add(x, y):
            return x + y

        @cachetools.cached(cache={}, lock=threading.Lock())
        def cached_square(x):
            return x * x

        @validated(Settings(limit=10))
        def checked(x):
            return x + 1

        if __name__ == "__main__":
            report = {}
            with multiprocessing.get_context("spawn").Pool(1) as pool:
                for name, call in [("add", "obj(1)(2)"), ("cached_square", "obj(3)"),
                                   ("checked", "obj(4)")]:
                    obj = globals()[name]
                    report[name] = pool.apply(in_worker, (picklable.dumps(obj),
                        f"result = [{call}, obj is getattr(main, {name!r})]"))
                    report[name + "_elsewhere"] = elsewhere(obj, f"result = {call}")
            print(json.dumps(report))
        """
    )
    report = json.loads(run_script(source, tmp_path).splitlines()[-1])
    assert report["add"] == [3, True]
    assert report["add_elsewhere"] == {"ok": 3}
    assert report["cached_square"] == [9, True]
    assert report["cached_square_elsewhere"]["error"] == "UnpicklingError"  # it holds a lock
    assert report["checked"] == [5, True]
    assert report["checked_elsewhere"] == {"ok": 5}
