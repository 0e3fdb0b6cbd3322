"""`picklable audit` on real packages: the stdlib, click, sacred and pandas.

Other work keeps improving picklable, so these tests assert what must hold
(no wrong objects under picklable, module-level functions and classes as
themselves, the known failures of the other serializers), not exact totals.
"""

from __future__ import annotations

import pytest

from picklable._audit import Outcome, Report, audit
from support import wrapper_checks

NEVER = (Outcome.WRONG, Outcome.CRASH, Outcome.HANG)


def outcomes(report: Report, serializer: str, *kinds: str) -> dict[str, Outcome]:
    return {
        e.name: e.results[serializer].outcome
        for e in report.entries
        if not kinds or e.kind in kinds
    }


def assert_never_wrong(report: Report) -> None:
    bad = {name: o for name, o in outcomes(report, "picklable").items() if o in NEVER}
    assert bad == {}


@pytest.fixture(scope="module")
def stdlib_report() -> Report:
    """json, functools and collections with every serializer."""
    return audit(["json", "functools", "collections"], jobs=2)


class TestStdlib:
    def test_functions_and_classes_are_identity(self, stdlib_report: Report) -> None:
        """Module-level functions and classes of the stdlib load as themselves under picklable."""
        picked = outcomes(stdlib_report, "picklable", "function", "class", "builtin")
        top = {n: o for n, o in picked.items() if n.count(".") == 1}
        assert len(top) >= 25
        assert {n: o for n, o in top.items() if o is not Outcome.IDENTITY} == {}

    def test_json_and_functools_ship_entirely(self, stdlib_report: Report) -> None:
        """Every json and functools object (methods, properties included) ships under picklable."""
        bad = {
            n: o
            for n, o in outcomes(stdlib_report, "picklable").items()
            if n.startswith(("json.", "functools.")) and not o.ok
        }
        assert bad == {}

    def test_never_wrong(self, stdlib_report: Report) -> None:
        """picklable gives no wrong object, no crash and no hang on the stdlib."""
        assert_never_wrong(stdlib_report)

    def test_pickle_agrees_on_plain_functions(self, stdlib_report: Report) -> None:
        """stdlib pickle ships json.dumps by reference too: the audit sees identity."""
        assert stdlib_report.entry("json.dumps").results["pickle"].outcome is Outcome.IDENTITY


@pytest.fixture(scope="module")
def click_sacred_report() -> Report:
    """click and sacred with every serializer."""
    return audit(["click", "sacred"], jobs=2)


class TestClickAndSacred:
    def test_click_ships_entirely(self, click_sacred_report: Report) -> None:
        """Every public click callable ships under picklable (identity or exact copy)."""
        picked = outcomes(click_sacred_report, "picklable")
        bad = {n: o for n, o in picked.items() if n.startswith("click.") and not o.ok}
        assert bad == {}

    def test_never_wrong(self, click_sacred_report: Report) -> None:
        """picklable gives no wrong object on click and sacred."""
        assert_never_wrong(click_sacred_report)

    def test_cloudpickle_drops_sacreds_wrapt_wrappers(self, click_sacred_report: Report) -> None:
        """sacred's Experiment.capture is a wrapt method: cloudpickle hands back the bare function."""
        result = click_sacred_report.entry("sacred.Experiment.capture").results["cloudpickle"]
        assert result.outcome is Outcome.WRONG
        wrapper = wrapper_checks.wrapt_type_label("BoundFunctionWrapper")
        assert result.detail.startswith(f"type: {wrapper} -> function")

    def test_sacreds_experiment_methods_ship_under_picklable(
        self, click_sacred_report: Report
    ) -> None:
        """The methods of sacred.Experiment, wrapt-decorated ones included, ship under picklable."""
        bad = {
            n: o
            for n, o in outcomes(click_sacred_report, "picklable").items()
            if n.startswith("sacred.Experiment.") and not o.ok
        }
        assert bad == {}


@pytest.fixture(scope="module")
def pandas_report() -> Report:
    """pandas.*, Series and DataFrame (about 430 objects) with every serializer."""
    return audit(["pandas", "pandas.Series", "pandas.DataFrame"], members=False, jobs=2)


class TestPandas:
    def test_size_of_the_api(self, pandas_report: Report) -> None:
        """pandas.*, Series and DataFrame offer several hundred distinct callables."""
        assert len(pandas_report.entries) >= 350

    def test_top_level_and_methods_are_identity(self, pandas_report: Report) -> None:
        """pandas.* functions and classes, and Series/DataFrame methods, load as themselves."""
        picked = outcomes(pandas_report, "picklable", "function", "class", "method")
        assert len(picked) >= 300
        assert {n: o for n, o in picked.items() if o is not Outcome.IDENTITY} == {}

    def test_never_wrong(self, pandas_report: Report) -> None:
        """picklable gives no wrong object, no crash, no hang on pandas."""
        assert_never_wrong(pandas_report)

    def test_property_objects_are_counted_apart(self, pandas_report: Report) -> None:
        """Every one of pickle's dump failures on pandas is a property object: counted
        apart, the other objects show none."""
        props = pandas_report.totals(properties=True)["pickle"]
        others = pandas_report.totals(properties=False)["pickle"]
        assert pandas_report.property_count >= 20
        assert props["dump"] >= 20 and others["dump"] == 0

    def test_exported_submodules_are_named(self, pandas_report: Report) -> None:
        """pandas exports submodules (pandas.api, pandas.io ...): a note says they were
        not audited and how to audit them."""
        (note,) = [n for n in pandas_report.notes if n.startswith("pandas exports")]
        assert "pandas.api" in note and "--recursive" in note

    def test_pickle_cannot_dump_properties(self, pandas_report: Report) -> None:
        """stdlib pickle fails on property objects (Series.dtype); picklable ships them."""
        entry = pandas_report.entry("pandas.Series.dtype")
        assert entry.kind == "property"
        assert entry.results["pickle"].outcome is Outcome.DUMP
        assert "cannot pickle 'property' object" in entry.results["pickle"].error
        assert entry.results["picklable"].outcome.ok
