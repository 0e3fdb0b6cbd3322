"""Built-in kinds: views, buffers, weak collections, standard streams, type variables.

Objects of types that pickle refuses, or saves by a name that does not exist
where they were made, but that can ship exactly:

* **dict views** (``d.keys()``, ``.values()``, ``.items()``, and those of an
  ``OrderedDict``): a view of the very dict the payload carries, so a view and
  its dict shipped together stay linked (the dict is memoized once);
* **memoryviews**: a full view of an object (``memoryview(obj)``) ships as a
  view of that object; any other (a slice, a cast, a non-contiguous view) as a
  view of a copy of its bytes with its format, shape and writability;
* **type variables** (``TypeVar``, ``ParamSpec``, ``TypeVarTuple``): by
  reference where their module holds them under their name, else by value,
  and back in the process that made them the original again (as classes by
  value, :mod:`picklable._tracker`);
* **weak collections** (``WeakSet``, ``WeakKeyDictionary``,
  ``WeakValueDictionary``): the same kind of collection over the members the
  payload carries (members nothing else in the payload holds are gone after
  loading, as they would be here);
* **the standard streams** ``sys.stdout`` and ``sys.stderr``: the receiver's
  own (by reference, ``sys.stdout``), whatever their type.

Other streams and files go to pickle, which refuses them; the diagnostics say
why for each mode (:mod:`picklable._hints`).
"""

from __future__ import annotations

import collections
import gc
import pickle
import sys
import typing
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .. import _reconstruct, _tracker
from ..exceptions import PicklingError
from .registry import ships_by_value

if TYPE_CHECKING:
    from .._pickler import Pickler

__all__ = [
    "DICT_VIEW_TYPES",
    "STANDARD_STREAMS",
    "TYPEVAR_TYPES",
    "WEAK_COLLECTION_TYPES",
    "dict_view_pieces",
    "memoryview_pieces",
    "reduce_dict_view",
    "reduce_memoryview",
    "reduce_stream",
    "reduce_typevar",
    "reduce_weak_collection",
    "typevar_pieces",
    "weak_collection_pieces",
]

# ---------------------------------------------------------------- dict views

_ORDERED: collections.OrderedDict[Any, Any] = collections.OrderedDict()
_PLAIN: dict[Any, Any] = {}
# view type -> (method name, of an OrderedDict)
DICT_VIEW_TYPES: dict[type, tuple[str, bool]] = {
    type(_PLAIN.keys()): ("keys", False),
    type(_PLAIN.values()): ("values", False),
    type(_PLAIN.items()): ("items", False),
    type(_ORDERED.keys()): ("keys", True),
    type(_ORDERED.values()): ("values", True),
    type(_ORDERED.items()): ("items", True),
}


def _viewed(view: Any) -> Any:
    # A view holds one reference: its dict (``view.mapping`` is a read-only
    # proxy of it, and exists from 3.10 only).
    (mapping,) = gc.get_referents(view)
    return mapping


def reduce_dict_view(pickler: Pickler, view: Any) -> Any:
    """A view of the dict the payload carries (the same dict, memoized once)."""
    method, ordered = DICT_VIEW_TYPES[type(view)]
    args: tuple[Any, ...] = (_viewed(view), method, True) if ordered else (_viewed(view), method)
    return (_reconstruct._make_dict_view, args)


def dict_view_pieces(view: Any, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    yield ".mapping", _viewed(view)


# --------------------------------------------------------------- memoryviews

# format -> whether memoryview.cast can make a view of it (one native item).
_castable: dict[str, bool] = {}


def _can_cast(fmt: str, itemsize: int) -> bool:
    found = _castable.get(fmt)
    if found is None:
        try:
            memoryview(bytes(itemsize)).cast(fmt)  # type: ignore[call-overload]
            found = True
        except (TypeError, ValueError):
            found = False
        if len(_castable) < 256:
            _castable[fmt] = found
    return found


def _full_view_of(view: memoryview, base: Any) -> bool:
    """Whether ``view`` is what ``memoryview(base)`` makes (the same window:
    with equal format, shape and strides, a view of ``base`` starts where
    ``base`` starts)."""
    try:
        fresh = memoryview(base)
    except TypeError:
        return False
    with fresh:
        return (
            fresh.format == view.format
            and fresh.shape == view.shape
            and fresh.strides == view.strides
            and fresh.readonly == view.readonly
        )


def reduce_memoryview(pickler: Pickler, view: memoryview) -> Any:
    """A view of the object it views, or of a copy of its bytes."""
    try:
        base = view.obj
    except ValueError:
        raise PicklingError(
            "Cannot pickle memoryview: it is released.",
            type_name="memoryview",
            reason="the memoryview is released: it views nothing any more",
            hint="ship the object it viewed, or bytes(view) before releasing it",
        ) from None
    if base is not None and _full_view_of(view, base):
        return (memoryview, (base,))
    fmt = view.format
    if not _can_cast(fmt, view.itemsize):
        reason = (
            f"a memoryview of format {fmt!r} cannot be rebuilt exactly "
            "(memoryview.cast knows single native formats only)"
        )
        hint = "ship the object it views (view.obj), or bytes(view)"
        raise PicklingError(
            f"Cannot pickle memoryview: {reason}. Fix: {hint}.",
            type_name="memoryview",
            reason=reason,
            hint=hint,
        )
    data: Any
    if view.c_contiguous and pickler.protocol >= 5:
        # Written as bytes (read-only) or a bytearray (writable), or out of band.
        data = pickle.PickleBuffer(view)
    else:
        data = view.tobytes()  # C order, whatever the strides
        if not view.readonly:
            data = bytearray(data)
    return (_reconstruct._make_memoryview, (data, fmt, view.shape))


def memoryview_pieces(view: memoryview, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    try:
        base = view.obj
    except ValueError:
        return
    if reduction is not None and reduction[0] is memoryview:
        yield ".obj", base


# ------------------------------------------------------------ type variables

TYPEVAR_TYPES: tuple[type, ...] = tuple(
    t
    for t in (
        typing.TypeVar,
        getattr(typing, "ParamSpec", None),
        getattr(typing, "TypeVarTuple", None),
    )
    if isinstance(t, type)
)
# What a type variable's constructor takes besides its name and constraints,
# as the attribute that keeps it (``infer_variance`` from 3.12).
_OPTIONS = ("bound", "covariant", "contravariant", "infer_variance")


def reduce_typevar(pickler: Pickler, variable: Any) -> Any:
    """By reference where its module holds it under its name, else by value."""
    name = variable.__name__
    module = getattr(variable, "__module__", None)
    if type(module) is str and not ships_by_value(module):
        home = sys.modules.get(module)
        if home is not None and getattr(home, name, None) is variable:
            return name  # pickle's own reduction: a global, loaded in C
    options: dict[str, Any] = {}
    for option in _OPTIONS:
        value = getattr(variable, f"__{option}__", None)
        if value:  # None and False are the defaults
            options[option] = value
    has_default = getattr(variable, "has_default", None)
    if has_default is not None and has_default():  # 3.13
        options["default"] = variable.__default__
    canonical = pickler._canonical
    tracker_id = (
        _tracker.object_id(variable) if canonical is None else canonical.object_id(variable)
    )
    return (
        _reconstruct._make_typevar,
        (
            type(variable),
            name,
            tuple(getattr(variable, "__constraints__", ())),
            options,
            module,
            tracker_id,
        ),
    )


def typevar_pieces(variable: Any, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    bound = getattr(variable, "__bound__", None)
    if bound is not None:
        yield ".__bound__", bound
    for i, constraint in enumerate(getattr(variable, "__constraints__", ())):
        yield f".__constraints__[{i}]", constraint


# --------------------------------------------------------- weak collections

WEAK_COLLECTION_TYPES = (weakref.WeakSet, weakref.WeakKeyDictionary, weakref.WeakValueDictionary)


def reduce_weak_collection(pickler: Pickler, collection: Any) -> Any:
    """The same kind of collection over the members (by identity in the payload)."""
    if type(collection) is weakref.WeakSet:
        return (weakref.WeakSet, (list(collection),))
    return (type(collection), (dict(collection.items()),))


def weak_collection_pieces(collection: Any, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    if type(collection) is weakref.WeakSet:
        for i, member in enumerate(list(collection)):
            yield f"{{item {i}}}", member
        return
    for key, value in list(collection.items()):
        yield f"[{key!r}]", value
        yield f"{{key {key!r}}}", key


# ------------------------------------------------------------------ streams

# The standard streams the receiver has its own of, by the name that finds them.
STANDARD_STREAMS = ("stdout", "stderr", "__stdout__", "__stderr__")


def reduce_stream(pickler: Pickler, stream: Any) -> Any:
    """``sys.stdout`` and ``sys.stderr`` as the receiver's own; other streams
    and files as pickle does (it refuses open files: see _hints)."""
    if type(stream) in pickler._table:
        return NotImplemented
    for name in STANDARD_STREAMS:
        if getattr(sys, name, None) is stream:
            return (_reconstruct._resolve, ("sys", (name,)))
    return NotImplemented
