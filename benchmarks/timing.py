"""The timing loop of the serializer benchmarks (bench_dumps.py, bench_longlived.py)."""

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
