"""The cross-version table's driver (``tests/support/cross_version.py``) on this Python.

``scripts/matrix`` runs it across every pair of supported versions; here it runs
on this one: every case loads right on the version that made it, and with the
payloads' interpreter record rewritten to another version's, every by-value case
is refused naming both before anything of it runs, and every other case loads.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from picklable._code import HERE

DRIVER = Path(__file__).resolve().parent.parent / "support" / "cross_version.py"
# Another interpreter's record, as long as this one's: payloads can be rewritten in place.
FORGED = "cpython 3." + "9" * (len(HERE) - len("cpython 3."))


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(DRIVER), *args], capture_output=True, text=True, timeout=600
    )


def _dump(directory: Path) -> dict:
    made = _run("dump", str(directory))
    assert made.returncode == 0, made.stderr
    assert made.stderr == ""
    return json.loads((directory / "manifest.json").read_text())


def test_every_case_loads_right_where_it_was_made(tmp_path):
    """Made and loaded on this version: every case right, and the cases cover every way."""
    manifest = _dump(tmp_path / "made")
    assert manifest["made_by"] == HERE
    result = _run("load", str(tmp_path / "made"), "--out", str(tmp_path / "out.json"))
    verdicts = json.loads((tmp_path / "out.json").read_text())
    assert result.returncode == 0, result.stdout
    assert {case: v["verdict"] for case, v in verdicts.items()} == dict.fromkeys(
        manifest["cases"], "right"
    )
    entries = manifest["cases"].values()
    assert {e["write"] for e in entries} == {
        "dumps",
        "dump",
        "pickler",
        "envelope",
        "deterministic",
        "out_of_band",
    }
    assert {e["read"] for e in entries} == {"loads", "pickle", "load", "allowed", "envelope"}
    assert {e["expect"] for e in entries if e["signed"]} == {"reference", "value"}
    assert sum(name.startswith("corpus: ") for name in manifest["cases"]) >= 40


def test_another_versions_payloads_are_refused_or_load_right(tmp_path):
    """Rewritten as another version's: by-value cases refused naming both (before their
    Trace ran, but for the Pickler's stream), the others right."""
    directory = tmp_path / "made"
    manifest = _dump(directory)
    manifest["made_by"] = FORGED
    for name, entry in list(manifest["cases"].items()):
        if entry["signed"]:
            del manifest["cases"][name]  # rewriting it breaks its signature
            continue
        path = directory / entry["file"]
        path.write_bytes(path.read_bytes().replace(HERE.encode(), FORGED.encode()))
    (directory / "manifest.json").write_text(json.dumps(manifest))
    result = _run("load", str(directory), "--out", str(tmp_path / "out.json"))
    verdicts = json.loads((tmp_path / "out.json").read_text())
    assert result.returncode == 0, result.stdout
    expected = {
        name: "refused" if entry["expect"] == "value" else "right"
        for name, entry in manifest["cases"].items()
    }
    assert {case: v["verdict"] for case, v in verdicts.items()} == expected
    refusals = {case: v["detail"] for case, v in verdicts.items() if v["verdict"] == "refused"}
    assert all(FORGED in detail and HERE in detail for detail in refusals.values())
    assert refusals["value: Pickler into a stream"].endswith(
        "(after the payload ran: no check in front of a Pickler's stream)"
    )
    assert sum("after the payload ran" in detail for detail in refusals.values()) == 1
