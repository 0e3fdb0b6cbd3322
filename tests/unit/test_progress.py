"""Tests for `picklable._progress`: the bar of `progress=True`, with tqdm and without.

The bars draw into a stream that says it is a terminal; `support.terminal.screen`
replays what they wrote the way a terminal shows it. Real pools and a real
terminal are in tests/xproc/test_progress_xproc.py.
"""

from __future__ import annotations

import io
import re
import warnings

import pytest

from picklable import _progress
from picklable._progress import PhasedProgress, Progress, render
from support.terminal import screen


class Terminal(io.StringIO):
    """A stream that is a terminal as far as isatty() can tell."""

    def isatty(self) -> bool:
        return True


@pytest.fixture(params=["tqdm", "plain"])
def drawer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Bars drawn by tqdm, or by the fallback used when tqdm is not installed."""
    if request.param == "plain":
        monkeypatch.setattr(_progress, "_tqdm_class", False)
    else:
        assert _progress._tqdm() is not None
    return str(request.param)


def drawn(bar: Progress, stream: Terminal) -> list[str]:
    bar.close()
    return screen(stream.getvalue())


class TestProgress:
    def test_draws_the_fallback_or_tqdm(self, drawer: str) -> None:
        """On a terminal, the bar is tqdm's when installed, else the plain line."""
        bar = Progress("map(f)", 10, stream=Terminal())
        assert type(bar._drawer).__name__ == ("_Tqdm" if drawer == "tqdm" else "_Line")
        bar.close()

    def test_completed_bar_ends_full(self, drawer: str) -> None:
        """A finished map leaves its label, 100% and the count on screen."""
        stream = Terminal()
        bar = Progress("imap_unordered(work)", 20, unit="items", stream=stream)
        for _ in range(20):
            bar.advance()
        (line,) = drawn(bar, stream)
        assert line.startswith("imap_unordered(work)")
        assert "100%" in line and "20/20" in line and "items/s" in line

    def test_closed_early_ends_at_the_count_reached(self, drawer: str) -> None:
        """Interrupted with 35 of 100 done, the bar says 35/100 and never 100%."""
        stream = Terminal()
        bar = Progress("map(work)", 100, unit="items", stream=stream)
        bar.advance(35)
        text = stream.getvalue()
        (line,) = drawn(bar, stream)
        assert "35/100" in line and "35%" in line
        assert "100%" not in stream.getvalue() and "100%" not in text

    def test_shrinking_text_is_erased(self, drawer: str) -> None:
        """A new phase with a shorter text leaves nothing of the longer one behind."""
        stream = Terminal()
        bar = Progress("a long label for the first phase", 100_000, unit="objects", stream=stream)
        bar.advance(99_999)
        bar.restart("load", 10)
        bar.advance(3)
        (line,) = drawn(bar, stream)
        assert line.startswith("load") and "3/10" in line
        assert "phase" not in line and "99999" not in line and "100000" not in line

    def test_eta_is_shown(self, drawer: str, monkeypatch: pytest.MonkeyPatch) -> None:
        """Once a rate is known the bar shows the time left."""
        stream = Terminal()
        bar = Progress("map(f)", 100, unit="items", stream=stream)
        bar.started -= 10  # 10 s ago: 20 items in 10 s, 80 left, about 40 s
        if drawer == "tqdm":
            bar._drawer.bar.start_t -= 10  # type: ignore[attr-defined]
        bar.advance(20)
        (line,) = drawn(bar, stream)
        assert re.search(r"\[00:1\d<00:[34]\d|\[0:1\d<0:[34]\d", line), line

    def test_warnings_print_above_the_bar(
        self, drawer: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A warning issued while the bar is shown prints on its own lines, the bar under it."""
        stream = Terminal()
        bar = Progress("map(f)", 10, unit="items", stream=stream)
        bar.advance(4)

        def show(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
            stream.write(warnings.formatwarning(message, category, filename, lineno, line))

        # What the hook wraps is pytest's recorder here; in a program it is
        # warnings.showwarning, which writes to stderr (tests/xproc).
        monkeypatch.setattr(_progress, "_shown_before", show)
        _progress._show_above(
            DeprecationWarning("this API is deprecated"), DeprecationWarning, "x.py", 3
        )
        bar.advance(1)
        lines = drawn(bar, stream)
        assert lines[0] == "x.py:3: DeprecationWarning: this API is deprecated"
        assert not any("%" in line and "Warning" in line for line in lines)
        assert "5/10" in lines[-1]

    def test_hook_is_installed_while_bars_are_open(self) -> None:
        """warnings.showwarning is wrapped while a bar is open and put back after."""
        before = warnings.showwarning
        bar = Progress("map(f)", 2, stream=io.StringIO())
        assert warnings.showwarning is _progress._show_above
        bar.close()
        assert warnings.showwarning is before

    def test_total_known_later(self, drawer: str) -> None:
        """An imap over a generator counts first, then shows the total once it is known."""
        stream = Terminal()
        bar = Progress("imap(f)", None, unit="items", stream=stream)
        bar.advance(3)
        bar.set_total(6)
        bar.advance(3)
        (line,) = drawn(bar, stream)
        assert "6/6" in line and "100%" in line


class TestLog:
    def test_a_line_per_tenth_when_not_a_terminal(self) -> None:
        """In a log (not a terminal) the bar writes a line per tenth and a last line."""
        stream = io.StringIO()
        bar = Progress("map(f)", 100, unit="items", stream=stream)
        for _ in range(100):
            bar.advance()
        bar.close()
        lines = stream.getvalue().splitlines()
        assert 10 <= len(lines) <= 11
        assert "100/100" in lines[-1] and "\r" not in stream.getvalue()

    def test_log_closed_early(self) -> None:
        """Closed at 35 of 100, the last line of the log says 35/100."""
        stream = io.StringIO()
        bar = Progress("map(f)", 100, stream=stream)
        bar.advance(35)
        bar.close()
        assert "35/100" in stream.getvalue().splitlines()[-1]
        assert "100%" not in stream.getvalue()


class TestRender:
    def test_unknown_total(self) -> None:
        """Without a total the plain bar shows the count and rate, no percentage."""
        bar = Progress("imap(f)", stream=io.StringIO())
        bar.count = 3
        text = render(bar, bar.started + 1)
        assert "%" not in text and " 3 " in text
        bar.close()

    def test_clipped_to_the_terminal(self) -> None:
        """A line longer than the terminal is cut (a wrapped line cannot be redrawn)."""
        bar = Progress("map(" + "x" * 200 + ")", 10, stream=io.StringIO())
        assert len(render(bar, bar.started + 1, width=60)) == 60
        bar.close()


class TestPhasedProgress:
    def test_one_unit_and_a_count_per_phase(self, drawer: str) -> None:
        """The audit's two phases count objects from 0 under their own label."""
        stream = Terminal()
        bar = PhasedProgress(
            {"dump": "audit: dumping", "load": "audit: loading"},
            unit="objects",
            stream=stream,
            leave=True,
        )
        bar("dump", 0, 50)
        bar("dump", 50, 50)
        bar("load", 10, 50)
        bar.close()
        (line,) = screen(stream.getvalue())
        assert line.startswith("audit: loading") and "10/50" in line and "objects" in line

    def test_erased_when_not_left(self, drawer: str) -> None:
        """The audit's bar (leave=False) leaves an empty line for the summary."""
        stream = Terminal()
        bar = PhasedProgress({"dump": "dumping"}, unit="objects", stream=stream)
        bar("dump", 3, 10)
        bar.close()
        assert screen(stream.getvalue()) == []
