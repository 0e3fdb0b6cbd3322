"""`picklable explain FILE.py:NAME` tells what happens when the file runs as a script.

The script is run for real (``python script.py``: its ``__main__`` block maps
``work`` over a picklable.Pool), and explained from the command line
(``python -m picklable explain script.py:work``, which loads it as a spawn worker
does). Whatever picklable does with such objects, the two must agree: explain
says "ships" exactly when the pool ran the task.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from support.child import child_env

LOCKED = """
import threading

import picklable

LOCK = threading.Lock()


def work(x):
    with LOCK:
        return x * 2


if __name__ == "__main__":
    try:
        with picklable.Pool(2) as pool:
            print("shipped", pool.map(work, [1, 2, 3]))
    except Exception as exc:
        print("failed:", type(exc).__name__, exc)
"""

PLAIN = """
import picklable

FACTOR = 2


def work(x):
    return x * FACTOR


if __name__ == "__main__":
    with picklable.Pool(2) as pool:
        print("shipped", pool.map(work, [1, 2, 3]))
"""


def run(directory: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=directory,
        env=child_env(),
    )


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(LOCKED, id="module-level-lock"),
        pytest.param(PLAIN, id="plain"),
    ],
)
def test_explain_agrees_with_running_the_script(tmp_path: Path, source: str) -> None:
    """explain script.py:work ships (exit 0) exactly when the script's pool ran work."""
    (tmp_path / "script.py").write_text(textwrap.dedent(source))
    ran = run(tmp_path, "script.py")
    assert ran.returncode == 0, ran.stderr
    shipped = ran.stdout.startswith("shipped [2, 4, 6]")
    assert shipped or ran.stdout.startswith("failed:"), ran.stdout + ran.stderr
    explained = run(tmp_path, "-m", "picklable", "explain", "script.py:work")
    lines = explained.stdout.splitlines()
    assert lines[0].startswith("script.py:work, loaded as a spawn worker sees it:"), lines
    assert explained.returncode == (0 if shipped else 1), explained.stdout + explained.stderr
    assert lines[1].startswith("work: ships" if shipped else "work: cannot ship"), lines
    if not shipped:
        # What the pool said, explain says too: the lock at the same path.
        assert "work.__globals__['LOCK']" in ran.stdout
        assert "at:  work.__globals__['LOCK']" in explained.stdout
