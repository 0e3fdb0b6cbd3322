from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
for path in (TESTS / "testpkg", TESTS):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from support.child import Child  # noqa: E402


@pytest.fixture(scope="module")
def child() -> Iterator[Child]:
    """A fresh interpreter (not a fork) for the tests of one module."""
    handle = Child()
    yield handle
    handle.close()
