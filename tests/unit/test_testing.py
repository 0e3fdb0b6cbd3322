"""Tests for `picklable.testing` and the pytest plugin (`picklable.pytest_plugin`)."""

from __future__ import annotations

import functools
import subprocess
import sys
import textwrap
import threading
import types
from pathlib import Path

import pytest

from picklable._audit import Outcome
from picklable.testing import assert_audit, assert_ships
from picklable_testpkg import api, auditables, clicommands
from support.child import child_env


@pytest.fixture
def ghost_module(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """A module that exists only in this process."""
    ghost = types.ModuleType("testing_ghost_module")
    exec("def f(x):\n    return x\n", ghost.__dict__)
    monkeypatch.setitem(sys.modules, "testing_ghost_module", ghost)
    return ghost


class TestAssertShips:
    @pytest.mark.parametrize(
        "obj",
        [api.add, api.Frame.total, api.Tools.scaled, api.counted_square, clicommands.greet],
        ids=["no-wraps", "factory-method", "classmethod", "class-decorator", "click-command"],
    )
    def test_identity(self, obj: object) -> None:
        """Importable objects load as themselves in a fresh interpreter."""
        assert assert_ships(obj).outcome is Outcome.IDENTITY

    def test_local_function_needs_identity_false(self) -> None:
        """A closure has no importable name: identity cannot be checked, an exact copy is accepted on request."""

        def local(x: int) -> int:
            return x + 1

        with pytest.raises(
            AssertionError,
            match="cannot be checked for identity: picklable finds no importable name",
        ):
            assert_ships(local)
        result = assert_ships(local, identity=False)
        assert result.outcome is Outcome.COPY
        assert result.detail == "no importable name; the copy matches the original"

    def test_dump_failure_is_readable(self) -> None:
        """A dump failure shows picklable's message, the attribute path and the hint."""
        held = functools.partial(print, threading.Lock())
        with pytest.raises(AssertionError) as info:
            assert_ships(held, identity=False)
        lines = str(info.value).splitlines()
        assert lines[0].endswith("does not ship: picklable.dumps failed")
        assert lines[1].startswith("  error: Cannot pickle _thread.lock - at ")
        assert lines[3] == "  hint:  create it inside the worker (e.g. in the pool initializer)"

    def test_load_failure_is_readable(self, ghost_module: types.ModuleType) -> None:
        """A load failure in the child shows the outcome, the first error line and the hint."""
        with pytest.raises(AssertionError) as info:
            assert_ships(ghost_module.f)
        assert str(info.value).splitlines() == [
            "testing_ghost_module.f did not ship as expected (identity) into a fresh interpreter",
            "  outcome: load fails",
            (
                "  error:   UnpicklingError[ModuleNotFoundError]: Cannot load: module "
                "'testing_ghost_module' is not importable here. "
                "Fix: install it in the receiving environment, or ship the sender's module by value with "
                "picklable.register_by_value()."
            ),
            "  hint:    install it in the receiving environment",
        ]


class TestAssertShipsReadsLikeTheTest:
    def test_paths_start_at_the_callers_name(self) -> None:
        """The path of a dump failure starts at the name the test wrote, not at `obj`."""
        held = functools.partial(print, threading.Lock())
        with pytest.raises(AssertionError) as info:
            assert_ships(held, identity=False)
        lines = str(info.value).splitlines()
        assert lines[0].startswith("held = functools.partial(<built-in function print>")
        assert lines[1].startswith("  error: Cannot pickle _thread.lock - at held.args[0]: ")
        assert lines[2] == "  where: held.args[0]"

    def test_attribute_expression_is_the_root(self) -> None:
        """An attribute path as argument roots the path (functions default to __name__)."""

        class Holder:
            pass

        holder = Holder()
        lock = threading.Lock()

        def job() -> None:
            with lock:
                pass

        holder.job = job  # type: ignore[attr-defined]
        with pytest.raises(AssertionError) as info:
            assert_ships(holder.job, identity=False)  # type: ignore[attr-defined]
        assert "  where: holder.job.__closure__[0].cell_contents" in str(info.value).splitlines()
        with pytest.raises(AssertionError) as info:
            assert_ships(*[job], identity=False)  # no name to read: the function's own
        assert "  where: job.__closure__[0].cell_contents" in str(info.value).splitlines()

    def test_module_level_partial_is_found_by_name(self) -> None:
        """A partial at module level has a home to compare with: it ships as an exact
        copy of that object (as pickle ships a partial), so identity says why it fails."""
        result = assert_ships(auditables.square, identity=False)
        assert result.outcome is Outcome.COPY
        assert result.detail == (
            "another object than picklable_testpkg.auditables:square, with the same type, "
            "names and signature"
        )
        with pytest.raises(AssertionError) as info:
            assert_ships(auditables.square)
        lines = str(info.value).splitlines()
        assert lines[0] == (
            "picklable_testpkg.auditables.square did not ship as expected (identity) into a "
            "fresh interpreter"
        )
        assert lines[-1].startswith("  (it has a name, but picklable ships it as a copy")

    def test_callable_instance_is_itself(self) -> None:
        """A module-level callable instance is found by name and loads as itself."""
        assert assert_ships(auditables.triple).outcome is Outcome.IDENTITY


FAILING_TESTS = """
import functools
import threading

from picklable.testing import assert_audit, assert_ships

held = functools.partial(print, threading.Lock())


def test_ships():
    assert_ships(held, identity=False)


def test_audit():
    assert_audit("audit_ghost_for_pytest")
"""


class TestTracebacks:
    def test_failures_show_no_picklable_source(self, tmp_path: Path) -> None:
        """pytest shows the test's line and the message, nothing of picklable's code."""
        (tmp_path / "test_user.py").write_text(textwrap.dedent(FAILING_TESTS))
        (tmp_path / "audit_ghost_for_pytest.py").write_text("")
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_user.py"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=_not_ci(child_env()),
            timeout=240,
        )
        out = done.stdout
        assert done.returncode == 1, out + done.stderr
        assert ">       assert_ships(held, identity=False)" in out
        assert "E         error: Cannot pickle _thread.lock - at held.args[0]: " in out
        for leak in ("picklable/testing.py", "def assert_ships", "__tracebackhide__", "Parameters"):
            assert leak not in out, leak
        assert "1 failed, 1 passed" in out  # the empty module's audit passes


class TestAssertAudit:
    def test_passes_and_returns_the_report(self) -> None:
        """An audit where picklable ships everything returns the report."""
        report = assert_audit("picklable_testpkg.api")
        assert list(report.serializers) == ["picklable"]
        assert all(e.results["picklable"].outcome.ok for e in report.entries)

    def test_failure_lists_each_object(self, ghost_module: types.ModuleType) -> None:
        """A failing audit names each object with its outcome and hint."""
        with pytest.raises(AssertionError) as info:
            assert_audit("testing_ghost_module")
        lines = str(info.value).splitlines()
        assert (
            lines[0]
            == "picklable audit of testing_ghost_module: 1 of 1 objects do not ship with picklable"
        )
        assert lines[1] == "  testing_ghost_module.f (function): load fails"
        assert lines[3] == "      hint: install it in the receiving environment"

    def test_allow_accepts_known_failures(self, ghost_module: types.ModuleType) -> None:
        """Objects matching an allow pattern do not fail the audit."""
        assert_audit("testing_ghost_module", allow=["testing_ghost_module.*"])


PLUGIN_TESTS = """
import sys, types

import pytest

ghost = types.ModuleType("plugin_ghost_module")
exec("def f(x):\\n    return x\\n", ghost.__dict__)
sys.modules["plugin_ghost_module"] = ghost


@pytest.mark.picklable_audit("picklable_testpkg.api")
def test_marker_passes():
    pass


@pytest.mark.picklable_audit("plugin_ghost_module")
def test_marker_fails():
    pass


@pytest.mark.picklable_audit("plugin_ghost_module", allow=["plugin_ghost_module.f"])
def test_marker_allows():
    pass


def test_fixture_returns_report(picklable_audit):
    report = picklable_audit("picklable_testpkg.api", serializers=["picklable", "pickle"])
    assert report.entry("picklable_testpkg.api.add").results["pickle"].outcome.value == "dump"


def test_fixture_fails(picklable_audit):
    picklable_audit("plugin_ghost_module")
"""


class TestPytestPlugin:
    def test_marker_and_fixture_in_a_real_pytest_run(self, tmp_path: Path) -> None:
        """In a maintainer's suite the marker and the fixture pass, fail readably, and honour allow."""
        (tmp_path / "test_maintainer.py").write_text(textwrap.dedent(PLUGIN_TESTS))
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "-rA",
                "-q",
                "test_maintainer.py",
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=_not_ci(child_env()),
            timeout=240,
        )
        out = done.stdout
        assert done.returncode == 1, out + done.stderr
        for name in ("test_marker_passes", "test_marker_allows", "test_fixture_returns_report"):
            assert f"PASSED test_maintainer.py::{name}" in out
        for name in ("test_marker_fails", "test_fixture_fails"):
            assert f"FAILED test_maintainer.py::{name} - Failed: picklable audit of pl" in out
        assert (
            out.count(
                "picklable audit of plugin_ghost_module: 1 of 1 objects do not ship with picklable"
            )
            == 2
        )
        assert "  plugin_ghost_module.f (function): load fails" in out
        assert "      hint: install it in the receiving environment" in out
        assert "Traceback" not in out  # pytrace=False: the audit text alone


PLUGIN_OPTION_TESTS = """
import sys, types

import pytest

ghost = types.ModuleType("plugin_ghost_module")
exec("def f(x):\\n    return x\\n", ghost.__dict__)
sys.modules["plugin_ghost_module"] = ghost


@pytest.mark.picklable_audit("plugin_ghost_module")
def test_marker():
    pass
"""


class TestPytestOptions:
    def run(
        self, tmp_path: Path, *args: str, pyproject: str = ""
    ) -> subprocess.CompletedProcess[str]:
        (tmp_path / "test_options.py").write_text(textwrap.dedent(PLUGIN_OPTION_TESTS))
        (tmp_path / ".git").mkdir(exist_ok=True)
        if pyproject:
            (tmp_path / "pyproject.toml").write_text(textwrap.dedent(pyproject))
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "-q",
                "test_options.py",
                *args,
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=_not_ci(child_env()),
            timeout=240,
        )

    def test_fail_on_option(self, tmp_path: Path) -> None:
        """--picklable-fail-on changes which outcomes fail the marker's audit."""
        assert self.run(tmp_path).returncode == 1
        assert self.run(tmp_path, "--picklable-fail-on=wrong,dump").returncode == 0
        bad = self.run(tmp_path, "--picklable-fail-on=oops")
        assert "--picklable-fail-on: expected 'none' or a comma-separated list" in bad.stdout

    def test_ignore_option(self, tmp_path: Path) -> None:
        """--picklable-ignore leaves matching objects out of the marker's audit."""
        done = self.run(tmp_path, "--picklable-ignore=plugin_ghost_module.*")
        assert done.returncode == 0, done.stdout

    def test_pyproject_settings(self, tmp_path: Path) -> None:
        """[tool.picklable] of the project applies to marker audits; the option wins over it."""
        pyproject = '[tool.picklable]\nfail-on = ["wrong"]\n'
        assert self.run(tmp_path, pyproject=pyproject).returncode == 0
        assert self.run(tmp_path, "--picklable-fail-on=load", pyproject=pyproject).returncode == 1

    def test_options_are_listed_in_help(self, tmp_path: Path) -> None:
        """pytest --help shows both options in a picklable group."""
        out = self.run(tmp_path, "--help").stdout
        assert "picklable: shipping checks:" in out
        assert "--picklable-fail-on=LIST" in out and "--picklable-ignore=PATTERN" in out


def _not_ci(env: dict[str, str]) -> dict[str, str]:
    """pytest prints whole messages in its short summary when it sees CI (CI=true
    in our CI): the counts above are of the failure sections alone."""
    return {k: v for k, v in env.items() if k not in ("CI", "BUILD_NUMBER")}
