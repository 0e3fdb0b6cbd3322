"""Call overhead of the decorator toolkit, beside a plain ``functools.wraps`` closure.

Run from the repository root::

    .venv/bin/python benchmarks/bench_decorators.py [--quick] [--json FILE]

Target (issue 3): a ``picklable.decorator`` product costs at most 2x the call of
the equivalent closure decorator. Each figure is the best of several repeats of a
timed loop (the minimum is the least disturbed by other processes); the ratio
column divides by the closure's figure for the same kind of call. wrapt (C
extension when available) is shown for comparison. Also shown: shipping cost of
a decorated function (by reference when importable, by value from ``__main__``).
"""

from __future__ import annotations

import argparse
import functools
import json
import platform
import sys
import timeit
from collections.abc import Callable
from typing import Any

import wrapt

import picklable


def closure_decorator(func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return wrapper


@picklable.decorator
def toolkit_decorator(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    return wrapped(*args, **kwargs)


class ToolkitWrapper(picklable.Wrapper[..., Any]):
    def call(
        self, wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        return wrapped(*args, **kwargs)


@wrapt.decorator
def wrapt_decorator(
    wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    return wrapped(*args, **kwargs)


def add(x: int, y: int) -> int:
    return x + y


DECORATORS: dict[str, Callable[[Any], Any]] = {
    "plain (no decorator)": lambda f: f,
    "functools.wraps closure": closure_decorator,
    "picklable.decorator": toolkit_decorator,
    "picklable.Wrapper subclass": ToolkitWrapper,
    "wrapt.decorator": wrapt_decorator,
}


def make_class(decorate: Callable[[Any], Any]) -> type:
    class Account:
        def __init__(self) -> None:
            self.balance = 1

        @decorate
        def deposit(self, amount: int) -> int:
            return self.balance + amount

    return Account


def best(stmt: Callable[[], Any], number: int, repeat: int) -> float:
    """Best time per call in nanoseconds."""
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number * 1e9


def measure(number: int, repeat: int) -> dict[str, dict[str, float]]:
    """Best ns per call for each decorator and kind of call.

    Rounds interleave the candidates (one timed loop of each per round), so a
    burst of load from other processes slows them all alike instead of one.
    """
    statements: dict[str, dict[str, Callable[[], Any]]] = {}
    for name, decorate in DECORATORS.items():
        func = decorate(add)
        instance = make_class(decorate)()
        statements[name] = {
            "function call": lambda func=func: func(1, 2),
            "keyword call": lambda func=func: func(1, y=2),
            "method call": lambda instance=instance: instance.deposit(2),
        }
    out = {name: {kind: float("inf") for kind in kinds} for name, kinds in statements.items()}
    for _ in range(repeat):
        for name, kinds in statements.items():
            for kind, stmt in kinds.items():
                elapsed = timeit.timeit(stmt, number=number) / number * 1e9
                out[name][kind] = min(out[name][kind], elapsed)
    return out


def shipping(number: int, repeat: int) -> dict[str, float]:
    """dumps time (us) of a decorated function: by value from __main__."""
    by_value = toolkit_decorator(lambda x: x)
    return {
        "dumps by reference (toolkit function)": best(
            lambda: picklable.dumps(toolkit_decorator), number, repeat
        )
        / 1e3,
        "dumps by value (__main__ toolkit function)": best(
            lambda: picklable.dumps(by_value), number, repeat
        )
        / 1e3,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer loops (a smoke run)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    number, repeat = (20_000, 3) if args.quick else (100_000, 15)
    figures = measure(number, repeat)
    baseline = figures["functools.wraps closure"]
    print(
        f"Python {platform.python_version()}, wrapt {wrapt.__version__}, {number} calls x {repeat} repeats"
    )
    kinds = list(baseline)
    header = f"{'decorator':28}" + "".join(f"{kind:>26}" for kind in kinds)
    print(header)
    print("-" * len(header))
    for name, row in figures.items():
        cells = "".join(f"{row[k]:10.1f} ns ({row[k] / baseline[k]:4.2f}x)   " for k in kinds)
        print(f"{name:28}{cells}")
    ratios = {k: figures["picklable.decorator"][k] / baseline[k] for k in kinds}
    worst = max(ratios.values())
    print(f"\npicklable.decorator vs closure: worst ratio {worst:.2f}x (target <= 2x)")
    ship = shipping(max(number // 100, 200), repeat)
    for name, value in ship.items():
        print(f"{name}: {value:.1f} us")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {"calls_ns": figures, "ratios_vs_closure": ratios, "shipping_us": ship}, f, indent=2
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
