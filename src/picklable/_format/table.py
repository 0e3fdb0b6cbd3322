"""The terminal report: what fails and why first, then the totals; the table on request.

A package's audit has thousands of objects; the part a person acts on is
picklable's problems (each with its error, what differs, and the hint) and the
objects another serializer gets *wrong* (with what differs). Those come first,
then notes, the objects not audited and the totals; property objects are
counted apart (no one ships a ``property`` itself, and stdlib pickle fails on
every one). The per-object table, one row per object and one column per
serializer, is printed only when asked for (``show``: rows short of identity
under any serializer, picklable's failures, or all).
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
#: Objects listed under "wrong under other serializers" before "... N more".
MAX_OTHERS_WRONG = 20


def _paint(text: str, outcome: Outcome, color: bool) -> str:
    return f"\x1b[{_COLORS[outcome]}m{text}\x1b[0m" if color else text


def _clip(name: str, width: int) -> str:
    return name if len(name) <= width else "…" + name[len(name) - width + 1 :]


def picklable_problems(report: Report) -> list[Entry]:
    """Entries picklable does not ship as identity or an exact copy."""
    return [e for e in report.entries if not e.results["picklable"].outcome.ok]


def others_wrong(report: Report) -> list[tuple[Entry, list[str]]]:
    """Entries another serializer gets wrong, each with ``serializer: what differs``
    (serializers that differ the same way share one line)."""
    out = []
    for entry in report.entries:
        by_detail: dict[str, list[str]] = {}
        for name, result in entry.results.items():
            if name != "picklable" and result.outcome is Outcome.WRONG:
                by_detail.setdefault(result.detail or "(no detail)", []).append(name)
        if by_detail:
            out.append((entry, [f"{', '.join(n)}: {d}" for d, n in by_detail.items()]))
    return out


class TableFormat(Formatter):
    """The terminal report.

    Parameters
    ----------
    show:
        Print the per-object table too, with these rows: ``differences``
        (objects short of identity under any serializer), ``failures``
        (picklable's failures) or ``all``; None: no table.
    fail_on:
        Outcomes that count as picklable failures (for ``show='failures'``).
    color:
        ANSI colors for outcomes.
    """

    def __init__(
        self,
        show: str | None = "differences",
        fail_on: Iterable[Outcome] = FAILURES,
        *,
        color: bool = False,
    ) -> None:
        if show is not None and show not in SHOW_CHOICES:
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
        properties = report.property_count
        counted = f" ({properties} of them properties)" if properties else ""
        lines = [
            (
                f"picklable audit of {', '.join(report.targets) or '(objects)'}: "
                f"{len(report.entries)} objects{counted}, {len(serializers)} serializers, "
                f"Python {report.python}, {report.seconds:.1f} s"
            ),
            "",
        ]
        if self.show is not None:
            rows = self._rows(report)
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
        problems = picklable_problems(report)
        if problems:
            lines.append(f"picklable does not ship {len(problems)}:")
            for entry in problems:
                lines += problem_lines(entry)
            lines.append("")
        wrong = others_wrong(report)
        if wrong:
            what = "object loads" if len(wrong) == 1 else "objects load"
            lines.append(f"wrong under other serializers: {len(wrong)} {what} as another object")
            for entry, details in wrong[:MAX_OTHERS_WRONG]:
                lines.append(f"  {entry.name} ({entry.kind})")
                lines += [f"      {d}" for d in details]
            if len(wrong) > MAX_OTHERS_WRONG:
                lines.append(
                    f"  ... and {len(wrong) - MAX_OTHERS_WRONG} more "
                    "(--table, --json or --html list every object)"
                )
            lines.append("")
        lines += _notes(report)
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


def _notes(report: Report) -> list[str]:
    lines: list[str] = []
    if report.notes:
        lines.append("note:")
        lines += [f"  {note}" for note in report.notes]
        lines.append("")
    if report.problems:
        lines.append("not audited:")
        lines += [f"  {p.name}: {p.error}" for p in report.problems]
        lines.append("")
    if report.ignored:
        shown = ", ".join(report.ignored[:5]) + (", ..." if len(report.ignored) > 5 else "")
        lines.append(f"ignored ({len(report.ignored)}, by --ignore or [tool.picklable]): {shown}")
        lines.append("")
    return lines


def problem_lines(entry: Entry) -> list[str]:
    """picklable's outcome for ``entry``: name, outcome, error, what differs, hint."""
    result = entry.results["picklable"]
    lines = [f"  {entry.name} ({entry.kind}): {result.outcome.label}"]
    if result.error:
        lines.append(f"      {result.error}")
    if result.detail:
        lines.append(f"      {result.detail}")
    if result.hint:
        lines.append(f"      hint: {result.hint}")
    return lines


def _count_block(
    title: str, totals: dict[str, dict[str, int]], serializers: list[str], *, all_rows: bool
) -> list[str]:
    label_width = max(len(title), *(len(o.label) for o in Outcome))
    widths = [max(len(s), 5) for s in serializers]
    lines = [
        f"{title:<{label_width}}  " + "  ".join(f"{s:>{w}}" for s, w in zip(serializers, widths))
    ]
    for outcome in Outcome:
        counts = [totals[s][outcome.value] for s in serializers]
        if not all_rows and not any(counts):
            continue
        lines.append(
            f"{outcome.label:<{label_width}}  "
            + "  ".join(f"{c:>{w}}" for c, w in zip(counts, widths))
        )
    return lines


def totals_table(report: Report) -> list[str]:
    """Outcome counts per serializer, as aligned text lines; property objects apart."""
    serializers = list(report.serializers)
    properties = report.property_count
    if not properties:
        return _count_block("totals", report.totals(), serializers, all_rows=True)
    others = len(report.entries) - properties
    return [
        *_count_block(
            f"totals ({others} objects)",
            report.totals(properties=False),
            serializers,
            all_rows=True,
        ),
        "",
        *_count_block(
            f"properties ({properties}, apart)",
            report.totals(properties=True),
            serializers,
            all_rows=False,
        ),
    ]


def _counts(counts: dict[str, int], *, identity: bool = True) -> str:
    """``5 identity, 2 dump fails``: outcomes that occur (identity always, unless not asked)."""
    return ", ".join(
        f"{counts[o.value]} {o.label}"
        for o in Outcome
        if counts[o.value] or (identity and o is Outcome.IDENTITY)
    )


def summary(report: Report, fail_on: Iterable[Outcome]) -> tuple[str, bool]:
    """The short verdict for stderr, and whether picklable failed.

    Returns
    -------
    (text, failed)
    """
    wanted = frozenset(fail_on)
    totals = report.totals()
    properties = report.property_count
    without = report.totals(properties=False) if properties else totals
    lines = [f"picklable audit: {len(report.entries)} objects in {report.seconds:.1f} s"]
    if properties:
        # Two blocks: pickle's 273 failures on pandas' property objects are not
        # failures anyone meets, and would drown the counts that matter.
        lines.append(f"  {len(report.entries) - properties} objects:")
        lines += [f"    {name:<12} {_counts(without[name])}" for name in report.serializers]
        by_property = report.totals(properties=True)
        lines.append(f"  {properties} property objects, counted apart (--no-properties: left out):")
        lines += [
            f"    {name:<12} {_counts(by_property[name], identity=False)}"
            for name in report.serializers
        ]
    else:
        lines += [f"  {name:<12} {_counts(totals[name])}" for name in report.serializers]
    if report.problems:
        lines.append(
            f"  {len(report.problems)} not audited "
            "(import or attribute errors, listed in the report)"
        )
    if report.ignored:
        lines.append(f"  {len(report.ignored)} ignored (--ignore, [tool.picklable] ignore)")
    lines += [f"  note: {note}" for note in report.notes]
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
