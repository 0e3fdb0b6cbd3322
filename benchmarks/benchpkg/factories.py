"""Closures made by an importable package (not ``__main__``): picklable looks for
them on the package's classes first (the old ``pandas.Series.sum`` case), finds
nothing, and ships them by value."""

from __future__ import annotations

from collections.abc import Callable

OFFSET = 3


def make_closure(n: int) -> Callable[[int], int]:
    def add(x: int) -> int:
        return x + n + OFFSET

    return add
