"""Reducers for wrapper kinds that are taken apart and rebuilt (rule 4).

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
* ``functools.cached_property`` (its 3.11 ``RLock`` is made anew, never shipped),
  ``property`` subclasses, ``functools.singledispatch`` functions (the registry is
  replayed with ``register``; the dispatch cache, full of weak references, is
  rebuilt empty).
* :func:`with_state` markers: the opt-in that carries an importable wrapper's
  state (see ``docs/state-policy.md``).

``functools.partial``, ``partialmethod``, bound methods, ``classmethod`` and
``staticmethod`` need no code here: their pieces go through the pickler's rule.
"""

from __future__ import annotations

import functools
import sys
import threading
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from . import _byvalue, _reconstruct, _reducers

if TYPE_CHECKING:
    from ._pickler import Pickler

__all__ = ["WithState", "handler_for", "state_left_behind", "with_state"]

T = TypeVar("T")

Handler = Callable[["Pickler", Any], Any]

_LRU_WRAPPER: type = type(functools.lru_cache(maxsize=None)(lambda: None))
_RLOCK_TYPES: tuple[type, ...] = (type(threading.RLock()),)
_SINGLEDISPATCH_CODE: types.CodeType = functools.singledispatch(lambda arg: arg).__code__  # type: ignore[attr-defined]
# Made by singledispatch itself for every dispatcher: rebuilt, never shipped.
_SINGLEDISPATCH_MADE = frozenset(
    {"register", "dispatch", "registry", "_clear_cache", "__wrapped__"}
)
# Made by lru_cache itself (a lambda closing over maxsize and typed).
_LRU_MADE = frozenset({"cache_parameters", "__wrapped__"})
# Metadata a wrapper copies from what it wraps: not state that stays behind.
_METADATA = frozenset(
    {
        "__module__",
        "__name__",
        "__qualname__",
        "__doc__",
        "__annotations__",
        "__wrapped__",
        "__dict__",
    }
)
_FUNCTION_WRAPPER_FIELDS = ("instance", "wrapper", "enabled", "binding", "parent", "owner")


# --------------------------------------------------------------- dispatch


def handler_for(t: type) -> Handler | None:
    """The reducer for instances of ``t`` if ``t`` is a known wrapper kind.

    Parameters
    ----------
    t:
        The exact type of an object met by the pickler (never ``obj.__class__``).

    Returns
    -------
    The handler, or None when ``t`` is not a wrapper kind handled here.
    """
    if t is _LRU_WRAPPER:
        return reduce_lru_cache
    if t is WithState:
        return reduce_with_state
    if is_wrapt_proxy_type(t):
        return reduce_wrapt_proxy
    if issubclass(t, functools.cached_property):
        return reduce_cached_property
    if issubclass(t, property):  # property itself is in the static table
        return reduce_property_subclass
    return None


def is_wrapt_proxy_type(t: type) -> bool:
    """Whether ``t`` is a wrapt proxy type (wrapt 1.x or 2.x, C or Python).

    Only consulted when wrapt is already imported: a type made by wrapt cannot
    exist before that, and picklable never imports wrapt itself.
    """
    if "wrapt" not in sys.modules:
        return False
    return bool(_wrapt_roots()) and issubclass(t, _wrapt_roots())


def _wrapt_roots() -> tuple[type, ...]:
    roots: list[type] = []
    for module_name, names in (
        ("wrapt", ("BaseObjectProxy", "ObjectProxy")),
        ("wrapt.wrappers", ("ObjectProxy",)),  # the pure-Python implementation
    ):
        module = sys.modules.get(module_name)
        for name in names:
            candidate = getattr(module, name, None)
            if isinstance(candidate, type) and candidate not in roots:
                roots.append(candidate)
    return tuple(roots)


def function_reducer(func: types.FunctionType) -> Handler | None:
    """The reducer for a function that must not be copied as a plain function.

    Called by the function reducer only when ``func`` is about to go by value.
    """
    if func.__code__ is _SINGLEDISPATCH_CODE and "registry" in func.__dict__:
        return reduce_singledispatch
    return None


# ------------------------------------------------- misnamed extension types

_misnamed: dict[type, tuple[str, tuple[str, ...]] | None] = {}


def locate_misnamed_type(cls: type) -> tuple[str, tuple[str, ...]] | None:
    """Where an extension type lives when its ``__module__`` does not say.

    wrapt's C types report ``__module__ == 'builtins'`` (wrapt 1.x) or
    ``'_wrappers'`` (wrapt 2.x, really ``wrapt._wrappers``); the classes of a
    ``__main__`` wrapper subclass, and the globals of any wrapt function copied by
    value, name them. Only types that stdlib's lookup and the locator missed get
    here, and only those whose module is a lie (``builtins``, or a name that is
    not an imported module); the answer is cached per type.

    Returns
    -------
    ``(module, (name,))`` with ``getattr(module, name) is cls``, or None.
    """
    if cls in _misnamed:
        return _misnamed[cls]
    found = _search_misnamed(cls)
    _misnamed[cls] = found
    return found


def _search_misnamed(cls: type) -> tuple[str, tuple[str, ...]] | None:
    claimed = getattr(cls, "__module__", None)
    name = getattr(cls, "__name__", None)
    qualname = getattr(cls, "__qualname__", None)
    if type(claimed) is not str or type(name) is not str or qualname != name:
        return None
    if claimed != "builtins" and claimed in sys.modules:
        return None  # a real module that does not have it: nothing lies here
    suffix = "." + claimed
    candidates = sorted(
        (
            module_name
            for module_name in list(sys.modules)
            if claimed == "builtins" or module_name.endswith(suffix)
        ),
        key=lambda module_name: (module_name.count("."), len(module_name)),
    )
    for module_name in candidates:
        module = sys.modules.get(module_name)
        if module is None or module_name in ("__main__", "__mp_main__"):
            continue
        try:
            if getattr(module, name, None) is cls:
                return module_name, (name,)
        except Exception:
            continue
    return None


# ------------------------------------------------------------------- wrapt


def _function_wrapper_base(t: type) -> type | None:
    for klass in t.__mro__:
        if klass.__name__ == "_FunctionWrapperBase":
            return klass
    return None


def proxy_own_state(obj: Any) -> dict[str, Any]:
    """The proxy's own attributes (``_self_*``), not those of the wrapped object.

    ``vars(proxy)`` is the wrapped object's ``__dict__``; the proxy's own dict is
    reachable through ``__self_dict__`` (wrapt 2) or as a GC referent (wrapt 1).
    """
    own = _reconstruct._proxy_own_dict(obj)
    if not own:
        return {}
    # Set by wrapt's metaclass machinery on every instance; rebuilt by __init__.
    return {k: v for k, v in own.items() if k not in ("__module__", "__doc__")}


def _forwarded_state(pickler: Pickler, proxy: Any) -> dict[str, Any] | None:
    """The attributes a proxy shows from what it wraps, when that goes by reference.

    A proxy forwards attribute access, so ``vars(proxy)`` is the state a user sees
    on it (sacred keeps a captured function's ``config`` there). When the copy's
    wrapped object is importable it goes by name, and this state would stay behind
    although it belongs to the copy: it travels with the copy and is set again
    through the proxy on load.
    """
    try:
        state = vars(proxy)
    except TypeError:
        return None
    if not state:
        return None
    wrapped = proxy.__wrapped__
    if _reducers.located_reference(pickler, wrapped) is None:
        return None  # a copy itself: its __dict__ travels with it
    return dict(state)


def reduce_wrapt_proxy(pickler: Pickler, obj: Any) -> Any:
    """wrapt proxies: by reference when importable, else rebuilt from their parts."""
    reference = _reducers.located_reference(pickler, obj)
    if reference is not None:
        return reference
    t = type(obj)
    own = proxy_own_state(obj) or None
    state = (own, _forwarded_state(pickler, obj))
    if state == (None, None):
        state = None  # type: ignore[assignment]
    base = _function_wrapper_base(t)
    if base is not None:
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
        return (
            _reconstruct._make_wrapt_function_wrapper,
            (t, obj.__wrapped__, fields),
            state,
            None,
            None,
            _reconstruct._set_proxy_state,
        )
    return (
        _reconstruct._make_wrapt_proxy,
        (t, obj.__wrapped__),
        state,
        None,
        None,
        _reconstruct._set_proxy_state,
    )


def wrapper_children(obj: Any) -> list[tuple[str, Any]] | None:
    """(path suffix, piece) for what shipping a wrapper ships, or None if ``obj`` is
    not a wrapper kind handled here. Lets ``dumps`` errors name the path *inside*
    a wrapper (a proxy's own ``__reduce_ex__`` raises, so the generic walk stops).
    """
    t = type(obj)
    if t is WithState:
        # The object goes by reference; what may fail is the state carried with it.
        state = _state_of(obj.obj) or {}
        return [(f".{key}", value) for key, value in state.items()] + [(".obj", obj.obj)]
    if not is_wrapt_proxy_type(t):
        return None
    out: list[tuple[str, Any]] = [(".__wrapped__", obj.__wrapped__)]
    for name in _FUNCTION_WRAPPER_FIELDS:
        try:
            out.append((f"._self_{name}", object.__getattribute__(obj, "_self_" + name)))
        except AttributeError:
            pass
    for key, value in proxy_own_state(obj).items():
        out.append((f".{key}", value))
    try:
        forwarded = list(vars(obj).items())
    except TypeError:
        forwarded = []
    for key, value in forwarded:
        out.append((f".{key}", value))
    return out


# --------------------------------------------------------------- functools


def reduce_lru_cache(pickler: Pickler, obj: Any) -> Any:
    """lru_cache/cache wrappers: by reference if importable, else a fresh cache."""
    reference = _reducers.located_reference(pickler, obj)
    if reference is not None:
        return reference
    parameters = obj.cache_parameters()
    state = {k: v for k, v in vars(obj).items() if k not in _LRU_MADE}
    return (
        _reconstruct._make_lru_cache,
        (obj.__wrapped__, parameters["maxsize"], parameters["typed"]),
        state or None,
    )


def reduce_cached_property(pickler: Pickler, obj: Any) -> Any:
    """cached_property: its attributes, with a new lock instead of the old one."""
    state = dict(vars(obj))
    lock = state.pop("lock", None)
    with_lock = isinstance(lock, _RLOCK_TYPES)
    if lock is not None and not with_lock:
        state["lock"] = lock  # not a lock we know how to remake: ship as it is
    return (_reconstruct._make_cached_property, (type(obj), with_lock), state or None)


def reduce_property_subclass(pickler: Pickler, obj: property) -> Any:
    """property subclasses: pickle's default would drop fget/fset/fdel (C slots)."""
    return (
        _reconstruct._make_property,
        (type(obj), obj.fget, obj.fset, obj.fdel, obj.__doc__),
        vars(obj) or None,
    )


def reduce_singledispatch(pickler: Pickler, func: types.FunctionType) -> Any:
    """A singledispatch function by value: the base function plus its registrations."""
    registry = dict(func.registry)  # type: ignore[attr-defined]
    base = registry.pop(object, func.__wrapped__)  # type: ignore[attr-defined]
    attributes = {k: v for k, v in vars(func).items() if k not in _SINGLEDISPATCH_MADE}
    metadata = {
        "__module__": func.__module__,
        "__name__": func.__name__,
        "__qualname__": func.__qualname__,
        "__doc__": func.__doc__,
    }
    return (
        _reconstruct._make_singledispatch,
        (base, list(registry.items())),
        (attributes or None, metadata),
    )


def reduce_function_by_value(pickler: Pickler, func: types.FunctionType) -> Any:
    """A function that goes by value: special kinds first, then a plain copy."""
    special = function_reducer(func)
    if special is not None:
        return special(pickler, func)
    return _byvalue.reduce_function(pickler, func)


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
        return (_reconstruct._with_state, (self.obj, _state_of(self.obj)))


def with_state(obj: T) -> WithState[T]:
    """Ship ``obj`` *with* its state, even when it is importable.

    By default an importable function or wrapper travels by name, and the
    receiver uses its own object with its own state (as pickle does for every
    function). Wrap it in ``with_state`` to carry the sender's attribute values
    too: after loading, the receiver's object (still the very same object) has
    had the shipped attributes set on it. An object that goes by value carries
    its state anyway; the marker changes nothing for it.

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


def _state_of(obj: Any) -> dict[str, Any] | None:
    try:
        state = vars(obj)
    except TypeError:
        return None
    return dict(state) or None


def reduce_with_state(pickler: Pickler, marker: WithState[Any]) -> Any:
    obj = marker.obj
    if _reducers.located_reference(pickler, obj) is None:
        return (_reconstruct._with_state, (obj, None))  # a copy: its state comes along
    return (_reconstruct._with_state, (obj, _state_of(obj)))


def state_left_behind(obj: Any) -> list[str]:
    """Names of the attributes of ``obj`` that do not travel when it is shipped.

    An importable function or wrapper goes by reference: its attributes (set
    after decoration, like an experiment framework's ``config``) stay in the
    sender, and the receiver sees its own values. A copy carries them all.

    Parameters
    ----------
    obj:
        Any object that could be shipped.

    Returns
    -------
    list of str
        Sorted attribute names (metadata such as ``__name__`` or ``__wrapped__``
        left out); empty when ``obj`` travels by value or has no state.
    """
    import io

    from ._pickler import Pickler

    pickler = Pickler(io.BytesIO())
    if _reducers.located_reference(pickler, obj) is None:
        return []
    state = _state_of(obj) or {}
    return sorted(k for k in state if k not in _METADATA)
