"""Dask distributed: 1,000 small tasks through picklable.dask vs Dask's own serialization.

Run from the repository root::

    .venv/bin/python benchmarks/bench_dask.py [--quick] [--json FILE]

One ``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)`` for the
whole run. Each case times 1,000 tasks from the call that creates them to the
gathered results, once with Dask's own API (pickle, then cloudpickle for
``__main__`` code) and once through ``picklable.dask``, and prints the ratio
picklable / Dask (target of issue 7: <= 1.2x). Every case is timed several
times, interleaved with its counterpart: ``ratio`` compares the best times (the
least disturbed by other processes on a shared machine), ``paired`` is the
median of the ratios of the two back-to-back runs of each round. Tasks use ``pure=False`` so
no round reuses the keys of another.

Cases, all with functions defined in ``__main__`` (what Dask ships by value):

1. ``map`` of a function over 1,000 ints, ints back (the common case: plain
   data is left to Dask, only the function travels with picklable);
2. ``map`` returning a small dict per task (results compared with stdlib
   pickle on the worker, then left to Dask);
3. ``map`` over 1,000 instances of a ``__main__`` dataclass (each argument
   travels as a picklable envelope; Dask uses cloudpickle);
4. ``submit`` called 1,000 times (the function is shipped again per call: the
   client-side cost of ``picklable.dask.submit``);
5. ``delayed``: 1,000 delayed calls computed at once.

On a shared machine the cluster's own scheduling (milliseconds per task) makes
these ratios swing by tens of percent from run to run. So the serialization is
also timed alone, without the cluster: the client-side cost per call (shipping
the function again, checking an argument), the worker-side cost per task
(unpickling the task's function and calling it), and the bytes of the function
that travel with every task.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import pickle
import platform
import statistics
import timeit
from collections.abc import Callable
from typing import Any

import cloudpickle
import dask
import distributed
from timing import timed_rounds

import picklable
import picklable.dask as pdask

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


def case_map_ints(client: distributed.Client, mapper: Callable[..., Any]) -> Any:
    return client.gather(mapper(client, inc, range(N), pure=False))


def case_map_dicts(client: distributed.Client, mapper: Callable[..., Any]) -> Any:
    return client.gather(mapper(client, describe, range(N), pure=False))


POINTS = [Point(float(i), float(i + 1)) for i in range(N)]


def case_map_objects(client: distributed.Client, mapper: Callable[..., Any]) -> Any:
    return client.gather(mapper(client, norm, POINTS, pure=False))


def case_submit(client: distributed.Client, submitter: Callable[..., Any]) -> Any:
    return client.gather([submitter(client, inc, i, pure=False) for i in range(N)])


def case_delayed(client: distributed.Client, make: Callable[..., Any]) -> Any:
    task = make(inc)
    return dask.compute(*[task(i) for i in range(N)])


CASES: list[tuple[str, Callable[..., Any], Any, Any]] = [
    ("map, ints in and out", case_map_ints, distributed.Client.map, pdask.map),
    ("map, dict results", case_map_dicts, distributed.Client.map, pdask.map),
    ("map, __main__ dataclass args", case_map_objects, distributed.Client.map, pdask.map),
    ("submit x 1,000", case_submit, distributed.Client.submit, pdask.submit),
    ("delayed x 1,000", case_delayed, dask.delayed, pdask.delayed),
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

    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address="127.0.0.1:0",  # no fixed port: 8787 may be taken
            silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.wait_for_workers(2)
        print(
            f"Python {platform.python_version()}, dask {dask.__version__}, "
            f"distributed {distributed.__version__}, cloudpickle {cloudpickle.__version__}, "
            f"picklable {picklable.__version__}; 2 workers x 1 thread; {rounds} rounds\n"
        )
        header = (
            f"{'case (1,000 tasks)':32} {'dask':>9} {'picklable':>10} {'ratio':>6} {'paired':>8}"
        )
        print(header)
        print("-" * len(header))
        figures = []
        for name, case, plain, ours in CASES:
            expected = case(client, plain)  # warm both paths, and check they agree
            assert case(client, ours) == expected, name
            times = timed_rounds(
                rounds,
                {
                    "dask": lambda c=case, p=plain: c(client, p),
                    "picklable": lambda c=case, o=ours: c(client, o),
                },
            )
            best = {side: min(values) for side, values in times.items()}
            ratio = best["picklable"] / best["dask"]
            # Each round's two runs were back to back: their ratio shares the load.
            paired = statistics.median(o / d for o, d in zip(times["picklable"], times["dask"]))
            figures.append(
                {
                    "case": name,
                    "dask_s": best["dask"],
                    "picklable_s": best["picklable"],
                    "ratio": ratio,
                    "median_paired_ratio": paired,
                }
            )
            dask_ms, ours_ms = best["dask"] * 1000, best["picklable"] * 1000
            print(f"{name:32} {dask_ms:7.0f}ms {ours_ms:8.0f}ms {ratio:5.2f}x {paired:7.2f}x")

    # The client-side part alone, without the cluster's noise: what picklable adds
    # per submit (the function shipped again, an argument checked) beside what
    # Dask pays to cloudpickle the same __main__ function.
    per_call = {
        "ShippedFunction.of(inc)": _per_call(lambda: pdask.ShippedFunction.of(inc)),
        "cloudpickle.dumps(inc)": _per_call(lambda: cloudpickle.dumps(inc)),
        "check an int argument": _per_call(lambda: pdask._pack(5)),
        "check a Point argument": _per_call(lambda: pdask._pack(POINTS[0])),
    }
    print("\nclient side, per call: " + ", ".join(f"{k} {v:.1f} us" for k, v in per_call.items()))
    # The worker side alone: what a worker does with the function of every task
    # (unpickle it from the task, call it), picklable's envelope vs cloudpickle's.
    shipped_bytes = pickle.dumps(pdask.ShippedFunction.of(inc), 5)
    cloud_bytes = cloudpickle.dumps(inc)
    per_task = {
        "ShippedFunction": _per_call(lambda: pickle.loads(shipped_bytes)(1)),
        "cloudpickle": _per_call(lambda: pickle.loads(cloud_bytes)(1)),
    }
    print(
        "worker side, per task (unpickle + call inc): "
        + ", ".join(f"{k} {v:.1f} us" for k, v in per_task.items())
    )

    shipped = pdask.ShippedFunction.of(inc)
    sizes = {
        "cloudpickle(inc)": len(cloudpickle.dumps(inc)),
        "picklable ShippedFunction(inc)": len(picklable.dumps(shipped)),
    }
    print("\nfunction bytes per task: " + ", ".join(f"{k} {v}" for k, v in sizes.items()))
    worst = max(f["ratio"] for f in figures)
    worst_paired = max(f["median_paired_ratio"] for f in figures)
    print(
        f"worst ratio of best times {worst:.2f}x, worst median paired ratio {worst_paired:.2f}x "
        "(target <= 1.20x)"
    )
    if options.json:
        with open(options.json, "w") as out:
            report = {
                "cases": figures,
                "per_call_us": per_call,
                "per_task_us": per_task,
                "function_bytes": sizes,
            }
            json.dump({**report, "python": platform.python_version()}, out, indent=2)


if __name__ == "__main__":
    main()
