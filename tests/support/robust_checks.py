"""Checks for tests/robustness run in a child interpreter (shipped by reference)."""

from __future__ import annotations

from typing import Any

import picklable


def len_and_last_call(payload: bytes, arg: Any) -> tuple[int, Any]:
    """Load a list of functions; its length and what the last one returns for ``arg``."""
    fns = picklable.loads(payload)
    return len(fns), fns[-1](arg)


def format_odd_tracebacks(seed: int, count: int) -> int:
    """Build tracebacks from frame records with odd positions and print them.

    Runs under a 2 GiB address-space limit, so a record that makes the
    receiver build a huge text fails here instead of exhausting the machine.
    Returns how many records built a traceback (the others raised on load).
    """
    import random
    import resource
    import traceback

    from picklable import _reconstruct

    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    values = [None, -5, 0, 1, 7, 5_000, 2**31, 2**63, -(2**40), 10**9]
    rng = random.Random(seed)
    built = 0
    for i in range(count):
        record = (
            f"/nonexistent/file{i % 7}.py",
            "name",
            rng.choice([None, "Q.name"]),
            rng.choice([None, "module"]),
            *(rng.choice(values) for _ in range(4)),
            rng.choice([None, "x = 1", "", "a\fb"]),
        )
        try:
            tb = picklable.loads(
                picklable.dumps(_Call(_reconstruct._make_traceback, ((record, record),)))
            )
        except picklable.UnpicklingError:
            continue
        built += 1
        "".join(traceback.format_tb(tb))
    return built


class _Call:
    """Pickles as ``fn(*args)`` (to craft payloads)."""

    def __init__(self, fn: Any, args: tuple[Any, ...]) -> None:
        self.fn, self.args = fn, args

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.fn, self.args)
