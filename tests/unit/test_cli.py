"""Tests for `picklable._cli`: the parser, `picklable audit`, exit statuses and outputs."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from picklable._cli import _parser, main
from support.child import child_env


@pytest.fixture
def ghost_module(monkeypatch: pytest.MonkeyPatch) -> str:
    """A module that exists only in this process: its payloads fail to load in a child."""
    ghost = types.ModuleType("cli_ghost_module")
    exec("def f(x):\n    return x\n", ghost.__dict__)
    monkeypatch.setitem(sys.modules, "cli_ghost_module", ghost)
    return "cli_ghost_module"


class TestParser:
    def test_audit_is_a_subcommand(self) -> None:
        """`picklable audit` parses its flags into a handler and options."""
        args = _parser().parse_args(
            [
                "audit",
                "json",
                "--private",
                "--recursive",
                "--serializers",
                "pickle,dill",
                "--jobs",
                "3",
                "--fail-on",
                "wrong,load",
            ]
        )
        assert args.command == "audit"
        assert args.targets == ["json"]
        assert (args.private, args.recursive, args.jobs) == (True, True, 3)
        assert args.serializers == ["pickle", "dill"]
        assert args.fail_on == ["wrong", "load"]

    def test_fail_on_none_is_an_empty_list(self) -> None:
        """--fail-on none means no outcome fails the run."""
        assert _parser().parse_args(["audit", "json", "--fail-on", "none"]).fail_on == []

    @pytest.mark.parametrize(
        ("flag", "value", "message"),
        [
            (
                "--fail-on",
                "wrong,oops",
                "expected 'none' or a comma-separated list of wrong, dump, load, crash, hang",
            ),
            (
                "--serializers",
                "marshal",
                "expected a comma-separated list of picklable, pickle, cloudpickle, dill",
            ),
            ("--jobs", "0", "expected a positive integer"),
        ],
    )
    def test_bad_values_exit_2(
        self, flag: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Bad option values are usage errors (exit status 2) that say what is expected."""
        with pytest.raises(SystemExit) as exit_info:
            main(["audit", "json", flag, value])
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err

    def test_a_command_is_required(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Running without a subcommand is a usage error."""
        with pytest.raises(SystemExit) as exit_info:
            main([])
        assert exit_info.value.code == 2
        assert "required: COMMAND" in capsys.readouterr().err


class TestAuditCommand:
    def test_table_to_stdout_summary_to_stderr(self, capsys: pytest.CaptureFixture[str]) -> None:
        """The table lists objects short of identity; the verdict goes to stderr; exit 0."""
        status = main(
            ["audit", "picklable_testpkg.api", "--serializers", "pickle", "--no-progress"]
        )
        out, err = capsys.readouterr()
        assert status == 0
        row = next(
            line for line in out.splitlines() if line.startswith("picklable_testpkg.api.add ")
        )
        assert row.split() == ["picklable_testpkg.api.add", "function", "identity", "dump", "fails"]
        assert "totals" in out
        assert "picklable audit:" not in out
        assert err.splitlines()[-1] == "OK: picklable has no wrong, dump, load, crash, hang"

    def test_json_and_html_files(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """--json and --html write the reports; the table still goes to stdout."""
        json_path, html_path = tmp_path / "r.json", tmp_path / "r.html"
        status = main(
            [
                "audit",
                "picklable_testpkg.api",
                "--serializers",
                "picklable",
                "--show",
                "all",
                "--json",
                str(json_path),
                "--html",
                str(html_path),
            ]
        )
        out, _ = capsys.readouterr()
        assert status == 0
        data = json.loads(json_path.read_text())
        assert data["targets"] == ["picklable_testpkg.api"]
        assert data["totals"]["picklable"]["identity"] == len(data["entries"])
        assert "picklable_testpkg.api.plain" in out  # --show all lists identity rows too
        page = html_path.read_text()
        assert page.startswith("<!DOCTYPE html>")
        assert 'data-name="picklable_testpkg.api.plain"' in page

    def test_failing_object_exits_1(
        self, ghost_module: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """picklable failing to load an object makes the exit status 1 and names it with the hint."""
        status = main(["audit", ghost_module, "--serializers", "picklable", "--jobs", "1"])
        out, err = capsys.readouterr()
        assert status == 1
        assert "  cli_ghost_module.f (function): load fails" in out
        assert "      hint: install it in the receiving environment" in out
        assert err.splitlines()[-1] == "FAILED: picklable has 1 load fails"

    @pytest.mark.parametrize("fail_on", ["wrong,dump", "none"])
    def test_fail_on_chooses_what_fails(
        self, fail_on: str, ghost_module: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--fail-on without 'load' (or 'none') lets the same audit exit 0."""
        status = main(
            [
                "audit",
                ghost_module,
                "--serializers",
                "picklable",
                "--jobs",
                "1",
                "--fail-on",
                fail_on,
            ]
        )
        capsys.readouterr()
        assert status == 0

    def test_unknown_target_exits_2(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A target that does not import is a fatal error with the reason."""
        with pytest.raises(SystemExit) as exit_info:
            main(["audit", "no_such_package_xyz"])
        assert exit_info.value.code == 2
        assert capsys.readouterr().err == (
            "picklable: error: no module named 'no_such_package_xyz': is it installed in this environment?\n"
        )


class TestModuleEntryPoint:
    def test_python_m_picklable_audit(self) -> None:
        """`python -m picklable audit json --json -` prints the JSON report and exits 0."""
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "picklable",
                "audit",
                "json",
                "--serializers",
                "picklable",
                "--json",
                "-",
            ],
            capture_output=True,
            text=True,
            env=child_env(),
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        names = {e["name"]: e["results"]["picklable"]["outcome"] for e in data["entries"]}
        assert names["json.dumps"] == "identity"
        assert "picklable audit: " in done.stderr


class TestProgressBar:
    def test_draws_and_erases_when_enabled(self) -> None:
        """Enabled, the bar shows phase and counts, then erases itself."""
        import io

        from picklable._format import ProgressBar

        stream = io.StringIO()
        bar = ProgressBar(stream, enabled=True, width=10)
        bar("load", 5, 10)
        assert stream.getvalue() == "\r[#####-----] loading 5/10"
        bar.close()
        assert stream.getvalue().endswith("\r")

    def test_silent_when_not_a_terminal(self) -> None:
        """On a pipe or file (not a terminal) the bar writes nothing."""
        import io

        from picklable._format import ProgressBar

        stream = io.StringIO()
        bar = ProgressBar(stream)
        bar("dump", 1, 2)
        bar.close()
        assert stream.getvalue() == ""
