"""A package that loads its submodules on first access (PEP 562), as scipy does:
``__all__`` names them, ``__getattr__`` imports them."""

from __future__ import annotations

import importlib

__all__ = ["entry", "linalg", "stats"]


def entry():
    return "entry"


def __getattr__(name):
    if name in ("linalg", "stats"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
