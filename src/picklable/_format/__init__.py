"""Renderings of an audit report: terminal, JSON, HTML, JUnit XML, Markdown.

Each format implements :class:`~.interface.Formatter`; the command line and the
pytest plugin pick one by name through :func:`formatter`.
"""

from __future__ import annotations

from .html import HtmlFormat
from .interface import Formatter
from .json import JsonFormat
from .junit import JunitFormat
from .markdown import MarkdownFormat
from .table import TableFormat, summary

__all__ = [
    "Formatter",
    "HtmlFormat",
    "JsonFormat",
    "JunitFormat",
    "MarkdownFormat",
    "TableFormat",
    "formatter",
    "summary",
]

_FORMATS: dict[str, type[Formatter]] = {
    "table": TableFormat,
    "json": JsonFormat,
    "html": HtmlFormat,
    "junit": JunitFormat,
    "markdown": MarkdownFormat,
}


def formatter(name: str) -> Formatter:
    """The formatter called ``name`` (``table``, ``json``, ``html``, ``junit``, ``markdown``).

    Raises
    ------
    ValueError
        For any other name.
    """
    try:
        return _FORMATS[name]()
    except KeyError:
        raise ValueError(f"unknown format {name!r}; choose from {', '.join(_FORMATS)}") from None
