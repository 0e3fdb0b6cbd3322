"""The benchmarks run: ``bench_dumps.py --quick`` as a user runs it (issue 29).

No figure is asserted (speed is measured by the benchmarks, never by tests):
what is held is that the script's rows and the spawn pool's parent rows are
produced for every serializer the benchmark keeps on this Python, and that a
running pool leaves the payloads unchanged, byte for byte.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.slow
def test_bench_dumps_pool_parent_rows(tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    command = [sys.executable, str(BENCHMARKS / "bench_dumps.py"), "--quick"]
    command += ["--case", "script:", "--pool", "--json", str(out)]
    done = subprocess.run(
        command, cwd=BENCHMARKS.parent, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    rows = {row["case"]: row for row in report["rows"]}
    # dill is left out where it cannot ship a closure (Python 3.15), and says so.
    serializers = ["cloudpickle", "picklable"]
    if not any(note.startswith("dill left out") for note in report["left_out"]):
        serializers.append("dill")
    kinds = ["lambda (by value)", "closure (by value)", "decorated function", "class (by value)"]
    for kind in [*kinds, "100 instances"]:
        alone, in_pool = rows[f"script: {kind}"], rows[f"pool parent: {kind}"]
        for ser in serializers:
            assert in_pool[ser]["dumps_s"] > 0 and in_pool[ser]["loads_s"] > 0, (kind, ser)
        # The same payload whether a pool runs or not (its start looked at the
        # script again: nothing it saw changes what a copy carries).
        assert in_pool["picklable"]["bytes"] == alone["picklable"]["bytes"], kind
