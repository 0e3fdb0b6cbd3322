"""Drive real interactive sessions: a Jupyter kernel and an IPython terminal shell.

:class:`Kernel` starts ``ipykernel`` through ``jupyter_client`` (the kernel a
notebook server would start) and executes cells over its ZeroMQ channels;
:class:`Shell` runs the ``ipython`` command on a pseudo-terminal and types
into it with ``pexpect``. In both, ``__main__`` is IPython's user
namespace: what a cell defines has no source file a worker could import.

Both hand values back the same way: ``run(code, name=expression, ...)`` executes
``code`` as one cell, then evaluates each expression in the session and returns
``{name: value}`` (values are plain data, rebuilt with ``ast.literal_eval``
from their repr). A cell that raises fails the test with the session's
traceback, unless the call says it expects an error.

``close()`` shuts the session down and then kills, by pid, any process it
started that is still alive (pool workers, Dask nannies), so a failed test
never leaves processes behind.
"""

from __future__ import annotations

import ast
import contextlib
import os
import queue
import re
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour and title sequences."""
    return ANSI.sub("", text)


class SessionError(AssertionError):
    """A cell raised (or the session died) where the test expected it to run."""


@dataclass
class CellOutput:
    """What one executed cell sent back."""

    stdout: str = ""
    stderr: str = ""
    #: ``data`` dicts (mimetype -> content) of execute_result and display_data messages
    displays: list[dict[str, Any]] = field(default_factory=list)
    #: ``{"ename", "evalue", "traceback"}`` of the error, if the cell raised
    error: dict[str, Any] | None = None
    #: name -> value of the expressions evaluated after the cell
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def result(self) -> dict[str, Any] | None:
        """The ``data`` of the cell's value (its last expression), if any."""
        return self.displays[-1] if self.displays else None


# Every process a session starts (kernel, shell, pool workers, Dask nannies and
# workers) inherits this variable with the session's own value: after the
# session, its leftovers are found by it even if their parent died first.
MARK = "PICKLABLE_INTERACTIVE_SESSION"


def marked_env(env: dict[str, str]) -> tuple[dict[str, str], str]:
    """``env`` plus a mark unique to one session; returns (environment, mark)."""
    mark = uuid.uuid4().hex
    return dict(env, **{MARK: mark}), mark


def processes_marked(mark: str) -> list[psutil.Process]:
    """The live processes whose environment carries ``mark`` (never this one)."""
    found = []
    for proc in psutil.process_iter():
        if proc.pid == os.getpid():
            continue
        with contextlib.suppress(psutil.Error):
            if proc.environ().get(MARK) == mark and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
    return found


def reap(mark: str, timeout: float = 10.0) -> list[int]:
    """Give the session's processes ``timeout`` seconds to exit, then kill the
    rest by pid; return the pids that had to be killed."""
    _, alive = psutil.wait_procs(processes_marked(mark), timeout=timeout)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(alive, timeout=5)
    return [p.pid for p in alive]


class Kernel:
    """A real IPython kernel (ipykernel), started and driven with jupyter_client.

    Parameters
    ----------
    workdir:
        Working directory of the kernel; its log and connection files go there too.
    env:
        Environment of the kernel process.
    """

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        from jupyter_client.manager import KernelManager

        self.workdir = workdir
        self.log_path = workdir / "kernel.log"
        # ipc: no TCP ports, no "running over TCP without encryption" warning.
        self.manager = KernelManager(
            kernel_name="python3",
            transport="ipc",
            ip=str(workdir / "kernel-ipc"),
            connection_file=str(workdir / "kernel.json"),
        )
        env, self.mark = marked_env(env)
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in close()
        self.manager.start_kernel(cwd=str(workdir), env=env, stdout=self._log, stderr=self._log)
        self.pid: int = self.manager.provisioner.process.pid  # type: ignore[union-attr]
        self.client = self.manager.client()
        self.client.start_channels()
        try:
            self.client.wait_for_ready(timeout=60)
        except BaseException:
            self.close()
            raise

    def execute(self, code: str, *, timeout: float = 120.0, **expressions: str) -> CellOutput:
        """Execute ``code`` as one cell; collect its outputs (errors are not raised)."""
        client = self.client
        msg_id = client.execute(
            code,
            store_history=True,
            allow_stdin=False,
            user_expressions=expressions,
            stop_on_error=False,
        )
        out = CellOutput()
        deadline = time.monotonic() + timeout
        while True:
            msg = self._next(client.get_iopub_msg, deadline, code, out)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "status" and content["execution_state"] == "idle":
                break
            if kind == "stream":
                if content["name"] == "stdout":
                    out.stdout += content["text"]
                else:
                    out.stderr += content["text"]
            elif kind in ("execute_result", "display_data"):
                out.displays.append(content["data"])
            elif kind == "error":
                out.error = {
                    "ename": content["ename"],
                    "evalue": content["evalue"],
                    "traceback": strip_ansi("\n".join(content["traceback"])),
                }
        while True:
            reply = self._next(client.get_shell_msg, deadline, code, out)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        for name, answer in reply["content"].get("user_expressions", {}).items():
            if answer["status"] != "ok":
                raise SessionError(
                    f"expression {name}={expressions[name]!r} raised in the kernel: "
                    f"{answer['ename']}: {answer['evalue']}\n"
                    + strip_ansi("\n".join(answer["traceback"]))
                )
            out.values[name] = ast.literal_eval(answer["data"]["text/plain"])
        return out

    def _next(self, get: Any, deadline: float, code: str, out: CellOutput) -> dict[str, Any]:
        try:
            return get(timeout=max(0.1, deadline - time.monotonic()))  # type: ignore[no-any-return]
        except queue.Empty:
            alive = self.manager.is_alive()
            if alive:
                self.manager.interrupt_kernel()
            state = "still busy, interrupted" if alive else "dead"
            raise SessionError(
                f"the kernel ({state}) did not finish the cell\n"
                f"{code}\n--- stdout so far\n{out.stdout}\n--- stderr so far\n{out.stderr}\n"
                f"--- kernel log\n{self.log()}"
            ) from None

    def run(self, code: str, *, timeout: float = 120.0, **expressions: str) -> dict[str, Any]:
        """Execute ``code`` (which must not raise); return the values of ``expressions``."""
        out = self.execute(code, timeout=timeout, **expressions)
        if out.error is not None:
            raise SessionError(
                f"the cell raised in the kernel:\n{code}\n--- traceback\n{out.error['traceback']}"
            )
        return out.values

    def log(self) -> str:
        """The kernel process's own stdout and stderr so far."""
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-5000:]

    def close(self, cleanup: str = "", *, grace: float = 10.0) -> list[int]:
        """Run ``cleanup`` (closing pools and clusters), shut the kernel down,
        kill whatever it started that has not exited ``grace`` seconds later;
        return those pids."""
        if cleanup and self.manager.is_alive():
            with contextlib.suppress(Exception):
                self.execute(cleanup, timeout=60)
        with contextlib.suppress(Exception):
            self.client.stop_channels()
        with contextlib.suppress(Exception):
            self.manager.shutdown_kernel(now=False)
        if self.manager.is_alive():
            self.manager.shutdown_kernel(now=True)
        with contextlib.suppress(Exception):
            self.manager.cleanup_resources()
        survivors = reap(self.mark, grace)
        self._log.close()
        return survivors


# A block the shell keeps reading until a blank line: the start of a compound statement.
_PROMPT = re.compile(r"\n?In \[(\d+)\]: ")
_VALUES = "@@values@@"


class Shell:
    """The ``ipython`` terminal shell, typed into through a pseudo-terminal.

    ``--simple-prompt`` is IPython's line-reading front end (no editor widgets,
    no auto-indent, so what is typed is what runs); the shell, its
    ``InteractiveShell`` and its user namespace as ``__main__`` are the real
    ones. Each top-level statement of a cell is typed as one input, a compound
    statement ended by an empty line, as a person types them.

    Parameters
    ----------
    workdir:
        Working directory of the shell.
    env:
        Environment of the shell process.
    """

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        import pexpect
        import pexpect.fdpexpect

        from support.terminal import start_in_terminal

        self._pexpect = pexpect
        self.transcript: list[str] = []
        env, self.mark = marked_env(dict(env, TERM="dumb", PAGER="cat"))
        ipython_dir = workdir / "ipython-dir"  # a fresh profile: no user startup files
        ipython_dir.mkdir(exist_ok=True)
        # Started without a fork of this process (pexpect.spawn forks it, and it
        # runs threads: pytest-xdist's; Python 3.15 raises the warning about it).
        self.process, master = start_in_terminal(
            [
                str(Path(sys.executable).with_name("ipython")),
                "--simple-prompt",
                "--no-banner",
                "--colors=NoColor",
                "--no-confirm-exit",
                "--HistoryManager.hist_file=:memory:",
                f"--ipython-dir={ipython_dir}",
            ],
            cwd=workdir,
            env=env,
            columns=2000,  # no wrapped lines in the echo
            rows=40,
            raw_output=False,
        )
        self.child = pexpect.fdpexpect.fdspawn(
            master, encoding="utf-8", codec_errors="replace", timeout=120
        )
        # Lines go out as fast as the pty takes them: the shell reads them in order.
        self.child.delaybeforesend = None
        self.pid: int = self.process.pid
        try:
            self._wait_prompt(60)
        except BaseException:
            self.close()
            raise

    def _wait_prompt(self, timeout: float) -> str:
        try:
            self.child.expect(_PROMPT, timeout=timeout)
        except (self._pexpect.TIMEOUT, self._pexpect.EOF) as exc:
            raise SessionError(
                f"the IPython shell gave no prompt ({type(exc).__name__})\n--- transcript\n"
                + "".join(self.transcript)[-5000:]
                + strip_ansi(str(self.child.before or ""))
            ) from None
        text = strip_ansi(self.child.before)
        self.transcript.append(text + "\nIn []: ")
        return text

    @staticmethod
    def statements(code: str) -> list[tuple[str, bool]]:
        """``code`` cut into top-level statements, each without blank lines (a
        blank line would end a compound statement at the simple prompt), and
        whether it is a compound statement (which the shell ends at a blank line)."""
        lines = code.strip("\n").splitlines()
        tree = ast.parse(code.strip("\n"))
        starts = [
            min([n.lineno, *(d.lineno for d in getattr(n, "decorator_list", []))])
            for n in tree.body
        ]
        ends = [*(s - 1 for s in starts[1:]), len(lines)]
        return [
            ("\n".join(ln for ln in lines[s - 1 : e] if ln.strip()), _compound(node))
            for node, s, e in zip(tree.body, starts, ends)
        ]

    def type_cell(self, code: str, *, timeout: float = 120.0) -> str:
        """Type ``code`` statement by statement; return what the shell printed."""
        printed = []
        for statement, compound in self.statements(code):
            for line in statement.splitlines():
                self.child.sendline(line)
            if compound:
                self.child.sendline("")
            printed.append(self._wait_prompt(timeout))
        return "\n".join(printed)

    def execute(self, code: str, *, timeout: float = 120.0, **expressions: str) -> CellOutput:
        """Type ``code``, then print the values of ``expressions``; collect the output."""
        out = CellOutput()
        out.stdout = self.type_cell(code, timeout=timeout)
        if _error_shown(out.stdout):
            out.error = {"traceback": out.stdout}
            return out
        if expressions:
            pairs = ", ".join(f"{name!r}: ({expr})" for name, expr in expressions.items())
            probe = f"print({_VALUES!r}, repr({{{pairs}}}))"
            printed = self.type_cell(probe, timeout=timeout)
            found = re.search(re.escape(_VALUES) + r" (.*)$", printed, re.MULTILINE)
            if found is None or _error_shown(printed.replace(found.group(0), "")):
                raise SessionError(
                    f"evaluating {expressions} in the IPython shell failed:\n{printed}"
                )
            out.values = ast.literal_eval(found.group(1).strip())
        return out

    def run(self, code: str, *, timeout: float = 120.0, **expressions: str) -> dict[str, Any]:
        """Type ``code`` (which must not raise); return the values of ``expressions``."""
        out = self.execute(code, timeout=timeout, **expressions)
        if out.error is not None:
            raise SessionError(
                f"the cell raised in the IPython shell:\n{code}\n--- output\n{out.stdout}"
            )
        return out.values

    def close(self, cleanup: str = "", *, grace: float = 10.0) -> list[int]:
        """Run ``cleanup``, exit the shell, kill whatever it started that has not
        exited ``grace`` seconds later; return those pids."""
        if cleanup and self.process.poll() is None:
            with contextlib.suppress(Exception):
                self.type_cell(cleanup, timeout=60)
        if self.process.poll() is None:
            with contextlib.suppress(Exception):
                self.child.sendline("exit")
                self.child.expect(self._pexpect.EOF, timeout=30)
        with contextlib.suppress(OSError):
            self.child.close()
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        return reap(self.mark, grace)


def _error_shown(printed: str) -> bool:
    """Whether IPython printed a traceback (or a syntax error) for the input."""
    return "Traceback (most recent call last)" in printed or bool(
        re.search(r"^(SyntaxError|IndentationError)\b", printed, re.MULTILINE)
    )


def _compound(node: ast.stmt) -> bool:
    """Whether a statement has a block (def, class, if, for, while, with, try, match)."""
    return hasattr(node, "body") or type(node).__name__ == "Match"
