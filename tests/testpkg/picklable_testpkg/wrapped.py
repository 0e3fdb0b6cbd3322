"""Importable wrappers of every kind: wrapt, functools, class-based, the toolkit.

Each also has a factory that makes the same kind in a local scope (no importable
name: it must ship as an exact copy that still runs its wrapper). No sacred here:
the wrapt 2.x environment imports this module too.
"""

from __future__ import annotations

import functools

import wrapt

import picklable

# ------------------------------------------------------------------- wrapt


@wrapt.decorator
def tagged(wrapped, instance, args, kwargs):
    """A wrapt decorator: marks results so a test sees the wrapper ran."""
    return ("tagged", wrapped(*args, **kwargs))


@tagged
def double(x):
    """Doubles x."""
    return 2 * x


class Service:
    factor = 10

    @tagged
    def scale(self, x):
        return self.factor * x

    @tagged
    @classmethod
    def kind(cls):
        return cls.__name__

    @tagged
    @staticmethod
    def static(x):
        return -x


class Traced(wrapt.ObjectProxy):
    """An ObjectProxy subclass with its own state (``_self_`` attributes)."""

    def __init__(self, wrapped, label):
        super().__init__(wrapped)
        self._self_label = label

    def __call__(self, *args, **kwargs):
        return (self._self_label, self.__wrapped__(*args, **kwargs))


def _square(x):
    return x * x


traced_square = Traced(_square, "traced")


def make_wrapt_local(offset):
    """A wrapt decorator and a function, both local (a closure over offset)."""

    @wrapt.decorator
    def shifted(wrapped, instance, args, kwargs):
        return ("shifted", offset + wrapped(*args, **kwargs))

    @shifted
    def ident(x):
        return x

    return ident


def make_traced_local(label):
    def cube(x):
        return x**3

    return Traced(cube, label)


# --------------------------------------------------------------- functools


@functools.lru_cache(maxsize=32)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


@functools.cache
def cached_len(s):
    return len(s)


@functools.singledispatch
def describe(x):
    return "object"


@describe.register(int)
def _describe_int(x):
    return "int"


@describe.register(list)
def _describe_list(x):
    return [describe(i) for i in x]


class Shape:
    def __init__(self, side):
        self.side = side

    @functools.cached_property
    def area(self):
        return self.side * self.side

    @property
    def perimeter(self):
        return 4 * self.side

    scaled = functools.partialmethod(lambda self, k: self.side * k, 3)

    @functools.cache
    def volume(self, depth):
        return self.side * self.side * depth


def make_functools_local(base):
    """lru_cache, singledispatch, cached_property and a property subclass made locally."""

    @functools.lru_cache(maxsize=8)
    def plus(x):
        return base + x

    @functools.singledispatch
    def kind(x):
        return "object"

    @kind.register(str)
    def _(x):
        return ("str", plus(len(x)))

    class described(property):
        """A property subclass (pickle's default would drop its fget)."""

    class Box:
        def __init__(self, n):
            self.n = n

        @functools.cached_property
        def total(self):
            return base + self.n

        @described
        def label(self):
            return f"box {self.n}"

    return plus, kind, Box


# ------------------------------------------------------ class-based decorators


class Counted:
    """A class-based decorator that binds like a method and counts calls."""

    def __init__(self, func):
        functools.update_wrapper(self, func)
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return ("counted", self.__wrapped__(*args, **kwargs))

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        return functools.partial(self, instance)


class Stacked:
    """classmethod/staticmethod and class-based decorators stacked both ways."""

    base = 5

    @classmethod
    @Counted
    def outer_classmethod(cls, x):
        return cls.base + x

    @staticmethod
    @Counted
    def outer_staticmethod(x):
        return -x

    @Counted
    @tagged
    def counted_tagged(self, x):
        return x

    @tagged
    @Counted
    def tagged_counted(self, x):
        return x


@Counted
def counted_add(x, y):
    return x + y


# ----------------------------------------------------------------- toolkit


@picklable.decorator
def logged(wrapped, instance, args, kwargs):
    """A toolkit decorator: reports the instance it was bound to."""
    who = (
        None
        if instance is None
        else (instance.__name__ if isinstance(instance, type) else type(instance).__name__)
    )
    return ("logged", who, wrapped(*args, **kwargs))


class Tally(picklable.Wrapper):
    """A toolkit class-based decorator with state."""

    def __init__(self, wrapped):
        super().__init__(wrapped)
        self.calls = 0

    def call(self, wrapped, instance, args, kwargs):
        self.calls += 1
        return ("tally", wrapped(*args, **kwargs))


@logged
def add(x: int, y: int = 1) -> int:
    """Adds two numbers."""
    return x + y


@Tally
def negate(x: int) -> int:
    return -x


class Account:
    rate = 2

    def __init__(self, balance):
        self.balance = balance

    @logged
    def deposit(self, amount):
        return self.balance + amount

    @logged
    @classmethod
    def create(cls, balance):
        return cls(balance).balance

    @classmethod
    @logged
    def interest(cls, x):
        return cls.rate * x

    @logged
    @staticmethod
    def fee(x):
        return x + 1

    @staticmethod
    @logged
    def tax(x):
        return x * 3

    @Tally
    @logged
    def tallied(self, x):
        return self.balance * x

    @logged
    @Tally
    def logged_tally(self, x):
        return self.balance - x


@logged
class Point:
    def __init__(self, x, y=0):
        self.x = x
        self.y = y


def make_toolkit_local(k):
    @picklable.decorator
    def times(wrapped, instance, args, kwargs):
        return ("times", k * wrapped(*args, **kwargs))

    @times
    def inc(x):
        return x + 1

    class Local:
        @times
        def method(self, x):
            return x

        @times
        @classmethod
        def cm(cls, x):
            return x

    return inc, Local
