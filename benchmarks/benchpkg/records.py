"""Plain records of an importable module: instances ship as pickle ships them (class
by reference), as the data of a real program does."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class Point:
    x: int
    y: float
    label: str
