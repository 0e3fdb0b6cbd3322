"""Run the diagnostics of picklable, dill and Ray on the same ten unshippable objects.

The ten objects are ``picklable_testpkg.unshippable.make_ten()`` (tests/testpkg).
Prints markdown: one section per object, one block per tool. Used to write
``docs/diagnostics.md``::

    PYTHONPATH=tests/testpkg .venv/bin/python docs/diagnostics_side_by_side.py picklable dill
    PYTHONPATH=tests/testpkg /path/to/ray-venv/bin/python docs/diagnostics_side_by_side.py ray

Each tool is imported only when asked for, so the Ray run needs neither picklable
nor numpy. Memory addresses (``0x7f...``) are replaced by ``0x...`` so that runs
compare.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from typing import Any

from picklable_testpkg.unshippable import make_ten

_ADDRESS = re.compile(r"0x[0-9a-f]{6,}")
_MAX_TRACE_LINES = 24


def _clean(text: str) -> str:
    return _ADDRESS.sub("0x...", text).rstrip()


def _captured(run: Any) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            result = run()
        except Exception as exc:  # the tools' own failures are part of the output
            print(f"raised {type(exc).__name__}: {exc}")
        else:
            if result is not None:
                print(f"returned {result!r}")
    return _clean(out.getvalue())


def picklable_output(case: Any) -> str:
    import picklable

    def run() -> None:
        try:
            picklable.dumps(case.obj)
        except picklable.PicklingError as exc:
            print(f">>> picklable.dumps({case.name})\nPicklingError: {exc}")
        print(f"\n>>> print(picklable.explain({case.name}, name={case.name!r}))")
        print(picklable.explain(case.obj, name=case.name))

    return _captured(run)


def dill_output(case: Any) -> str:
    import dill
    import dill.detect

    blocks = []
    for label, run in (
        ("dill.detect.baditems(obj)", lambda: dill.detect.baditems(case.obj)),
        ("dill.detect.badobjects(obj, depth=1)", lambda: dill.detect.badobjects(case.obj, depth=1)),
        ("dill.detect.errors(obj)", lambda: dill.detect.errors(case.obj)),
    ):
        blocks.append(f">>> {label}\n{_captured(run)}")

    def traced() -> None:
        dill.detect.trace(True)
        try:
            dill.dumps(case.obj)
            print("(dill.dumps succeeded)")
        finally:
            dill.detect.trace(False)

    lines = _captured(traced).splitlines()
    if len(lines) > _MAX_TRACE_LINES:
        keep = _MAX_TRACE_LINES // 2
        lines = [*lines[:keep], f"... ({len(lines) - 2 * keep} lines cut here) ...", *lines[-keep:]]
    blocks.append(">>> dill.detect.trace(True); dill.dumps(obj)\n" + "\n".join(lines))
    return "\n\n".join(blocks)


def ray_output(case: Any) -> str:
    from ray.util import inspect_serializability

    return _captured(lambda: inspect_serializability(case.obj, name=case.name))


TOOLS = {"picklable": picklable_output, "dill": dill_output, "ray": ray_output}


def main(names: list[str]) -> None:
    cases, close = make_ten()
    try:
        for number, case in enumerate(cases, 1):
            print(f"### {number}. {case.label}\n")
            for name in names:
                print(f"**{name}**\n\n```text\n{TOOLS[name](case)}\n```\n")
    finally:
        close()


if __name__ == "__main__":
    main(sys.argv[1:] or ["picklable", "dill"])
