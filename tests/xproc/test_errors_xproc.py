"""Errors as a user's script shows them (issues 17 and 22): one short traceback
per failed dump, in the user's terms; picklable's internal chain on request."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from support.child import child_env

FAILING_DUMP = textwrap.dedent(
    """
    import threading
    import picklable

    def make_job():
        lock = threading.Lock()
        def job():
            return lock
        return job

    picklable.dumps(make_job())
    """
)

# From Python 3.13 on, a caller's line is underlined even where the call spans all
# of it (``~`` under the callee, ``^`` under the call); 3.11 and 3.12 leave it bare.
UNDERLINED = sys.version_info >= (3, 13)


def run(source: str, directory: Path, **env: str) -> subprocess.CompletedProcess[str]:
    script = directory / "script.py"
    script.write_text(source)
    return subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        # Plain text to compare, whatever FORCE_COLOR says (3.13+ colours tracebacks).
        env={**child_env(), "PYTHON_COLORS": "0", **env},
        cwd=directory,
    )


class TestOneTraceback:
    def test_failed_dumps_prints_one_short_traceback(self, tmp_path):
        """The script's line, the line of dumps that raised, and the message: 6 lines
        (7 where Python underlines the script's call)."""
        done = run(FAILING_DUMP, tmp_path)
        assert done.returncode == 1
        lines = done.stderr.splitlines()
        assert lines[0] == "Traceback (most recent call last):"
        assert lines[1].startswith(f'  File "{tmp_path / "script.py"}", line 11')
        assert lines[2] == "    picklable.dumps(make_job())"
        if UNDERLINED:
            assert lines.pop(3) == "    " + "~" * 15 + "^" * 12, done.stderr
        assert lines[-1] == (
            "picklable.exceptions.PicklingError[TypeError]: Cannot pickle _thread.lock - at "
            "job.__closure__[0].cell_contents: locks hold OS state. Fix: create it inside the "
            "worker (e.g. in the pool initializer)."
        )
        assert len(lines) == 6, done.stderr
        assert "During handling" not in done.stderr
        assert "direct cause" not in done.stderr

    def test_full_traceback_on_request(self, tmp_path):
        """PICKLABLE_TRACEBACK=full prints the C pickler's exception as the cause."""
        done = run(FAILING_DUMP, tmp_path, PICKLABLE_TRACEBACK="full")
        assert done.returncode == 1
        assert "TypeError: cannot pickle '_thread.lock' object" in done.stderr
        assert "The above exception was the direct cause of the following exception:" in (
            done.stderr
        )
        assert done.stderr.count("Traceback (most recent call last):") == 2

    def test_failed_dump_to_a_file(self, tmp_path):
        """picklable.dump too."""
        source = FAILING_DUMP.replace(
            "picklable.dumps(make_job())", "picklable.dump(make_job(), open('out.bin', 'wb'))"
        )
        lines = run(source, tmp_path).stderr.splitlines()
        if UNDERLINED:
            assert lines.pop(3) == "    " + "~" * 14 + "^" * 35
        assert len(lines) == 6 and lines[-1].startswith("picklable.exceptions.PicklingError[")

    def test_failed_load_prints_one_short_traceback(self, tmp_path):
        """A payload naming a module the receiver lacks: one traceback, the ImportError's type."""
        source = textwrap.dedent(
            """
            import pickle
            import picklable

            payload = pickle.dumps(pickle.Pickler).replace(b"_pickle", b"_nosuch")
            picklable.loads(payload)
            """
        )
        done = run(source, tmp_path)
        lines = done.stderr.splitlines()
        if UNDERLINED:
            assert lines.pop(3) == "    " + "~" * 15 + "^" * 9, done.stderr
        assert lines[-1].startswith(
            "picklable.exceptions.UnpicklingError[ModuleNotFoundError]: Cannot load: module "
            "'_nosuch' is not importable here."
        )
        assert done.stderr.count("Traceback (most recent call last):") == 1
        assert len(lines) == 6, done.stderr

    def test_user_reduce_runs_once(self, tmp_path):
        """A failing __reduce__ deep in the object runs once, as with pickle: the error
        names the object that raised, and the walk to it pickles nothing."""
        source = textwrap.dedent(
            """
            import picklable

            calls = []

            class Refuses:
                def __reduce__(self):
                    calls.append(1)
                    raise RuntimeError("stays here")

            try:
                picklable.dumps({"jobs": [[Refuses()]]})
            except RuntimeError as exc:
                assert exc.path == "obj['jobs'][0][0]", exc.path
            print(len(calls))
            """
        )
        done = run(source, tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "1\n"
