"""An actor class for the Ray tests: importable, so the workers import it by name."""

from __future__ import annotations

from picklable_testpkg.errors import KwOnlyError
from picklable_testpkg.wrapped import tagged


class Counter:
    """An actor class: state, options, a method returning a wrapper, failures."""

    def __init__(self, start=0, *, step=1):
        if start < 0:
            raise KwOnlyError("negative start", code=start)
        self.value = start
        self.step = step

    def incr(self, by=None):
        self.value += self.step if by is None else by
        return self.value

    def wrapper(self):
        @tagged
        def scaled(x):
            return x * self.value

        return scaled

    def split(self):
        return self.value, -self.value

    def fail(self, code):
        raise KwOnlyError("method failed", code=code)

    def countdown(self, n):
        yield from range(n, 0, -1)
