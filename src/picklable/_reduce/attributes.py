"""Which attributes of an object are its state, and which are metadata.

A wrapper copies metadata from what it wraps (``functools.update_wrapper``);
the receiver's own object has that metadata too, so it never needs to travel
onto it. Everything else in the object's ``__dict__`` is state the sender may
have set (a call count, a cache, a configuration) and travels with a reference
to the receiver's object (see ``docs/state-policy.md``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["METADATA", "candidate_state", "state_attributes"]

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
