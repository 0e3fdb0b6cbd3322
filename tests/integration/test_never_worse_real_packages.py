"""Never worse than pickle, on real packages (issue 16): every public callable of
pandas, numpy, click, attrs, wrapt, sacred and sympy, round-tripped into fresh
interpreters by the audit with stdlib pickle and with picklable.

Wherever pickle gives the object itself, picklable must too; wherever pickle
gives an exact copy, picklable must give the object or an exact copy; and
picklable never gives a wrong object, whatever pickle does.
"""

from __future__ import annotations

import pytest

from picklable._audit import Outcome, Report, audit

PACKAGES = {
    "pandas": ["pandas", "pandas.Series", "pandas.DataFrame"],
    "numpy": ["numpy"],
    "click": ["click"],
    "attrs": ["attrs", "attr"],
    "wrapt": ["wrapt"],
    "sacred": ["sacred"],
    "sympy": ["sympy"],
}
AS_GOOD = {
    Outcome.IDENTITY: {Outcome.IDENTITY},
    Outcome.COPY: {Outcome.IDENTITY, Outcome.COPY},
}


@pytest.fixture(scope="module", params=sorted(PACKAGES))
def report(request: pytest.FixtureRequest) -> Report:
    """One audit per package, pickle and picklable."""
    return audit(PACKAGES[request.param], serializers=["pickle", "picklable"], jobs=2)


def test_never_worse_than_pickle(report: Report) -> None:
    """Where pickle ships an object right, picklable ships it as well or better."""
    worse = {
        entry.name: (entry.results["pickle"].outcome, entry.results["picklable"].outcome)
        for entry in report.entries
        if entry.results["pickle"].outcome in AS_GOOD
        and entry.results["picklable"].outcome not in AS_GOOD[entry.results["pickle"].outcome]
    }
    assert worse == {}


def test_never_wrong(report: Report) -> None:
    """No wrong object, crash or hang under picklable, where pickle refuses too."""
    bad = {
        entry.name: (entry.results["picklable"].outcome, entry.results["picklable"].detail)
        for entry in report.entries
        if entry.results["picklable"].outcome in (Outcome.WRONG, Outcome.CRASH, Outcome.HANG)
    }
    assert bad == {}


def test_audited_enough(report: Report) -> None:
    """Each audit covers the package's public API (wrapt's is small), not a few objects."""
    assert len(report.entries) >= 15
