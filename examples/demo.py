"""Ship decorated and generated functions to a spawn pool: pickle, cloudpickle,
dill and picklable side by side.

    python examples/demo.py

Each case is dumped here and loaded and called in a fresh worker process (the
``spawn`` start method, the default on macOS and Windows). A cell says what the
worker got: the *same* importable object, an exact *copy*, a *wrong* object (it
runs, but is not what was sent), or a failure.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # mylib, demo_worker

import demo_worker
import mylib

import picklable


def shout(func):  # a decorator defined in the script, without functools.wraps
    def wrapper(*args):
        return func(*args).upper()

    return wrapper


@shout
def greet(name):
    return "hi " + name


def make_scaler(k):
    def scale(x):
        return k * x

    return scale


class Counted:
    """A class-based decorator defined in the script."""

    def __init__(self, func):
        self.func = func
        self.calls = 0

    def __call__(self, *args):
        self.calls += 1
        return self.func(*args)


@Counted
def cube(x):
    return x**3


# (label, object, args, expected result, importable home or None)
CASES: list[tuple[str, Any, tuple[Any, ...], Any, str | None]] = [
    ("mylib.area (decorated, no wraps)", mylib.area, (3, 4), 12, "mylib:area"),
    (
        "function behind an option object",
        mylib.verbose_option.apply_function,
        (2,),
        "verbosity 2",
        "mylib:verbose_option.apply_function",
    ),
    (
        "method made by a factory",
        mylib.Series.total,
        (mylib.Series([1, 2]),),
        ("total", 3),
        "mylib:Series.total",
    ),
    # A spawn worker re-imports this script as __mp_main__: it has its own of these.
    ("__main__ function, no wraps", greet, ("ann",), "HI ANN", "__mp_main__:greet"),
    ("__main__ class-based decorator", cube, (3,), 27, "__mp_main__:cube"),
    ("closure", make_scaler(5), (2,), 10, None),
    ("lambda", lambda x: x + 1, (1,), 2, None),
]


def dumpers() -> dict[str, Any]:
    out: dict[str, Any] = {"pickle": lambda o: pickle.dumps(o, protocol=5)}
    try:
        import cloudpickle

        out["cloudpickle"] = cloudpickle.dumps
    except ImportError:
        pass
    try:
        import dill

        out["dill"] = dill.dumps
    except ImportError:
        pass
    out["picklable"] = picklable.dumps
    return out


def verdict(outcome: tuple[str, Any, str], expected: Any, home: str | None) -> str:
    kind, result, _detail = outcome
    if kind in ("load fails", "call fails"):
        return f"{kind}"
    if result != expected:
        return f"WRONG result {result!r}"
    if home is not None and kind != "same":
        return "copy, not the same object"
    return kind


def main() -> int:
    serializers = dumpers()
    jobs = []
    cells: dict[tuple[int, str], str] = {}
    for row, (_, obj, args, _, home) in enumerate(CASES):
        for name, dumps in serializers.items():
            try:
                payload = dumps(obj)
            except Exception as exc:
                cells[row, name] = f"dump fails ({type(exc).__name__})"
                continue
            jobs.append((row, name, (name, payload, args, home)))
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        outcomes = pool.starmap(demo_worker.run, [job[2] for job in jobs])
    for (row, name, _), outcome in zip(jobs, outcomes):
        cells[row, name] = verdict(outcome, CASES[row][3], CASES[row][4])

    width = max(len(c[0]) for c in CASES) + 2
    columns = list(serializers)
    col = max(len(v) for v in cells.values()) + 2
    print("case".ljust(width) + "".join(n.ljust(col) for n in columns))
    for row, case in enumerate(CASES):
        print(case[0].ljust(width) + "".join(cells[row, n].ljust(col) for n in columns))
    ok = all(cells[row, "picklable"] in ("same", "copy") for row in range(len(CASES)))
    print("\npicklable shipped every case correctly." if ok else "\npicklable FAILED a case.")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
