"""Python 3.14: deferred annotations (PEP 649, 749: ``__annotate__``,
annotations naming what is defined later or nowhere, annotationlib's
formats), ``functools.Placeholder`` and template strings (PEP 750).

Imported only by Python 3.14 and later (its syntax is new there); the tests
of ``tests/xproc/test_features_py314.py`` ship each object into a fresh
interpreter.
"""

import functools
from string.templatelib import Template


def early(node: Node, depth: Depth = 0) -> Node | None:
    """Annotated with a class and an alias defined below."""
    return None


def dangling(x: Undefined = None) -> int:  # noqa: F821 - never defined, on purpose
    return 1


class Node:
    parent: Node | None
    children: list[Node]
    label: Missing  # noqa: F821 - never defined, on purpose

    def __init__(self) -> None:
        self.children: list[Node] = []

    def adopt(self, child: Node) -> Node:
        self.children.append(child)
        return child


type Depth = int


def collect(*args: object, **kwargs: object) -> tuple[object, ...]:
    return (args, kwargs)


fill_first = functools.partial(collect, functools.Placeholder, "b")
fill_middle = functools.partial(collect, "a", functools.Placeholder, "c", key=1)
fill_again = functools.partial(fill_middle, functools.Placeholder, "d")  # placeholders merge
name = "world"
GREETING: Template = t"hello {name!r:>8}"


def make_annotated() -> tuple[object, ...]:
    def local(x: LocalLater, y: Unknown = None) -> LocalLater:  # noqa: F821
        return x

    class LocalLater:
        other: LocalLater
        missing: Nowhere  # noqa: F821

        def __init__(self) -> None:
            self.other = self

    return local, LocalLater


def make_partials() -> tuple[object, ...]:
    def target(*args: object) -> tuple[object, ...]:
        return args

    return (
        functools.partial(target, functools.Placeholder, 2),
        functools.partial(collect, functools.Placeholder, "b", key="k"),
    )
