"""Ray: 1,000 small tasks through picklable.ray vs Ray's own serialization.

Run from the repository root::

    .venv/bin/python benchmarks/bench_ray.py [--quick] [--json FILE]

One local Ray (``ray.init(num_cpus=2)``) for the whole run. Each case times
1,000 tasks from the calls that create them to the gathered results
(``ray.get``), once with ``ray.remote`` and once with ``picklable.ray.remote``,
and prints the ratio picklable / Ray (target of issue 21: <= 1.2x). The two
sides take turns round by round (the order alternating), as in
``bench_dask.py``: ``ratio`` compares the best times, ``paired`` is the
median of the ratios of the two back-to-back runs of each round, which share
whatever else the machine is doing.

Cases, all with functions and classes defined in ``__main__`` (what Ray's
cloudpickle ships by value):

1. a task over 1,000 ints, ints back (plain data is left to Ray; only the
   function travels with picklable, once);
2. a task returning a small dict (results compared with stdlib pickle in the
   worker, then left to Ray);
3. a task over 1,000 instances of a ``__main__`` dataclass (each argument
   travels as a picklable payload; Ray uses cloudpickle);
4. 1,000 calls of an actor's method.

The serialization is also timed alone, without Ray: the driver-side cost per
call (packing an argument) and the worker-side cost per task.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import timeit
from collections.abc import Callable
from typing import Any

import cloudpickle

# Quiet and offline: no dashboard, no usage stats, no token banner on stderr.
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

import ray
from timing import timed_rounds

import picklable
import picklable.ray as pray

N = 1000


def inc(x: int) -> int:
    return x + 1


def describe(x: int) -> dict[str, Any]:
    return {"x": x, "square": x * x, "label": f"item-{x}"}


@dataclasses.dataclass
class Point:
    x: float
    y: float


def norm(p: Point) -> float:
    return (p.x**2 + p.y**2) ** 0.5


class Counter:
    def __init__(self) -> None:
        self.n = 0

    def add(self, by: int) -> int:
        self.n += by
        return self.n


POINTS = [Point(float(i), float(i + 1)) for i in range(N)]


def case_ints(remote: Callable[..., Any]) -> Callable[[], Any]:
    task = remote(inc)
    return lambda: ray.get([task.remote(i) for i in range(N)])


def case_dicts(remote: Callable[..., Any]) -> Callable[[], Any]:
    task = remote(describe)
    return lambda: ray.get([task.remote(i) for i in range(N)])


def case_objects(remote: Callable[..., Any]) -> Callable[[], Any]:
    task = remote(norm)
    return lambda: ray.get([task.remote(p) for p in POINTS])


def case_actor(remote: Callable[..., Any]) -> Callable[[], Any]:
    actor = remote(Counter).remote()
    return lambda: ray.get([actor.add.remote(1) for _ in range(N)])


CASES: list[tuple[str, Callable[[Callable[..., Any]], Callable[[], Any]]]] = [
    ("tasks, ints in and out", case_ints),
    ("tasks, dict results", case_dicts),
    ("tasks, __main__ dataclass args", case_objects),
    ("actor method x 1,000", case_actor),
]


def _per_call(fn: Callable[[], Any], number: int = 20_000) -> float:
    """Best of 5 mean times of ``fn()``, in microseconds."""
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    options = parser.parse_args()
    rounds = 3 if options.quick else 9

    ray.init(
        address="local",  # a Ray of its own: not one that `ray start` or RAY_ADDRESS names
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )
    try:
        print(
            f"Python {platform.python_version()}, ray {ray.__version__}, "
            f"cloudpickle {cloudpickle.__version__}, picklable {picklable.__version__}; "
            f"num_cpus=2; {rounds} rounds\n"
        )
        header = (
            f"{'case (1,000 tasks)':32} {'ray':>9} {'picklable':>10} {'ratio':>6} {'paired':>8}"
        )
        print(header)
        print("-" * len(header))
        figures = []
        for name, case in CASES:
            plain, ours = case(ray.remote), case(pray.remote)
            assert plain() == ours(), name  # warm both (export, worker start) and agree
            times = timed_rounds(rounds, {"ray": plain, "picklable": ours})
            best = {side: min(values) for side, values in times.items()}
            ratio = best["picklable"] / best["ray"]
            paired = statistics.median(o / d for o, d in zip(times["picklable"], times["ray"]))
            figures.append(
                {
                    "case": name,
                    "ray_s": best["ray"],
                    "picklable_s": best["picklable"],
                    "ratio": ratio,
                    "median_paired_ratio": paired,
                }
            )
            ray_ms, ours_ms = best["ray"] * 1000, best["picklable"] * 1000
            print(f"{name:32} {ray_ms:7.0f}ms {ours_ms:8.0f}ms {ratio:5.2f}x {paired:7.2f}x")
    finally:
        ray.shutdown()

    # What picklable adds per call, timed alone: packing arguments on the driver,
    # and in the worker loading the (cached) function, calling it, checking the result.
    shipped, shipped_describe = pray._Shipped.of(inc), pray._Shipped.of(describe)
    per_call = {
        "pack an int argument": _per_call(lambda: pray._pack_all((5,), {})),
        "pack a Point argument": _per_call(lambda: pray._pack_all((POINTS[0],), {})),
        "worker: run inc(5)": _per_call(lambda: pray._run(shipped, (5,), {}, False)),
        "worker: describe(5) and its result": _per_call(
            lambda: pray._run(shipped_describe, (5,), {}, False)
        ),
    }
    print("\nper call: " + ", ".join(f"{k} {v:.1f} us" for k, v in per_call.items()))
    worst = max(f["ratio"] for f in figures)
    worst_paired = max(f["median_paired_ratio"] for f in figures)
    print(
        f"worst ratio of best times {worst:.2f}x, worst median paired ratio {worst_paired:.2f}x "
        "(target <= 1.20x)"
    )
    if options.json:
        with open(options.json, "w") as out:
            report = {"cases": figures, "per_call_us": per_call}
            json.dump({**report, "python": platform.python_version()}, out, indent=2)


if __name__ == "__main__":
    main()
