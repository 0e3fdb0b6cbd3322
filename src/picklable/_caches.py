"""Every process-wide cache, registered by the module that owns it.

A long-lived worker dumps and loads many payloads; each cache that speeds that
up (module indexes, code bytes, per-type decisions, loaded envelopes, ...) is
weak-keyed or bounded where it lives, and registers here how to empty it, so
:func:`clear_caches` resets them all at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["clear_caches", "register"]

_clearers: dict[str, Callable[[], object]] = {}
_lock = threading.RLock()


def register(name: str, clear: Callable[[], object]) -> None:
    """Make ``clear()`` part of :func:`clear_caches` under ``name`` (``module.cache``)."""
    with _lock:
        _clearers[name] = clear


def registered() -> list[str]:
    """Names of the registered caches (for tests and for curious users)."""
    with _lock:
        return sorted(_clearers)


def clear_caches() -> None:
    """Forget everything picklable caches in this process.

    Module indexes of the locator, "importable by name" answers, per-type
    decisions, code and marshal bytes, loaded envelopes, deterministic ids,
    the payloads of the script's functions and classes dumped again (with the
    strings, numbers, tuples and dicts they were made of; their functions and
    classes are held weakly):
    the next payload is made as by a fresh process (classes shipped by value
    keep their identity; that is not a cache). Long-lived workers never need
    it for correctness: every cached answer is checked before it is trusted,
    and caches are bounded or weak. It serves tests, and processes that want
    memory back after an unusual burst.

    .. versionadded:: 0.2.0
    """
    with _lock:
        clearers = list(_clearers.values())
    for clear in clearers:
        clear()
