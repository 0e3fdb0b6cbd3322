"""Which attributes of an object are its state, and which are metadata.

A wrapper copies metadata from what it wraps (``functools.update_wrapper``);
the receiver's own object has that metadata too, so it never needs to travel
onto it. Everything else the object holds is state the sender may have set (a
call count, a cache, a configuration) and travels with a reference to the
receiver's object (see ``docs/state-policy.md``): its ``__dict__``, its slots,
a wrapt proxy's own ``_self_*`` attributes, and a ``list`` or ``dict``
subclass's items (under :data:`picklable._layout.ITEMS`).
"""

from __future__ import annotations

import functools
import types
from typing import Any

from .._compat import proxy_own_dict
from .._layout import ITEMS, container_items, pickled_by_layout, slot_values
from .._reconstruct import WRAPT_FIELDS, is_wrapt_proxy

__all__ = ["METADATA", "candidate_state", "held_state", "leads_back", "state_attributes"]

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


# A wrapt proxy's own attributes that wrapt sets on every instance (from what
# it wraps, or a function wrapper's fields): the receiver's copy has them.
_WRAPT_MADE = frozenset(
    {"__module__", "__doc__", "__qualname__", "__annotations__"}
    | {"_self_" + name for name in WRAPT_FIELDS}
)


def held_state(obj: Any) -> dict[str, Any]:
    """Everything ``obj`` holds itself: its ``__dict__`` (a wrapt proxy's shows
    the object it wraps; then its own ``_self_*`` attributes too) and, where
    pickle would copy it from its layout (no reduction of its own), its slots
    that are set and a ``list`` or ``dict`` subclass's items (under
    :data:`~picklable._layout.ITEMS`)."""
    try:
        state = dict(vars(obj))
    except TypeError:
        state = {}
    if is_wrapt_proxy(obj):
        own = proxy_own_dict(obj)
        if own:
            state.update((k, v) for k, v in own.items() if k not in _WRAPT_MADE)
    if pickled_by_layout(type(obj)):
        state.update(slot_values(obj))
        items = container_items(obj)
        if items is not None:
            state[ITEMS] = items
    return state


def candidate_state(obj: Any) -> dict[str, Any]:
    """The state of ``obj`` (:func:`held_state`) without its metadata."""
    return {
        k: v
        for k, v in held_state(obj).items()
        if k is ITEMS or (type(k) is str and k not in METADATA)
    }


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
