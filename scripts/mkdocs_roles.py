"""mkdocs hook: render the Sphinx roles of picklable's docstrings as code.

The docstrings write cross-references as Sphinx roles (``:func:`loads```), which
pydoc, IDEs and Sphinx read well; mkdocstrings leaves them literal (":func:" before
a code span). Here each becomes its code span alone, Sphinx's ``~`` prefix
("show the last component") applied, and a link when the target is documented
on the same page (the API reference: ``picklable.loads`` and so on).
"""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(
    r":(?:py:)?(?:func|class|meth|attr|mod|exc|data|obj|const):<code>(~?)([\w.]+)</code>"
)


def render_roles(html: str) -> str:
    """``html`` with every literal Sphinx role replaced by its code span (or a link)."""

    def replace(match: re.Match[str]) -> str:
        short, target = match.groups()
        shown = target.rsplit(".", 1)[-1] if short else target
        for anchor in (target, f"picklable.{target}"):
            if f'id="{anchor}"' in html:
                return f'<a href="#{anchor}"><code>{shown}</code></a>'
        return f"<code>{shown}</code>"

    return _ROLE.sub(replace, html)


def on_page_content(html: str, **kwargs: Any) -> str:
    return render_roles(html)
