"""A fresh interpreter that loads what the test process ships and runs checks there.

The parent starts ``python -m support.child`` (a new interpreter, not a fork),
then sends requests framed as ``<8-byte length><picklable payload of (fn, args)>``;
the child answers with ``picklable.dumps(("ok", result))`` or
``("error", summary, traceback)``. Checks are functions of
:mod:`support.checks`, so they travel by reference.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent.parent

# A filter (pytest.mark.filterwarnings) for tests that make fork pools in the test
# process, which has threads of others: pytest-xdist's I/O thread, pools the
# module keeps running. Python 3.12+ warns that forking such a process may
# deadlock the child (3.15 raises it where warnings are errors), for picklable's
# pools as for multiprocessing's. That a pool never forks while its own threads
# run is tested in a fresh interpreter (tests/xproc/test_pools_scripts.py).
FORK_AMONG_THREADS = (
    r"ignore:This process \(pid=\d+\) is multi-threaded, use of fork\(\):DeprecationWarning"
)


def child_env() -> dict[str, str]:
    """Environment for child interpreters: finds the tests' helper packages.

    ``PYTHONPATH``'s entries are made absolute: children run in directories of their
    own, where a relative one (``PYTHONPATH=src pytest`` in a worktree) finds nothing,
    and the picklable installed in the venv (another checkout's) would load instead.
    """
    env = dict(os.environ)
    given = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS / "testpkg"), str(TESTS), *given])
    return env


def _serve() -> None:
    import picklable

    inp = sys.stdin.buffer
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # user code that prints must not corrupt the channel
    while True:
        header = inp.read(8)
        if len(header) < 8:
            return
        (size,) = struct.unpack("<Q", header)
        request = inp.read(size)
        try:
            fn, args = picklable.loads(request)
            reply: tuple[Any, ...] = ("ok", fn(*args))
        except BaseException as exc:  # report everything, keep serving
            reply = ("error", f"{type(exc).__name__}: {exc}", traceback.format_exc())
        try:
            data = picklable.dumps(reply)
        except Exception as exc:
            data = picklable.dumps(("error", f"reply not picklable: {exc}", traceback.format_exc()))
        out.write(struct.pack("<Q", len(data)) + data)
        out.flush()


class ChildError(AssertionError):
    """A check failed or raised in the child interpreter."""


class Child:
    """Handle on one fresh child interpreter."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        """``env``: variables set in the child's environment, on top of ours."""
        self.process = subprocess.Popen(
            [sys.executable, "-m", "support.child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**child_env(), **(env or {})},
        )

    def run(self, fn: Any, *args: Any) -> Any:
        """Call ``fn(*args)`` in the child; both travel with picklable."""
        import picklable

        data = picklable.dumps((fn, args))
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(struct.pack("<Q", len(data)) + data)
        self.process.stdin.flush()
        header = self.process.stdout.read(8)
        if len(header) < 8:
            raise ChildError(f"child interpreter died (exit code {self.process.wait()})")
        (size,) = struct.unpack("<Q", header)
        reply = picklable.loads(self.process.stdout.read(size))
        if reply[0] == "error":
            raise ChildError(f"in the child: {reply[1]}\n{reply[2]}")
        return reply[1]

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            # Reaped now: left to the garbage collector, the Popen warns
            # ("subprocess ... is still running") inside whichever test runs then.
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def run_command(
    args: tuple[str, ...] | list[str],
    directory: Path,
    *,
    input: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run a fresh interpreter (``python *args``) in ``directory``, with the
    children's environment; its exit status and output are the caller's to check."""
    return subprocess.run(
        [sys.executable, *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=child_env(),
        cwd=directory,
    )


def run_script(
    source: str, directory: Path, *, timeout: float = 120, args: tuple[str, ...] = ()
) -> str:
    """Run ``source`` as ``__main__`` of a fresh interpreter; return its stdout.

    Fails the test with the script's output when it exits non-zero.
    """
    script = directory / "script.py"
    script.write_text(source)
    done = run_command((str(script), *args), directory, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(
            f"script exited with {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
        )
    return done.stdout


if __name__ == "__main__":
    _serve()
