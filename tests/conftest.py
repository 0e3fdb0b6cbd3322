from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
for path in (TESTS / "testpkg", TESTS):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from support.child import Child  # noqa: E402

# Every Ray the suite starts (tests/integration/test_ray.py, docs/ray.md's examples,
# scripts they run) inherits these: no usage statistics sent anywhere (the suite is
# offline), no token-authentication banner on stderr.
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")


@pytest.fixture(scope="module")
def child() -> Iterator[Child]:
    """A fresh interpreter (not a fork) for the tests of one module."""
    handle = Child()
    yield handle
    handle.close()
