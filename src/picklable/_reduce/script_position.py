"""Where a script's module level is while it dumps, and what that changes.

A spawn worker imports the script whole (its guards aside) before it runs a
task; the sender dumps while its module level is partway through. A statement
between two guards that binds a name again or changes it in place (``SCALE =
10``, ``CONFIG.update(...)`` after a first guard that runs a pool) has run in
the worker and not yet in the sender when the sender dumps in the earlier
guard: that name holds another value there.
Once the sender's module level has passed it (a dump in the later guard, where
a pool's initializer sets a global first bound between the guards), both hold
the same. :mod:`.main_guard` reads those statements (``Between``); this module
tells which of them lie ahead of the module level at a dump. Light: imported
by :mod:`.scripts` at every dump of a script object, without :mod:`ast`.
"""

from __future__ import annotations

import sys
import threading
import types
from typing import Any

__all__ = ["Between", "module_frame", "module_line", "rebound_later"]

# The module level's statements between the first guard and the last that bind
# a name again or change it in place: (their first line, the names), in order.
Between = tuple[tuple[int, frozenset[str]], ...]


def module_frame(namespace: dict[str, Any]) -> types.FrameType | None:
    """The frame of the module level running with the globals ``namespace``,
    on this thread's stack or the main thread's (a script that dumps while
    its guard runs, from another thread too); None if on neither."""
    frames = [sys._getframe(1)]
    main = sys._current_frames().get(threading.main_thread().ident or 0)
    if main is not None:
        frames.append(main)
    for frame in frames:
        at: types.FrameType | None = frame
        while at is not None:
            if at.f_globals is namespace and at.f_code.co_name == "<module>":
                return at
            at = at.f_back
    return None


def module_line(namespace: dict[str, Any]) -> int | None:
    """The line the module level running with the globals ``namespace`` is at;
    None if it is not running (it has finished: every statement has run)."""
    frame = module_frame(namespace)
    return None if frame is None else frame.f_lineno


def rebound_later(entries: Between, line: int | None) -> frozenset[str]:
    """The names that the statements of ``entries`` after ``line`` bind again or
    change: what the sender, its module level at that line, holds another value
    of than a worker does. Nothing once the module level has finished (None)."""
    if line is None:
        return frozenset()
    names: set[str] = set()
    for first, bound in entries:
        if first > line:
            names |= bound
    return frozenset(names)
