"""What the scripts that run a peer's test suite with picklable swapped in share
(scripts/cloudpickle-suite, loky-suite, dill-suite): the check of their lists of
documented differences, and the messages of failures made comparable.

Each suite keeps a ``differences.json`` beside its script: the tests that fail
with picklable on purpose, each with its reason and the docs section that tells
users (a ``docs/page.md#anchor``: the page names the test, the anchor exists).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

REPO = Path(__file__).resolve().parent.parent
# A test, a run or the report, as JSON holds them.
Record = dict[str, Any]

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_TMP = re.compile(r"/tmp/[^\s'\"]+")


def slug(heading: str) -> str:
    """The anchor mkdocs gives a heading (lower case, words joined by '-')."""
    words = re.sub(r"[^\w\s-]", "", heading.strip().lower())
    return re.sub(r"[\s]+", "-", words)


def load_differences(path: Path, fail: Callable[[str], NoReturn]) -> dict[str, Record]:
    """The ``differences`` of ``path``, each checked: a reason, and a docs
    section whose anchor exists on a page that names the test (as `` `name` ``)."""
    differences: dict[str, Record] = json.loads(path.read_text(encoding="utf-8"))["differences"]
    for name, entry in differences.items():
        if not entry.get("reason") or not entry.get("docs"):
            fail(f"{path.name}: {name} needs a 'reason' and a 'docs' section")
        page, _, anchor = entry["docs"].partition("#")
        page_path = REPO / page
        text = page_path.read_text(encoding="utf-8") if page_path.is_file() else ""
        headings = {slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}
        if not text or (anchor and anchor not in headings) or f"`{name}`" not in text:
            fail(
                f"{path.name}: {name} must be named (as `{name}`) in the section "
                f"{entry['docs']} of an existing page"
            )
    return differences


def plain_message(message: str) -> str:
    """``message`` without what changes from run to run (addresses, scratch paths)."""
    return _TMP.sub("/tmp/...", _ADDRESS.sub("", message))
