"""Where an instance of a class of Python code keeps its state.

Three places: its ``__dict__``, its slots (``__slots__`` of each class of its
MRO; ``attrs.define`` makes slotted classes), and, for a subclass of ``list``
or ``dict``, the items the built-in keeps in C. The sender reads them to carry
what it set on an object found by reference (``_reduce.attributes``); the
receiver reads its own object's to compare, and copies them onto a copy
(``_reconstruct._own_or_copy``). Both sides read them here, so that they agree.
"""

from __future__ import annotations

import types
from collections.abc import Iterable
from typing import Any

from ._compat import is_heap_type

__all__ = [
    "ITEMS",
    "class_lookup",
    "container_base",
    "container_items",
    "declared_slots",
    "is_slot",
    "mangled",
    "pickled_by_layout",
    "replace_items",
    "slot_names",
    "slot_values",
    "slots_of",
]

# The key under which a list's or a dict's items ride among an object's
# attributes: not a str, so that no attribute can have it.
ITEMS: Any = ("items",)

_NOT_SLOTS = frozenset({"__dict__", "__weakref__"})


def mangled(klass: type, name: str) -> str:
    """``name`` declared in ``klass``'s body as Python stores it: ``__secret`` in
    ``class A`` is ``_A__secret``; a dunder is not mangled."""
    if name.startswith("__") and not name.endswith("__"):
        return f"_{klass.__name__.lstrip('_')}{name}"
    return name


def declared_slots(klass: type) -> tuple[str, ...]:
    """The names ``klass``'s own ``__slots__`` declares (a str is one name)."""
    declared = vars(klass).get("__slots__", ())
    return (declared,) if type(declared) is str else tuple(declared)


def slots_of(classes: Iterable[type]) -> list[str]:
    """The slots that the ``__slots__`` of ``classes`` give an instance, mangled,
    in order, each once; not ``__dict__`` nor ``__weakref__``."""
    names: list[str] = []
    for klass in classes:
        for declared in declared_slots(klass):
            if type(declared) is not str or declared in _NOT_SLOTS:
                continue
            name = mangled(klass, declared)
            if name not in names:
                names.append(name)
    return names


def slot_names(cls: type) -> list[str]:
    """The slots ``__slots__`` gives instances of ``cls``, along its MRO (see
    :func:`slots_of`)."""
    return slots_of(cls.__mro__)


def slot_values(obj: Any) -> dict[str, Any]:
    """``{slot: value}`` for each slot of ``obj`` that is set, read past any
    ``__getattr__`` or property of its class."""
    values = {}
    for name in slot_names(type(obj)):
        try:
            values[name] = object.__getattribute__(obj, name)
        except AttributeError:
            continue
    return values


def pickled_by_layout(cls: type) -> bool:
    """Whether pickle copies instances of ``cls`` from their layout (its
    ``__reduce_ex__`` and ``__reduce__`` are ``object``'s): then their slots
    and items are state. A class with a reduction of its own says itself what
    its state is (``typing.Union``, a ``_SpecialForm``, is its name alone)."""
    return (
        getattr(cls, "__reduce_ex__", None) is _OBJECT_REDUCE_EX
        and getattr(cls, "__reduce__", None) is _OBJECT_REDUCE
    )


_OBJECT_REDUCE_EX = object.__reduce_ex__
_OBJECT_REDUCE = object.__reduce__


def is_slot(cls: type, name: str) -> bool:
    """Whether ``name`` is a slot of ``cls`` (set with ``object.__setattr__``,
    never in a ``__dict__``, where the slot's descriptor would hide it)."""
    for klass in cls.__mro__:
        found = vars(klass).get(name)
        if found is not None:
            return type(found) is types.MemberDescriptorType
    return False


def container_base(cls: type) -> type | None:
    """``list`` or ``dict`` when ``cls`` is a class of Python code over it and no
    other built-in (an ``OrderedDict`` keeps an order of its own in C, a
    ``defaultdict`` its factory: neither is this), else None."""
    builtins = [klass for klass in cls.__mro__[:-1] if not is_heap_type(klass)]
    if len(builtins) == 1 and builtins[0] in (list, dict) and cls is not builtins[0]:
        return builtins[0]
    return None


def container_items(obj: Any) -> list[Any] | dict[Any, Any] | None:
    """A plain copy of the items of ``obj``, an instance of a ``list`` or
    ``dict`` subclass (see :func:`container_base`), read with the built-in's
    own methods (not the subclass's); None for any other object."""
    base = container_base(type(obj))
    if base is list:
        return list.copy(obj)
    if base is dict:
        return dict.copy(obj)
    return None


def replace_items(obj: Any, items: Any) -> None:
    """Make ``items`` the items of ``obj`` (a copy made here of a list or
    dict subclass instance), with the built-in's own methods."""
    base = container_base(type(obj))
    if base is list:
        list.clear(obj)
        list.extend(obj, items)
    elif base is dict:
        dict.clear(obj)
        dict.update(obj, items)
    else:
        raise TypeError(f"{type(obj).__qualname__} is no subclass of list or dict")


def class_lookup(t: type, name: str, default: Any = None) -> Any:
    """``name`` as the interpreter finds it on the class ``t`` (in the namespace
    of the first class of its MRO that defines it), ``default`` where none does:
    nothing an instance holds, no ``__getattr__``, no descriptor called."""
    for klass in t.__mro__:
        found = vars(klass).get(name, default)
        if found is not default:
            return found
    return default
