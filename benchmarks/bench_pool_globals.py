"""A task function that reads a 200 MB module-level array: picklable.Pool vs the stdlib's.

Run from the repository root::

    .venv/bin/python benchmarks/bench_pool_globals.py [--runs N] [--mb MB] [--json FILE]

Each run is a fresh interpreter running a script (so that the function and the
array live in ``__main__``, as in a user's program): it starts a pool of 2 spawn
workers, runs three ``map`` calls of 10 items over ``work``, which reads the
array, closes the pool and joins it (issue 18). Measured: that wall time (both
modules imported before it starts); the
peak resident memory of the parent and of the largest worker; the bytes the
parent sent its workers (picklable; frames of every kind); and whether every
result is the value the parent's array holds.

Variants (each its own script):

- ``unchanged``: the array is what the script's module level made, in both the
  parent and the workers (they import the script again): ``work`` goes by
  reference alone, nothing large travels (the must-hold of issue 18).
- ``changed``: the parent rebinds the array in ``if __name__ == "__main__":``
  before the maps, and changes it in place between them: the stdlib's workers
  read their own (stale) array; picklable's guard analysis sees the rebinding
  and sends ``work`` as a copy with the parent's array, once per worker per
  change.
- ``lambda``: ``map(lambda i: DATA[i] ...)``, picklable only (the stdlib's pool
  cannot ship a lambda): a lambda is always a copy, and carries the array; the
  pool sends a function frame once per worker while its bytes do not change.

Runs of the two pools alternate; the figures are medians over the runs, and
ratios are medians of picklable's figure over the stdlib's in the same pair.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import json, resource, sys, time
import numpy as np

DATA = np.ones({size} // 8)


def work(i):
    return float(DATA[i])


if __name__ == "__main__":
    pool_kind, variant = sys.argv[1], sys.argv[2]
{rebind}    # Imported before the clock starts: the pool is measured, not the import
    # (bench_executor.py measures picklable's import apart).
    import multiprocessing
    import picklable
    start = time.perf_counter()
    if pool_kind == "stdlib":
        pool = multiprocessing.get_context("spawn").Pool(2)
    else:
        pool = picklable.Pool(2)
    right = True
    for step in range(3):
{change}        fn = (lambda i: float(DATA[i])) if variant == "lambda" else work
        right = right and pool.map(fn, range(10)) == [float(DATA[i]) for i in range(10)]
    pool.close()
    pool.join()
    seconds = time.perf_counter() - start
    sent = pool._core.sent_bytes if pool_kind == "picklable" else None
    print(json.dumps({{
        "seconds": seconds,
        "parent_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "worker_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        "sent_bytes": sent,
        "right": right,
    }}))
"""

# The changed variant's lines of the guard (the other variants' scripts do not
# have them: a guard that may rebind DATA makes ``work`` travel as a copy).
REBIND = "    DATA = np.full({size} // 8, 2.0)\n"
CHANGE = "        if step:\n            DATA[:10] += 1.0\n"

VARIANTS = {
    "unchanged": ("stdlib", "picklable"),
    "changed": ("stdlib", "picklable"),
    "lambda": ("picklable",),
}


def run_once(script: Path, pool_kind: str, variant: str) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT / "src"), env.get("PYTHONPATH", "")) if p
    )
    done = subprocess.run(
        [sys.executable, str(script), pool_kind, variant],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=script.parent,
    )
    if done.returncode:
        raise RuntimeError(f"{pool_kind} {variant} failed:\n{done.stderr}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def measure(runs: int, size: int) -> dict[str, Any]:
    results: dict[str, dict[str, list[dict[str, Any]]]] = {
        variant: {kind: [] for kind in kinds} for variant, kinds in VARIANTS.items()
    }
    with tempfile.TemporaryDirectory() as tmp:
        scripts = {}
        for variant in VARIANTS:
            changed = variant == "changed"
            rebind = REBIND.format(size=size) if changed else ""
            text = SCRIPT.format(size=size, rebind=rebind, change=CHANGE if changed else "")
            scripts[variant] = Path(tmp) / f"pool_globals_{variant}.py"
            scripts[variant].write_text(text)
        for index in range(runs):
            for variant, kinds in VARIANTS.items():
                order = kinds if index % 2 == 0 else tuple(reversed(kinds))
                for kind in order:
                    results[variant][kind].append(run_once(scripts[variant], kind, variant))
    return results


def render(results: dict[str, Any], runs: int, size: int) -> str:
    lines = [
        (
            f"picklable pool, Python {platform.python_version()}, {platform.machine()}, "
            f"{time.strftime('%Y-%m-%d')}, load average {os.getloadavg()[0]:.1f} on "
            f"{os.cpu_count()} cores; a {size / 2**20:.0f} MB global, 2 spawn workers, "
            f"3 maps of 10 items, {runs} runs (medians)"
        ),
        "",
        (
            f"{'variant':10} {'pool':10} {'seconds':>8} {'parent MB':>10} {'worker MB':>10} "
            f"{'sent MB':>9} {'right':>6}   ratio vs stdlib (time / parent / worker memory)"
        ),
    ]
    for variant, by_kind in results.items():
        base = by_kind.get("stdlib")
        for kind, rows in by_kind.items():
            seconds = statistics.median(r["seconds"] for r in rows)
            parent = statistics.median(r["parent_mb"] for r in rows)
            worker = statistics.median(r["worker_mb"] for r in rows)
            sent = [r["sent_bytes"] for r in rows if r["sent_bytes"] is not None]
            sent_text = f"{statistics.median(sent) / 2**20:.2f}" if sent else "-"
            right = "yes" if all(r["right"] for r in rows) else "NO"
            ratio = ""
            if base is not None and kind != "stdlib":
                ratio = " / ".join(
                    f"{statistics.median(r[k] / b[k] for r, b in zip(rows, base)):.2f}x"
                    for k in ("seconds", "parent_mb", "worker_mb")
                )
            lines.append(
                f"{variant if kind == next(iter(by_kind)) else '':10} {kind:10} {seconds:8.2f} "
                f"{parent:10.0f} {worker:10.0f} {sent_text:>9} {right:>6}   {ratio}"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per pool and variant")
    parser.add_argument("--mb", type=int, default=200, help="size of the global, MB")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    size = args.mb * 2**20
    results = measure(args.runs, size)
    print(render(results, args.runs, size))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"python": sys.version, "bytes": size, "results": results}, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
