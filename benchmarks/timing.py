"""The timing loops of the benchmarks: per call (bench_dumps.py, bench_longlived.py)
and paired rounds of whole jobs (bench_dask.py, bench_ray.py, bench_spark.py)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any


def per_call(fn: Callable[[], Any], loops: int, *, collect: bool = False) -> float:
    """Seconds per call over ``loops`` calls in a row, with the cyclic GC off (as
    timeit does): a collection triggered by one serializer's garbage would land in
    another's time. ``collect``: run a collection first, outside the clock."""
    if collect:
        gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        return (time.perf_counter() - start) / loops
    finally:
        gc.enable()


def timed_rounds(rounds: int, runs: dict[str, Callable[[], Any]]) -> dict[str, list[float]]:
    """Wall times of each callable over ``rounds`` interleaved rounds.

    The order alternates from round to round, so that neither side always runs
    right after the other (a cluster still releasing the previous round's keys).
    """
    times: dict[str, list[float]] = {name: [] for name in runs}
    order = list(runs.items())
    for _ in range(rounds):
        order.reverse()
        for name, run in order:
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return times


class ClassKeeper:
    """Puts back what a serializer's ``loads`` set on the benchmark's own classes.

    cloudpickle's ``loads``, in the process that made a class it ships by value,
    finds that class (its class tracker) and sets the payload's copies of the
    methods on it: every batch after it would dump cloudpickle's copies, not the
    script's functions (another payload: 22 bytes fewer for ``ScriptShape``).
    Called between timed batches, never inside one.
    """

    def __init__(self, *classes: type) -> None:
        skip = ("__dict__", "__weakref__")
        self._saved = [
            (cls, {k: v for k, v in vars(cls).items() if k not in skip}) for cls in classes
        ]

    def __call__(self) -> None:
        for cls, saved in self._saved:
            namespace = vars(cls)
            for key, value in saved.items():
                if namespace.get(key) is not value:
                    setattr(cls, key, value)
