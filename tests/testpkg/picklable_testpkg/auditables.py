"""Objects for the audit's and assert_ships' tests: properties, a module-level
functools.partial and a callable instance."""

from __future__ import annotations

import functools


class Shape:
    """A class with property objects among its members."""

    def __init__(self, side):
        self.side = side

    @property
    def area(self):
        return self.side**2

    @functools.cached_property
    def perimeter(self):
        return 4 * self.side

    def scaled(self, k):
        return Shape(self.side * k)


def power(base, exponent):
    return base**exponent


# A partial made at import time, found by its module-level name.
square = functools.partial(power, exponent=2)


class Multiplier:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return self.k * x


triple = Multiplier(3)
