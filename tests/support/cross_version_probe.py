"""A trace that a payload ran: the cross-version driver puts one in front of by-value code.

A payload ``(Trace(case), something by value)`` loads :class:`Trace` by
reference, which imports this module and calls :func:`mark` before the
unpickler reaches what follows. A payload refused "before any code runs"
leaves ``case`` out of :data:`RAN`.
"""

from __future__ import annotations

from typing import Any

# The cases whose Trace was unpickled in this process.
RAN: list[str] = []


def mark(case: str) -> str:
    """Record that the payload of ``case`` ran this far; its Trace loads as ``case``."""
    RAN.append(case)
    return case


class Trace:
    """Unpickled as :func:`mark` of its case (a str), recording that it ran."""

    def __init__(self, case: str) -> None:
        self.case = case

    def __reduce__(self) -> tuple[Any, ...]:
        return (mark, (self.case,))
