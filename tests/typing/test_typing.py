"""mypy keeps decorated signatures through the toolkit (ParamSpec), checked on
``decorators_typing.py``: every ``# revealed:`` and ``# error:`` line must match."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE / "decorators_typing.py"


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory):
    """mypy --strict on the examples: {line: [messages]}."""
    cache = tmp_path_factory.mktemp("mypy_cache")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            "--show-error-codes",
            "--cache-dir",
            str(cache),
            str(EXAMPLES),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=HERE,
    )
    assert done.returncode in (0, 1), done.stderr
    by_line: dict[int, list[str]] = {}
    for line in done.stdout.splitlines():
        match = re.match(r".*decorators_typing\.py:(\d+): (\w+): (.*)$", line)
        assert match, f"unexpected mypy output: {line}"
        by_line.setdefault(int(match.group(1)), []).append(f"{match.group(2)}: {match.group(3)}")
    return by_line


def expectations() -> list[tuple[int, str, str]]:
    out = []
    for number, text in enumerate(EXAMPLES.read_text().splitlines(), start=1):
        match = re.search(r"# (revealed|error): (.*)$", text)
        if match:
            out.append((number, match.group(1), match.group(2).strip()))
    return out


class TestToolkitTyping:
    """The toolkit's products keep their signatures for mypy."""

    def test_every_expectation_met(self, mypy_output):
        """Each revealed type and each expected error is what mypy reports."""
        missing = []
        for number, kind, expected in expectations():
            messages = mypy_output.get(number, [])
            if kind == "revealed":
                ok = f'note: Revealed type is "{expected}"' in messages
            else:
                ok = any(m.startswith("error:") and m.endswith(f"[{expected}]") for m in messages)
            if not ok:
                missing.append(f"line {number}: expected {kind} {expected!r}, got {messages}")
        assert not missing, "\n".join(missing)

    def test_no_unexpected_errors(self, mypy_output):
        """mypy --strict reports nothing else: the toolkit itself type-checks."""
        expected_lines = {number for number, kind, _ in expectations() if kind == "error"}
        unexpected = [
            f"line {number}: {message}"
            for number, messages in mypy_output.items()
            for message in messages
            if message.startswith("error:") and number not in expected_lines
        ]
        assert not unexpected, "\n".join(unexpected)
