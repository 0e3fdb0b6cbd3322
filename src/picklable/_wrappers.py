"""Reducers for wrapper kinds that are taken apart and rebuilt (rule 4).

wrapt proxies, ``functools`` wrappers and the like. Filled in by the wrappers
work; until then every type falls through to the generic rules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def handler_for(t: type) -> Callable[[Any, Any], Any] | None:
    """The reducer for instances of ``t`` if ``t`` is a known wrapper kind."""
    return None
