"""dumps/loads speed and payload size: picklable beside pickle, cloudpickle and dill.

Run from the repository root (objects defined here live in ``__main__``, like a
user's script)::

    .venv/bin/python benchmarks/bench_dumps.py [--quick] [--json FILE] [--case TEXT]

Times are the best of 9 rounds, with the cyclic GC off while timing (as in
timeit); ratios are the median, over the rounds, of each serializer's time
divided by the reference's time in the same round (the serializers take turns,
so a slow spell of a shared machine cancels out). Ratios are against stdlib
pickle for by-reference and plain-data cases, and against cloudpickle for
by-value functions (stdlib pickle cannot ship those: it writes a reference to
``__main__``, which the receiver does not have).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pickle
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import cloudpickle
import dill
import numpy as np
from benchpkg import factories
from timing import per_call

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
        loops = {
            ser: (calibrate(d, budget=budget), calibrate(lo, budget=budget))
            for ser, (d, lo, _) in calls.items()
        }
        times: dict[str, dict[str, list[float]]] = {s: {"dumps": [], "loads": []} for s in calls}
        order = list(calls)
        for round_ in range(ROUNDS):
            for ser in order[round_ % len(order) :] + order[: round_ % len(order)]:
                dump, load, _ = calls[ser]
                times[ser]["dumps"].append(per_call(dump, loops[ser][0], collect=True))
                times[ser]["loads"].append(per_call(load, loops[ser][1], collect=True))
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


def _fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} us"
    return f"{seconds * 1e3:.2f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short loops (smoke run)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--case", metavar="TEXT", help="only the cases whose name contains TEXT")
    args = parser.parse_args(argv)
    rows = measure(budget=0.005 if args.quick else 0.05, only=args.case)
    print(render(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"python": sys.version, "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
