"""pytest plugin of scripts/cloudpickle-suite and scripts/loky-suite: one record per test.

Loaded with ``-p _suite_recorder`` into each run of cloudpickle's (or loky's) suite; writes
the file named by ``CLOUDPICKLE_SUITE_RECORD``: for each test its outcome and,
when it did not pass, the exception raised (type, first line of the message,
the chain of causes) and where the test stopped, which the script groups by.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator
from typing import Any

import pytest

_records: dict[str, dict[str, Any]] = {}
_MESSAGE_LIMIT = 400
_TEXT_LIMIT = 6000


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:_MESSAGE_LIMIT]


def _chain(exc: BaseException) -> list[dict[str, str]]:
    """The causes of ``exc`` (``raise ... from``, or raised while handling)."""
    chain: list[dict[str, str]] = []
    seen = {id(exc)}
    current = exc.__cause__ or exc.__context__
    while current is not None and id(current) not in seen and len(chain) < 5:
        seen.add(id(current))
        kind = type(current)
        chain.append(
            {
                "type": f"{kind.__module__}.{kind.__qualname__}",
                "message": _first_line(str(current)),
            }
        )
        current = current.__cause__ or current.__context__
    return chain


def _record(item: pytest.Item) -> dict[str, Any]:
    record = _records.get(item.nodeid)
    if record is None:
        cls = getattr(item, "cls", None)
        record = _records[item.nodeid] = {
            "nodeid": item.nodeid,
            "name": getattr(item, "originalname", None) or item.name,
            "class": cls.__name__ if cls is not None else None,
            "outcome": None,
            "seconds": 0.0,
        }
    return record


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    record = _record(item)
    record["seconds"] += call.duration
    excinfo = call.excinfo
    wasxfail = hasattr(report, "wasxfail")
    if report.passed:
        if record["outcome"] is None or call.when == "call":
            record["outcome"] = "xpassed" if wasxfail else "passed"
        return
    if report.skipped:
        record["outcome"] = "xfailed" if wasxfail else "skipped"
        if excinfo is not None:
            record["message"] = _first_line(str(excinfo.value))
        return
    # Failed: in the test itself, or (an error) in its setup or teardown.
    record["outcome"] = "failed" if call.when == "call" else "error"
    record["phase"] = call.when
    if excinfo is not None:
        exc = excinfo.value
        kind = type(exc)
        record["exception"] = f"{kind.__module__}.{kind.__qualname__}"
        record["message"] = _first_line(str(exc))
        record["causes"] = _chain(exc)
        crash = getattr(report.longrepr, "reprcrash", None)
        if crash is not None:
            record["crash"] = f"{os.path.basename(crash.path)}:{crash.lineno}"
        text = str(report.longrepr)
        record["longrepr"] = text if len(text) <= _TEXT_LIMIT else "[...]" + text[-_TEXT_LIMIT:]


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _records[report.nodeid or "<collection>"] = {
            "nodeid": report.nodeid or "<collection>",
            "name": "<collection>",
            "class": None,
            "outcome": "error",
            "phase": "collect",
            "message": _first_line(str(report.longrepr)),
            "longrepr": str(report.longrepr)[-_TEXT_LIMIT:],
            "seconds": 0.0,
        }


def pytest_deselected(items: list[pytest.Item]) -> None:
    for item in items:
        _record(item)["outcome"] = "deselected"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = os.environ.get("CLOUDPICKLE_SUITE_RECORD")
    if path:
        with open(path, "w", encoding="utf-8") as out:
            json.dump({"exitstatus": int(exitstatus), "tests": list(_records.values())}, out)
