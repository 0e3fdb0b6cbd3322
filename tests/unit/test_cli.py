"""Tests for `picklable._cli`: the parser, `picklable audit`, exit statuses and outputs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from picklable._cli import _parser, main
from support import wrapper_checks
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
    def test_report_to_stdout_summary_to_stderr(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Without --table: the other serializers' wrong objects with what differs, then the
        totals; the verdict goes to stderr; exit 0."""
        status = main(
            [
                "audit",
                "picklable_testpkg.wrapt_methods",
                "--serializers",
                "cloudpickle",
                "--no-progress",
            ]
        )
        out, err = capsys.readouterr()
        assert status == 0
        lines = out.splitlines()
        start = lines.index("wrong under other serializers: 2 objects load as another object")
        wrapper = wrapper_checks.wrapt_type_label("BoundFunctionWrapper")
        assert lines[start + 1 : start + 5] == [
            "  picklable_testpkg.wrapt_methods.Table.mean (decorated method)",
            f"      cloudpickle: type: {wrapper} -> function",
            "  picklable_testpkg.wrapt_methods.Table.total (decorated method)",
            f"      cloudpickle: type: {wrapper} -> function",
        ]
        assert not any(line.startswith("object ") for line in lines)  # no table
        assert "totals" in out
        assert "picklable audit:" not in out
        assert err.splitlines()[-1] == "OK: picklable has no wrong, dump, load, crash, hang"

    def test_table_on_request(self, capsys: pytest.CaptureFixture[str]) -> None:
        """--table adds one row per object short of identity, before what fails and the totals."""
        status = main(
            [
                "audit",
                "picklable_testpkg.api",
                "--serializers",
                "pickle",
                "--table",
                "--no-progress",
            ]
        )
        out, _ = capsys.readouterr()
        assert status == 0
        row = next(
            line for line in out.splitlines() if line.startswith("picklable_testpkg.api.add ")
        )
        assert row.split() == ["picklable_testpkg.api.add", "function", "identity", "dump", "fails"]
        assert out.index("picklable_testpkg.api.add ") < out.index("totals")

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


class TestReports:
    def test_junit_one_test_case_per_object(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """`picklable audit json --junit out.xml` writes JUnit XML with one test case per object."""
        junit, report = tmp_path / "out.xml", tmp_path / "r.json"
        status = main(["audit", "json", "--junit", str(junit), "--json", str(report)])
        capsys.readouterr()
        assert status == 0
        entries = json.loads(report.read_text())["entries"]
        root = ET.parse(junit).getroot()
        assert root.tag == "testsuites"
        (suite,) = root.findall("testsuite")
        cases = suite.findall("testcase")
        assert len(cases) == len(entries) == int(suite.get("tests", "")) >= 10
        names = {f"{c.get('classname')}.{c.get('name')}" for c in cases}
        assert names == {e["name"] for e in entries}
        assert suite.get("failures") == "0" and not suite.findall("testcase/failure")
        dumps = next(c for c in cases if c.get("name") == "dumps")
        outcomes = {p.get("name"): p.get("value") for p in dumps.iter("property")}
        assert outcomes["picklable"] == outcomes["pickle"] == "identity"

    def test_junit_failure_carries_the_reason(
        self, ghost_module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A failing object is a failed test case whose message and text say why and the fix."""
        junit = tmp_path / "out.xml"
        status = main(["audit", ghost_module, "--serializers", "picklable", "--junit", str(junit)])
        capsys.readouterr()
        assert status == 1
        suite = ET.parse(junit).getroot().find("testsuite")
        assert suite is not None and suite.get("failures") == "1"
        (case,) = suite.findall("testcase")
        assert (case.get("classname"), case.get("name")) == ("cli_ghost_module", "f")
        failure = case.find("failure")
        assert failure is not None and failure.get("type") == "load"
        assert failure.get("message", "").startswith(
            "load fails: UnpicklingError[ModuleNotFoundError]: Cannot load: module "
            "'cli_ghost_module' is not importable"
        )
        assert (failure.text or "").endswith("hint: install it in the receiving environment")

    def test_markdown_summary(
        self, ghost_module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--markdown writes the verdict, the totals and each failure with why and the fix."""
        path = tmp_path / "audit.md"
        main(["audit", ghost_module, "--serializers", "picklable", "--markdown", str(path)])
        capsys.readouterr()
        text = path.read_text()
        assert text.startswith("# picklable audit of cli_ghost_module\n")
        assert "**FAILED**: picklable has 1 load fails" in text
        assert "| outcome | picklable |" in text and "| load fails | 1 |" in text
        row = next(line for line in text.splitlines() if line.startswith("| `cli_ghost_module.f`"))
        assert row.startswith(
            "| `cli_ghost_module.f` | function | load fails | UnpicklingError[ModuleNotFoundError]:"
        )
        assert row.endswith("| install it in the receiving environment |")

    def test_only_one_report_to_stdout(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Two reports cannot both take stdout."""
        with pytest.raises(SystemExit) as exit_info:
            main(["audit", "json", "--json", "-", "--junit", "-"])
        assert exit_info.value.code == 2
        assert "only one of --json, --junit can write to stdout" in capsys.readouterr().err


class TestSelection:
    def test_ignore_leaves_objects_out(self, capsys: pytest.CaptureFixture[str]) -> None:
        """--ignore (repeatable) leaves out matching objects, a class with its members; the
        summary counts them."""
        status = main(
            [
                "audit",
                "picklable_testpkg.auditables",
                "--serializers",
                "picklable",
                "--ignore",
                "*.Shape",
                "--ignore",
                "picklable_testpkg.auditables.tri*",
                "--json",
                "-",
            ]
        )
        out, err = capsys.readouterr()
        assert status == 0
        data = json.loads(out)
        assert [e["name"] for e in data["entries"]] == [
            "picklable_testpkg.auditables.power",
            "picklable_testpkg.auditables.square",
            "picklable_testpkg.auditables.Multiplier",
        ]
        assert data["ignored"] == [
            "picklable_testpkg.auditables.Shape",
            "picklable_testpkg.auditables.triple",
        ]
        assert "  2 ignored (--ignore, [tool.picklable] ignore)" in err.splitlines()

    def test_properties_apart_and_left_out(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Property objects are counted apart; --no-properties leaves them out."""
        argv = ["audit", "picklable_testpkg.auditables", "--serializers", "pickle"]
        main(argv)
        out, err = capsys.readouterr()
        assert "(2 of them properties)" in out.splitlines()[0]
        assert "totals (6 objects)" in out and "properties (2, apart)" in out
        assert err.splitlines()[1:7] == [
            "  6 objects:",
            "    picklable    5 identity, 1 exact copy",
            "    pickle       4 identity, 2 exact copy",
            "  2 property objects, counted apart (--no-properties: left out):",
            "    picklable    1 identity, 1 exact copy",
            "    pickle       2 dump fails",  # pickle fails on every property object
        ]
        main([*argv, "--no-properties", "--json", "-"])
        data = json.loads(capsys.readouterr().out)
        assert "picklable_testpkg.auditables.Shape.area" not in {e["name"] for e in data["entries"]}
        assert data["property_totals"]["picklable"]["identity"] == 0

    def test_lazy_submodules_are_named(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A package whose submodules load on first access: they are named, with how to audit them."""
        main(["audit", "picklable_testpkg.lazypkg", "--serializers", "picklable"])
        out, err = capsys.readouterr()
        note = (
            "picklable_testpkg.lazypkg exports 2 submodules that were not audited "
            "(picklable_testpkg.lazypkg.linalg, picklable_testpkg.lazypkg.stats): pass "
            "--recursive (recursive=True), or name them as targets"
        )
        assert f"  {note}" in out.splitlines()
        assert f"  note: {note}" in err.splitlines()
        main(["audit", "picklable_testpkg.lazypkg", "--serializers", "picklable", "--recursive"])
        out, err = capsys.readouterr()
        assert "note" not in err and "3 identity" in err


PYPROJECT = """
[project]
name = "demo"

[tool.picklable]
targets = ["picklable_testpkg.auditables"]
ignore = ["*.Shape"]
serializers = ["picklable"]
fail-on = ["wrong"]
"""


class TestConfig:
    @pytest.fixture
    def project(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        """A project with [tool.picklable], the current directory a subdirectory of it."""
        (tmp_path / ".git").mkdir()
        (tmp_path / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT))
        (tmp_path / "src").mkdir()
        monkeypatch.chdir(tmp_path / "src")
        return tmp_path

    def test_settings_from_pyproject(
        self, project: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """targets, ignore, serializers come from the nearest pyproject.toml upward."""
        assert main(["audit", "--json", "-"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["targets"] == ["picklable_testpkg.auditables"]
        assert list(data["serializers"]) == ["picklable"]
        assert data["ignored"] == ["picklable_testpkg.auditables.Shape"]

    def test_command_line_wins_and_ignore_adds(
        self, project: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A TARGET and --serializers replace the file's; --ignore adds to its patterns."""
        main(["audit", "picklable_testpkg.auditables", "--serializers", "picklable,pickle",
              "--ignore", "*.triple", "--json", "-"])  # fmt: skip
        data = json.loads(capsys.readouterr().out)
        assert list(data["serializers"]) == ["picklable", "pickle"]
        assert data["ignored"] == [
            "picklable_testpkg.auditables.Shape",
            "picklable_testpkg.auditables.triple",
        ]

    def test_fail_on_from_the_file(
        self, project: Path, ghost_module: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """fail-on = ["wrong"] in the file lets a load failure pass; --fail-on overrides it."""
        assert main(["audit", ghost_module]) == 0
        assert capsys.readouterr().err.splitlines()[-1] == "OK: picklable has no wrong"
        assert main(["audit", ghost_module, "--fail-on", "load"]) == 1
        capsys.readouterr()

    def test_no_config(self, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """--no-config ignores the file: with no TARGET there is nothing to audit."""
        with pytest.raises(SystemExit) as exit_info:
            main(["audit", "--no-config"])
        assert exit_info.value.code == 2
        assert "nothing to audit: name a TARGET" in capsys.readouterr().err

    def test_bad_key_is_named(self, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """An unknown key or a wrong value is a fatal error naming the file and the key."""
        path = project / "pyproject.toml"
        path.write_text(PYPROJECT + "recursiv = true\n")
        with pytest.raises(SystemExit):
            main(["audit"])
        err = capsys.readouterr().err
        assert err.startswith(f"picklable: error: {path}: [tool.picklable] recursiv: unknown key")
        path.write_text(PYPROJECT.replace('fail-on = ["wrong"]', 'fail-on = ["oops"]'))
        with pytest.raises(SystemExit):
            main(["audit"])
        assert "[tool.picklable] fail-on: unknown 'oops'; choose from wrong, dump" in (
            capsys.readouterr().err
        )

    def test_search_stops_at_the_repository_root(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A pyproject.toml above the directory holding .git is not read."""
        from picklable._audit import config

        (tmp_path / "pyproject.toml").write_text(PYPROJECT)
        repo = tmp_path / "repo"
        (repo / ".git").mkdir(parents=True)
        assert config.find(repo) is None
        assert config.find(tmp_path) == tmp_path / "pyproject.toml"


SCRIPT = """
import threading

LOCK = threading.Lock()


def work(x):
    with LOCK:
        return x * 2


class Job:
    def run(self):
        return 1


if __name__ == "__main__":
    raise SystemExit("the main block must not run")
"""


class TestExplainCommand:
    @pytest.fixture
    def scripts(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        """script.py (and sub/script.py) in the current directory."""
        (tmp_path / "script.py").write_text(SCRIPT)
        (tmp_path / "sub").mkdir()
        (tmp_path / "sub" / "script.py").write_text(SCRIPT)
        monkeypatch.chdir(tmp_path)
        monkeypatch.syspath_prepend(str(tmp_path))
        yield tmp_path
        sys.modules.pop("script", None)

    @pytest.mark.parametrize("target", ["script.py:work", "./script.py:work", "sub/script.py:work"])
    def test_script_as_a_spawn_worker_sees_it(
        self, scripts: Path, target: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """FILE.py:NAME loads the file as __mp_main__ (its main block not run) and explains
        that object, saying so first."""
        before = sys.modules["__main__"], sys.modules.get("__mp_main__")
        status = main(["explain", target])
        out, _ = capsys.readouterr()
        assert (sys.modules["__main__"], sys.modules.get("__mp_main__")) == before
        first, _, rest = out.partition("\n")
        assert first == (
            f"{target}, loaded as a spawn worker sees it: script.py run as the module "
            '__mp_main__ (its `if __name__ == "__main__":` block not run)'
        )
        # The truth when the script runs: a spawn worker of it has its own work
        # (with its own lock); nowhere else can it be had, since it cannot be copied.
        lines = rest.splitlines()
        assert lines[0].startswith("work: ships, ")
        assert "by reference -> __mp_main__:work" in lines[1]
        assert lines[2].strip() == (
            "an object of this script: loads where the same script runs (a spawn worker "
            "of it), and nowhere else: it cannot be copied (it holds a _thread.lock, which "
            "cannot be pickled)"
        )
        assert status == 0

    def test_method_of_a_script_class(
        self, scripts: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """NAME may be a dotted path inside the script."""
        main(["explain", "script.py:Job.run"])
        out = capsys.readouterr().out
        assert out.splitlines()[1].startswith("run: ")

    def test_module_target_of_a_script_says_what_it_explains(
        self, scripts: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """script:work explains the importable module's work, and says how to see the script's."""
        main(["explain", "script:work"])
        out = capsys.readouterr().out
        assert out.splitlines()[0] == (
            "note: work of the importable module 'script' (script.py imported as `import "
            "script`); run as a script (python script.py), its objects live in __main__ and "
            "may ship otherwise: picklable explain script.py:work"
        )
        assert out.splitlines()[2].startswith("work  function script.work  by reference")

    def test_importable_module_target_unchanged(self, capsys: pytest.CaptureFixture[str]) -> None:
        """module:NAME of a package keeps its plain report."""
        assert main(["explain", "picklable_testpkg.api:plain"]) == 0
        out = capsys.readouterr().out
        assert out.startswith("plain: ships")

    @pytest.mark.parametrize(
        ("target", "source", "message"),
        [
            ("missing.py:work", None, "missing.py: no such file"),
            (
                "script.py:nope",
                SCRIPT,
                "script.py:nope: script.py (run as __mp_main__) has no 'nope' (it has: Job, LOCK, work)",
            ),
            (
                "script.py",
                SCRIPT,
                "script.py: name the object in the script: script.py:NAME (e.g. script.py:work)",
            ),
            ("sub/:work", None, "sub/: a directory, not a script"),
            (
                "broken.py:work",
                "import json\nimport no_such_module_xyz\n",
                (
                    "broken.py raised ModuleNotFoundError: No module named 'no_such_module_xyz' "
                    "(line 2: import no_such_module_xyz) while loading as __mp_main__, the way a "
                    'spawn worker runs it (its `if __name__ == "__main__":` block does not run)'
                ),
            ),
            (
                "exits.py:work",
                "import sys\nsys.exit(3)\n",
                "exits.py raised SystemExit: 3 (line 2: sys.exit(3)) while loading as __mp_main__",
            ),
        ],
        ids=["no-file", "no-name", "no-colon", "directory", "raises", "exits"],
    )
    def test_clear_errors(
        self,
        scripts: Path,
        target: str,
        source: str | None,
        message: str,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """A missing file, a missing name, a file that raises on import: exit 2, one clear line."""
        if source is not None:
            (scripts / target.partition(":")[0]).write_text(source)
        with pytest.raises(SystemExit) as exit_info:
            main(["explain", target])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith(f"picklable: error: {message}"), err
        assert err.count("\n") == 1


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
