"""Python 3.12 (PEP 695): generic functions and classes and type statements.

Imported only by Python 3.12 and later (its syntax is new there); the tests
of ``tests/xproc/test_features_py312.py`` ship each object into a fresh
interpreter. Module-level objects must load as themselves; what the
factories at the end make, as exact copies.
"""

from collections.abc import Callable, Sequence


def first[T](items: Sequence[T] = (1, 2)) -> T:
    """The first item."""
    return items[0]


def spread[N: int, *Ts, **P](x: N = 1, *rest: *Ts) -> tuple[N, *Ts]:
    return (x, *rest)


class Box[T]:
    """A box of one item."""

    def __init__(self, item: T | None = None) -> None:
        self.item = item

    def get(self) -> T | None:
        return self.item

    def apply[U](self, f: Callable[[T | None], U] = repr) -> U:
        return f(self.item)


class Holder:
    type Inner = dict[str, int]


type Pair[K, V] = tuple[K, V]
type Tree = list[Tree] | int
type Choice[S: (str, bytes)] = list[S]
type Spec[**P, R] = Callable[P, R]
type Later = list[Defined]  # names a class defined below


class Defined:
    pass


def make_functions() -> tuple[Callable[..., object], ...]:
    def first_local[T](items: Sequence[T] = ("a",)) -> T:
        return items[0]

    def bounded_local[B: (int, float)](x: B = 2) -> list[B]:
        return [x]

    return first_local, bounded_local


def make_classes() -> tuple[type, ...]:
    class LocalBox[T]:
        def __init__(self, item: T | None = None) -> None:
            self.item = item

        def get(self) -> T | None:
            return self.item

    class LocalChild(LocalBox[int]):
        pass

    return LocalBox, LocalChild


def make_aliases() -> tuple[object, ...]:
    type Local[T] = list[T]
    type Nested = list[Nested] | str
    type Mutual = list[Other] | None
    type Other = dict[str, Mutual]
    type Bounded[N: int, *Ts] = tuple[N, *Ts]
    return Local, Nested, Mutual, Bounded


def make_dangling_bound() -> Callable[..., object]:
    def dangling[T: NotDefinedAnywhere](x: T) -> T:  # noqa: F821 - on purpose
        return x

    return dangling
