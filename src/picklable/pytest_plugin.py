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

Marker audits also read ``[tool.picklable]`` of the project's
``pyproject.toml`` (found from pytest's root directory upward, see
:mod:`picklable._audit.config`): ``ignore``, ``fail-on``, ``private``,
``recursive``, ``members``, ``properties``, ``jobs`` and ``timeout``. The
marker's own arguments win over the file, and two command-line options win over
both, to tighten or loosen a run without editing the suite::

    pytest --picklable-fail-on=wrong,dump      # which outcomes fail a marker audit
    pytest --picklable-ignore='mypackage.legacy.*'   # repeatable; added to the others

``ignore`` patterns add up (file, marker, command line); ``allow`` (audited,
failures accepted) is the marker's alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

_MARKER = "picklable_audit"
_CACHE = pytest.StashKey[dict[Any, Any]]()
_CONFIG = pytest.StashKey[Any]()
# [tool.picklable] keys a marker audit takes from the file.
_FILE_KEYS = (
    "ignore",
    "fail-on",
    "private",
    "recursive",
    "members",
    "properties",
    "jobs",
    "timeout",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--picklable-fail-on`` and ``--picklable-ignore`` for the marker's audits."""
    group = parser.getgroup("picklable", "picklable: shipping checks")
    group.addoption(
        "--picklable-fail-on",
        metavar="LIST",
        default=None,
        help="picklable outcomes that fail a picklable_audit marker: 'none' or a "
        "comma-separated list of wrong,dump,load,crash,hang (wins over the marker and "
        "[tool.picklable])",
    )
    group.addoption(
        "--picklable-ignore",
        action="append",
        default=[],
        metavar="PATTERN",
        help="leave objects matching this fnmatch pattern out of picklable_audit marker "
        "audits (repeatable; added to the marker's and [tool.picklable]'s)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker (so ``--strict-markers`` accepts it)."""
    config.addinivalue_line(
        "markers",
        f"{_MARKER}(*targets, private=False, recursive=False, members=True, "
        "properties=True, serializers=('picklable',), "
        "fail_on=('wrong', 'dump', 'load', 'crash', 'hang'), allow=(), ignore=(), "
        "jobs=None, timeout=30.0): audit that every public callable of the targets ships "
        "with picklable (picklable.testing.assert_audit) before the test runs; "
        "[tool.picklable] and --picklable-fail-on / --picklable-ignore apply",
    )
    config.stash[_CACHE] = {}


def _file_settings(config: pytest.Config) -> dict[str, Any]:
    """[tool.picklable] of the project (read once per session); a bad file fails
    the marker's tests with the reason."""
    found = config.stash.get(_CONFIG, None)
    if found is None:
        from ._audit import config as audit_config

        try:
            found = audit_config.load(audit_config.find(config.rootpath)).options(*_FILE_KEYS)
        except audit_config.ConfigError as exc:
            found = exc
        config.stash[_CONFIG] = found
    if isinstance(found, Exception):
        pytest.fail(f"{_MARKER}: {found}", pytrace=False)
    return dict(found)


def _fail_on_option(value: str) -> list[str]:
    from ._audit.model import FAILURES

    names = [part.strip() for part in value.split(",") if part.strip()]
    if names == ["none"]:
        return []
    allowed = [o.value for o in FAILURES]
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        pytest.fail(
            f"--picklable-fail-on: expected 'none' or a comma-separated list of "
            f"{', '.join(allowed)}; got {value!r}",
            pytrace=False,
        )
    return names


def _marker_options(item: pytest.Item, marker: pytest.Mark) -> dict[str, Any]:
    """The marker's arguments over [tool.picklable], the command line over both."""
    options = _file_settings(item.config)
    ignore = [*options.pop("ignore", []), *marker.kwargs.get("ignore", ())]
    options.update(marker.kwargs)
    ignore += item.config.getoption("picklable_ignore") or []
    if ignore:
        options["ignore"] = ignore
    fail_on = item.config.getoption("picklable_fail_on")
    if fail_on is not None:
        options["fail_on"] = _fail_on_option(fail_on)
    return options


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
    options = _marker_options(item, marker)
    cache = item.config.stash.get(_CACHE, {})
    key = _key(marker.args, options)
    failure = cache.get(key)
    if key not in cache:
        try:
            assert_audit(*marker.args, **options)
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
