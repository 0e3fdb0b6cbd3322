"""Exceptions with tracebacks: dumps/loads time and payload size.

Run from the repository root::

    .venv/bin/python benchmarks/bench_exceptions.py [--quick] [--json FILE]

Beside picklable: stdlib pickle, cloudpickle and dill (which drop the traceback
and cannot load a keyword-only ``__init__`` at all), and tblib's pickling support
(which ships the traceback), wired through a private ``dispatch_table`` so that
it does not change ``copyreg`` for the other serializers. Each figure is the best
of several repeats of a timed loop. "cold" loads clear picklable's frame cache
before every load (a receiver seeing a failure for the first time); "warm" loads
reuse the frames that the previous load built.
"""

from __future__ import annotations

import argparse
import copyreg
import io
import json
import os
import pickle
import platform
import shutil
import sys
import tempfile
import time
import types
from collections.abc import Callable
from typing import Any

import cloudpickle
import dill
from tblib import pickling_support

import picklable
from picklable import _traceback


class KwOnlyError(Exception):
    def __init__(self, message: str, *, code: int) -> None:
        super().__init__(message)
        self.code = code


def _tblib_dumps(obj: Any) -> bytes:
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=5)
    table = copyreg.dispatch_table.copy()
    table[types.TracebackType] = pickling_support.pickle_traceback
    for cls in (ValueError, KeyError, RecursionError, KwOnlyError):
        table[cls] = pickling_support.pickle_exception
    pickler.dispatch_table = table  # type: ignore[attr-defined]
    pickler.dump(obj)
    return buffer.getvalue()


SERIALIZERS: dict[str, tuple[Callable[[Any], bytes], Callable[[bytes], Any]]] = {
    "pickle": (lambda o: pickle.dumps(o, protocol=5), pickle.loads),
    "cloudpickle": (lambda o: cloudpickle.dumps(o, protocol=5), cloudpickle.loads),
    "dill": (lambda o: dill.dumps(o, protocol=5), dill.loads),
    "tblib": (_tblib_dumps, pickle.loads),
    "picklable": (picklable.dumps, picklable.loads),
}


_SOURCE_DIR = tempfile.mkdtemp(prefix="bench_exceptions_")


def _fifty_frames(exc_factory: Callable[[], BaseException]) -> BaseException:
    """50 distinct functions in a real file (so each frame ships its source line)."""
    source = "\n".join(
        f"def f{i}(x):\n    return f{i + 1}(x + {i})  # step {i} of the pipeline" for i in range(50)
    )
    source += "\ndef f50(x):\n    raise make()\n"
    path = os.path.join(_SOURCE_DIR, "generated_pipeline.py")
    with open(path, "w") as out:
        out.write(source)
    namespace: dict[str, Any] = {"make": exc_factory}
    exec(compile(source, path, "exec"), namespace)
    try:
        namespace["f0"](0)
    except BaseException as exc:
        return exc
    raise AssertionError


def _recursion() -> BaseException:
    def recurse(n: int) -> int:
        return recurse(n + 1) + 1

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1100)
    try:
        recurse(0)
    except RecursionError as exc:
        return exc
    finally:
        sys.setrecursionlimit(limit)
    raise AssertionError


def _chained() -> BaseException:
    try:
        try:
            raise KeyError("missing")
        except KeyError as first:
            raise ValueError("bad value") from first
    except ValueError as exc:
        return exc


CASES: dict[str, Callable[[], BaseException]] = {
    "ValueError, no traceback": lambda: ValueError("x"),
    "chained, 3 frames": _chained,
    "ValueError, 50 frames": lambda: _fifty_frames(lambda: ValueError("deep")),
    "KwOnlyError, 50 frames": lambda: _fifty_frames(lambda: KwOnlyError("deep", code=3)),
    "RecursionError, ~1000 frames": _recursion,
}


def _best(fn: Callable[[], Any], number: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def _frames_of(exc: BaseException) -> int:
    n, tb = 0, exc.__traceback__
    while tb is not None:
        n, tb = n + 1, tb.tb_next
    return n


def run(quick: bool) -> list[dict[str, Any]]:
    number, repeat = (20, 3) if quick else (200, 5)
    rows = []
    for case, factory in CASES.items():
        for name, (dumps, loads) in SERIALIZERS.items():
            exc = factory()  # fresh: a serializer may leave an empty __dict__ behind
            row: dict[str, Any] = {"case": case, "serializer": name}
            try:
                payload = dumps(exc)
                back = loads(payload)
            except Exception as error:
                row["result"] = f"fails: {type(error).__name__}"
                rows.append(row)
                continue
            row["bytes"] = len(payload)
            row["frames_back"] = _frames_of(back)
            row["dumps_us"] = _best(lambda: dumps(exc), number, repeat) * 1e6
            row["loads_us"] = _best(lambda: loads(payload), number, repeat) * 1e6
            if name == "picklable":

                def cold() -> None:
                    _traceback._frames.clear()
                    loads(payload)

                row["loads_cold_us"] = _best(cold, number, repeat) * 1e6
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    rows = run(args.quick)
    print(f"Python {platform.python_version()}, {platform.machine()}")
    header = f"{'case':30} {'serializer':12} {'bytes':>7} {'frames':>6} {'dumps us':>9} {'loads us':>9} {'cold us':>8}"
    print(header)
    print("-" * len(header))
    for row in rows:
        if "result" in row:
            print(f"{row['case']:30} {row['serializer']:12} {row['result']}")
            continue
        cold = f"{row['loads_cold_us']:8.1f}" if "loads_cold_us" in row else ""
        print(
            f"{row['case']:30} {row['serializer']:12} {row['bytes']:7d} {row['frames_back']:6d} "
            f"{row['dumps_us']:9.1f} {row['loads_us']:9.1f} {cold}"
        )
    shutil.rmtree(_SOURCE_DIR, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)


if __name__ == "__main__":
    main()
