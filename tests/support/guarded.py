"""Loading a held-out payload under an allow-list (tests/unit/test_allow_heldout*.py)."""

from __future__ import annotations

import logging

import picklable


def refused(data: bytes, allowed: list[str]) -> bool:
    """Whether loading ``data`` under ``allowed`` raises picklable's UnpicklingError;
    what a load that should have been refused opened (a handler's file) is closed."""
    try:
        result = picklable.loads(data, allowed=allowed)
    except picklable.UnpicklingError:
        return True
    if isinstance(result, logging.Handler):
        result.close()
    return False
