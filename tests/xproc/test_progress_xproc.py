"""progress=True as people see it: real pools and audits on a real pseudo-terminal.

Each script runs on a pty of 100 columns (``support.terminal``), with tqdm (the
``progress`` extra) and without it (the plain fallback: the script blocks the
``tqdm`` import first). What is asserted is the screen a person is left with.
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import pytest

from support.child import child_env
from support.terminal import run_in_terminal, screen

WITHOUT_TQDM = "import sys\nsys.modules['tqdm'] = None  # as if tqdm were not installed\n"

# 100 items; the first 35 return at once, the others block: the bar stops at 35
# and the script interrupts itself (Ctrl-C) once it has the 35 results.
INTERRUPTED = """
import os
import signal
import time

import picklable


def work(x):
    if x >= 35:
        time.sleep(120)
    return x


if __name__ == "__main__":
    got = 0
    try:
        with picklable.Pool(2) as pool:
            for _ in pool.imap_unordered(work, range(100), progress=True):
                got += 1
                if got == 35:
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(30)
    except KeyboardInterrupt:
        print(f"interrupted after {got}")
"""

WARNS = """
import time
import warnings

import picklable


def work(x):
    time.sleep(0.02)
    return x


if __name__ == "__main__":
    with picklable.Pool(2) as pool:
        for i in pool.imap(work, range(40), progress=True):
            if i == 10:
                warnings.warn("old_api() is deprecated", DeprecationWarning, stacklevel=1)
    print("done")
"""


def run(source: str, directory: Path, tqdm: bool, *args: str) -> tuple[int, list[str], str]:
    script = directory / "script.py"
    script.write_text(("" if tqdm else WITHOUT_TQDM) + textwrap.dedent(source))
    status, output = run_in_terminal(
        [sys.executable, "-W", "always::DeprecationWarning", str(script), *args],
        cwd=directory,
        env=child_env(),
    )
    return status, screen(output), output


@pytest.fixture(params=[True, False], ids=["tqdm", "plain"])
def tqdm(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


class TestPoolProgress:
    def test_ctrl_c_ends_at_the_count_reached(self, tmp_path: Path, tqdm: bool) -> None:
        """Interrupted with 35 of 100 done, the bar is left at 35/100, labelled with the real call."""
        status, lines, output = run(INTERRUPTED, tmp_path, tqdm)
        assert status == 0, output
        assert lines[-1] == "interrupted after 35"
        bar = lines[-2]
        assert bar.startswith("imap_unordered(work)"), lines
        assert "35/100" in bar and "35%" in bar, bar
        assert "100%" not in output

    def test_warning_prints_above_the_bar(self, tmp_path: Path, tqdm: bool) -> None:
        """A warning while the bar runs prints on lines of its own; the bar ends under it."""
        status, lines, output = run(WARNS, tmp_path, tqdm)
        assert status == 0, output
        warning = [i for i, line in enumerate(lines) if ": DeprecationWarning: " in line]
        assert len(warning) == 1, lines
        assert lines[warning[0]].endswith(": DeprecationWarning: old_api() is deprecated")
        assert not any("%" in line and "Warning" in line for line in lines), lines
        assert lines[-2].startswith("imap(work)") and "40/40" in lines[-2], lines
        assert lines[-1] == "done"


class TestAuditProgress:
    def test_bar_is_erased_before_the_summary(self, tmp_path: Path, tqdm: bool) -> None:
        """`picklable audit` on a terminal draws dumping and loading in objects, then
        leaves only its report and summary on screen."""
        source = "from picklable._cli import main\nraise SystemExit(main())\n"
        status, lines, output = run(
            source, tmp_path, tqdm, "audit", "json", "--serializers", "picklable,pickle"
        )
        assert status == 0, output
        assert "picklable audit: dumping" in output and "picklable audit: loading" in output
        assert re.search(r"\d+/12 .*objects/s", output), output
        assert not any("dumping" in line or "loading" in line for line in lines), lines
        assert lines[-1] == "OK: picklable has no wrong, dump, load, crash, hang"
