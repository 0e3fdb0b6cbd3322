"""A long-lived worker: 10,000 mixed payloads in one process, first thousand beside last.

Run from the repository root (objects defined here live in ``__main__``, like a
user's script)::

    .venv/bin/python benchmarks/bench_longlived.py [--count N] [--json FILE]

A pool or Dask worker, or a server, dumps payload after payload for hours; the
figures of ``bench_dumps.py`` are measured one case at a time in a fresh process.
Here one process dumps and loads 10,000 payloads of six kinds, in a fixed
interleaved order (issue 18):

- by reference: module functions of the stdlib and of packages, and
  ``pandas.Series.sum`` (a function found by the locator), vs pickle;
- plain data: a list of 50 dataclass instances, a dict of 200 str->int, vs pickle;
- arrays: numpy arrays of about 8 KB, in band, vs pickle;
- by value: closures of this script (one code, new cells each time) and lambdas
  compiled one by one (a new code object each time, as in a notebook), vs
  cloudpickle (pickle cannot ship them);
- script: what this script defines at its top level (a lambda, a closure, a
  decorated function, a class, its instances), found in the script's namespace
  and shipped as copies that know their place in the script (issue 29), vs
  cloudpickle;
- tasks: ``(closure, (dataclass list, array))``, what a pool sends, vs cloudpickle;
- large, every 125th payload: 100,000 small lists or 10,000 dataclass instances,
  vs pickle (what left pooled picklers with memo tables that made every later
  dumps 300x slower).

Every payload is dumped and loaded by each serializer in turn (the order
rotates), a small one 20 times in a row, with the cyclic GC off while timing.
Per kind and thousand: the median, over its payloads, of the time per call, and
of the ratio to the reference serializer's time on the same payload (paired, so
that a slow spell of a shared machine cancels out). The targets of the README are
checked on the first and on the last thousand; "drift" is the last thousand's
cost over the first's, for picklable's time and for its paired ratio (the ratio
is what a loaded machine does not move).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import pickle
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import cloudpickle
import numpy as np
import pandas as pd
from benchpkg import factories
from benchpkg.records import Point
from timing import ClassKeeper, per_call

import picklable

SERIALIZERS: dict[str, tuple[Callable[[Any], bytes], Callable[[bytes], Any]]] = {
    "pickle": (lambda o: pickle.dumps(o, protocol=5), pickle.loads),
    "cloudpickle": (lambda o: cloudpickle.dumps(o, protocol=5), cloudpickle.loads),
    "picklable": (picklable.dumps, picklable.loads),
}

# kind -> (reference serializer, targets: (dumps, loads, bytes) ratio ceilings or None)
KINDS: dict[str, tuple[str, tuple[float | None, float | None, float | None]]] = {
    "by reference": ("pickle", (1.5, 1.1, None)),  # issue 29: <= 1.5x long-lived
    "plain data": ("pickle", (1.2, 1.2, None)),
    "arrays": ("pickle", (1.2, 1.2, None)),
    "by value": ("cloudpickle", (0.33, 0.5, 0.6)),
    "script": ("cloudpickle", (0.33, 0.5, 0.6)),
    "tasks": ("cloudpickle", (None, None, None)),
    "large": ("pickle", (1.2, 1.2, None)),
}
WINDOW = 1000
# A large payload is timed 3 times in a row: with 8 of them per thousand, one
# slow spell of a shared machine would otherwise move the thousand's median.
REPEATS = {"large": 3, "arrays": 10}
SMALL_REPEATS = 20


OFFSET = 3


def make_closure(n: int) -> Callable[[int], int]:
    def add(x: int) -> int:
        return x + n + OFFSET

    return add


# What a user's script defines at its top level (see bench_dumps.py).
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


# Case names of their own: a case is summarized by its name across kinds.
SCRIPT: list[tuple[str, Any]] = [
    ("top-level lambda", script_lambda),
    ("top-level closure", script_closure),
    ("top-level decorated function", script_decorated),
    ("top-level class", ScriptShape),
    ("10 instances of a top-level class", [ScriptShape(k, k / 2) for k in range(10)]),
]

BY_REFERENCE: list[tuple[str, Any]] = [
    ("os.path.join", os.path.join),
    ("json.dumps", json.dumps),
    ("a package's function", factories.make_closure),
    ("pandas.Series.sum", pd.Series.sum),
]


def payload(i: int) -> tuple[str, str, Any]:
    """The ``i``-th payload of the sequence: its kind, its case, the object (made
    when needed: a worker's payloads come and go)."""
    if i % 125 == 124:
        if (i // 125) % 2:
            return "large", "10k dataclass instances", [Point(k, k / 2, "p") for k in range(10_000)]
        return "large", "100k small lists", [[k] for k in range(100_000)]
    slot = i % 10
    if slot < 3:
        return ("by reference", *BY_REFERENCE[i % len(BY_REFERENCE)])
    if slot == 3:
        return "plain data", "50 dataclass instances", [Point(i + k, k / 2, "p") for k in range(50)]
    if slot == 4:
        return "plain data", "dict of 200 str->int", {f"key{k}": i + k for k in range(200)}
    if slot == 5:
        return "arrays", "8 KB numpy array", np.arange(1000 + i % 7, dtype=np.float64)
    if slot == 6:
        return "by value", "closure", make_closure(i)
    if slot == 7:
        fresh: Any = eval(f"lambda x: x * {i} + OFFSET")  # a new code object each time
        return "by value", "lambda, new code each time", fresh
    if slot == 8:
        return ("script", *SCRIPT[(i // 10) % len(SCRIPT)])
    task = (make_closure(i), ([Point(k, k, "t") for k in range(20)], np.ones(64)))
    return "tasks", "(closure, (20 dataclass instances, array))", task


def run(count: int) -> list[dict[str, Any]]:
    """One record per payload: kind, and per serializer (dumps s, loads s, bytes)."""
    records: list[dict[str, Any]] = []
    names = list(SERIALIZERS)
    # What cloudpickle's loads sets on the script's class is put back after each
    # batch (see ClassKeeper).
    put_back = ClassKeeper(ScriptShape)
    for i in range(count):
        kind, case, obj = payload(i)
        repeats = REPEATS.get(kind, SMALL_REPEATS)
        record: dict[str, Any] = {"kind": kind, "case": case}
        turn = i % len(names)
        for ser in names[turn:] + names[:turn]:
            dumps, loads = SERIALIZERS[ser]
            if ser == "pickle" and KINDS[kind][0] == "cloudpickle":
                continue  # pickle writes references to __main__: nothing comparable
            data = dumps(obj)
            record[ser] = (
                per_call(lambda: dumps(obj), repeats),
                per_call(lambda: loads(data), repeats),
                len(data),
            )
            put_back()
        records.append(record)
    return records


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per kind, and per case of each kind: medians of the time per call and of
    the paired ratios, per thousand payloads."""
    windows = [records[start : start + WINDOW] for start in range(0, len(records), WINDOW)]
    summary: dict[str, Any] = {}
    for kind, (base, _) in KINDS.items():
        cases = list(dict.fromkeys(r["case"] for r in records if r["kind"] == kind))
        summary[kind] = {
            "windows": _per_window(windows, base, lambda r: r["kind"] == kind),
            "cases": {
                case: _per_window(windows, base, lambda r: r["case"] == case) for case in cases
            },
        }
    return summary


def _per_window(
    windows: list[list[dict[str, Any]]], base: str, keep: Callable[[dict[str, Any]], bool]
) -> list[dict[str, Any]]:
    per_window = []
    for window in windows:
        mine = [r for r in window if keep(r)]
        if not mine:
            continue
        entry: dict[str, Any] = {"payloads": len(mine)}
        for ser in SERIALIZERS:
            if ser not in mine[0]:
                continue
            entry[ser] = {
                "dumps_s": statistics.median(r[ser][0] for r in mine),
                "loads_s": statistics.median(r[ser][1] for r in mine),
                "bytes": statistics.median(r[ser][2] for r in mine),
                "dumps_ratio": statistics.median(r[ser][0] / r[base][0] for r in mine),
                "loads_ratio": statistics.median(r[ser][1] / r[base][1] for r in mine),
                "bytes_ratio": statistics.median(r[ser][2] / r[base][2] for r in mine),
            }
        per_window.append(entry)
    return per_window


def render(summary: dict[str, Any], count: int, seconds: float) -> str:
    lines = [
        (
            f"picklable {picklable.__version__}, Python {platform.python_version()}, "
            f"{platform.machine()}, {time.strftime('%Y-%m-%d')}, load average "
            f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, {count:,} payloads "
            f"in {seconds:.0f} s"
        ),
        "",
        (
            f"{'kind':13} {'serializer':12} {'first 1,000: dumps':>19} {'loads':>9} "
            f"{'last 1,000: dumps':>18} {'loads':>9}   ratio vs reference, first -> last "
            "(dumps / loads / bytes)"
        ),
    ]
    verdicts: list[str] = []
    for kind, parts in summary.items():
        windows = parts["windows"]
        if not windows:
            continue
        base, targets = KINDS[kind]
        first, last = windows[0], windows[-1]
        for ser in SERIALIZERS:
            if ser not in first:
                continue
            a, b = first[ser], last[ser]
            ratios = (
                f"{a['dumps_ratio']:.2f}x -> {b['dumps_ratio']:.2f}x / "
                f"{a['loads_ratio']:.2f}x -> {b['loads_ratio']:.2f}x / "
                f"{a['bytes_ratio']:.2f}x vs {base}"
            )
            label = kind if ser == next(s for s in SERIALIZERS if s in first) else ""
            lines.append(
                f"{label:13} {ser:12} {_fmt(a['dumps_s']):>19} {_fmt(a['loads_s']):>9} "
                f"{_fmt(b['dumps_s']):>18} {_fmt(b['loads_s']):>9}   {ratios}"
            )
        drift = [w["picklable"]["dumps_ratio"] for w in windows]
        lines.append(
            f"{'':13} {'':12} picklable's dumps ratio per thousand: "
            + " ".join(f"{r:.2f}" for r in drift)
        )
        if len(parts["cases"]) > 1:
            for case, case_windows in parts["cases"].items():
                a, b = case_windows[0]["picklable"], case_windows[-1]["picklable"]
                lines.append(
                    f"{'':13} {'':12} {case}: {a['dumps_ratio']:.2f}x -> {b['dumps_ratio']:.2f}x"
                    f" / {a['loads_ratio']:.2f}x -> {b['loads_ratio']:.2f}x / "
                    f"{a['bytes_ratio']:.2f}x"
                )
        lines.append("")
        mine_first, mine_last = first["picklable"], last["picklable"]
        verdicts.append(
            f"{kind:13} drift last/first: time {mine_last['dumps_s'] / mine_first['dumps_s']:.2f}x, "
            f"paired ratio {mine_last['dumps_ratio'] / mine_first['dumps_ratio']:.2f}x (<= 1.10)"
            + _targets(targets, base, mine_first, mine_last)
        )
    return "\n".join([*lines, "Checks:", *verdicts])


def _targets(
    targets: tuple[float | None, float | None, float | None],
    base: str,
    first: dict[str, Any],
    last: dict[str, Any],
) -> str:
    out = []
    for op, ceiling in zip(("dumps", "loads", "bytes"), targets):
        if ceiling is None:
            continue
        held = all(w[f"{op}_ratio"] <= ceiling for w in (first, last))
        out.append(f"{op} <= {ceiling}x {base}: {'holds' if held else 'MISSED'}")
    return ("; " + ", ".join(out)) if out else ""


def _fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} us"
    return f"{seconds * 1e3:.2f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000, help="payloads (default 10,000)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    records = run(args.count)
    seconds = time.perf_counter() - start
    summary = summarize(records)
    print(render(summary, args.count, seconds))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"python": sys.version, "count": args.count, "kinds": summary}, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
