"""The JUnit XML report: one test case per audited object, for CI test reports.

CI systems (GitLab, Jenkins, GitHub actions that read JUnit, Azure) show each
object as a test: ``classname`` is the module it was reached through, ``name``
its path there (``Series.sum``). A test case fails when picklable's outcome is
one of ``fail_on``; the failure's message is the outcome and the first error
line, its text adds what differs and picklable's hint. The other serializers'
outcomes are the test case's properties.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable

from .._audit.model import FAILURES, Entry, Outcome, Report
from .interface import Formatter


def _why(entry: Entry) -> str:
    result = entry.results["picklable"]
    return "\n".join(
        text
        for text in (
            result.error,
            result.detail,
            f"hint: {result.hint}" if result.hint else "",
        )
        if text
    )


class JunitFormat(Formatter):
    """JUnit XML (the schema Jenkins and pytest's ``--junitxml`` write).

    Parameters
    ----------
    fail_on:
        picklable outcomes that make a test case fail.
    """

    def __init__(self, fail_on: Iterable[Outcome] = FAILURES) -> None:
        self.fail_on = frozenset(fail_on)

    def format(self, report: Report) -> str:
        """See :meth:`Formatter.format`."""
        title = f"picklable audit of {', '.join(report.targets) or 'objects'}"
        failed = [
            e
            for e in report.entries
            if "picklable" in e.results and e.results["picklable"].outcome in self.fail_on
        ]
        counts = {
            "tests": str(len(report.entries)),
            "failures": str(len(failed)),
            "errors": "0",
            "skipped": "0",
            "time": f"{report.seconds:.3f}",
        }
        suites = ET.Element("testsuites", {"name": "picklable audit", **counts})
        suite = ET.SubElement(suites, "testsuite", {"name": title, **counts})
        properties = ET.SubElement(suite, "properties")
        facts = {
            "python": report.python,
            **{f"serializer.{name}": version for name, version in report.serializers.items()},
            "fail_on": ",".join(o.value for o in Outcome if o in self.fail_on) or "none",
            "ignored": str(len(report.ignored)),
        }
        for name, value in facts.items():
            ET.SubElement(properties, "property", {"name": name, "value": value})
        for entry in report.entries:
            path = ".".join(str(step) for step in entry.path)
            case = ET.SubElement(
                suite,
                "testcase",
                {"classname": entry.module, "name": path or entry.name, "time": "0"},
            )
            others = ET.SubElement(case, "properties")
            ET.SubElement(others, "property", {"name": "kind", "value": entry.kind})
            for name, result in entry.results.items():
                ET.SubElement(others, "property", {"name": name, "value": result.outcome.label})
            mine = entry.results.get("picklable")
            if mine is None:
                continue
            if mine.outcome in self.fail_on:
                message = mine.outcome.label + (f": {mine.error}" if mine.error else "")
                failure = ET.SubElement(
                    case, "failure", {"type": mine.outcome.value, "message": message}
                )
                failure.text = _why(entry)
            elif mine.outcome is not Outcome.IDENTITY:
                out = ET.SubElement(case, "system-out")
                out.text = f"picklable: {mine.outcome.label}\n{_why(entry)}".rstrip()
        ET.indent(suites)
        return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, "unicode") + "\n"
