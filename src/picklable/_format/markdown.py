"""The Markdown report: the verdict, the totals and what fails, for a CI job summary.

Bounded however large the audit (a GitHub job summary, a merge request note):
the totals (property objects apart), picklable's problems with why and the fix,
the objects other serializers get wrong (the first ``MAX_ROWS``), notes, the
objects not audited and the ignored ones. The per-object listing of every
object is the JSON and HTML reports' job.
"""

from __future__ import annotations

from collections.abc import Iterable

from .._audit.model import FAILURES, Outcome, Report
from .interface import Formatter
from .table import others_wrong, picklable_problems, summary

#: Rows per table before "... and N more".
MAX_ROWS = 50


def _cell(text: str) -> str:
    """Text that stays inside one Markdown table cell."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", "<br>")


def _code(text: str) -> str:
    return f"`{text}`" if "`" not in text else _cell(text)


def _counts_table(
    totals: dict[str, dict[str, int]], serializers: list[str], all_rows: bool
) -> list[str]:
    lines = [
        "| outcome | " + " | ".join(serializers) + " |",
        "| --- | " + " | ".join("---:" for _ in serializers) + " |",
    ]
    for outcome in Outcome:
        counts = [totals[s][outcome.value] for s in serializers]
        if all_rows or any(counts):
            lines.append(f"| {outcome.label} | " + " | ".join(str(c) for c in counts) + " |")
    return lines


class MarkdownFormat(Formatter):
    """GitHub-flavoured Markdown.

    Parameters
    ----------
    fail_on:
        picklable outcomes that make the verdict FAILED.
    """

    def __init__(self, fail_on: Iterable[Outcome] = FAILURES) -> None:
        self.fail_on = tuple(fail_on)

    def format(self, report: Report) -> str:
        """See :meth:`Formatter.format`."""
        serializers = list(report.serializers)
        verdict = summary(report, self.fail_on)[0].splitlines()[-1]
        properties = report.property_count
        apart = f" ({properties} properties counted apart)" if properties else ""
        versions = ", ".join(f"{name} {version}" for name, version in report.serializers.items())
        out = [
            f"# picklable audit of {', '.join(report.targets) or 'objects'}",
            "",
            (
                f"{len(report.entries)} objects{apart} · Python {report.python} · "
                f"{report.seconds:.1f} s · {versions}"
            ),
            "",
            f"**{verdict.partition(':')[0]}**:{verdict.partition(':')[2]}",
            "",
        ]
        if properties:
            out += _counts_table(report.totals(properties=False), serializers, True)
            out += ["", f"Property objects ({properties}), counted apart:", ""]
            out += _counts_table(report.totals(properties=True), serializers, False)
        else:
            out += _counts_table(report.totals(), serializers, True)
        out.append("")
        problems = picklable_problems(report)
        if problems:
            out += [
                f"## picklable does not ship ({len(problems)})",
                "",
                "| object | kind | outcome | why | fix |",
                "| --- | --- | --- | --- | --- |",
            ]
            for entry in problems[:MAX_ROWS]:
                result = entry.results["picklable"]
                why = "\n".join(x for x in (result.error, result.detail) if x)
                out.append(
                    f"| {_code(entry.name)} | {entry.kind} | {result.outcome.label} | "
                    f"{_cell(why)} | {_cell(result.hint)} |"
                )
            out += [*self._more(len(problems)), ""]
        wrong = others_wrong(report)
        if wrong:
            out += [
                f"## Wrong under other serializers ({len(wrong)})",
                "",
                "Loads, but is not the object: what differs.",
                "",
                "| object | kind | serializer: what differs |",
                "| --- | --- | --- |",
            ]
            for entry, details in wrong[:MAX_ROWS]:
                out.append(
                    f"| {_code(entry.name)} | {entry.kind} | {_cell(chr(10).join(details))} |"
                )
            out += [*self._more(len(wrong)), ""]
        if report.notes:
            out += ["## Notes", "", *(f"- {note}" for note in report.notes), ""]
        if report.problems:
            out += ["## Not audited", ""]
            out += [f"- {_code(p.name)}: {p.error}" for p in report.problems]
            out.append("")
        if report.ignored:
            out += [
                f"## Ignored ({len(report.ignored)})",
                "",
                ", ".join(_code(n) for n in report.ignored[:MAX_ROWS])
                + (" ..." if len(report.ignored) > MAX_ROWS else ""),
                "",
            ]
        return "\n".join(out).rstrip("\n") + "\n"

    @staticmethod
    def _more(count: int) -> list[str]:
        if count <= MAX_ROWS:
            return []
        return ["", f"... and {count - MAX_ROWS} more (the JSON and HTML reports list all)."]
