"""Spark: jobs whose functions ship with picklable.spark vs PySpark's own serializer.

Run from the repository root::

    .venv/bin/python benchmarks/bench_spark.py [--quick | --rounds N] [--json FILE]

One Spark on ``local-cluster[2,1,1024]`` (two executor JVMs, a Python worker
daemon in each; Java must be installed) for the whole run. Each case times a
whole job, from building the RDD or DataFrame (which pickles its function) to the
action's result, once with PySpark as it is and once after
``picklable.spark.enable()`` (target of issue 31: within 1.1x). The two sides take
turns round by round, the order alternating, as in ``bench_dask.py`` and
``bench_ray.py``: ``ratio`` compares the best times, ``paired`` is the median of
the ratios of the two back-to-back runs of each round, which share whatever else
the machine is doing.

Cases, with functions defined in ``__main__`` (what PySpark's cloudpickle ships by
value), on 10 and on 1,000,000 elements in 2 partitions:

1. ``rdd.map(f).sum()``: the command is PySpark's closure around ``f``; in the
   worker, picklable's task returns its result as it is and the command's
   serializer, shipped in picklable's wrapper, marks what is raised (once per
   partition, no step per element);
2. ``df.select(udf(f)(...))`` aggregated: a row-at-a-time UDF (one more call
   per row in the worker);
3. ``df.select(pandas_udf(f)(...))`` aggregated: a pandas UDF (one call per batch).

The pickling of a command is also timed alone, without Spark, and so is the
worker's side of an ``rdd.map`` command on 1,000,000 elements (loaded with
``pickle.loads``, run through its serializer as PySpark's worker does): what
picklable adds per element, free of the noise of whole jobs.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pickle
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the workers import picklable
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

import pandas as pd
import pyspark
from pyspark.serializers import CloudPickleSerializer
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from timing import timed_rounds

import picklable
import picklable.spark

SIZES = (10, 1_000_000)
OFFSET = 7


def scale(x: int) -> int:
    return 3 * x + OFFSET


def scale_series(s: pd.Series) -> pd.Series:
    return 3 * s + OFFSET


def case_rdd(spark: Any, n: int) -> Callable[[], Any]:
    sc = spark.sparkContext
    return lambda: sc.parallelize(range(n), 2).map(scale).sum()


def case_udf(spark: Any, n: int) -> Callable[[], Any]:
    df = spark.range(0, n, 1, 2)
    return lambda: df.select(F.sum(F.udf(scale, "long")("id"))).first()[0]


def case_pandas_udf(spark: Any, n: int) -> Callable[[], Any]:
    df = spark.range(0, n, 1, 2)
    return lambda: df.select(F.sum(F.pandas_udf(scale_series, "long")("id"))).first()[0]


CASES: list[tuple[str, Callable[[Any, int], Callable[[], Any]]]] = [
    ("rdd.map", case_rdd),
    ("udf", case_udf),
    ("pandas_udf", case_pandas_udf),
]


def switched(run: Callable[[], Any], on: bool) -> Callable[[], Any]:
    def job() -> Any:
        if on:
            picklable.spark.enable()
        else:
            picklable.spark.disable()
        return run()

    return job


def _rdd_command(rdd: Any) -> tuple[Any, ...]:
    """The command that PySpark's ``PipelinedRDD._jrdd`` pickles for ``rdd``."""
    return (rdd.func, None, rdd._prev_jrdd_deserializer, rdd._jrdd_deserializer)


def dumps_alone(spark: Any) -> dict[str, float]:
    """Microseconds to pickle an ``rdd.map(scale)`` command, best of 5 x 200."""
    sc = spark.sparkContext
    command = _rdd_command(sc.parallelize(range(10), 2).map(scale))
    out = {}
    for name, serializer in (
        ("PySpark", CloudPickleSerializer()),
        ("picklable", picklable.spark.Serializer()),
    ):
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(200):
                serializer.dumps(command)
            best = min(best, (time.perf_counter() - start) / 200)
        out[name] = best * 1e6
    return out


WORKER_ELEMENTS = 1_000_000


def worker_alone(spark: Any, rounds: int) -> dict[str, dict[str, float]]:
    """What a worker does with an RDD command, in this process, without Spark:
    load the command as the worker does (``pickle.loads``), then
    ``serializer.dump_stream(func(split, iterator), stream)`` over
    ``WORKER_ELEMENTS`` elements, for ``rdd.map(scale)`` (its elements written
    out) and ``rdd.map(scale).sum()`` (one sum per partition). Seconds, best of
    ``rounds`` interleaved, and the median paired ratio: what picklable adds per
    element in the worker, without the scheduling noise of whole jobs."""
    sc = spark.sparkContext
    # A parallelized range makes each partition's elements from its split index
    # (the input iterator is empty): partition 0 of 2 has WORKER_ELEMENTS.
    elements = range(2 * WORKER_ELEMENTS)
    out: dict[str, dict[str, float]] = {}
    for label, rdd in (
        ("rdd.map, written", sc.parallelize(elements, 2).map(scale)),
        ("rdd.map, summed", sc.parallelize(elements, 2).map(scale).mapPartitions(_summed)),
    ):
        command = _rdd_command(rdd)
        runs = {}
        for name, serializer in (
            ("pyspark", CloudPickleSerializer()),
            ("picklable", picklable.spark.Serializer()),
        ):
            func, _, _, stream = pickle.loads(serializer.dumps(command))

            def run(func: Any = func, stream: Any = stream) -> None:
                stream.dump_stream(func(0, iter(())), io.BytesIO())

            runs[name] = run
        times = timed_rounds(rounds, runs)
        out[label] = {
            "pyspark_s": min(times["pyspark"]),
            "picklable_s": min(times["picklable"]),
            "median_paired_ratio": statistics.median(
                o / p for o, p in zip(times["picklable"], times["pyspark"])
            ),
        }
    return out


def _summed(iterator: Any) -> list[int]:
    return [sum(iterator)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--rounds", type=int, help="rounds per case (default 9, --quick 3)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    options = parser.parse_args()
    rounds = options.rounds or (3 if options.quick else 9)

    spark = (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    figures = []
    try:
        print(
            f"Python {platform.python_version()}, PySpark {pyspark.__version__}, "
            f"picklable {picklable.__version__}; local-cluster[2,1,1024], 2 partitions; "
            f"{rounds} rounds\n"
        )
        header = f"{'case':28} {'PySpark':>10} {'picklable':>10} {'ratio':>6} {'paired':>8}"
        print(header)
        print("-" * len(header))
        for name, case in CASES:
            for n in SIZES:
                run = case(spark, n)
                plain, ours = switched(run, False), switched(run, True)
                expected = 3 * n * (n - 1) // 2 + OFFSET * n
                for side in (plain, ours, plain, ours):  # warm: workers, imports, the check
                    assert side() == expected, name
                times = timed_rounds(rounds, {"pyspark": plain, "picklable": ours})
                best = {side: min(values) for side, values in times.items()}
                ratio = best["picklable"] / best["pyspark"]
                paired = statistics.median(
                    o / p for o, p in zip(times["picklable"], times["pyspark"])
                )
                label = f"{name}, {n:,} elements"
                figures.append(
                    {
                        "case": label,
                        "pyspark_s": best["pyspark"],
                        "picklable_s": best["picklable"],
                        "ratio": ratio,
                        "median_paired_ratio": paired,
                    }
                )
                ms = {side: value * 1000 for side, value in best.items()}
                print(
                    f"{label:28} {ms['pyspark']:8.0f}ms {ms['picklable']:8.0f}ms "
                    f"{ratio:5.2f}x {paired:7.2f}x"
                )
        alone = dumps_alone(spark)
        worker = worker_alone(spark, rounds)
    finally:
        picklable.spark.disable()
        spark.stop()

    print(
        "\npickling an rdd.map command alone: "
        + ", ".join(f"{k} {v:.0f} us" for k, v in alone.items())
    )
    print(
        f"in a worker's place, {WORKER_ELEMENTS:,} elements (best times, median paired ratio): "
        + "; ".join(
            f"{k} {v['pyspark_s'] * 1000:.0f} ms / {v['picklable_s'] * 1000:.0f} ms, "
            f"{v['median_paired_ratio']:.2f}x"
            for k, v in worker.items()
        )
    )
    worst = max(f["ratio"] for f in figures)
    worst_paired = max(f["median_paired_ratio"] for f in figures)
    print(
        f"worst ratio of best times {worst:.2f}x, worst median paired ratio {worst_paired:.2f}x "
        "(target <= 1.10x)"
    )
    if options.json:
        with open(options.json, "w") as out:
            report = {
                "cases": figures,
                "dumps_us": alone,
                "worker": worker,
                "python": platform.python_version(),
            }
            json.dump(report, out, indent=2)


if __name__ == "__main__":
    main()
