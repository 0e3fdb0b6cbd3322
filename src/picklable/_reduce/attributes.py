"""Which attributes of an object are its state, and which are metadata.

A wrapper copies metadata from what it wraps (``functools.update_wrapper``);
the receiver's own object has that metadata too, so it never needs to travel
onto it. Everything else in the object's ``__dict__`` is state the sender may
have set (a call count, a cache, a configuration) and travels with a reference
to the receiver's object (see ``docs/state-policy.md``).
"""

from __future__ import annotations

import functools
import types
from typing import Any

__all__ = ["METADATA", "candidate_state", "leads_back", "state_attributes"]

METADATA = frozenset(
    {
        "__module__",
        "__name__",
        "__qualname__",
        "__doc__",
        "__annotations__",
        "__wrapped__",
        "__dict__",
        "__signature__",
        "__type_params__",
    }
)


def candidate_state(obj: Any) -> dict[str, Any]:
    """The attributes of ``obj`` that are state rather than metadata."""
    try:
        state = vars(obj)
    except TypeError:
        return {}
    return {k: v for k, v in state.items() if k not in METADATA and type(k) is str}


def state_attributes(state: Any) -> dict[str, Any] | None:
    """The attributes other than metadata in a copy's pickled ``state`` (a
    ``__dict__``, or pickle's ``(__dict__, slots)`` pair), or None.

    Read from the state the copy ships (not from the object), so that they
    cost no extra bytes and hold nothing the copy's reducer left out (a
    ``functools.singledispatch`` function's dispatch cache).
    """
    if type(state) is tuple and len(state) == 2:
        state = state[0]
    if type(state) is not dict:
        return None
    found = {k: v for k, v in state.items() if k not in METADATA and type(k) is str}
    return found or None


_SCALARS = frozenset({int, float, complex, str, bytes, bool, type(None)})
_LEADS_BACK_LIMIT = 4096


def leads_back(obj: Any, state: dict[str, Any]) -> bool:
    """Whether ``state`` (attributes of ``obj``) leads back to ``obj`` itself.

    Such state cannot ride in the arguments of the call that finds ``obj`` (the
    call would have to be made before its own arguments); it is set on a copy
    afterwards instead. Walks containers, instance dictionaries, bound methods,
    partials and closures; beyond ``_LEADS_BACK_LIMIT`` objects it answers yes
    (a copy is right either way, only not the same object).
    """
    target = id(obj)
    stack = list(state.values())
    seen: set[int] = set()
    while stack:
        value = stack.pop()
        t = type(value)
        if t in _SCALARS:
            continue
        key = id(value)
        if key == target:
            return True
        if key in seen:
            continue
        seen.add(key)
        if len(seen) > _LEADS_BACK_LIMIT:
            return True
        if t is dict:
            stack.extend(value.keys())
            stack.extend(value.values())
        elif t in (list, tuple, set, frozenset):
            stack.extend(value)
        elif t is types.MethodType:
            stack.extend((value.__self__, value.__func__))
        elif t is functools.partial:
            stack.extend((value.func, value.args, value.keywords))
        elif t is types.FunctionType:
            stack.extend(cell.cell_contents for cell in value.__closure__ or () if _full(cell))
            stack.extend(value.__dict__.values())
        elif t is not type:
            try:
                own = object.__getattribute__(value, "__dict__")
            except Exception:
                continue
            if type(own) is dict:
                stack.extend(own.values())
    return False


def _full(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True
