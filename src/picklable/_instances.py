"""Instances of plain Python classes: pickle's own reduction, answered directly.

For an instance of a class that customises nothing about pickling, stdlib pickle
calls ``obj.__reduce_ex__(protocol)``, and ``object.__reduce_ex__`` answers
``(copyreg.__newobj__, (cls,), obj.__dict__ or None)`` after a string of lookups
(``__reduce__``, ``__getnewargs_ex__``, ``__getnewargs__``, ``__getstate__``,
``__slotnames__``, the class layout). picklable's hook runs for every such
instance anyway (a list of 10,000 dataclass instances calls it 10,000 times),
so it answers with that same tuple itself: the bytes are pickle's, byte for
byte, and the lookups are done once per class instead of once per instance.

A class qualifies when nothing on it can change pickle's answer (checked once
per class, by walking its MRO the way the interpreter looks attributes up). An
instance still goes to pickle when its own ``__dict__`` shadows one of the two
methods pickle looks up on the instance, when the pickler's dispatch table has
a reducer for the class, or below protocol 2 (where pickle uses
``copyreg._reduce_ex`` instead).
"""

from __future__ import annotations

import copyreg
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._pickler import Pickler


class _Reference:
    """The layout every plain class has: a ``__dict__``, a weakref slot, nothing else."""


def _layout(t: type) -> tuple[int, int, int, int]:
    return (t.__basicsize__, t.__itemsize__, t.__dictoffset__, t.__weakrefoffset__)


_PLAIN_LAYOUT = _layout(_Reference)

_MISSING = object()
# Looked up on the class by pickle or by object.__reduce_ex__: each must be
# object's own (or absent, for __getstate__ before Python 3.11).
_OBJECT_DEFAULTS = {
    name: vars(object).get(name, _MISSING)
    for name in ("__reduce_ex__", "__reduce__", "__getstate__", "__getattribute__")
}
# Must be absent: their presence changes the arguments, or (``__getattr__``)
# answers the lookups above on an instance.
_ABSENT = ("__getnewargs_ex__", "__getnewargs__", "__getattr__")


def _lookup(t: type, name: str) -> Any:
    """``name`` as the interpreter finds it on ``t`` (first class in the MRO)."""
    for klass in t.__mro__:
        found = vars(klass).get(name, _MISSING)
        if found is not _MISSING:
            return found
    return _MISSING


def is_plain(t: type) -> bool:
    """Whether pickle reduces instances of ``t`` with object's default and no more."""
    if _layout(t) != _PLAIN_LAYOUT or issubclass(t, (list, dict)):
        return False
    if any(_lookup(t, name) is not default for name, default in _OBJECT_DEFAULTS.items()):
        return False
    if any(_lookup(t, name) is not _MISSING for name in _ABSENT):
        return False
    # The instance dict must be the real one (not a class attribute named
    # __dict__), and no slots besides it: copyreg._slotnames is what
    # object.__reduce_ex__ consults (and caches on the class).
    slotnames = copyreg._slotnames(t)  # type: ignore[attr-defined]
    return type(_lookup(t, "__dict__")) is types.GetSetDescriptorType and not slotnames


def reduce_plain_instance(
    pickler: Pickler,
    obj: Any,
    _newobj: Any = copyreg.__newobj__,  # type: ignore[attr-defined]
    _type: Any = type,
) -> Any:
    # Runs once per instance: locals only, cheapest tests first.
    state = obj.__dict__
    cls = _type(obj)
    if (
        "__reduce_ex__" in state
        or "__getstate__" in state
        or cls in pickler._table
        or pickler.protocol < 2
    ):
        return NotImplemented
    return (_newobj, (cls,), state or None)
