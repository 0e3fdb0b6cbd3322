"""A one-line progress bar on a terminal (stderr), silent elsewhere."""

from __future__ import annotations

import sys
import time
from typing import TextIO

_PHASES = {"dump": "dumping", "load": "loading"}


class ProgressBar:
    """Callable as ``progress(phase, done, total)`` (see :func:`picklable._audit.audit`).

    Parameters
    ----------
    stream:
        Where to draw; default ``sys.stderr``.
    enabled:
        Draw at all; default: only when ``stream`` is a terminal.
    width:
        Characters of the bar itself.
    """

    def __init__(
        self, stream: TextIO | None = None, *, enabled: bool | None = None, width: int = 30
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = enabled
        self.width = width
        self._last = 0.0
        self._drawn = False

    def __call__(self, phase: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if done < total and now - self._last < 0.05:  # redraw at most 20 times a second
            return
        self._last = now
        filled = self.width * done // total if total else self.width
        bar = "#" * filled + "-" * (self.width - filled)
        self.stream.write(f"\r[{bar}] {_PHASES.get(phase, phase)} {done}/{total}")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """Erase the bar, leaving the cursor at the start of an empty line."""
        if self.enabled and self._drawn:
            self.stream.write("\r" + " " * (self.width + 40) + "\r")
            self.stream.flush()
            self._drawn = False
