"""The terminal report: one row per object, one column per serializer, totals.

Rows shown: ``differences`` (default: any serializer short of identity),
``failures`` (picklable's outcome is a failure), or ``all``. Under the table,
picklable's problems with their first error line and hint; then the totals.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .._audit.model import FAILURES, Entry, Outcome, Report
from .interface import Formatter

SHOW_CHOICES = ("differences", "failures", "all")

_COLORS = {
    Outcome.IDENTITY: "32",  # green
    Outcome.COPY: "36",  # cyan
    Outcome.WRONG: "1;31",  # bold red
    Outcome.DUMP: "31",
    Outcome.LOAD: "31",
    Outcome.CRASH: "1;35",  # bold magenta
    Outcome.HANG: "1;35",
}
_MAX_NAME = 72


def _paint(text: str, outcome: Outcome, color: bool) -> str:
    return f"\x1b[{_COLORS[outcome]}m{text}\x1b[0m" if color else text


def _clip(name: str, width: int) -> str:
    return name if len(name) <= width else "…" + name[len(name) - width + 1 :]


class TableFormat(Formatter):
    """Plain-text table.

    Parameters
    ----------
    show:
        Which rows: ``differences``, ``failures`` or ``all``.
    fail_on:
        Outcomes that count as picklable failures (for ``show='failures'``
        and the problem list).
    color:
        ANSI colors for outcomes.
    """

    def __init__(
        self,
        show: str = "differences",
        fail_on: Iterable[Outcome] = FAILURES,
        *,
        color: bool = False,
    ) -> None:
        if show not in SHOW_CHOICES:
            raise ValueError(f"show must be one of {', '.join(SHOW_CHOICES)}, not {show!r}")
        self.show = show
        self.fail_on = frozenset(fail_on)
        self.color = color

    def _rows(self, report: Report) -> list[Entry]:
        if self.show == "all":
            return list(report.entries)
        if self.show == "failures":
            return [e for e in report.entries if e.results["picklable"].outcome in self.fail_on]
        return [
            e
            for e in report.entries
            if any(r.outcome is not Outcome.IDENTITY for r in e.results.values())
        ]

    def format(self, report: Report) -> str:
        """See :meth:`Formatter.format`."""
        serializers = list(report.serializers)
        rows = self._rows(report)
        lines = [
            (
                f"picklable audit of {', '.join(report.targets) or '(objects)'}: "
                f"{len(report.entries)} objects, {len(serializers)} serializers, "
                f"Python {report.python}, {report.seconds:.1f} s"
            ),
            "",
        ]
        if rows:
            lines += self._table(rows, serializers)
        else:
            what = {
                "differences": "every object is identity under every serializer",
                "failures": "no picklable failures",
                "all": "no objects",
            }[self.show]
            lines.append(f"(no rows to show: {what})")
        lines.append("")
        problems = [e for e in report.entries if not e.results["picklable"].outcome.ok]
        if problems:
            lines.append("picklable:")
            for entry in problems:
                lines += _problem_lines(entry)
            lines.append("")
        if report.problems:
            lines.append("not audited:")
            lines += [f"  {p.name}: {p.error}" for p in report.problems]
            lines.append("")
        lines += totals_table(report)
        return "\n".join(lines) + "\n"

    def _table(self, rows: Sequence[Entry], serializers: Sequence[str]) -> list[str]:
        name_width = min(_MAX_NAME, max(len("object"), *(len(e.name) for e in rows)))
        kind_width = max(len("kind"), *(len(e.kind) for e in rows))
        widths = [max(len(s), len("exact copy")) for s in serializers]
        header = f"{'object':<{name_width}}  {'kind':<{kind_width}}  " + "  ".join(
            f"{s:<{w}}" for s, w in zip(serializers, widths)
        )
        out = [header.rstrip(), "-" * len(header.rstrip())]
        for entry in rows:
            cells = []
            for s, w in zip(serializers, widths):
                result = entry.results.get(s)
                if result is None:
                    cells.append(" " * w)
                    continue
                cells.append(_paint(f"{result.outcome.label:<{w}}", result.outcome, self.color))
            name = _clip(entry.name, name_width)
            out.append(
                (f"{name:<{name_width}}  {entry.kind:<{kind_width}}  " + "  ".join(cells)).rstrip()
            )
        return out


def _problem_lines(entry: Entry) -> list[str]:
    result = entry.results["picklable"]
    lines = [f"  {entry.name} ({entry.kind}): {result.outcome.label}"]
    if result.error:
        lines.append(f"      {result.error}")
    if result.detail:
        lines.append(f"      {result.detail}")
    if result.hint:
        lines.append(f"      hint: {result.hint}")
    return lines


def totals_table(report: Report) -> list[str]:
    """Outcome counts per serializer, as aligned text lines."""
    totals = report.totals()
    serializers = list(report.serializers)
    label_width = max(len(o.label) for o in Outcome)
    widths = [max(len(s), 5) for s in serializers]
    lines = [
        f"{'totals':<{label_width}}  " + "  ".join(f"{s:>{w}}" for s, w in zip(serializers, widths))
    ]
    for outcome in Outcome:
        counts = [totals[s][outcome.value] for s in serializers]
        lines.append(
            f"{outcome.label:<{label_width}}  "
            + "  ".join(f"{c:>{w}}" for c, w in zip(counts, widths))
        )
    return lines


def summary(report: Report, fail_on: Iterable[Outcome]) -> tuple[str, bool]:
    """The short verdict for stderr, and whether picklable failed.

    Returns
    -------
    (text, failed)
    """
    wanted = frozenset(fail_on)
    totals = report.totals()
    lines = [f"picklable audit: {len(report.entries)} objects in {report.seconds:.1f} s"]
    for name in report.serializers:
        counts = totals[name]
        parts = [
            f"{counts[o.value]} {o.label}"
            for o in Outcome
            if counts[o.value] or o == Outcome.IDENTITY
        ]
        lines.append(f"  {name:<12} " + ", ".join(parts))
    if report.problems:
        lines.append(
            f"  {len(report.problems)} not audited "
            "(import or attribute errors, listed in the report)"
        )
    failing = {
        o: totals["picklable"][o.value]
        for o in Outcome
        if o in wanted and totals["picklable"][o.value]
    }
    if failing:
        counted = ", ".join(f"{n} {o.label}" for o, n in failing.items())
        lines.append(f"FAILED: picklable has {counted}")
    else:
        checked = ", ".join(o.value for o in Outcome if o in wanted) or "nothing (--fail-on none)"
        lines.append(f"OK: picklable has no {checked}" if wanted else "OK: --fail-on none")
    return "\n".join(lines) + "\n", bool(failing)
