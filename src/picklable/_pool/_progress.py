"""A progress bar on stderr for the map family (``progress=True``), no dependency.

Updated from the pool's manager thread as results arrive, redrawn at most ten
times a second. On a terminal it redraws in place; otherwise (a log file, CI)
it writes one line per tenth of the work.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

_WIDTH = 30


class Progress:
    """Counts finished items of one map and draws the bar."""

    def __init__(self, label: str, total: int | None = None, stream: TextIO | None = None) -> None:
        self.label = label
        self.total = total
        self.count = 0
        self.stream = stream if stream is not None else sys.stderr
        self.started = time.monotonic()
        self._last = 0.0
        self._last_tenth = -1
        self._closed = False
        try:
            self._tty = bool(self.stream.isatty())
        except Exception:
            self._tty = False

    def set_total(self, total: int) -> None:
        self.total = total

    def advance(self, n: int) -> None:
        self.count += n
        now = time.monotonic()
        if now - self._last >= 0.1:
            self._last = now
            self._draw(now, final=False)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._draw(time.monotonic(), final=True)

    def render(self, now: float) -> str:
        """The bar as text, e.g. ``map(work)  45%|#####      | 9/20 [0:01<0:01, 8.0/s]``."""
        elapsed = now - self.started
        rate = self.count / elapsed if elapsed > 0 else 0.0
        if self.total:
            fraction = min(1.0, self.count / self.total)
            filled = int(fraction * _WIDTH)
            bar = "#" * filled + " " * (_WIDTH - filled)
            left = (self.total - self.count) / rate if rate > 0 else 0.0
            return (
                f"{self.label} {int(fraction * 100):3d}%|{bar}| {self.count}/{self.total} "
                f"[{_clock(elapsed)}<{_clock(left)}, {rate:.1f}/s]"
            )
        return f"{self.label} {self.count} [{_clock(elapsed)}, {rate:.1f}/s]"

    def _draw(self, now: float, final: bool) -> None:
        if not self._tty and not final:
            tenth = self.count * 10 // self.total if self.total else -1
            if tenth <= self._last_tenth:
                return
            self._last_tenth = tenth
        text = self.render(now)
        try:
            if self._tty:
                self.stream.write("\r" + text + ("\n" if final else ""))
            else:
                self.stream.write(text + "\n")
            self.stream.flush()
        except Exception:
            pass  # a closed or broken stderr must not fail the pool


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"
