"""Wrapper kinds: taken apart and rebuilt when they cannot go by reference (rule 4).

Each wrapper that is importable (by its own name, or found by the locator)
travels by reference first, like a function. Only the others, defined in
``__main__`` or in a local scope, are taken apart here:

* wrapt proxies (``FunctionWrapper``, ``BoundFunctionWrapper``, ``ObjectProxy``
  and subclasses, ``@wrapt.decorator`` products), recognised by ``type(obj)``:
  a proxy passes ``isinstance(obj, types.FunctionType)`` and lies about its
  ``__class__``, so no ``isinstance`` test may come first. The copy keeps the
  wrapper function, so the wrapper's code still runs after loading (cloudpickle
  copies the inner function and drops the wrapper).
* ``functools.lru_cache``/``cache`` wrappers: their own ``__reduce__`` goes by
  name, which does not exist in the receiver for ``__main__`` and local ones; the
  copy is a fresh cache around a copy of the function. Cache contents never travel.
* ``functools.cached_property`` (its 3.11 ``RLock`` is made anew, never shipped)
  and ``property`` subclasses (pickle's default would drop the accessors).
* bound methods, ``classmethod``/``staticmethod`` and ``property``: by
  reference where a class holds them, else their pieces.
* :func:`with_state` and :func:`without_state` markers: carry all of an
  importable object's state, or none of it (see ``docs/state-policy.md``).

* ``functools.partialmethod``: by reference where a class holds it, else its
  function and arguments, given back to its constructor (pickle's default,
  ``object.__new__`` and the ``__dict__``, no longer loads on Python 3.14).

``functools.partial`` needs no code here: pickle takes it apart, and its pieces
go through the rule.
"""

from __future__ import annotations

import functools
import sys
import threading
import types
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .. import _reconstruct
from .._compat import proxy_own_dict, wrapt_proxy_roots
from .._locator import locate_module_object
from .attributes import held_state
from .reference import (
    class_attribute_reference,
    locate_anywhere,
    located_reference,
    own_or_copy,
    with_carried_state,
)
from .scripts import with_origin

if TYPE_CHECKING:
    from .context import DumpContext

__all__ = [
    "LRU_WRAPPER",
    "WithState",
    "WithoutState",
    "is_wrapt_proxy_type",
    "partial_pieces",
    "reduce_cached_property",
    "reduce_classmethod",
    "reduce_lru_cache",
    "reduce_method",
    "reduce_property",
    "reduce_property_subclass",
    "reduce_with_state",
    "reduce_without_state",
    "reduce_wrapt_proxy",
    "state_of",
    "with_state",
    "with_state_pieces",
    "without_state",
    "without_state_pieces",
    "wrapt_pieces",
]

T = TypeVar("T")

LRU_WRAPPER: type = type(functools.lru_cache(maxsize=None)(lambda: None))
_RLOCK_TYPES: tuple[type, ...] = (type(threading.RLock()),)
# Made by lru_cache itself (a lambda closing over maxsize and typed).
_LRU_MADE = frozenset({"cache_parameters", "__wrapped__"})
_WRAPT_MADE = frozenset({"__module__", "__doc__", "__qualname__", "__annotations__"})
_FUNCTION_WRAPPER_FIELDS = _reconstruct.WRAPT_FIELDS


# --------------------------------------------------------- methods, descriptors


def reduce_method(context: DumpContext, method: types.MethodType) -> Any:
    """A bound method: ``getattr(self, name)`` when that rebuilds this very method.

    That is pickle's own reduction, and the only one that works for methods of
    compiled classes (a Cython classmethod's function fails pickle's identity
    check though ``getattr(cls, name)`` rebuilds it exactly). Where the name does
    not lead back (name-mangled, stored under another name), ship the pieces;
    where it leads to another callable of the same kind bound to the same object
    (a dispatcher whose descriptor makes a new bound function at each access,
    plum's) and the pieces cannot travel, ``getattr`` as pickle does.
    """
    func = method.__func__
    owner = method.__self__
    name = getattr(func, "__name__", None)
    if (
        type(name) is str
        and not _held_by_instance(owner, name)
        and not _copied_class(context, owner)
    ):
        try:
            again = getattr(owner, name)
        except Exception:
            again = None
        if _same_method(context, again, func, owner):
            return (getattr, (_owner(context, owner, func), name))
    return (types.MethodType, (func, _owner(context, owner, func)))


def _same_method(context: DumpContext, again: Any, func: Any, owner: Any) -> bool:
    """Whether ``again`` (``getattr(owner, name)``) stands for the method of
    ``func`` bound to ``owner``: the very function, or, where a descriptor
    makes a new callable of the same kind at each access and ``func`` cannot
    travel by itself, one like it (what pickle's reduction loads)."""
    if type(again) is not types.MethodType or again.__self__ is not owner:
        return False
    if again.__func__ is func:
        return True
    return (
        type(again.__func__) is type(func)
        and type(func) is not types.FunctionType
        and not context.round_trips(func)
    )


def _owner(context: DumpContext, owner: Any, method_function: Any = None) -> Any:
    """The object a method is bound to: a module's own object (``mpmath.mp`` of
    ``mpmath.mp.nsum``, a service singleton) by reference, with its state; any
    other as it ships by itself."""
    if isinstance(owner, (type, types.ModuleType)) or type(owner).__module__ == "builtins":
        return owner
    try:
        if locate_anywhere(context, owner) is None and (
            locate_module_object(owner, method_function) is None
        ):
            return owner
    except Exception:
        return owner
    # One marker per owner and payload: pickle memoizes it, so the owner's own
    # state (methods bound to it, again) leads back to it instead of around.
    return context.state().marker(id(owner), lambda: ByReference(owner, method_function))


class ByReference:
    """An object to ship by reference where it is found (with its state): the
    receiver's own. Made by reducers for the parts they know are module objects."""

    __slots__ = ("obj", "near")

    def __init__(self, obj: Any, near: Any = None) -> None:
        self.obj = obj
        self.near = near  # where to look: the function of a method bound to it


def reduce_by_reference(context: DumpContext, marker: ByReference) -> Any:
    obj = marker.obj
    reduction = located_reference(context, obj)
    if reduction is None:
        found = locate_module_object(obj, marker.near)
        if found is None:
            return (_reconstruct._with_state, (obj, None))  # as it ships by itself
        reduction = with_carried_state(context, obj, found[0], (_reconstruct._resolve, found))
    if isinstance(reduction, str):  # a global name: valid for obj, not for the marker
        return (_reconstruct._resolve, (obj.__module__, tuple(reduction.split("."))))
    return reduction


def _copied_class(context: DumpContext, owner: Any) -> bool:
    """Whether ``owner`` is a class that goes by value (a script's, a local one).

    Its attributes are set after it is made, so ``getattr(cls, name)`` met
    inside its own state (pydantic keeps ``User.strip``, bound, in
    ``User.__pydantic_decorators__``) would run before ``strip`` exists: such
    a method ships as its function and its class (issue 27).
    """
    if not isinstance(owner, type):
        return False
    try:
        where = locate_anywhere(context, owner)
    except Exception:
        return False
    return where is None or where[0] == "script"


def _held_by_instance(owner: Any, name: str) -> bool:
    """Whether ``owner`` holds ``name`` in its own ``__dict__`` (a per-instance
    override, ``c.handler = MethodType(f, c)``, or ``self.f2 = f2.__get__(self)``).

    ``getattr(owner, name)`` would then run when the owner is loaded but before
    its state is set: it would find the class's method (the override lost) or
    nothing at all. Such a method ships as its function and its object.
    """
    if isinstance(owner, type):
        return False  # an importable class's attributes are its definition (see above)
    try:
        state = object.__getattribute__(owner, "__dict__")
    except AttributeError:
        return False
    return type(state) is dict and name in state


def method_pieces(method: types.MethodType, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    yield ".__self__", method.__self__
    yield ".__func__", method.__func__


def reduce_classmethod(context: DumpContext, obj: classmethod | staticmethod) -> Any:  # type: ignore[type-arg]
    """classmethod/staticmethod objects: where a class holds them, else their function."""
    by_reference = class_attribute_reference(context, obj)
    if by_reference is not None:
        return by_reference
    state = getattr(obj, "__dict__", None) or None
    return (type(obj), (obj.__func__,), state)


def classmethod_pieces(
    obj: classmethod[Any, Any, Any] | staticmethod[Any, Any], reduction: Any = None
) -> Iterator[tuple[str, Any]]:
    yield ".__func__", obj.__func__


def reduce_property(context: DumpContext, obj: property) -> Any:
    """property objects: where a class holds them, else their accessors."""
    by_reference = class_attribute_reference(context, obj)
    if by_reference is not None:
        return by_reference
    state = getattr(obj, "__dict__", None) or None
    return (type(obj), (obj.fget, obj.fset, obj.fdel, obj.__doc__), state)


def property_pieces(obj: property, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    for name in ("fget", "fset", "fdel"):
        accessor = getattr(obj, name)
        if accessor is not None:
            yield f".{name}", accessor
    yield from _dict_pieces(obj)


# What partialmethod's constructor sets (3.14 adds the placeholders' count and merger).
_PARTIALMETHOD_FIELDS = frozenset({"func", "args", "keywords", "_phcount", "_merger"})


def reduce_partialmethod(context: DumpContext, obj: functools.partialmethod[Any]) -> Any:
    """partialmethod objects: where a class holds them, else their function and
    arguments, and any attribute set on them besides."""
    by_reference = class_attribute_reference(context, obj)
    if by_reference is not None:
        return by_reference
    extra = _partialmethod_attributes(obj)
    return (_reconstruct._make_partialmethod, (obj.func, obj.args, obj.keywords), extra or None)


def _partialmethod_attributes(obj: functools.partialmethod[Any]) -> dict[str, Any]:
    """The attributes set on a partialmethod besides what its constructor sets."""
    return {k: v for k, v in vars(obj).items() if k not in _PARTIALMETHOD_FIELDS}


def partialmethod_pieces(
    obj: functools.partialmethod[Any], reduction: Any = None
) -> Iterator[tuple[str, Any]]:
    """What ships of a partialmethod: function, arguments, keywords, attributes."""
    yield from _call_pieces(obj)
    for key, value in _partialmethod_attributes(obj).items():
        yield f".{key}", value


def reduce_property_subclass(context: DumpContext, obj: property) -> Any:
    """property subclasses: pickle's default would drop fget/fset/fdel (C slots)."""
    by_reference = class_attribute_reference(context, obj)
    if by_reference is not None:
        return by_reference
    return (
        _reconstruct._make_property,
        (type(obj), obj.fget, obj.fset, obj.fdel, obj.__doc__),
        vars(obj) or None,
    )


def reduce_cached_property(context: DumpContext, obj: Any) -> Any:
    """cached_property: its attributes, with a new lock instead of the old one."""
    state = dict(vars(obj))
    lock = state.pop("lock", None)
    with_lock = isinstance(lock, _RLOCK_TYPES)
    if lock is not None and not with_lock:
        state["lock"] = lock  # not a lock we know how to remake: ship as it is
    return (_reconstruct._make_cached_property, (type(obj), with_lock), state or None)


def cached_property_pieces(obj: Any, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    yield ".func", obj.func


def partial_pieces(obj: functools.partial[Any], reduction: Any = None) -> Iterator[tuple[str, Any]]:
    """What pickle ships of a partial: function, arguments, keywords, attributes."""
    yield from _call_pieces(obj)
    yield from _dict_pieces(obj)


def _call_pieces(
    obj: functools.partial[Any] | functools.partialmethod[Any],
) -> Iterator[tuple[str, Any]]:
    """The function, arguments and keywords a partial or a partialmethod holds."""
    yield ".func", obj.func
    for i, arg in enumerate(obj.args):
        yield f".args[{i}]", arg
    for key, value in obj.keywords.items():
        yield f".keywords[{key!r}]", value


def _dict_pieces(obj: Any) -> Iterator[tuple[str, Any]]:
    try:
        attributes = vars(obj)
    except TypeError:
        return
    for key, value in attributes.items():
        yield f".{key}", value


# ------------------------------------------------------------------- wrapt


def is_wrapt_proxy_type(t: type) -> bool:
    """Whether ``t`` is a wrapt proxy type (wrapt 1.x or 2.x, C or Python).

    Only consulted when wrapt is already imported: a type made by wrapt cannot
    exist before that, and picklable never imports wrapt itself.
    """
    if "wrapt" not in sys.modules:
        return False
    roots = wrapt_proxy_roots()
    return bool(roots) and issubclass(t, roots)


def _function_wrapper_base(t: type) -> type | None:
    for klass in t.__mro__:
        if klass.__name__ == "_FunctionWrapperBase":
            return klass
    return None


def proxy_own_state(obj: Any) -> dict[str, Any]:
    """The proxy's own attributes (``_self_*``), not those of the wrapped object."""
    own = proxy_own_dict(obj)
    if not own:
        return {}
    # Set from what it wraps on every instance (by the compiled proxies; by the
    # pure-Python ones' __init__); rebuilt as the copy is made.
    return {k: v for k, v in own.items() if k not in _WRAPT_MADE}


def _forwarded_state(context: DumpContext, proxy: Any) -> dict[str, Any] | None:
    """The attributes a proxy shows from what it wraps, when that goes by reference.

    A proxy forwards attribute access, so ``vars(proxy)`` is the state a user sees
    on it (sacred keeps a captured function's ``config`` there). When the copy's
    wrapped object is importable it goes by name, and this state would stay behind
    although it belongs to the copy: it travels with what the copy wraps
    (:func:`with_state`: the receiver's own object where it has that state, else
    a copy of it that has it).
    """
    try:
        state = vars(proxy)
    except TypeError:
        return None
    if not state:
        return None
    if locate_anywhere(context, proxy.__wrapped__) is None:
        return None  # a copy itself: its __dict__ travels with it
    return dict(state)


def reduce_wrapt_proxy(context: DumpContext, obj: Any) -> Any:
    """wrapt proxies: by reference when importable, else rebuilt from their parts."""
    by_reference = located_reference(context, obj)
    if by_reference is not None:
        return by_reference
    t = type(obj)
    own = proxy_own_state(obj) or None
    wrapped = obj.__wrapped__
    if _forwarded_state(context, obj):
        # What the proxy shows from the object it wraps, which is the receiver's
        # own (by reference): that object where it has the same state, else a
        # copy of it with the sender's, never the receiver's object modified.
        wrapped = WithState(wrapped)
    state: Any = (own, None) if own else None
    if _function_wrapper_base(t) is not None:
        parent = getattr(obj, "_self_parent", None)
        if parent is not None and not own:
            # A bound wrapper is what binding its parent makes: bind it again.
            return (
                _reconstruct._bind_descriptor,
                (parent, obj._self_instance, getattr(obj, "_self_owner", None)),
            )
        fields = {
            name: getattr(obj, "_self_" + name)
            for name in _FUNCTION_WRAPPER_FIELDS
            if hasattr(obj, "_self_" + name)
        }
        copy: Any = (
            _reconstruct._make_wrapt_function_wrapper,
            (t, wrapped, fields),
            state,
            None,
            None,
            _reconstruct._set_proxy_state,
        )
    else:
        copy = (
            _reconstruct._make_wrapt_proxy,
            (t, wrapped),
            state,
            None,
            None,
            _reconstruct._set_proxy_state,
        )
    return with_origin(context, obj, copy)


def wrapt_pieces(obj: Any, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    """What a rebuilt proxy ships: what it wraps, its fields, its own and forwarded state.

    A proxy's own ``__reduce_ex__`` raises, so a generic walk would stop at it;
    these pieces let an error name the path *inside* a wrapper.
    """
    yield ".__wrapped__", obj.__wrapped__
    for name in _FUNCTION_WRAPPER_FIELDS:
        try:
            yield f"._self_{name}", object.__getattribute__(obj, "_self_" + name)
        except AttributeError:
            pass
    for key, value in proxy_own_state(obj).items():
        yield f".{key}", value
    try:
        forwarded = list(vars(obj).items())
    except TypeError:
        forwarded = []
    for key, value in forwarded:
        yield f".{key}", value


# --------------------------------------------------------------- functools


def reduce_lru_cache(context: DumpContext, obj: Any) -> Any:
    """lru_cache/cache wrappers: by reference if importable, else a fresh cache."""
    by_reference = located_reference(context, obj)
    if by_reference is not None:
        return by_reference
    parameters = obj.cache_parameters()
    state = {k: v for k, v in vars(obj).items() if k not in _LRU_MADE}
    arguments = (obj.__wrapped__, parameters["maxsize"], parameters["typed"])
    copy: tuple[Any, ...] = (_reconstruct._make_lru_cache, arguments)
    if state:
        # Set by _set_instance_state, never by pickle's BUILD: lru_cache copies
        # what it wraps' __dict__ into the rebuilt wrapper, and a class's
        # __setstate__ there (random.Random's) is what BUILD would call.
        copy += (state, None, None, _reconstruct._set_instance_state)
    return with_origin(context, obj, copy)


def lru_cache_pieces(obj: Any, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    yield ".__wrapped__", obj.__wrapped__
    for key, value in vars(obj).items():
        if key not in _LRU_MADE:
            yield f".{key}", value


# ------------------------------------------------------------ state policy


class WithState(Generic[T]):
    """Marker made by :func:`with_state`; loads as the wrapped object itself."""

    __slots__ = ("obj",)

    def __init__(self, obj: T) -> None:
        self.obj = obj

    def __repr__(self) -> str:
        return f"picklable.with_state({self.obj!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Reached only by picklers other than picklable's (which use the handler).
        return (_reconstruct._own_or_copy, (self.obj, state_of(self.obj)))


def with_state(obj: T) -> WithState[T]:
    """Ship ``obj`` *with* its state, even when it is importable.

    By default an importable function travels by name, and the receiver uses
    its own object with its own state (as pickle does for every function).
    Wrap it in ``with_state`` to carry the sender's attribute values too: the
    receiver gets its own object where that has the same values already, and
    otherwise a copy of it (the same code and globals) carrying the sender's
    values; the receiver's own object is never modified. An object that goes by
    value carries its state anyway; the marker changes nothing for it.

    .. versionchanged:: 0.2.0
       A copy where the values differ: the receiver's object is left as it is.

    Parameters
    ----------
    obj:
        A function, wrapper or callable object; may sit anywhere in the payload.

    Returns
    -------
    WithState
        A marker that loads as ``obj`` itself (never as the marker).

    Examples
    --------
    >>> payload = picklable.dumps(picklable.with_state(my_captured_function))
    """
    return WithState(obj)


def state_of(obj: Any) -> dict[str, Any] | None:
    """Everything ``obj`` holds (:func:`.attributes.held_state`: its
    ``__dict__``, slots, a wrapt proxy's own attributes, a list's or dict's
    items), or None when it holds nothing."""
    return held_state(obj) or None


def reduce_with_state(context: DumpContext, marker: WithState[Any]) -> Any:
    obj = marker.obj
    if locate_anywhere(context, obj) is None:
        return (_reconstruct._with_state, (obj, None))  # a copy: its state comes along
    state = state_of(obj)
    if not state:
        return (_reconstruct._with_state, (obj, None))
    alone = reduce_without_state(context, WithoutState(obj))
    return own_or_copy(context, obj, alone, state)


class WithoutState(Generic[T]):
    """Marker made by :func:`without_state`; loads as the object itself."""

    __slots__ = ("obj",)

    def __init__(self, obj: T) -> None:
        self.obj = obj

    def __repr__(self) -> str:
        return f"picklable.without_state({self.obj!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Reached only by picklers other than picklable's (which use the handler).
        return (_reconstruct._with_state, (self.obj, None))


def without_state(obj: T) -> WithoutState[T]:
    """Ship ``obj`` by reference alone, leaving the state set on it behind.

    A wrapper that is found by reference (a class-based decorator's instance, a
    proxy, a cache wrapper) carries the attributes the sender set on it, so the
    receiver's object has them too (see ``docs/state-policy.md``). Wrap it in
    ``without_state`` to send the reference alone, as pickle sends a function:
    the receiver keeps its own values (a large cache that need not travel, a
    counter that is per process). An object that cannot be found by reference
    is copied, state and all; the marker changes nothing for it.

    Parameters
    ----------
    obj:
        A function, wrapper or callable object; may sit anywhere in the payload.

    Returns
    -------
    WithoutState
        A marker that loads as ``obj`` itself (never as the marker).

    .. versionadded:: 0.2.0
    """
    return WithoutState(obj)


def reduce_without_state(context: DumpContext, marker: WithoutState[Any]) -> Any:
    obj = marker.obj
    reduction = located_reference(context, obj, carry_state=False)
    if reduction is None:
        return (_reconstruct._with_state, (obj, None))  # a copy: its state comes along
    if isinstance(reduction, str):  # a global name: valid for obj, not for the marker
        return (_reconstruct._resolve, (obj.__module__, tuple(reduction.split("."))))
    return reduction


def without_state_pieces(
    marker: WithoutState[Any], reduction: Any = None
) -> Iterator[tuple[str, Any]]:
    yield ".obj", marker.obj


def with_state_pieces(marker: WithState[Any], reduction: Any = None) -> Iterator[tuple[str, Any]]:
    """The object goes by reference; what may fail is the state carried with it."""
    for key, value in (state_of(marker.obj) or {}).items():
        yield f".{key}", value
    yield ".obj", marker.obj
