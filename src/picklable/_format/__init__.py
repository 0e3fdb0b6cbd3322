"""Renderings of an audit report: terminal table, JSON, self-contained HTML.

Each format implements :class:`~.interface.Formatter`; the command line and the
pytest plugin pick one by name through :func:`formatter`.
"""

from __future__ import annotations

from .html import HtmlFormat
from .interface import Formatter
from .json import JsonFormat
from .progress import ProgressBar
from .table import TableFormat, summary

__all__ = [
    "Formatter",
    "HtmlFormat",
    "JsonFormat",
    "ProgressBar",
    "TableFormat",
    "formatter",
    "summary",
]


def formatter(name: str) -> Formatter:
    """The formatter called ``name`` (``table``, ``json`` or ``html``).

    Raises
    ------
    ValueError
        For any other name.
    """
    if name == "table":
        return TableFormat()
    if name == "json":
        return JsonFormat()
    if name == "html":
        return HtmlFormat()
    raise ValueError(f"unknown format {name!r}; choose from table, json, html")
