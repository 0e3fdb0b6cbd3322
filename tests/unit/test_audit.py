"""Tests for `picklable._audit`: enumeration, comparison, classification in fresh interpreters."""

from __future__ import annotations

import functools
import sys
import textwrap
import threading
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from picklable._audit import Outcome, Report, TargetError, audit, audit_objects, collect
from picklable._audit.collect import Target
from picklable._audit.compare import differences, fingerprint, same_object
from picklable._audit.wire import first_line
from picklable_testpkg import api
from support import wrapper_checks

PACKAGE_FILES = {
    "__init__.py": """
        from .core import exported, Widget
        __all__ = ["exported", "Widget"]
        def not_in_all():
            pass
    """,
    "core.py": """
        from os.path import join
        def exported():
            pass
        def _hidden():
            pass
        alias = exported
        class Widget:
            def run(self):
                pass
            @classmethod
            def make(cls):
                return cls()
            @property
            def size(self):
                return 1
            def _internal(self):
                pass
    """,
    "broken.py": "raise RuntimeError('this module cannot be imported')\n",
    "sub/__init__.py": "def deep():\n    pass\n",
    "tests/__init__.py": "raise AssertionError('test packages are never imported')\n",
}


@pytest.fixture
def make_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], str]]:
    """Writes a throwaway package under tmp_path; removed from sys.modules afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)

    def make(name: str) -> str:
        for relative, source in PACKAGE_FILES.items():
            path = tmp_path / name / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(source))
        return name

    yield make
    for module in set(sys.modules) - before:
        del sys.modules[module]


def names(targets: list[Target]) -> list[str]:
    return [t.name for t in targets]


class TestCollect:
    def test_kinds_of_the_fixture_package(self) -> None:
        """Functions, factory-made methods, classmethods, staticmethods and decorator products get their kinds."""
        found, problems = collect(["picklable_testpkg.api"])
        kinds = {t.name.removeprefix("picklable_testpkg.api."): t.kind for t in found}
        assert problems == []
        assert kinds["plain"] == "function"
        assert kinds["add"] == "function"
        assert kinds["counted_square"] == "callable object"
        assert kinds["Frame"] == "class"
        assert kinds["Frame.total"] == "method"
        assert kinds["Frame.Inner.count"] == "method"
        assert kinds["Tools.scaled"] == "classmethod"
        assert kinds["Tools.static_add"] == "staticmethod"

    def test_follows_all(self, make_package: Callable[[str], str]) -> None:
        """A module with __all__ offers exactly those names (and the members of its classes)."""
        pkg = make_package("audit_pkg_all")
        found, _ = collect([pkg])
        assert names(found) == [
            f"{pkg}.exported",
            f"{pkg}.Widget",
            f"{pkg}.Widget.make",
            f"{pkg}.Widget.run",
            f"{pkg}.Widget.size",
        ]

    def test_without_all_skips_imports_and_private_names(
        self, make_package: Callable[[str], str]
    ) -> None:
        """Without __all__: public names defined in the package, not os.path.join, not _hidden."""
        pkg = make_package("audit_pkg_noall")
        found, _ = collect([f"{pkg}.core"])
        got = names(found)
        assert f"{pkg}.core.exported" in got
        assert f"{pkg}.core.join" not in got
        assert f"{pkg}.core._hidden" not in got
        assert f"{pkg}.core.Widget._internal" not in got

    def test_private_flag_adds_underscore_names(self, make_package: Callable[[str], str]) -> None:
        """--private adds _names of modules and classes, never dunders."""
        pkg = make_package("audit_pkg_private")
        found, _ = collect([f"{pkg}.core"], private=True)
        got = names(found)
        assert f"{pkg}.core._hidden" in got
        assert f"{pkg}.core.Widget._internal" in got
        assert not any(name.rpartition(".")[2].startswith("__") for name in got)

    def test_same_object_is_collected_once_with_aliases(
        self, make_package: Callable[[str], str]
    ) -> None:
        """An object reachable by two names is one target; the second name is an alias."""
        pkg = make_package("audit_pkg_alias")
        found, _ = collect([f"{pkg}.core"])
        (target,) = [t for t in found if getattr(t.obj, "__name__", None) == "exported"]
        assert target.name == f"{pkg}.core.exported"
        assert target.aliases == [f"{pkg}.core.alias"]

    def test_recursive_reports_a_broken_submodule(self, make_package: Callable[[str], str]) -> None:
        """--recursive walks submodules; one that fails to import is a problem, not fatal; tests/ is skipped."""
        pkg = make_package("audit_pkg_recursive")
        found, problems = collect([pkg], recursive=True)
        assert f"{pkg}.sub.deep" in names(found)
        assert [(p.name, p.error) for p in problems] == [
            (f"{pkg}.broken", "import failed: RuntimeError: this module cannot be imported")
        ]

    def test_class_target_collects_its_members(self) -> None:
        """Naming a class audits the class and its members."""
        found, _ = collect(["picklable_testpkg.api.Tools"])
        assert names(found) == [
            "picklable_testpkg.api.Tools",
            "picklable_testpkg.api.Tools.method",
            "picklable_testpkg.api.Tools.scaled",
            "picklable_testpkg.api.Tools.static_add",
        ]

    def test_classmethod_lookup_is_not_stable(self) -> None:
        """cls.classmethod builds a new bound method per access, so identity means same __self__ and __func__."""
        found, _ = collect(["picklable_testpkg.api.Tools"])
        stable = {t.name.rpartition(".")[2]: t.stable for t in found}
        assert stable == {"Tools": True, "method": True, "scaled": False, "static_add": True}

    def test_unknown_target_raises(self) -> None:
        """A target that does not import is an error naming it."""
        with pytest.raises(TargetError, match="no module named 'no_such_package_xyz'"):
            collect(["no_such_package_xyz"])
        with pytest.raises(TargetError, match=r"'picklable_testpkg\.api' has no attribute 'Nope'"):
            collect(["picklable_testpkg.api.Nope"])


class TestSelection:
    def test_ignore_patterns(self) -> None:
        """ignore leaves out matching names; an ignored class takes its members along."""
        found = collect(
            ["picklable_testpkg.auditables"], ignore=["*.Shape", "picklable_testpkg.*.power"]
        )
        assert names(found.targets) == [
            "picklable_testpkg.auditables.square",
            "picklable_testpkg.auditables.Multiplier",
            "picklable_testpkg.auditables.triple",
        ]
        assert found.ignored == [
            "picklable_testpkg.auditables.Shape",
            "picklable_testpkg.auditables.power",
        ]

    def test_ignore_matches_aliases(self, make_package: Callable[[str], str]) -> None:
        """An object is ignored when any of its names matches, even one met after the first."""
        pkg = make_package("audit_pkg_ignore_alias")
        found = collect([f"{pkg}.core"], ignore=[f"{pkg}.core.alias"])
        assert f"{pkg}.core.exported" not in names(found.targets)
        assert found.ignored == [f"{pkg}.core.alias", f"{pkg}.core.exported"]

    def test_ignored_submodules_are_not_imported(self, make_package: Callable[[str], str]) -> None:
        """With recursive, a submodule matched by a pattern is not even imported."""
        pkg = make_package("audit_pkg_ignore_sub")
        found = collect([pkg], recursive=True, ignore=[f"{pkg}.broken"])
        assert found.problems == [] and f"{pkg}.broken" in found.ignored
        assert f"{pkg}.broken" not in sys.modules

    def test_properties_can_be_left_out(self) -> None:
        """properties=False leaves property objects (cached_property too) out."""
        found = collect(["picklable_testpkg.auditables.Shape"], properties=False)
        assert names(found.targets) == [
            "picklable_testpkg.auditables.Shape",
            "picklable_testpkg.auditables.Shape.scaled",
        ]

    def test_lazy_submodules_are_noted_not_imported(self) -> None:
        """Submodules a package exports but loads on first access are named in a note,
        and not imported."""
        sys.modules.pop("picklable_testpkg.lazypkg.linalg", None)
        found = collect(["picklable_testpkg.lazypkg"])
        assert names(found.targets) == ["picklable_testpkg.lazypkg.entry"]
        assert found.notes == [
            (
                "picklable_testpkg.lazypkg exports 2 submodules that were not audited "
                "(picklable_testpkg.lazypkg.linalg, picklable_testpkg.lazypkg.stats): pass "
                "--recursive (recursive=True), or name them as targets"
            )
        ]
        assert "picklable_testpkg.lazypkg.linalg" not in sys.modules

    def test_recursive_follows_lazy_submodules(self) -> None:
        """With recursive, the lazy submodules are audited and nothing is noted."""
        found = collect(["picklable_testpkg.lazypkg"], recursive=True)
        assert names(found.targets) == [
            "picklable_testpkg.lazypkg.entry",
            "picklable_testpkg.lazypkg.linalg.solve",
            "picklable_testpkg.lazypkg.stats.mean",
        ]
        assert found.notes == []

    def test_attributes_that_raise_are_read_as_missing(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A module whose ``__getattr__`` raises for every name it lacks (dask.ml's
        "Dask-ML is not installed", a ModuleNotFoundError) and a callable proxy that
        raises on every attribute: the audit of the package goes on, and collects
        what it defines."""
        package = tmp_path / "audit_pkg_raising"
        package.mkdir()
        (package / "__init__.py").write_text("")
        (package / "optional.py").write_text(
            textwrap.dedent(
                """
                def available():
                    pass

                class _Proxy:
                    def __getattr__(self, name):
                        raise RuntimeError("working outside of a context")
                    def __call__(self):
                        pass

                proxy = _Proxy()

                def __getattr__(name):
                    raise ModuleNotFoundError("the 'extra' dependency is not installed")
                """
            )
        )
        monkeypatch.syspath_prepend(str(tmp_path))
        try:
            for targets in (["audit_pkg_raising"], ["audit_pkg_raising.optional"]):
                found = collect(targets, recursive=True)
                assert names(found.targets) == [
                    "audit_pkg_raising.optional.available",
                    "audit_pkg_raising.optional.proxy",
                ]
                assert found.problems == []
        finally:
            for name in [m for m in sys.modules if m.startswith("audit_pkg_raising")]:
                del sys.modules[name]


class TestCompare:
    def test_fingerprint_ignores_addresses(self) -> None:
        """Default values whose repr carries an address compare equal across processes."""

        def f(x=object()):  # noqa: B008 - an address in the signature on purpose
            pass

        assert " at 0x" not in (fingerprint(f)[4] or "")

    def test_type_whose_module_is_a_descriptor(self) -> None:
        """A class whose __module__ is a property (wrapt's pure-Python proxies) is named
        by the module its class statement ran in (its functions say which), never by
        the property's repr and address."""

        class Proxy:
            __module__ = property(lambda self: "elsewhere")  # type: ignore[assignment]

        assert fingerprint(Proxy())[0] == f"{type(self).__module__}.{Proxy.__qualname__}"

    def test_errors_without_addresses(self) -> None:
        """An error line names objects without their address (3.14's pickle prints reprs)."""
        error = ValueError(f"Can't pickle {object()!r}: it's not found as m.x\nmore")
        assert (
            first_line(error) == "ValueError: Can't pickle <object object>: it's not found as m.x"
        )

    def test_differences_name_each_field(self) -> None:
        """Each differing field is listed as expected -> got."""
        a = ("function", "f", "A.f", "m", "(x)")
        b = ("function", "f", "B.f", "m", "(x, y)")
        assert differences(a, b) == ["__qualname__: A.f -> B.f", "signature: (x) -> (x, y)"]

    def test_bound_methods_are_the_same_when_not_stable(self) -> None:
        """Two bound methods of one class and function count as the same object only for unstable lookups."""
        assert same_object(api.Tools.scaled, api.Tools.scaled, stable=False)
        assert not same_object(api.Tools.scaled, api.Tools.scaled, stable=True)


@pytest.fixture(scope="module")
def testpkg_report() -> Report:
    """One audit of fixture modules with every serializer (children started once)."""
    return audit(
        [
            "picklable_testpkg.api",
            "picklable_testpkg.wrapt_methods",
            "picklable_testpkg.clicommands",
        ],
        jobs=2,
    )


class TestAudit:
    def test_every_api_object_ships_with_picklable(self, testpkg_report: Report) -> None:
        """Under picklable every picklable_testpkg.api object is identity or an exact copy."""
        api_entries = [e for e in testpkg_report.entries if e.module == "picklable_testpkg.api"]
        assert len(api_entries) >= 20
        bad = {
            e.name: e.results["picklable"]
            for e in api_entries
            if not e.results["picklable"].outcome.ok
        }
        assert bad == {}

    def test_pickle_fails_on_a_decorator_without_wraps(self, testpkg_report: Report) -> None:
        """stdlib pickle cannot dump api.add; the first error line says why, in each
        version's words (3.14's repr without its address)."""
        result = testpkg_report.entry("picklable_testpkg.api.add").results["pickle"]
        assert result.outcome is Outcome.DUMP
        if sys.version_info >= (3, 14):
            said = "PicklingError: Can't pickle local object <function no_wraps.<locals>.wrapper>"
        elif sys.version_info >= (3, 13):
            said = "AttributeError: Can't get local object 'no_wraps.<locals>.wrapper'"
        else:
            said = "AttributeError: Can't pickle local object 'no_wraps.<locals>.wrapper'"
        assert result.error == said

    def test_pickle_load_fails_on_a_renamed_classmethod(self, testpkg_report: Report) -> None:
        """pickle dumps Tools.scaled as getattr(Tools, 'wrapper'), which fails to load."""
        result = testpkg_report.entry("picklable_testpkg.api.Tools.scaled").results["pickle"]
        assert result.outcome is Outcome.LOAD
        assert "has no attribute 'wrapper'" in result.error

    def test_cloudpickle_gives_a_wrong_copy_of_a_wrapped_factory_method(
        self, testpkg_report: Report
    ) -> None:
        """cloudpickle drops the wrapt wrapper of a factory-made method: wrong, with the type named."""
        result = testpkg_report.entry("picklable_testpkg.wrapt_methods.Table.total").results[
            "cloudpickle"
        ]
        assert result.outcome is Outcome.WRONG
        wrapper = wrapper_checks.wrapt_type_label("BoundFunctionWrapper")
        assert result.detail == f"type: {wrapper} -> function"

    def test_copies_say_what_they_are(self, testpkg_report: Report) -> None:
        """cloudpickle copies api.add by value: an exact copy, another object than the one at that name."""
        result = testpkg_report.entry("picklable_testpkg.api.add").results["cloudpickle"]
        assert result.outcome is Outcome.COPY
        assert result.size > 0
        assert result.detail.startswith("another object than picklable_testpkg.api:add")

    def test_click_commands_ship_by_identity(self, testpkg_report: Report) -> None:
        """click's decorators put Command objects under the names: picklable ships them as themselves, pickle cannot."""
        for name in ("cli", "greet", "standalone"):
            entry = testpkg_report.entry(f"picklable_testpkg.clicommands.{name}")
            assert entry.results["picklable"].outcome is Outcome.IDENTITY
            assert entry.results["pickle"].outcome is Outcome.DUMP

    def test_every_serializer_has_a_result_for_every_object(self, testpkg_report: Report) -> None:
        """Results are complete and in report order, picklable first."""
        assert next(iter(testpkg_report.serializers)) == "picklable"
        for entry in testpkg_report.entries:
            assert list(entry.results) == list(testpkg_report.serializers)

    def test_totals_with_and_without_properties(self) -> None:
        """totals() counts everything; properties=False / True split property objects apart."""
        report = audit(["picklable_testpkg.auditables"], serializers=["picklable", "pickle"])
        assert report.property_count == 2
        every, others, props = (
            report.totals(),
            report.totals(properties=False),
            report.totals(properties=True),
        )
        for serializer in report.serializers:
            for outcome, count in every[serializer].items():
                assert count == others[serializer][outcome] + props[serializer][outcome]
        assert props["pickle"]["dump"] == 2  # pickle cannot dump a property object
        data = report.to_dict()
        assert data["property_totals"] == props
        assert Report.from_dict(data).to_dict() == data

    def test_report_round_trips_through_json_data(self, testpkg_report: Report) -> None:
        """Report.from_dict(report.to_dict()) gives the same report."""
        data = testpkg_report.to_dict()
        assert Report.from_dict(data).to_dict() == data


class TestIsolation:
    def test_crash_and_hang_cost_one_object_each(self) -> None:
        """A payload that kills or hangs its loader is reported as such; the others are still measured."""
        report = audit(["picklable_testpkg.hostile"], serializers=["pickle"], jobs=1, timeout=2)
        crash = report.entry("picklable_testpkg.hostile.crash_on_load").results["pickle"]
        hang = report.entry("picklable_testpkg.hostile.hang_on_load").results["pickle"]
        assert crash.outcome is Outcome.CRASH
        assert "killed by SIGSEGV" in crash.error
        assert hang.outcome is Outcome.HANG
        assert hang.error == "no result after 2 s: loading hung, the child was killed"
        others = [
            e
            for e in report.entries
            if e.name.rpartition(".")[2] not in ("crash_on_load", "hang_on_load")
        ]
        assert len(others) == 3
        for entry in others:
            assert entry.results["pickle"].outcome is Outcome.IDENTITY, entry.name
        # picklable ships both by reference: their own __reduce__ never runs.
        for entry in report.entries:
            assert entry.results["picklable"].outcome is Outcome.IDENTITY, entry.name


class TestFailures:
    def test_dump_failure_carries_picklables_hint(self) -> None:
        """A dump failure reports the first error line and the PicklingError's hint."""
        held = functools.partial(print, threading.Lock())
        report = audit_objects([Target("held", "", (), "callable object", held)], ["picklable"])
        result = report.entries[0].results["picklable"]
        assert result.outcome is Outcome.DUMP
        assert result.error.startswith("PicklingError[TypeError]: Cannot pickle _thread.lock - at ")
        assert result.hint == "create it inside the worker (e.g. in the pool initializer)"

    def test_load_failure_carries_picklables_hint(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A module that exists only in the auditing process fails to load, with the UnpicklingError's hint."""
        ghost = types.ModuleType("audit_ghost_module")
        exec("def f(x):\n    return x\n", ghost.__dict__)
        monkeypatch.setitem(sys.modules, "audit_ghost_module", ghost)
        report = audit(["audit_ghost_module"], serializers=["picklable"], jobs=1)
        result = report.entry("audit_ghost_module.f").results["picklable"]
        assert result.outcome is Outcome.LOAD
        assert result.error.startswith(
            "UnpicklingError[ModuleNotFoundError]: Cannot load: module 'audit_ghost_module' "
            "is not importable here."
        )
        assert result.hint == "install it in the receiving environment"
