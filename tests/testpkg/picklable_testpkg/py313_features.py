"""Python 3.13: type parameter defaults (PEP 696), the class attributes
``__static_attributes__`` and ``__firstlineno__``, ``warnings.deprecated``
(PEP 702), ``typing.ReadOnly`` (PEP 705) and ``typing.TypeIs`` (PEP 742).

Imported only by Python 3.13 and later (its syntax is new there); the tests of
``tests/xproc/test_features_py313.py`` ship each object into a fresh
interpreter.
"""

import warnings
from collections.abc import Callable
from typing import ReadOnly, TypedDict, TypeIs


def pick[T = int](x: T | None = None) -> T | None:
    return x


class Registry[K = str, **P = [int, str], *Vs = *tuple[int, ...]]:
    """Entries by key; its type parameters have defaults."""

    def __init__(self) -> None:
        self.entries: dict[K, int] = {}
        self._count = 0

    def add(self, key: K) -> None:
        self.entries[key] = self._count
        self._count += 1
        self.last = key


type Table[R = int] = dict[str, R]
type Handler[**P = [str], R = None] = Callable[P, R]


class Point:
    def __init__(self, x: int = 0, y: int = 0) -> None:
        self.x = x
        self.y = y

    def move(self) -> None:
        self.moved = True


@warnings.deprecated("use pick")
def old_pick(x: int = 1) -> int:
    return x


@warnings.deprecated("use Point")
class OldPoint(Point):
    pass


def is_text(x: object = "a") -> TypeIs[str]:
    return isinstance(x, str)


class Movie(TypedDict):
    title: ReadOnly[str]
    year: int


def make_classes() -> tuple[type, ...]:
    class LocalPoint:
        def __init__(self) -> None:
            self.a = 1
            self.b = 2

        def grow(self) -> None:
            self.c = 3

    @warnings.deprecated("use LocalPoint")
    class LocalOld(LocalPoint):
        pass

    class LocalMovie(TypedDict):
        title: ReadOnly[str]

    return LocalPoint, LocalOld, LocalMovie


def make_defaults() -> tuple[object, ...]:
    def local_pick[T = bytes](x: T | None = None) -> T | None:
        return x

    class LocalRegistry[K = str, **P = [int]]:
        def __init__(self) -> None:
            self.entries: dict[K, int] = {}

    type LocalTable[R = float, *Ts = *tuple[str, ...]] = dict[R, tuple[*Ts]]

    @warnings.deprecated("use local_pick")
    def local_old() -> int:
        return 1

    return local_pick, LocalRegistry, LocalTable, local_old
