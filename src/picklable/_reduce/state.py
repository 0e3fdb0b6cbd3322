"""What the reducers of one payload share (owned by the pickler that makes it)."""

from __future__ import annotations

from typing import Any

__all__ = ["PayloadState"]


class PayloadState:
    """Per-payload state: a by-value function needs it, plain data never does
    (so a payload without functions never makes one; see ``Pickler._state``)."""

    __slots__ = (
        "globals_map",
        "globals_values",
        "deferred_cells",
        "script_copies",
        "markers",
    )

    def __init__(self) -> None:
        # id(module globals) -> the shipped globals dict of that namespace
        self.globals_map: dict[int, dict[str, Any]] = {}
        # id(module globals) -> names and values those shipped globals hold once loaded
        self.globals_values: dict[int, dict[str, Any]] = {}
        # ids of closure cells whose contents a function's state fills in
        self.deferred_cells: set[int] = set()
        # Whether objects of the sender's script were copied (see .scripts)
        self.script_copies = False
        # id(object) -> the marker shipping it by reference (see .wrappers)
        self.markers: dict[int, Any] = {}

    def ship_globals(self, home: dict[str, Any], refs: dict[str, Any]) -> dict[str, Any]:
        """Make ``refs`` the shipped globals of ``home`` (pickled as they are now)."""
        self.globals_map[id(home)] = refs
        self.globals_values[id(home)] = dict(refs)
        return refs
