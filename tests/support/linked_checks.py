"""Checks for picklable_testpkg.linked, run inside a child interpreter."""

from __future__ import annotations

from typing import Any

import picklable
from picklable_testpkg import linked


def call_outer(payload: bytes) -> dict[str, Any]:
    """Load ``outer`` (alone, or as the last of a list), call it with 2; what the
    child's own objects hold after, and whether the copy calls what was loaded."""
    loaded = picklable.loads(payload)
    items = loaded if type(loaded) is list else [loaded]
    outer = items[-1]
    calls = outer.__wrapped__.__globals__["inner"]
    return {
        "result": outer(2),
        "own_outer": outer is linked.outer,
        "calls_own_inner": calls is linked.inner,
        "calls_loaded": [calls is item for item in items[:-1]],
        "own_states": linked.states(),
    }
