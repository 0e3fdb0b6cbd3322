"""dumps/loads speed and payload size: picklable beside pickle, cloudpickle and dill.

Run from the repository root (objects defined here live in ``__main__``, like a
user's script)::

    .venv/bin/python benchmarks/bench_dumps.py [--quick] [--json FILE] [--case TEXT] [--first] [--notebook] [--pool]
    .venv/bin/python benchmarks/bench_dumps.py --repeat CASE N SERIALIZER  # for callgrind

Times are the best of 9 rounds, with the cyclic GC off while timing (as in
timeit); ratios are the median, over the rounds, of each serializer's time
divided by the reference's time in the same round (the serializers take turns,
so a slow spell of a shared machine cancels out). Ratios are against stdlib
pickle for by-reference and plain-data cases, and against cloudpickle for
by-value functions (stdlib pickle cannot ship those: it writes a reference to
``__main__``, which the receiver does not have).

The ``script:`` cases are what a user's script defines at its top level (issue
29): found in the script's namespace, they travel as copies that know their
place in the script. ``--first`` adds their first dump and load in a fresh
interpreter (7 of them), beside the thousandth that the rounds measure;
``--notebook`` the same objects defined in a cell of a Jupyter kernel that the
benchmark starts (loops of 200 calls, measured in the kernel); ``--pool`` the
same objects again in the parent of a running spawn pool (picklable's
``ProcessPoolExecutor``, its workers started and each given a task of the
script), as the rounds above measure them.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import pickle
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from math import sqrt
from typing import Any

import cloudpickle
import dill
import numpy as np
from benchpkg import factories
from timing import ClassKeeper, per_call

import picklable

SERIALIZERS: dict[str, tuple[Callable[..., bytes], Callable[..., Any]]] = {
    "pickle": (lambda o, **k: pickle.dumps(o, protocol=5, **k), pickle.loads),
    "cloudpickle": (lambda o, **k: cloudpickle.dumps(o, protocol=5, **k), cloudpickle.loads),
    "dill": (lambda o, **k: dill.dumps(o, protocol=5, **k), dill.loads),
    "picklable": (picklable.dumps, picklable.loads),
}


@dataclasses.dataclass
class Point:
    x: int
    y: float
    label: str


def module_function(x: int) -> int:
    return x + 1


OFFSET = 3


def make_closure(n: int) -> Callable[[int], int]:
    def add(x: int) -> int:
        return x + n + OFFSET

    return add


# What a user's script defines at its top level (issue 29): found in the script's
# namespace, so each travels as a copy that knows its place in the script (a
# spawn worker running the script uses its own). The rows "lambda" and
# "closure" above are made inside cases(): copies alone.
script_lambda = lambda x: x * 2 + OFFSET  # noqa: E731
script_closure = make_closure(7)


def _logged(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return wrapper


@_logged
def script_decorated(x: int) -> int:
    return x + OFFSET


class ScriptShape:
    """A class of the script, with a few methods."""

    scale = 2

    def __init__(self, width: float, height: float) -> None:
        self.width = width
        self.height = height

    def area(self) -> float:
        return self.width * self.height * self.scale

    def __repr__(self) -> str:
        return f"ScriptShape({self.width}, {self.height})"


class ScriptSlotted:
    """A class of the script with slots, a property, a staticmethod and a classmethod."""

    __slots__ = ("width", "height")

    def __init__(self, width: float, height: float) -> None:
        self.width = width
        self.height = height

    @property
    def area(self) -> float:
        return self.width * self.height

    @staticmethod
    def unit(x: float) -> float:
        return x + OFFSET

    @classmethod
    def square(cls, side: float) -> ScriptSlotted:
        return cls(side, side)


def script_uses_sqrt(x: float) -> float:
    return sqrt(x) + OFFSET  # a built-in function of a module, by reference


def drop_unusable() -> list[str]:
    """Leave out a serializer that cannot ship a closure on this Python (dill 0.4
    reads ``co_lnotab``, which Python 3.15 removed); what was left out, and why."""
    notes = []
    probe = make_closure(1)
    for name, (dumps, loads) in list(SERIALIZERS.items()):
        if name in ("pickle", "picklable"):
            continue
        try:
            shipped = loads(dumps(probe))(1) == probe(1)
        except Exception as exc:
            shipped = False
            why = f"{type(exc).__name__}: {exc}"
        else:
            why = "the closure it loaded gives another result"
        if not shipped:
            del SERIALIZERS[name]
            notes.append(f"{name} left out: it cannot ship a closure on this Python ({why})")
    return notes


def calibrate(fn: Callable[[], Any], *, budget: float) -> int:
    """How many calls make one timed batch of about ``budget`` seconds."""
    fn()
    loops = 1
    while True:
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        if time.perf_counter() - start > budget or loops > 1_000_000:
            return loops
        loops *= 2


def cases() -> dict[str, tuple[Any, dict[str, Any]]]:
    return {
        "module function (by reference)": (json.dumps, {}),
        "dict of 100k str->int": ({f"key{i}": i for i in range(100_000)}, {}),
        "10k dataclass instances": ([Point(i, i / 2, "p") for i in range(10_000)], {}),
        "50 MB numpy, in band": (np.ones(50 * 2**20 // 8), {}),
        "50 MB numpy, out of band": (np.ones(50 * 2**20 // 8), {"oob": True}),
        "lambda (by value)": (lambda x: x * 2 + OFFSET, {"by_value": True}),
        "closure (by value)": (make_closure(5), {"by_value": True}),
        "1,000 closures (by value)": ([make_closure(i) for i in range(1000)], {"by_value": True}),
        # Each of its own code (made by eval, file "<string>"), as a program that
        # generates functions makes them: no code object shared between them.
        "1,000 closures of distinct code": (
            [eval(f"lambda n: lambda x: x + n + {i}")(i) for i in range(1000)],
            {"by_value": True},
        ),
        "script: lambda (by value)": (script_lambda, {"by_value": True}),
        "script: closure (by value)": (script_closure, {"by_value": True}),
        "script: decorated function": (script_decorated, {"by_value": True}),
        "script: class (by value)": (ScriptShape, {"by_value": True}),
        "script: 100 instances": (
            [ScriptShape(i, i / 2) for i in range(100)],
            {"by_value": True},
        ),
        "script: class, slots+properties": (ScriptSlotted, {"by_value": True}),
        "script: function using math.sqrt": (script_uses_sqrt, {"by_value": True}),
        "1,000 closures of a package": (
            [factories.make_closure(i) for i in range(1000)],
            {"by_value": True},
        ),
    }


ROUNDS = 9


def measure(budget: float, only: str | None = None) -> list[dict[str, Any]]:
    """Per case and serializer: best seconds per call, and the median over rounds of
    the ratio to the reference serializer measured in the same round.

    The serializers take turns batch by batch (in a rotating order), so a slow spell
    of the machine hits all of them alike and cancels out of the paired ratios: on a
    shared VM the best time of one serializer drifts by 30% between runs.
    """
    rows = []
    # What cloudpickle's loads sets on the script's class is put back after each
    # batch (see ClassKeeper). Made here, not as a global of the script: the
    # first dump of a script's object indexes the script's namespace.
    put_back = ClassKeeper(ScriptShape, ScriptSlotted)
    for name, (obj, opts) in cases().items():
        if only is not None and only not in name:
            continue
        row: dict[str, Any] = {"case": name, "by_value": bool(opts.get("by_value"))}
        base = "cloudpickle" if opts.get("by_value") else "pickle"
        calls: dict[str, tuple[Callable[[], Any], Callable[[], Any], int]] = {}
        for ser, (dumps, loads) in SERIALIZERS.items():
            if opts.get("by_value") and ser == "pickle":
                continue  # pickle writes __main__ references: nothing comparable
            if opts.get("oob"):
                buffers: list[Any] = []

                def dump(dumps=dumps, buffers=buffers):
                    buffers.clear()
                    return dumps(obj, buffer_callback=buffers.append)

                data = dump()
                bufs = list(buffers)

                def load(loads=loads, data=data, bufs=bufs):
                    return loads(data, buffers=bufs)

            else:
                data = dumps(obj)

                def dump(dumps=dumps):
                    return dumps(obj)

                def load(loads=loads, data=data):
                    return loads(data)

            calls[ser] = (dump, load, len(data))
        loops = {}
        for ser, (d, lo, _) in calls.items():
            loops[ser] = (calibrate(d, budget=budget), calibrate(lo, budget=budget))
            put_back()  # before the next serializer's dumps, as between batches
        times: dict[str, dict[str, list[float]]] = {s: {"dumps": [], "loads": []} for s in calls}
        order = list(calls)
        for round_ in range(ROUNDS):
            for ser in order[round_ % len(order) :] + order[: round_ % len(order)]:
                dump, load, _ = calls[ser]
                times[ser]["dumps"].append(per_call(dump, loops[ser][0], collect=True))
                times[ser]["loads"].append(per_call(load, loops[ser][1], collect=True))
                put_back()
        for ser, (_, _, size) in calls.items():
            entry: dict[str, Any] = {"bytes": size}
            for op in ("dumps", "loads"):
                entry[f"{op}_s"] = min(times[ser][op])
                entry[f"{op}_ratio"] = statistics.median(
                    t / r for t, r in zip(times[ser][op], times[base][op])
                )
            row[ser] = entry
        rows.append(row)
    return rows


FIRST_RUNS = 7


def first_dumps(runs: int = FIRST_RUNS) -> list[dict[str, Any]]:
    """The first dumps and loads of each ``script:`` case in a fresh interpreter
    (this script again, with ``--first-child``): what the script's first payload
    pays (reading the script's file and guard, indexing its namespace, code
    bytes). Per case, the median over ``runs`` interpreters of each serializer's
    time divided by cloudpickle's in the same interpreter; the serializers take
    turns in a rotating order."""
    samples: list[dict[str, dict[str, tuple[float, float]]]] = []
    for run in range(runs):
        done = subprocess.run(
            # The serializers this Python keeps, decided here: a probe in the
            # child would make their first dump of a closure not the first.
            [sys.executable, __file__, "--first-child", str(run), ",".join(SERIALIZERS)],
            capture_output=True,
            text=True,
            check=True,
        )
        samples.append(json.loads(done.stdout))
    rows = []
    for case in samples[0]:
        row: dict[str, Any] = {"case": f"{case}, first dump", "by_value": True}
        for ser in samples[0][case]:
            entry: dict[str, Any] = {"bytes": 0}
            for op, at in (("dumps", 0), ("loads", 1)):
                times = [s[case][ser][at] for s in samples]
                entry[f"{op}_s"] = min(times)
                entry[f"{op}_ratio"] = statistics.median(
                    s[case][ser][at] / s[case]["cloudpickle"][at] for s in samples
                )
            entry["bytes"] = samples[0][case][ser][2]
            row[ser] = entry
        rows.append(row)
    return rows


def _first_child(turn: int, kept: list[str]) -> None:
    """In a fresh interpreter: the first dumps and loads of each script case, by
    the serializers ``kept`` (see :func:`drop_unusable`)."""
    out: dict[str, dict[str, tuple[float, float, int]]] = {}
    names = [n for n in SERIALIZERS if n != "pickle" and n in kept]
    put_back = ClassKeeper(ScriptShape, ScriptSlotted)
    for name, (obj, _) in cases().items():
        if not name.startswith("script:"):
            continue
        out[name] = {}
        for ser in names[turn % len(names) :] + names[: turn % len(names)]:
            dumps, loads = SERIALIZERS[ser]
            start = time.perf_counter()
            data = dumps(obj)
            dumped = time.perf_counter()
            loads(data)
            loaded = time.perf_counter()
            put_back()
            out[name][ser] = (dumped - start, loaded - dumped, len(data))
    print(json.dumps(out))


# Run in a Jupyter kernel (``--notebook``): the same script cases, defined in a cell
# (the cell's namespace is the kernel's __main__, which has no file: copies alone).
_NOTEBOOK_DEFINE = """
import functools, json, statistics, sys
sys.path.insert(0, {benchmarks!r})
import cloudpickle, dill, picklable
from timing import ClassKeeper, per_call

OFFSET = 3
nb_lambda = lambda x: x * 2 + OFFSET

def make_closure(n):
    def add(x):
        return x + n + OFFSET
    return add

nb_closure = make_closure(7)

def _logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper

@_logged
def nb_decorated(x):
    return x + OFFSET

class NbShape:
    scale = 2
    def __init__(self, width, height):
        self.width = width
        self.height = height
    def area(self):
        return self.width * self.height * self.scale
"""
_NOTEBOOK_MEASURE = """
_cases = {{
    "notebook: lambda (by value)": nb_lambda,
    "notebook: closure (by value)": nb_closure,
    "notebook: decorated function": nb_decorated,
    "notebook: class (by value)": NbShape,
    "notebook: 100 instances": [NbShape(i, i / 2) for i in range(100)],
}}
_sers = {{
    "cloudpickle": (lambda o: cloudpickle.dumps(o, protocol=5), cloudpickle.loads),
    "dill": (lambda o: dill.dumps(o, protocol=5), dill.loads),
    "picklable": (picklable.dumps, picklable.loads),
}}
_sers = {{_k: _v for _k, _v in _sers.items() if _k in {usable!r}}}
_put_back = ClassKeeper(NbShape)
_out = {{}}
for _name, _obj in _cases.items():
    _times = {{s: ([], []) for s in _sers}}
    _sizes = {{}}
    _order = list(_sers)
    for _round in range({rounds}):
        for _s in _order[_round % len(_order):] + _order[:_round % len(_order)]:
            _d, _l = _sers[_s]
            _data = _d(_obj)
            _sizes[_s] = len(_data)
            _times[_s][0].append(per_call(lambda: _d(_obj), {loops}, collect=True))
            _times[_s][1].append(per_call(lambda: _l(_data), {loops}, collect=True))
            _put_back()
    _ref = _times["cloudpickle"]
    _out[_name] = {{
        _s: {{
            "bytes": _sizes[_s],
            "dumps_s": min(_t[0]),
            "loads_s": min(_t[1]),
            "dumps_ratio": statistics.median(a / b for a, b in zip(_t[0], _ref[0])),
            "loads_ratio": statistics.median(a / b for a, b in zip(_t[1], _ref[1])),
        }}
        for _s, _t in _times.items()
    }}
print(json.dumps(_out))
"""


def notebook_rows(quick: bool = False) -> list[dict[str, Any]]:
    """The script cases defined in a cell of a Jupyter kernel started here (as
    tests/interactive does), measured in the kernel beside cloudpickle and dill."""
    import os
    import queue

    from jupyter_client.manager import start_new_kernel

    benchmarks = os.path.dirname(os.path.abspath(__file__))
    manager, client = start_new_kernel(kernel_name="python3", env=dict(os.environ))
    try:
        client.execute_interactive(_NOTEBOOK_DEFINE.format(benchmarks=benchmarks), timeout=120)
        printed: list[str] = []

        def keep(msg: dict[str, Any]) -> None:
            if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
                printed.append(msg["content"]["text"])
            elif msg["msg_type"] == "error":
                printed.append("\n".join(msg["content"]["traceback"]))

        code = _NOTEBOOK_MEASURE.format(
            rounds=3 if quick else ROUNDS,
            loops=20 if quick else 200,
            usable=sorted(SERIALIZERS),
        )
        try:
            client.execute_interactive(code, timeout=1800, output_hook=keep)
        except queue.Empty:
            raise RuntimeError("the kernel did not answer in 30 minutes") from None
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    results = json.loads("".join(printed))
    return [{"case": case, "by_value": True, **sers} for case, sers in results.items()]


def pool_parent_rows(budget: float) -> list[dict[str, Any]]:
    """The ``script:`` cases measured, as :func:`measure` does, in the parent of
    a running spawn pool: its workers import this script again, and starting
    them made picklable look at the script once more (its file, its guard)."""
    import multiprocessing

    from picklable.executors import ProcessPoolExecutor

    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        # Tasks of each script object: what the rows dump is what the pool itself
        # has just shipped.
        for value in (script_lambda, script_closure, script_decorated):
            assert list(pool.map(value, [1, 2])) == [value(1), value(2)]
        assert pool.submit(ScriptShape(2, 3).area).result() == ScriptShape(2, 3).area()
        rows = measure(budget, only="script:")
    for row in rows:
        row["case"] = "pool parent: " + row["case"].removeprefix("script: ")
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    lines = [
        (
            f"picklable {picklable.__version__}, Python {platform.python_version()}, "
            f"{platform.machine()}, {time.strftime('%Y-%m-%d')}"
        ),
        "",
        (
            f"{'case':32} {'serializer':12} {'dumps':>10} {'loads':>10} {'bytes':>11}   "
            "ratio: median of paired rounds (dumps / loads / bytes)"
        ),
    ]
    for row in rows:
        base = "cloudpickle" if row["by_value"] else "pickle"
        ref = row[base]
        for ser in SERIALIZERS:
            if ser not in row:
                continue
            r = row[ser]
            ratio = (
                f"{r['dumps_ratio']:.2f}x / {r['loads_ratio']:.2f}x / "
                f"{r['bytes'] / ref['bytes']:.2f}x vs {base}"
            )
            lines.append(
                f"{row['case'] if ser == next(iter(k for k in SERIALIZERS if k in row)) else '':32} "
                f"{ser:12} {_fmt(r['dumps_s']):>10} {_fmt(r['loads_s']):>10} {r['bytes']:>11,}   {ratio}"
            )
        lines.append("")
    return "\n".join(lines)


def repeat(case: str, times: str, serializer: str) -> None:
    """``--repeat``: the case's dumps (or loads) alone, ``times`` times in a loop."""
    ser, _, op = serializer.partition(":")
    dumps, loads = SERIALIZERS[ser]
    obj, opts = cases()[case]
    if opts.get("oob"):
        buffers: list[Any] = []
        data = dumps(obj, buffer_callback=buffers.append)
        call: Callable[[], Any] = (
            (lambda: loads(data, buffers=buffers))
            if op == "loads"
            else (lambda: dumps(obj, buffer_callback=buffers.append))
        )
    else:
        data = dumps(obj)
        call = (lambda: loads(data)) if op == "loads" else (lambda: dumps(obj))
    call()
    for _ in range(int(times)):
        call()
        if opts.get("oob") and op != "loads":
            del buffers[1:]


def _fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} us"
    return f"{seconds * 1e3:.2f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short loops (smoke run)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--case", metavar="TEXT", help="only the cases whose name contains TEXT")
    parser.add_argument(
        "--first", action="store_true", help="also the first dump of each script case"
    )
    parser.add_argument(
        "--notebook", action="store_true", help="also the script cases in a Jupyter kernel"
    )
    parser.add_argument(
        "--pool", action="store_true", help="also the script cases in a spawn pool's parent"
    )
    parser.add_argument(
        "--repeat",
        nargs=3,
        metavar=("CASE", "N", "SERIALIZER"),
        help="only dump (or load, SERIALIZER:loads) the case named CASE N times, after "
        "one warm-up call, and print nothing: instructions per call are the difference "
        "of two runs under valgrind --tool=callgrind (N and 0), whatever the machine's load",
    )
    parser.add_argument("--first-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.first_child is not None:
        _first_child(int(args.first_child[0]), args.first_child[1].split(","))
        return 0
    if args.repeat is not None:
        repeat(*args.repeat)
        return 0
    left_out = drop_unusable()
    rows = measure(budget=0.005 if args.quick else 0.05, only=args.case)
    if args.first:
        rows += first_dumps()
    if args.notebook:
        rows += notebook_rows(quick=args.quick)
    if args.pool:
        rows += pool_parent_rows(budget=0.005 if args.quick else 0.05)
    print(render(rows))
    for note in left_out:
        print(note)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"python": sys.version, "rows": rows, "left_out": left_out}, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
