"""A program run in a real pseudo-terminal, and what a person would see on it.

:func:`start_in_terminal` starts a command with stdin, stdout and stderr on a
pty of a given size (so ``isatty()`` is true and progress bars draw in place),
and :func:`run_in_terminal` runs one to its end; :func:`screen` replays what it
wrote the way a terminal does (``\\r`` back to the start of the line, text
overwriting what is there, ``ESC[K`` erasing to the end of the line), so a test
reads the lines left on screen, not the bytes.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

_ESCAPE = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])")

# Runs first in the new process, then replaces itself with the program: Ctrl-C at
# its default, as a shell on a terminal starts a program. The test process may
# ignore SIGINT (a run started in the background by a shell without job control:
# `pytest ... &`), and an ignored signal stays ignored across exec. (Not
# preexec_fn: the test process runs threads, pytest-xdist's at least.)
_DEFAULT_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execvp(sys.argv[1], sys.argv[1:])"
)


def start_in_terminal(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    columns: int = 100,
    rows: int = 30,
    raw_output: bool = True,
) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``argv`` on a fresh pty, without echo, in a session of its own;
    return the process and the pty's master end (the caller closes it).

    ``raw_output``: no ``\\n`` -> ``\\r\\n`` translation, so the bytes read are
    the bytes the program wrote.
    """
    master, slave = os.openpty()
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        attributes = termios.tcgetattr(slave)
        if raw_output:
            attributes[1] &= ~termios.ONLCR
        attributes[3] &= ~termios.ECHO
        termios.tcsetattr(slave, termios.TCSANOW, attributes)
        process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _DEFAULT_SIGINT, *argv],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    return process, master


def run_in_terminal(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    columns: int = 100,
    rows: int = 30,
    timeout: float = 120,
) -> tuple[int, str]:
    """Run ``argv`` on a fresh pty; return (exit status, everything it wrote)."""
    process, master = start_in_terminal(argv, cwd=cwd, env=env, columns=columns, rows=rows)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                process.kill()
                raise AssertionError(
                    f"{argv} did not finish in {timeout} s; it wrote:\n"
                    + b"".join(chunks).decode("utf-8", "replace")
                )
            ready, _, _ = select.select([master], [], [], min(left, 1.0))
            if not ready:
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the pty
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    return process.wait(timeout=30), b"".join(chunks).decode("utf-8", "replace")


def screen(output: str) -> list[str]:
    """The lines a terminal shows after receiving ``output`` (trailing blanks removed)."""
    lines: list[list[str]] = [[]]
    row = col = 0
    pos = 0
    while pos < len(output):
        char = output[pos]
        if char == "\x1b":
            match = _ESCAPE.match(output, pos)
            if match:
                arg, command = match.groups()
                count = int(arg) if arg.isdigit() else 1
                if command == "K":  # erase to the end of the line
                    del lines[row][col:]
                elif command == "A":  # cursor up (tqdm's nested bars)
                    row = max(0, row - count)
                elif command == "B":
                    row += count
                    while len(lines) <= row:
                        lines.append([])
                pos = match.end()
                continue
        if char == "\r":
            col = 0
        elif char == "\n":
            row += 1
            col = 0
            while len(lines) <= row:
                lines.append([])
        elif char == "\b":
            col = max(0, col - 1)
        elif char >= " " or char == "\t":
            line = lines[row]
            while len(line) < col:
                line.append(" ")
            if col < len(line):
                line[col] = char
            else:
                line.append(char)
            col += 1
        pos += 1
    shown = ["".join(line).rstrip() for line in lines]
    while shown and not shown[-1]:
        shown.pop()
    return shown
