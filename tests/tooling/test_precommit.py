"""The pre-commit hooks run what CI runs (scripts/test), with the same tool versions."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def hooks() -> dict[str, dict]:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    return {hook["id"]: hook for repo in config["repos"] for hook in repo["hooks"]}


def pinned_ruff_in_extra() -> str:
    match = re.search(r'"ruff==([^"]+)"', (ROOT / "pyproject.toml").read_text())
    assert match, "pyproject.toml pins no ruff version"
    return match.group(1)


class TestPreCommit:
    """.pre-commit-config.yaml matches scripts/test."""

    def test_every_static_check_has_a_hook(self):
        """ruff check, ruff format, mypy, codespell and validate-pyproject run in both."""
        script = (ROOT / "scripts" / "test").read_text()
        for tool, hook in [
            ("ruff check", "ruff-check"),
            ("ruff format --check", "ruff-format"),
            ("-m mypy", "mypy"),
            ("codespell", "codespell"),
            ("validate-pyproject", "validate-pyproject"),
        ]:
            assert tool in script, f"scripts/test does not run {tool}"
            assert hook in hooks(), f".pre-commit-config.yaml has no {hook} hook"

    def test_ruff_versions_agree(self):
        """The hooks' ruff, the test extra's pin and the installed ruff are one version."""
        pin = pinned_ruff_in_extra()
        for hook_id in ("ruff-check", "ruff-format"):
            assert hooks()[hook_id]["additional_dependencies"] == [f"ruff=={pin}"]
        installed = subprocess.run(
            [sys.executable, "-m", "ruff", "--version"], capture_output=True, text=True, check=True
        ).stdout.split()[-1]
        assert installed == pin
