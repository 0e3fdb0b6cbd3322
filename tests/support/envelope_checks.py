"""Checks run in a fresh interpreter on ``ship()`` envelopes: importable, so they go by name."""

from __future__ import annotations

import pickle
from typing import Any

from support.checks import walk


def load_twice_and_call(payload: bytes, arg: Any) -> tuple[bool, bool, bool, Any]:
    """Unpickle an envelope twice with stdlib pickle.

    Returns whether the first arrived sealed, whether re-pickling gives the
    same bytes, whether both open to the same object, and the call's result.
    """
    first, second = pickle.loads(payload), pickle.loads(payload)
    sealed = not first.opened
    same_bytes = pickle.dumps(first) == payload
    return sealed, same_bytes, first.obj is second.obj, first(arg)


def opens_to_importable_object(payload: bytes, module: str, path: str) -> bool:
    """The envelope opens to the very object found at ``module:path`` here."""
    return pickle.loads(payload).obj is walk(module, path)


def relay(payload: bytes) -> bytes:
    """A hop that unpickles an envelope and pickles it again, never using it."""
    envelope = pickle.loads(payload)
    assert not envelope.opened
    return pickle.dumps(envelope)
