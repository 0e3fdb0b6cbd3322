"""Paths from a module to an object: what a by-reference payload names.

A path is a tuple of steps: a ``str`` is an attribute, an ``int`` an index, a
1-tuple ``(key,)`` a mapping item. The locator writes them, the rebuilder
``_resolve`` follows them, and errors print them as ``module:attr[0]['key']``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Path", "format_path", "walk"]

Path = tuple[Any, ...]


def walk(root: Any, path: Path) -> Any:
    """Follow ``path`` from ``root``: str = attribute, int = index, (key,) = item."""
    obj = root
    for step in path:
        if type(step) is str:
            obj = getattr(obj, step)
        elif type(step) is int:
            obj = obj[step]
        else:
            obj = obj[step[0]]
    return obj


def format_path(module: str, path: Path) -> str:
    """Render a located path as ``module:attr.attr[0]['key']``."""
    out: list[str] = []
    for step in path:
        if type(step) is str:
            out.append(("." if out else "") + step)
        elif type(step) is int:
            out.append(f"[{step}]")
        else:
            out.append(f"[{step[0]!r}]")
    return f"{module}:{''.join(out)}"
