"""Steps 2 and 3 of the rule: by reference, under the object's own name or a
path the locator finds (checked by identity), and why an object has neither."""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from .. import _reconstruct
from .._compat import MAIN_MODULES
from .._locator import importable_by_own_name, locate
from .._paths import Path, walk
from .registry import registered_by_value

if TYPE_CHECKING:
    from .._pickler import Pickler

__all__ = ["class_attribute_reference", "located_reference", "reference", "why_not_importable"]


def reference(pickler: Pickler, obj: Any, module: str, path: Path) -> Any:
    """Reduce ``obj`` to a by-reference load of ``module`` + ``path``.

    When the path is plain attributes inside ``obj.__module__``, return the dotted
    name: pickle then writes a STACK_GLOBAL that loads in C. Otherwise load
    through :func:`_reconstruct._resolve`.
    """
    if (
        pickler.protocol >= 4
        and all(type(step) is str for step in path)
        and getattr(obj, "__module__", None) == module
    ):
        return ".".join(path)
    return (_reconstruct._resolve, (module, path))


def located_reference(pickler: Pickler, obj: Any) -> Any:
    """A by-reference reduction of ``obj`` if it is importable anywhere, else None."""
    if importable_by_own_name(obj):
        return obj.__qualname__
    found = locate(obj)
    if found is None:
        return None
    return reference(pickler, obj, *found)


def why_not_importable(obj: Any) -> str:
    """Why ``obj`` cannot be found by name in another process (what explain says)."""
    if isinstance(obj, types.ModuleType):
        registered = registered_by_value(obj.__name__)
        if registered is not None:
            return f"module {registered!r} is registered with picklable.register_by_value()"
        return "a module built in memory, not importable: its namespace is copied"
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if module in MAIN_MODULES:
        return f"defined in {module}, and the receiving process has its own {module}"
    if isinstance(module, str):
        registered = registered_by_value(module)
        if registered is not None:
            return f"module {registered!r} is registered with picklable.register_by_value()"
    if not isinstance(module, str) or not isinstance(qualname, str):
        return "it has no __module__ and __qualname__ to import it by"
    if "<lambda>" in qualname:
        return "a lambda has no importable name, and no importable path leads to it"
    if "<locals>" in qualname:
        outer = qualname.split(".<locals>")[0]
        return (
            f"defined inside {outer}() (<locals> in its qualname), "
            "and no importable path leads to it"
        )
    home = sys.modules.get(module)
    if home is None:
        return f"its module {module!r} is not imported here"
    try:
        found = walk(home, tuple(qualname.split(".")))
    except Exception:
        return f"{module}.{qualname} does not exist (renamed or deleted after it was made?)"
    if found is not obj:
        return (
            f"{module}.{qualname} is another object (a wrapper that took its name?), "
            "and no importable path leads to this one"
        )
    return "the locator found no importable path to it"


def class_attribute_reference(pickler: Pickler, obj: Any) -> Any:
    """A by-reference reduction of a descriptor the locator finds on a class, or None."""
    try:
        located = locate(obj)
    except Exception:  # a descriptor with a hostile __getattr__
        return None
    return None if located is None else reference(pickler, obj, *located)
