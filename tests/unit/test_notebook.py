"""Tests for `picklable.notebook` (inline reports; tests/interactive shows them in a kernel)."""

from __future__ import annotations

import html

import pytest

from picklable._audit.model import Entry, Outcome, Report, Result
from picklable._format import HtmlFormat, TableFormat
from picklable.notebook import AuditView, show_audit


def make_report(rows: int = 2) -> Report:
    """A finished audit with ``rows`` entries, one of them a wrong copy under cloudpickle."""
    report = Report(
        targets=["pkg.mod"],
        serializers={"picklable": "0.1.0", "cloudpickle": "3.1"},
        python="3.11.7",
    )
    for i in range(rows):
        report.entries.append(
            Entry(
                f"pkg.mod.f{i}<x>",
                "pkg.mod",
                (f"f{i}",),
                "function",
                results={
                    "picklable": Result(Outcome.IDENTITY),
                    "cloudpickle": Result(
                        Outcome.WRONG if i == 0 else Outcome.IDENTITY, detail="type: a -> b"
                    ),
                },
            )
        )
    return report


def srcdoc(frame: str) -> str:
    start = frame.index('srcdoc="') + len('srcdoc="')
    end = frame.index('"', start)
    return html.unescape(frame[start:end])


class TestAuditView:
    """AuditView: the audit's page inline, its table in a terminal."""

    def test_html_is_the_report_page(self):
        """.html is exactly what `picklable audit --html` writes for the report."""
        report = make_report()
        assert AuditView(report).html == HtmlFormat().format(report)

    def test_repr_html_frames_the_whole_page(self):
        """The inline HTML is one sandboxed iframe whose srcdoc unescapes to the page."""
        view = AuditView(make_report())
        frame = view._repr_html_()
        assert frame.startswith('<iframe class="picklable-audit"') and frame.endswith("></iframe>")
        assert 'sandbox="allow-scripts"' in frame
        assert srcdoc(frame) == view.html
        # Nothing of the page (quotes, tags, names with <...>) leaks out of the attribute.
        # <x> is escaped in the page, then once more in srcdoc.
        assert frame.count("<") == 2 and "&amp;lt;x&amp;gt;" in frame

    def test_frame_height_follows_rows_within_bounds(self):
        """Few rows: a short frame; many rows: a capped frame that scrolls."""
        short = AuditView(make_report(1))._repr_html_()
        tall = AuditView(make_report(400))._repr_html_()
        assert "height:486px" in short
        assert "height:720px" in tall

    def test_text_is_the_table(self):
        """In a terminal the view prints the audit's table; `show` picks its rows."""
        report = make_report()
        assert str(AuditView(report)) == TableFormat().format(report)
        assert AuditView(report, show="all").table == TableFormat(show="all").format(report)

    def test_repr_pretty_prints_the_table(self):
        """IPython's pretty printer shows the table."""
        from IPython.lib.pretty import pretty

        report = make_report()
        assert pretty(AuditView(report)) == TableFormat().format(report).rstrip("\n")

    def test_repr_names_the_audit(self):
        """repr() says what was audited and how much."""
        assert repr(AuditView(make_report())) == (
            "<picklable.notebook.AuditView of pkg.mod: 2 objects, 2 serializers>"
        )

    def test_save_writes_the_page(self, tmp_path):
        """save() writes the HTML page and returns its path."""
        view = AuditView(make_report())
        path = view.save(tmp_path / "audit.html")
        assert path.read_text(encoding="utf-8") == view.html

    def test_bad_show_raises(self):
        """An unknown row choice fails at once."""
        with pytest.raises(ValueError, match="show must be one of"):
            AuditView(make_report(), show="some")


class TestShowAudit:
    """show_audit(): audit and view, or view a finished audit."""

    def test_finished_report(self):
        """A finished report is shown as it is."""
        report = make_report()
        assert show_audit(report).report is report

    def test_options_with_a_report_raise(self):
        """Audit options make no sense for a finished report."""
        with pytest.raises(TypeError, match=r"takes no audit options, got \['jobs'\]"):
            show_audit(make_report(), jobs=2)

    def test_audits_targets(self):
        """Dotted names are audited in fresh interpreters, every serializer asked for."""
        view = show_audit("picklable_testpkg.siblings", serializers=["picklable", "pickle"], jobs=1)
        assert view.report.targets == ["picklable_testpkg.siblings"]
        assert list(view.report.serializers) == ["picklable", "pickle"]
        assert view.report.entries
        assert all(e.results["picklable"].outcome.ok for e in view.report.entries)
