"""Progress bars of ``progress=True`` (pools, the audit): tqdm when installed, else a plain line.

One :class:`Progress` per piece of work, fed from any thread with
:meth:`~Progress.advance` and ended with :meth:`~Progress.close`; a new phase of
the same work (the audit dumps, then loads) restarts it with
:meth:`~Progress.restart`, so each phase has its own count, rate and ETA. Where
it draws:

* with tqdm installed (the ``progress`` extra): ``tqdm.auto``, so a widget in
  Jupyter (with ipywidgets) and a bar on a terminal;
* without tqdm, on a terminal: one line redrawn in place, padded to erase what
  a longer line left, clipped to the terminal's width (a wrapped line cannot be
  redrawn), with a rate and an ETA;
* elsewhere (a pipe, a log file, CI): a line per tenth of the work, and a last one.

Either way a bar closed early (Ctrl-C, a terminated pool) ends at the count
reached, ``35/100``, never at 100%; and warnings issued while a bar is on screen
print above it instead of over it (``warnings.showwarning`` is wrapped while
bars are open).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any, TextIO

__all__ = ["PhasedProgress", "Progress", "interactive"]

_REDRAW_EVERY = 0.1  # seconds between two draws of a plain bar
_BAR_WIDTH = 24


def _is_tty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except Exception:  # a closed or odd stream
        return False


def _in_jupyter() -> bool:
    """A Jupyter kernel runs this process (where tqdm.auto draws a widget)."""
    return "ipykernel.zmqshell" in sys.modules


def _fixed_size(stream: Any) -> tuple[int, int] | None:
    """(columns, lines) to draw in when the terminal reports a size of 0 (a pty
    nobody sized, as ``script`` makes: tqdm then hides its bar), else None: tqdm
    follows the terminal's size as it changes."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    if size.columns and size.lines:
        return None
    return size.columns or 80, size.lines or 24


def interactive(stream: TextIO | None = None) -> bool:
    """Whether a person watches ``stream`` (default stderr): a terminal or Jupyter."""
    return _in_jupyter() or _is_tty(sys.stderr if stream is None else stream)


def clock(seconds: float) -> str:
    """``1:05`` or ``2:03:10``."""
    whole = max(0, int(seconds))
    minutes, secs = divmod(whole, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


# ------------------------------------------------------------------ drawers


class _Drawer:
    """How one bar reaches the screen; every method is called under the bar's lock."""

    def update(self, bar: Progress) -> None:
        raise NotImplementedError

    def restart(self, bar: Progress) -> None:
        self.update(bar)

    def clear(self) -> None:
        """Take the bar off the screen for a moment (a warning prints)."""

    def redraw(self, bar: Progress) -> None:
        """Put it back after :meth:`clear`."""

    def close(self, bar: Progress) -> None:
        raise NotImplementedError


def render(bar: Progress, now: float, width: int | None = None) -> str:
    """The plain bar, e.g. ``map(work)  45%|#####     | 9/20 items [0:01<0:01, 8.0 items/s]``.

    The meter shrinks (down to nothing) to fit ``width``; what still does not
    fit is cut.
    """
    elapsed = now - bar.started
    rate = bar.count / elapsed if elapsed > 0 else 0.0
    unit = f" {bar.unit}" if bar.unit else ""
    speed = f"{rate:.0f}" if rate >= 100 else f"{rate:.1f}" if rate else "?"
    speed += f"{unit}/s"
    if bar.total:
        fraction = min(1.0, bar.count / bar.total)
        left = (bar.total - bar.count) / rate if rate > 0 else None
        eta = clock(left) if left is not None else "?"
        head = f"{bar.label} {int(fraction * 100):3d}%"
        tail = f" {bar.count}/{bar.total}{unit} [{clock(elapsed)}<{eta}, {speed}]"
        room = _BAR_WIDTH if width is None else min(_BAR_WIDTH, width - len(head + tail) - 2)
        if room > 0:
            filled = int(fraction * room)
            head += "|" + "#" * filled + " " * (room - filled) + "|"
        text = head + tail
    else:
        text = f"{bar.label} {bar.count}{unit} [{clock(elapsed)}, {speed}]"
    if width is not None and len(text) > width:
        text = text[: max(0, width - 1)] + "…"
    return text


class _Line(_Drawer):
    """A terminal without tqdm: one line, redrawn in place."""

    def __init__(self, stream: TextIO, leave: bool) -> None:
        self.stream = stream
        self.leave = leave
        self.shown = 0  # characters on screen
        self.last = 0.0

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except Exception:  # a closed or broken stderr must not fail the work
            pass

    def _draw(self, bar: Progress, now: float) -> None:
        # shutil (with bz2, lzma) loads with the first bar drawn, not with every
        # pool: a pool's workers import this module with the user's script.
        import shutil

        # One column short of the width: writing the last column wraps some terminals.
        width = shutil.get_terminal_size((80, 24)).columns - 1
        text = render(bar, now, width)
        self._write("\r" + text + " " * max(0, self.shown - len(text)))
        self.shown = len(text)
        self.last = now

    def update(self, bar: Progress) -> None:
        now = time.monotonic()
        if now - self.last >= _REDRAW_EVERY:
            self._draw(bar, now)

    def restart(self, bar: Progress) -> None:
        self._draw(bar, time.monotonic())

    def clear(self) -> None:
        if self.shown:
            self._write("\r" + " " * self.shown + "\r")

    def redraw(self, bar: Progress) -> None:
        if self.shown:
            self.shown = 0
            self._draw(bar, time.monotonic())

    def close(self, bar: Progress) -> None:
        if self.leave:
            self._draw(bar, time.monotonic())
            self._write("\n")
        else:
            self.clear()
        self.shown = 0


class _Log(_Drawer):
    """Not a terminal: a line per tenth of the work, and a last line."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tenth = -1

    def _write(self, bar: Progress) -> None:
        try:
            self.stream.write(render(bar, time.monotonic()) + "\n")
            self.stream.flush()
        except Exception:
            pass

    def update(self, bar: Progress) -> None:
        if not bar.total:
            return
        tenth = bar.count * 10 // bar.total
        if tenth > self.tenth and tenth < 10:
            self.tenth = tenth
            self._write(bar)

    def restart(self, bar: Progress) -> None:
        self.tenth = -1
        self.update(bar)

    def close(self, bar: Progress) -> None:
        self._write(bar)


_tqdm_class: Any = None
_tqdm_lock = threading.Lock()


def _tqdm() -> Any:
    """tqdm.auto's class with picklable's settings, or None without tqdm."""
    global _tqdm_class
    with _tqdm_lock:
        if _tqdm_class is None:
            try:
                from tqdm.auto import tqdm as auto
            except ImportError:
                _tqdm_class = False
            else:

                class Bar(auto):  # type: ignore[misc]
                    # No monitor thread (it would outlive pools in leak checks), and a
                    # thread lock: tqdm's default also makes a multiprocessing lock,
                    # which under spawn starts the resource tracker process.
                    monitor_interval = 0
                    _lock = threading.RLock()

                _tqdm_class = Bar
        return _tqdm_class or None


class _Tqdm(_Drawer):
    def __init__(self, cls: Any, bar: Progress, stream: TextIO, leave: bool) -> None:
        self.cls = cls
        self.stream = stream
        fixed = _fixed_size(stream)
        self.bar = cls(
            total=bar.total,
            desc=bar.label,
            unit=f" {bar.unit}" if bar.unit else "it",
            file=stream,
            leave=leave,
            ncols=fixed[0] if fixed else None,
            nrows=fixed[1] if fixed else None,
            dynamic_ncols=fixed is None,
            mininterval=_REDRAW_EVERY,
        )

    def update(self, bar: Progress) -> None:
        step = bar.count - self.bar.n
        if self.bar.total != bar.total:
            self.bar.total = bar.total
            widget = getattr(self.bar, "container", None)  # tqdm.notebook's
            if widget is not None and bar.total:
                meter = widget.children[1]
                meter.max, meter.bar_style, meter.layout.width = bar.total, "", None
            self.bar.refresh()
        if step:
            self.bar.update(step)

    def restart(self, bar: Progress) -> None:
        self.bar.set_description(bar.label, refresh=False)
        self.bar.reset(total=bar.total)  # redraws, with the new label
        self.update(bar)

    def clear(self) -> None:
        self.bar.clear()

    def redraw(self, bar: Progress) -> None:
        self.bar.refresh()

    def close(self, bar: Progress) -> None:
        self.update(bar)
        self.bar.close()


# ---------------------------------------------------------------- the bar

_open: list[Progress] = []
_open_lock = threading.RLock()
_shown_before: Callable[..., Any] | None = None


def _show_above(*args: Any, **kwargs: Any) -> None:
    """``warnings.showwarning`` while bars are open: the warning prints above them."""
    original = _shown_before or warnings._showwarning_orig  # type: ignore[attr-defined]
    with _cleared():
        original(*args, **kwargs)


@contextlib.contextmanager
def _cleared() -> Iterator[None]:
    with _open_lock:
        bars = list(_open)
        for bar in bars:
            bar._clear()
        try:
            yield
        finally:
            for bar in bars:
                bar._redraw()


def _register(bar: Progress) -> None:
    global _shown_before
    with _open_lock:
        if not _open and warnings.showwarning is not _show_above:
            _shown_before = warnings.showwarning
            warnings.showwarning = _show_above
        _open.append(bar)


def _unregister(bar: Progress) -> None:
    with _open_lock:
        if bar in _open:
            _open.remove(bar)
        # Put the previous hook back unless someone replaced ours meanwhile
        # (catch_warnings restores its own on exit).
        if not _open and warnings.showwarning is _show_above and _shown_before is not None:
            warnings.showwarning = _shown_before


class Progress:
    """One progress bar.

    Parameters
    ----------
    label:
        What is counted, after the real call: ``imap_unordered(work)``.
    total:
        Items to do, or None while unknown (:meth:`set_total` later).
    unit:
        Word for one item (``objects``), or ``""``.
    stream:
        Where to draw; default ``sys.stderr``.
    leave:
        Keep the last state on screen when closed (a pool's map), or erase it
        (the audit, whose summary follows).
    """

    def __init__(
        self,
        label: str,
        total: int | None = None,
        *,
        unit: str = "",
        stream: TextIO | None = None,
        leave: bool = True,
    ) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.count = 0
        self.started = time.monotonic()
        self.closed = False
        self._lock = threading.RLock()
        out = stream if stream is not None else sys.stderr
        cls = _tqdm() if interactive(out) else None
        self._drawer: _Drawer
        if cls is not None:
            self._drawer = _Tqdm(cls, self, out, leave)
        elif _is_tty(out):
            self._drawer = _Line(out, leave)
        else:
            self._drawer = _Log(out)
        _register(self)

    def set_total(self, total: int) -> None:
        """The total became known (an ``imap`` over a generator was consumed)."""
        with self._lock:
            self.total = total
            if not self.closed:
                self._drawer.update(self)

    def advance(self, n: int = 1) -> None:
        """``n`` more items are done."""
        with self._lock:
            self.count += n
            if not self.closed:
                self._drawer.update(self)

    def restart(self, label: str, total: int | None) -> None:
        """A new phase: count from 0 towards ``total``, with its own rate and ETA."""
        with self._lock:
            self.label = label
            self.total = total
            self.count = 0
            self.started = time.monotonic()
            if not self.closed:
                self._drawer.restart(self)

    def close(self) -> None:
        """Draw the count reached (or erase the bar); idempotent."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            try:
                self._drawer.close(self)
            finally:
                _unregister(self)

    def _clear(self) -> None:
        with self._lock:
            if not self.closed:
                self._drawer.clear()

    def _redraw(self) -> None:
        with self._lock:
            if not self.closed:
                self._drawer.redraw(self)


class PhasedProgress:
    """``progress(phase, done, total)`` (the audit's callback) drawn as one bar.

    Each new phase restarts the bar under its own label (``_LABELS``), so a
    phase counts from 0 with its own ETA; :meth:`close` ends it.
    """

    def __init__(
        self,
        labels: dict[str, str],
        *,
        unit: str = "",
        stream: TextIO | None = None,
        leave: bool = False,
    ) -> None:
        self.labels = labels
        self.unit = unit
        self.stream = stream
        self.leave = leave
        self.bar: Progress | None = None
        self.phase: str | None = None

    def __call__(self, phase: str, done: int, total: int) -> None:
        label = self.labels.get(phase, phase)
        if self.bar is None:
            self.bar = Progress(label, total, unit=self.unit, stream=self.stream, leave=self.leave)
        elif phase != self.phase:
            self.bar.restart(label, total)
        self.phase = phase
        if self.bar.total != total:
            self.bar.set_total(total)
        if done != self.bar.count:
            self.bar.advance(done - self.bar.count)

    def close(self) -> None:
        """End the bar at the count reached."""
        if self.bar is not None:
            self.bar.close()
