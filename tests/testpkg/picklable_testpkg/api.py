"""Public functions decorated in every way that breaks stdlib pickle."""

from __future__ import annotations

import dataclasses
import enum

from .decorators import Counted, cli_option, no_wraps, tagging


def plain(x):
    """An ordinary module function."""
    return x + 1


@no_wraps
def add(x, y):
    """Decorated without functools.wraps."""
    return x + y


@tagging("t")
def tagged_double(x):
    return 2 * x


@Counted
def counted_square(x):
    return x * x


@cli_option("-b", "--beat-interval")
def beat_interval_option(args, run=None):
    """Set the heart-beat interval."""
    return ("beat", args)


def _make_stat(name, fix_name=True):
    def stat(self, *args):
        return (name, self.values, args)

    if fix_name:
        stat.__name__ = name
    return stat


class Frame:
    """Methods made at run time by a factory and set on the class (old pandas)."""

    def __init__(self, values):
        self.values = values

    class Inner:
        pass


Frame.total = _make_stat("total")
Frame.mean = _make_stat("mean", fix_name=False)
Frame.Inner.count = _make_stat("count")


class Tools:
    """classmethod and staticmethod stacked over a decorator without wraps."""

    factor = 3

    @classmethod
    @no_wraps
    def scaled(cls, x):
        return cls.factor * x

    @staticmethod
    @no_wraps
    def static_add(x, y):
        return x + y

    @no_wraps
    def method(self, x):
        return ("method", x)


def make_closure(n):
    def add_n(x):
        return x + n

    return add_n


def make_counter():
    count = [0]

    def increment():
        count[0] += 1
        return count[0]

    def read():
        return count[0]

    return increment, read


def make_nonlocal_counter():
    """Two closures over one cell holding an int (plain data), rebound by one."""
    count = 0

    def increment():
        nonlocal count
        count += 1
        return count

    def read():
        return count

    return increment, read


def make_recursive():
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)

    return fact


def make_class():
    class Local:
        """A class defined in a function."""

        __slots__ = ("a", "b")

        def __init__(self, a, b):
            self.a = a
            self.b = b

        def total(self):
            return self.a + self.b

    return Local


def make_dataclass():
    @dataclasses.dataclass(frozen=True)
    class Point:
        x: int
        y: int = 0
        tags: list = dataclasses.field(default_factory=list)

        def norm1(self):
            return abs(self.x) + abs(self.y)

    return Point


def make_enum():
    class Mode(enum.Enum):
        FAST = 1
        SLOW = 2
        QUICK = 1  # an alias

        def describe(self):
            return f"mode {self.name}"

    return Mode


class Color(enum.Enum):
    RED = 1
    GREEN = 2


@dataclasses.dataclass
class Record:
    name: str
    size: int = 0


square_lambda = lambda x: x * x  # noqa: E731 - a module-level lambda on purpose
