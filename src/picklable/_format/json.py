"""The JSON report: :meth:`Report.to_dict` as text (``Report.from_dict`` reads it back)."""

from __future__ import annotations

import json

from .._audit.model import Report
from .interface import Formatter


class JsonFormat(Formatter):
    """Indented JSON, keys in report order."""

    def __init__(self, indent: int | None = 2) -> None:
        self.indent = indent

    def format(self, report: Report) -> str:
        """See :meth:`Formatter.format`."""
        return json.dumps(report.to_dict(), indent=self.indent, ensure_ascii=False) + "\n"
