"""``picklable audit`` speed on pandas: ``pandas.*``, ``Series`` and ``DataFrame``
(about 430 distinct callables) against picklable, pickle, cloudpickle and dill.

Run from the repository root::

    .venv/bin/python benchmarks/bench_audit.py [--quick] [--json FILE]

The cost of an audit is not the loads (about a second for the whole set) but
starting interpreters that import pandas; the audit loads every payload in a
couple of persistent children fed in batches. Figures are the best of a few
runs (the minimum is the least disturbed by other processes):

* the command a user runs, cold (new process, pandas imported): the target;
* the audit in a warm process (four serializers) with 1, 2 and 4 loading
  children and with the default, with the moments the dumps end and the first
  load result arrives (a child has started);
* picklable alone (the subject, what a maintainer's test suite runs);
* the floor: one interpreter starting and importing pandas, picklable,
  cloudpickle and dill, which every child pays once;
* what one interpreter per payload would cost, extrapolated from that floor.
Target: the cold command under 30 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from typing import Any

from picklable._audit import audit, collect
from picklable._audit.runner import child_environment

TARGETS = ["pandas", "pandas.Series", "pandas.DataFrame"]
OPTIONS: dict[str, Any] = {"members": False}
TARGET_SECONDS = 30.0


def timed_audit(serializers: list[str] | None, jobs: int) -> dict[str, Any]:
    marks: dict[str, float] = {}
    start = time.perf_counter()

    def progress(phase: str, done: int, total: int) -> None:
        if done:  # each phase also reports its start (done == 0)
            marks.setdefault(phase, time.perf_counter())
        if phase == "dump" and done == total:
            marks["dumps_done"] = time.perf_counter()

    report = audit(
        TARGETS, serializers=serializers, jobs=jobs or None, progress=progress, **OPTIONS
    )
    end = time.perf_counter()
    payloads = sum(
        1 for e in report.entries for r in e.results.values() if r.outcome.value != "dump"
    )
    return {
        "seconds": end - start,
        "dumps_done": marks.get("dumps_done", end) - start,
        "first_load_result": marks.get("load", end) - start,
        "objects": len(report.entries),
        "payloads_loaded": payloads,
        "serializers": list(report.serializers),
        "totals": report.totals(),
    }


def best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return min(runs, key=lambda r: r["seconds"])


def floor_seconds() -> float:
    """One fresh interpreter importing what a loading child imports."""
    code = "import pandas, picklable, cloudpickle, dill, picklable._audit._child"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=child_environment())
    return time.perf_counter() - start


def cli_seconds(*arguments: str) -> float:
    """The command a user runs, cold: a new process, pandas imported, every serializer."""
    command = [
        sys.executable,
        "-m",
        "picklable",
        "audit",
        *arguments,
        "--no-progress",
        "--json",
        os.devnull,
    ]
    start = time.perf_counter()
    done = subprocess.run(command, env=child_environment(), capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run per figure")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    repeats = 1 if args.quick else 3

    # Imported before timing, as a user's process would have it.
    import pandas  # noqa: F401, ICN001

    start = time.perf_counter()
    found, _ = collect(TARGETS, **OPTIONS)
    collect_seconds = time.perf_counter() - start

    results: dict[str, Any] = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "pandas": sys.modules["pandas"].__version__,
        "objects": len(found),
        "collect_seconds": collect_seconds,
    }
    results["cli_cold_seconds"] = min(cli_seconds(*TARGETS, "--no-members") for _ in range(repeats))
    # Every pandas class with its members (about 1000 objects).
    results["cli_cold_all_pandas_classes_seconds"] = min(
        cli_seconds("pandas") for _ in range(repeats)
    )
    floor = min(floor_seconds() for _ in range(repeats))
    results["child_start_and_imports_seconds"] = floor
    for jobs in (1, 2, 4):
        results[f"all_four_jobs_{jobs}"] = best([timed_audit(None, jobs) for _ in range(repeats)])
    results["all_four_default_jobs"] = best([timed_audit(None, 0) for _ in range(repeats)])
    results["picklable_only_default_jobs"] = best(
        [timed_audit(["picklable"], 0) for _ in range(repeats)]
    )

    full = results["all_four_default_jobs"]
    per_payload = floor * full["payloads_loaded"]
    results["one_child_per_payload_estimate_seconds"] = per_payload

    print(f"picklable audit on {' '.join(TARGETS)} (members of named classes only)")
    print(
        f"Python {results['python']}, pandas {results['pandas']}, {results['cpus']} cpus, best of {repeats}"
    )
    print(f"  objects: {len(found)}; collect: {collect_seconds:.2f} s")
    cold = results["cli_cold_seconds"]
    print(f"  `python -m picklable audit ... --no-members` (new process, all four): {cold:.2f} s")
    wide = results["cli_cold_all_pandas_classes_seconds"]
    print(f"  `python -m picklable audit pandas` (every pandas.* class with members): {wide:.2f} s")
    print(f"  child start + import pandas/picklable/cloudpickle/dill: {floor:.2f} s")
    for jobs in (1, 2, 4):
        r = results[f"all_four_jobs_{jobs}"]
        print(
            f"  all four serializers, {jobs} child(ren): {r['seconds']:.2f} s "
            f"({r['payloads_loaded']} payloads; dumps done at {r['dumps_done']:.2f} s, "
            f"first load result at {r['first_load_result']:.2f} s)"
        )
    print(f"  all four serializers, default children: {full['seconds']:.2f} s")
    solo = results["picklable_only_default_jobs"]
    print(
        f"  picklable alone, default children: {solo['seconds']:.2f} s ({solo['payloads_loaded']} payloads)"
    )
    print(
        f"  one interpreter per payload would take about {per_payload:.0f} s "
        f"({per_payload / full['seconds']:.0f}x the batched audit)"
    )
    verdict = "under" if cold < TARGET_SECONDS else "OVER"
    print(
        f"  target (the cold command): {verdict} {TARGET_SECONDS:.0f} s ({cold / TARGET_SECONDS:.0%} of it)"
    )
    totals = full["totals"]
    print("  outcomes:")
    for name in full["serializers"]:
        counts = ", ".join(f"{n} {o}" for o, n in totals[name].items() if n)
        print(f"    {name:<12} {counts}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=2)


if __name__ == "__main__":
    main()
