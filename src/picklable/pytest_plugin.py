"""pytest plugin (``pytest11`` entry point): shipping checks for maintainers' suites.

Two ways to audit a package inside its own test suite (both round-trip every
public callable into fresh interpreters with picklable, and fail with one line
per object that does not ship, its first error line and picklable's hint):

The marker, on a test of its own (the audit runs before the test body)::

    @pytest.mark.picklable_audit("mypackage", recursive=True, allow=["mypackage.legacy.*"])
    def test_api_ships():
        pass

The fixture, for control over the report::

    def test_api_ships(picklable_audit):
        report = picklable_audit("mypackage", serializers=["picklable", "cloudpickle"])
        assert report.entry("mypackage.run").results["cloudpickle"].outcome.value == "wrong"

Both take the keyword arguments of :func:`picklable.testing.assert_audit`.
Identical marker audits run once per session. For single objects use
:func:`picklable.testing.assert_ships`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

_MARKER = "picklable_audit"
_CACHE = pytest.StashKey[dict[Any, Any]]()


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker (so ``--strict-markers`` accepts it)."""
    config.addinivalue_line(
        "markers",
        f"{_MARKER}(*targets, private=False, recursive=False, members=True, "
        "serializers=('picklable',), fail_on=('wrong', 'dump', 'load', 'crash', 'hang'), "
        "allow=(), jobs=None, timeout=30.0): audit that every public callable of the "
        "targets ships with picklable (picklable.testing.assert_audit) before the test runs",
    )
    config.stash[_CACHE] = {}


def _key(targets: tuple[Any, ...], options: dict[str, Any]) -> Any:
    def freeze(value: Any) -> Any:
        if isinstance(value, (list, tuple, set, frozenset)):
            return tuple(freeze(v) for v in value)
        return value

    return (freeze(targets), tuple(sorted((k, freeze(v)) for k, v in options.items())))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """Run the audit a ``picklable_audit`` marker asks for, before the test body."""
    marker = item.get_closest_marker(_MARKER)
    if marker is None:
        return
    from .testing import assert_audit

    if not marker.args:
        pytest.fail(
            f"@pytest.mark.{_MARKER}() needs at least one target, e.g. ('mypackage')", pytrace=False
        )
    cache = item.config.stash.get(_CACHE, {})
    key = _key(marker.args, dict(marker.kwargs))
    failure = cache.get(key)
    if key not in cache:
        try:
            assert_audit(*marker.args, **marker.kwargs)
            failure = None
        except AssertionError as exc:
            failure = str(exc)
        except (LookupError, ValueError, TypeError) as exc:  # bad target or option
            failure = f"{_MARKER}: {exc}"
        cache[key] = failure
    if failure is not None:
        pytest.fail(failure, pytrace=False)


@pytest.fixture
def picklable_audit() -> Callable[..., Any]:
    """``picklable_audit(*targets, **options) -> Report``: audit now, fail the test
    (readable, no traceback) if picklable does not ship every object; with
    ``check=False`` return the report without failing."""
    from ._audit import audit
    from ._audit.model import FAILURES
    from .testing import audit_failures

    def run(
        *targets: str,
        check: bool = True,
        fail_on: Any = FAILURES,
        allow: Any = (),
        serializers: Any = ("picklable",),
        **options: Any,
    ) -> Any:
        if not targets:
            raise TypeError(
                "picklable_audit() needs at least one target, e.g. picklable_audit('mypackage')"
            )
        report = audit(list(targets), serializers=serializers, **options)
        if check:
            text = audit_failures(report, fail_on, allow)
            if text is not None:
                pytest.fail(text, pytrace=False)
        return report

    return run
