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
from picklable_testpkg import api, clicommands
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


def _not_ci(env: dict[str, str]) -> dict[str, str]:
    """pytest prints whole messages in its short summary when it sees CI (CI=true
    in our CI): the counts above are of the failure sections alone."""
    return {k: v for k, v in env.items() if k not in ("CI", "BUILD_NUMBER")}
