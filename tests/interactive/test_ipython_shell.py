"""Everything ships from an IPython terminal shell (issue 11).

The ``ipython`` command runs under a pseudo-terminal (pexpect) and the test
types into it, statement by statement, as a person does. Unlike a kernel, the
shell's cells are named ``<ipython-input-N-...>`` and live only in its
``linecache``; ``__main__`` is again IPython's user namespace.
"""

from __future__ import annotations

from collections.abc import Iterator

import psutil
import pytest

from support.child import child_env

from . import cells
from .drivers import Shell

KINDS = ["pool", "executor"]


@pytest.fixture(scope="module")
def shell(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shell]:
    """One IPython shell with the definitions, a picklable.Pool and a ProcessPoolExecutor."""
    session = Shell(tmp_path_factory.mktemp("ipython"), child_env())
    try:
        session.run(cells.DEFINITIONS)
        session.run(cells.POOLS)
        session.run(cells.CATCH)
    except BaseException:
        session.close(cells.CLOSE_POOLS)
        raise
    yield session
    survivors = session.close(cells.CLOSE_POOLS)
    assert not survivors, f"processes left running after the shell exited (killed): {survivors}"


class TestShell:
    """The session is a real terminal IPython."""

    def test_main_is_the_user_namespace(self, shell):
        """A TerminalInteractiveShell whose user module is __main__; cells have no file on disk."""
        got = shell.run(
            "",
            shell="type(get_ipython()).__name__",
            main="sys.modules['__main__'] is get_ipython().user_module",
            module="nowraps.__module__",
            filename="fails.__code__.co_filename",
            on_disk="os.path.exists(fails.__code__.co_filename)",
        )
        assert got["shell"] == "TerminalInteractiveShell"
        assert got["main"] is True and got["module"] == "__main__"
        assert got["filename"].startswith("<ipython-input-") and got["on_disk"] is False


SLEEPER = """
import subprocess
sleeper = subprocess.Popen(
    ["sleep", "600"],
    start_new_session=True,
    stdin=subprocess.DEVNULL,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)
"""


class TestCleanup:
    """A session that ends badly leaves no process behind."""

    def test_leftovers_are_killed(self, tmp_path):
        """What a shell started and left running (here in its own session, out of reach of the
        terminal's hangup) is killed after it: a failing test cannot leak workers or clusters."""
        session = Shell(tmp_path, child_env())
        try:
            got = session.run(SLEEPER, pid="sleeper.pid")
        finally:
            killed = session.close(grace=0.5)
        assert killed == [got["pid"]]
        assert (
            not psutil.pid_exists(got["pid"])
            or psutil.Process(got["pid"]).status() == psutil.STATUS_ZOMBIE
        )


@pytest.mark.parametrize("kind", KINDS)
class TestShipping:
    """Each kind of object, mapped over each pool from the shell."""

    @pytest.mark.parametrize("case", list(cells.CASES))
    def test_maps(self, shell, kind, case):
        """The object ships by value and every result is right."""
        expression, expected = cells.CASES[case]
        assert shell.run("", value=expression.replace("KIND", repr(kind)))["value"] == expected

    def test_runs_in_workers(self, shell, kind):
        """Tasks run in worker processes, not in the shell."""
        got = shell.run(
            "", pids=f"set(mapped({kind!r}, worker_pid, range(8)))", shell="os.getpid()"
        )
        assert got["pids"] and got["shell"] not in got["pids"]

    def test_exception_arrives_intact(self, shell, kind):
        """The keyword-only exception comes back as the shell's class, with its attributes
        and the worker's traceback."""
        got = shell.run("", value=f"catch({kind!r})")["value"]
        assert got["type"] == "JobError", got.get("formatted")
        assert got["same class"] is True
        assert (got["job"], got["attempt"], got["message"]) == (5, 2, "job 5 failed")
        assert got["cause"] == "RemoteTraceback" and "in fails" in got["cause text"]
        assert (
            "<ipython-input-" in got["formatted"]
            and "raise JobError(job, attempt=2)" in got["formatted"]
        )

    def test_redefined_function(self, shell, kind):
        """A function redefined at the prompt ships its new definition to the same workers."""
        first = shell.run(
            "def step(x):\n    return x + 1\n", value=f"mapped({kind!r}, step, [1, 2])"
        )
        assert first["value"] == [2, 3]
        second = shell.run(
            "def step(x):\n    return x * 100\n", value=f"mapped({kind!r}, step, [1, 2])"
        )
        assert second["value"] == [100, 200]
