"""Pools used from real ``__main__`` scripts (issue 6).

Lambdas, classes and exception classes of ``__main__`` travel by value; what
comes back is the script's own class again, so ``isinstance`` and ``except``
work in the script. Spawned workers do not re-import the script, so it needs no
``if __name__ == "__main__"`` guard (forkserver still does: its server imports
``__main__`` once).
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
        if method == "spawn":  # the script is not imported again in the worker
            # Not "__mp_main__" in sys.modules: importing multiprocessing (coverage does, in
            # every measured process) aliases it to the worker's own -c __main__.
            assert pool.apply(lambda: getattr(sys.modules.get("__mp_main__"), "__file__", None)) is None
    with picklable.ProcessPoolExecutor(2, mp_context=method) as ex:
        assert type(ex.submit(make, 3).result()) is Point
        assert list(ex.map(lambda p: p.x, points)) == [1, 2]
    print("ok", method)

if __name__ == "__main__":
    main(sys.argv[1])
"""

UNGUARDED = """
import picklable

pool = picklable.Pool(2)
square = lambda x: x * x
print(sum(pool.map(square, range(10))))
pool.close()
pool.join()
"""


@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_main_objects_through_pools(tmp_path, method):
    """__main__ lambdas, classes and exceptions round-trip; a dying worker is reported."""
    assert run_script(SCRIPT, tmp_path, args=(method,)).split() == ["ok", method]


def test_spawn_needs_no_main_guard(tmp_path):
    """A script without an if __name__ guard works: spawned workers never re-run it."""
    assert run_script(UNGUARDED, tmp_path).strip() == "285"


LEFT_OPEN = """
import sys
import time
import picklable

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
