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

from support.child import child_env, run_script

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
    assert message.startswith(
        "worker 0 could not import the main module "
    ) or message.startswith("worker 1 could not import the main module ")
    assert "script.py as __mp_main__" in message
    assert "RuntimeError: An attempt has been made to start a new process before the current process has finished its bootstrapping phase." in message
    assert 'Fix: put the code that starts the pool under `if __name__ == "__main__":`, or pass import_main=False' in message
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
    done = subprocess.run(
        [sys.executable, str(script), kind],
        capture_output=True,
        text=True,
        timeout=60,
        env=child_env(),
        cwd=tmp_path,
    )
    assert (done.returncode, done.stdout.split(), done.stderr) == (0, out.split(), "")
