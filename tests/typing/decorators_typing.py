"""Typing examples for the decorator toolkit, checked by mypy (tests/typing/test_typing.py).

Each ``reveal_type`` line carries the expected revelation after ``# revealed:``;
each line ending in ``# error:`` must be reported by mypy with that code.
Never imported at run time.
"""

from __future__ import annotations

from typing import Any, ParamSpec, TypeVar

import picklable

P = ParamSpec("P")
R = TypeVar("R")


@picklable.decorator
def logged(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return wrapped(*args, **kwargs)


class Tally(picklable.Wrapper[P, R]):
    calls = 0

    def call(self, wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> R:
        self.calls += 1
        result: R = wrapped(*args, **kwargs)
        return result


@logged
def add(x: int, y: str = "") -> float:
    return float(x)


@Tally
def count(n: int) -> list[int]:
    return [n]


class Account:
    @logged
    def deposit(self, amount: int) -> int:
        return amount


reveal_type(add)  # revealed: picklable._decorators.FunctionWrapper[[x: int, y: str =], float]
reveal_type(add(1, "a"))  # revealed: float
reveal_type(Account().deposit)  # revealed: picklable._decorators.BoundWrapper[[amount: int], int]
reveal_type(Account().deposit(3))  # revealed: int
reveal_type(count)  # revealed: decorators_typing.Tally[[n: int], list[int]]
reveal_type(count(2))  # revealed: list[int]
add("one")  # error: arg-type
add(1, y=2)  # error: arg-type
Account().deposit("three")  # error: arg-type
count()  # error: call-arg
