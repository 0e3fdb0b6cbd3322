"""Show picklable's reports inline in Jupyter notebooks and IPython.

:func:`picklable.explain` reports render themselves (a text tree in a
terminal, an HTML tree in a notebook). The audit's report is a whole HTML page
with its own styles and filter script; :func:`show_audit` puts that page in a
sandboxed ``<iframe>`` of the notebook, so its styles and script never touch
the notebook around it::

    from picklable.notebook import show_audit
    show_audit("mypackage")                # the last expression of a cell

In a terminal (IPython, ``print``) the same object shows the audit's table.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._audit.model import Report

__all__ = ["AuditView", "show_audit"]

# Height of the inline frame: enough for the totals and the filters plus the
# rows, up to a screenful (the page scrolls inside the frame beyond that).
_FRAME_BASE_PX = 460
_FRAME_ROW_PX = 26
_FRAME_MAX_PX = 720


class AuditView:
    """An audit report that displays itself: the HTML report inline in a
    notebook, the table in a terminal.

    Parameters
    ----------
    report:
        A finished audit (from :func:`show_audit` or ``picklable._audit.audit``).
    show:
        Rows of the text table: ``differences`` (default), ``failures`` or ``all``.

    Attributes
    ----------
    report:
        The audit itself, for programs (``report.entries``, ``report.to_dict()``).
    """

    def __init__(self, report: Report, *, show: str = "differences") -> None:
        from ._format import TableFormat

        self.report = report
        self._table = TableFormat(show=show)

    @property
    def html(self) -> str:
        """The self-contained HTML page (what ``picklable audit --html`` writes)."""
        from ._format import HtmlFormat

        return HtmlFormat().format(self.report)

    @property
    def table(self) -> str:
        """The text table (what ``picklable audit`` prints)."""
        return self._table.format(self.report)

    def save(self, path: str | Path) -> Path:
        """Write the HTML page to ``path``.

        Parameters
        ----------
        path:
            File to write (UTF-8).

        Returns
        -------
        pathlib.Path
            The path written.
        """
        target = Path(path)
        target.write_text(self.html, encoding="utf-8")
        return target

    def _repr_html_(self) -> str:
        # srcdoc holds the page escaped as an attribute value; sandbox lets its
        # filter script run but gives it no access to the notebook page.
        rows = len(self.report.entries)
        height = min(_FRAME_MAX_PX, _FRAME_BASE_PX + _FRAME_ROW_PX * rows)
        title = f"picklable audit: {', '.join(self.report.targets) or 'objects'}"
        return (
            f'<iframe class="picklable-audit" title="{html.escape(title)}" '
            f'sandbox="allow-scripts" style="width:100%;height:{height}px;border:1px solid #ddd" '
            f'srcdoc="{html.escape(self.html, quote=True)}"></iframe>'
        )

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.table.rstrip("\n"))

    def __str__(self) -> str:
        return self.table

    def __repr__(self) -> str:
        report = self.report
        return (
            f"<picklable.notebook.AuditView of {', '.join(report.targets) or 'objects'}: "
            f"{len(report.entries)} objects, {len(report.serializers)} serializers>"
        )


def show_audit(
    what: str | Sequence[str] | Report,
    *,
    show: str = "differences",
    **options: Any,
) -> AuditView:
    """Audit a package (or take a finished audit) and show the report inline.

    Parameters
    ----------
    what:
        Dotted names to audit (``"mypackage"``, ``["mypackage.api",
        "mypackage.Model"]``), as for ``picklable audit``; or a finished report.
    show:
        Rows of the text table shown in a terminal: ``differences``,
        ``failures`` or ``all`` (the HTML page has its own filters).
    **options:
        Passed on to the audit: ``private``, ``recursive``, ``members``,
        ``serializers``, ``jobs``, ``timeout``.

    Returns
    -------
    AuditView
        Displays as the HTML report in a notebook and as the table in a
        terminal; ``.report`` is the audit itself.

    Raises
    ------
    TypeError
        If options are given with a finished report.
    picklable._audit.TargetError
        If a target cannot be imported or found.
    """
    from ._audit import Report, audit

    if isinstance(what, Report):
        if options:
            raise TypeError(
                f"show_audit() of a finished report takes no audit options, got {sorted(options)}"
            )
        return AuditView(what, show=show)
    targets = [what] if isinstance(what, str) else list(what)
    return AuditView(audit(targets, **options), show=show)
