"""Per-type reducers and the dispatch table that picks them.

The pickler looks up ``HANDLERS[type(obj)]`` for every object the C pickler does
not handle itself. The table is filled lazily (:func:`handler_for`), one
classification per type, so the cost for an ordinary instance (a dataclass in a
list of 10,000) is one dict hit. It is a plain dict on purpose: the
interpreter's fast path for subscripting a dict skips subclasses (a
``__missing__`` hook would cost more than the rest of the lookup).
A handler returns a reduce value, a global name, or ``NotImplemented`` (let
pickle do what it always does).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from . import _byvalue, _exceptions, _instances, _locator, _reconstruct, _wrappers
from ._locator import importable_by_own_name, locate
from .exceptions import PicklingError

if TYPE_CHECKING:
    from ._pickler import Pickler

Handler = Callable[["Pickler", Any], Any]

_HEAPTYPE = 1 << 9


def reference(pickler: Pickler, obj: Any, module: str, path: tuple[Any, ...]) -> Any:
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


def reduce_function(pickler: Pickler, func: types.FunctionType) -> Any:
    # Pickler.reducer_override has already answered functions known to be
    # importable by their own name (the by_name cache).
    module = func.__module__
    if module in _MAIN_MODULES or _byvalue.ships_by_value(module):
        if func.__code__ is _SINGLEDISPATCH_CODE:
            return _function_by_value(pickler, func)
        return _byvalue_function(pickler, func)  # lambdas and closures of a script
    qualname = func.__qualname__
    # Fast path, stdlib's own test: the function is importable by its own name.
    if "<" not in qualname and type(module) is str:
        home = sys.modules.get(module)
        if home is not None:
            try:
                if "." not in qualname:
                    found = getattr(home, qualname)
                else:
                    found = _reconstruct._walk(home, tuple(qualname.split(".")))
            except Exception:
                found = None
            if found is func:
                _locator.remember_by_name(func)
                return NotImplemented
    located = locate(func)
    if located is not None:
        return reference(pickler, func, *located)
    return _function_by_value(pickler, func)


# Built-in types no module exports under their own name (types.FunctionType is
# 'builtins.function'): id -> (type, reduction). Static types never change.
_builtin_type_refs: dict[int, tuple[type, Any]] = {
    # type(f) of a function every by-value payload names anyway: loads in C,
    # where types.FunctionType would need a Python frame (_resolve).
    id(types.FunctionType): (types.FunctionType, (type, (_reconstruct._make_function,))),
    id(types.CellType): (types.CellType, (type, (_reconstruct._make_cell(),))),
}


_SINGLEDISPATCH_CODE = _wrappers._SINGLEDISPATCH_CODE
_MAIN_MODULES = _byvalue._MAIN_MODULES
_byvalue_function = _byvalue.reduce_function


def _function_by_value(pickler: Pickler, func: types.FunctionType) -> Any:
    """A copy: special kinds of function first (singledispatch keeps its registry)."""
    if func.__code__ is _SINGLEDISPATCH_CODE and "registry" in func.__dict__:
        return _wrappers.reduce_singledispatch(pickler, func)
    return _byvalue.reduce_function(pickler, func)


def reduce_class(pickler: Pickler, cls: type) -> Any:
    # As for functions, classes in the by_name cache never get here.
    known = _builtin_type_refs.get(id(cls))
    if known is not None and known[0] is cls:
        return known[1]
    module = getattr(cls, "__module__", None)
    if module == "builtins" and cls.__dict__.get("__qualname__") is None:
        builtins = sys.modules["builtins"]
        if getattr(builtins, cls.__name__, None) is cls:
            return NotImplemented
    if _byvalue.ships_by_value(module):
        return _byvalue.reduce_class(pickler, cls)
    if importable_by_own_name(cls):
        _locator.remember_by_name(cls)
        return NotImplemented
    located = locate(cls)
    if located is not None:
        reduction = reference(pickler, cls, *located)
        if not cls.__flags__ & _HEAPTYPE and pickler.protocol >= 4:
            _builtin_type_refs[id(cls)] = (cls, reduction)
        return reduction
    misnamed = _wrappers.locate_misnamed_type(cls)
    if misnamed is not None:
        return reference(pickler, cls, *misnamed)
    if not cls.__flags__ & _HEAPTYPE:
        name = f"{module}.{cls.__qualname__}"
        raise PicklingError(
            f"Cannot pickle class {name}: it is a built-in type that no module exports.",
            type_name=name,
            reason="built-in type that no module exports",
            hint="ship an instance or a function that refers to it instead",
        )
    return _byvalue.reduce_class(pickler, cls)


def reduce_method(pickler: Pickler, method: types.MethodType) -> Any:
    """A bound method: ``getattr(self, name)`` when that rebuilds this very method.

    That is pickle's own reduction, and the only one that works for methods of
    compiled classes (a Cython classmethod's function fails pickle's identity
    check though ``getattr(cls, name)`` rebuilds it exactly). Where the name does
    not lead back (name-mangled, stored under another name), ship the pieces.
    """
    func = method.__func__
    owner = method.__self__
    name = getattr(func, "__name__", None)
    if type(name) is str:
        try:
            again = getattr(owner, name)
        except Exception:
            again = None
        if type(again) is types.MethodType and again.__func__ is func and again.__self__ is owner:
            return (getattr, (owner, name))
    return (types.MethodType, (func, owner))


def reduce_classmethod(pickler: Pickler, obj: classmethod | staticmethod) -> Any:  # type: ignore[type-arg]
    by_reference = _class_attribute_reference(pickler, obj)
    if by_reference is not None:
        return by_reference
    state = getattr(obj, "__dict__", None) or None
    return (type(obj), (obj.__func__,), state)


def reduce_property(pickler: Pickler, obj: property) -> Any:
    by_reference = _class_attribute_reference(pickler, obj)
    if by_reference is not None:
        return by_reference
    state = getattr(obj, "__dict__", None) or None
    return (type(obj), (obj.fget, obj.fset, obj.fdel, obj.__doc__), state)


def reduce_slot_descriptor(pickler: Pickler, obj: Any) -> Any:
    """getset and member descriptors (``deque.maxlen``, Cython properties):
    ``getattr(owner, name)`` returns the very descriptor; pickle has no reducer."""
    owner = getattr(obj, "__objclass__", None)
    name = getattr(obj, "__name__", None)
    if owner is not None and type(name) is str:
        try:
            if getattr(owner, name) is obj:
                return (getattr, (owner, name))
        except Exception:
            pass
        # Shadowed on the class itself (a class's own '__dict__' attribute is its
        # namespace, not this descriptor): reach it through the namespace.
        if importable_by_own_name(owner) and vars(owner).get(name) is obj:
            path = (*owner.__qualname__.split("."), "__dict__", (name,))
            return (_reconstruct._resolve, (owner.__module__, path))
    by_reference = _class_attribute_reference(pickler, obj)
    if by_reference is not None:
        return by_reference
    return NotImplemented  # pickle's own error, explained by the diagnostics


def reduce_descriptor(pickler: Pickler, obj: Any) -> Any:
    """Other descriptors (cached properties of compiled classes, ...) live as
    class attributes: by reference when the locator finds them there."""
    by_reference = _class_attribute_reference(pickler, obj)
    return NotImplemented if by_reference is None else by_reference


def _class_attribute_reference(pickler: Pickler, obj: Any) -> Any:
    """A by-reference reduction of a descriptor the locator finds on a class, or None."""
    try:
        located = locate(obj)
    except Exception:  # a descriptor with a hostile __getattr__
        return None
    return None if located is None else reference(pickler, obj, *located)


def reduce_module(pickler: Pickler, module: types.ModuleType) -> Any:
    name = module.__name__
    if name in _locator.MAIN_MODULES:
        raise PicklingError(
            f"Cannot pickle the {name} module itself: the receiving process has its own.",
            type_name="module",
            reason="the __main__ module is not shippable",
            hint="refer to the names you need from it instead of the module",
        )
    if sys.modules.get(name) is module:
        return (_reconstruct._import, (name,))
    # A module built in memory (types.ModuleType(...)) exists nowhere else.
    namespace = {
        k: v for k, v in vars(module).items() if k not in ("__builtins__", "__loader__", "__spec__")
    }
    return (_reconstruct._make_module, (name, namespace))


def reduce_callable_instance(pickler: Pickler, obj: Any) -> Any:
    """Wrapper objects (class-based decorators, CLI option objects, ...).

    A wrapper that is importable somewhere goes by reference, like a function;
    otherwise pickle takes it apart as an ordinary instance.
    """
    try:
        own = obj.__dict__.get("__qualname__") is not None
    except AttributeError:
        own = False
    if own and importable_by_own_name(obj):
        return obj.__qualname__
    found = locate(obj)
    if found is not None:
        return reference(pickler, obj, *found)
    return NotImplemented


def reduce_mappingproxy(pickler: Pickler, obj: types.MappingProxyType) -> Any:  # type: ignore[type-arg]
    return (types.MappingProxyType, (dict(obj),))


def _dataclass_singleton(name_of: Callable[[Any], str]) -> Handler:
    """dataclasses compares its sentinels by identity: ship them by name."""

    def reduce(pickler: Pickler, obj: Any) -> Any:
        return (_reconstruct._resolve, ("dataclasses", (name_of(obj),)))

    return reduce


def _dataclass_singletons() -> dict[type, Handler]:
    """Handlers for dataclasses' sentinels, once dataclasses is imported (an
    object of those types cannot exist before)."""
    import dataclasses

    table: dict[type, Handler] = {
        dataclasses._FIELD_BASE: _dataclass_singleton(lambda obj: obj.name),  # type: ignore[attr-defined]
        dataclasses._MISSING_TYPE: _dataclass_singleton(lambda obj: "MISSING"),
        type(dataclasses._HAS_DEFAULT_FACTORY): _dataclass_singleton(  # type: ignore[attr-defined]
            lambda obj: "_HAS_DEFAULT_FACTORY"
        ),
    }
    if hasattr(dataclasses, "_KW_ONLY_TYPE"):
        table[dataclasses._KW_ONLY_TYPE] = _dataclass_singleton(lambda obj: "KW_ONLY")
    return table


_STATIC: dict[type, Handler | None] = {
    types.FunctionType: reduce_function,
    types.MethodType: reduce_method,
    types.CodeType: _byvalue.reduce_code,
    types.CellType: _byvalue.reduce_cell,
    types.ModuleType: reduce_module,
    classmethod: reduce_classmethod,
    staticmethod: reduce_classmethod,
    property: reduce_property,
    types.MappingProxyType: reduce_mappingproxy,
    # Handled well by pickle itself; listed so they never reach the classifier.
    types.BuiltinFunctionType: None,
    types.MethodDescriptorType: None,
    types.WrapperDescriptorType: None,
    types.MethodWrapperType: None,
    types.GetSetDescriptorType: reduce_slot_descriptor,
    types.MemberDescriptorType: reduce_slot_descriptor,
    # (its reducers take the pickler and the object, as every Handler does)
    **cast("dict[type, Handler | None]", _byvalue.EFFECT_REDUCERS),
}


# Types that stdlib pickle copies "successfully" into something wrong: a
# multiprocessing Connection arrives holding another process's file descriptor
# number (and its __del__ then closes whatever that number is in the receiver).
# "module.qualname" -> (reason, fix); matched by name so nothing is imported.
_REFUSED: dict[str, tuple[str, str]] = {
    "multiprocessing.connection.Connection": (
        (
            "a Connection holds this process's file descriptor; a copy would hold a number that "
            "means nothing elsewhere"
        ),
        (
            "pass it as an argument of multiprocessing.Process (which duplicates the descriptor), "
            "or use a Queue or a Manager"
        ),
    ),
    "multiprocessing.connection.PipeConnection": (
        (
            "a PipeConnection holds this process's pipe handle; a copy would hold a number that "
            "means nothing elsewhere"
        ),
        "pass it as an argument of multiprocessing.Process, or use a Queue or a Manager",
    ),
}


def _refuse(reason: str, hint: str) -> Handler:
    def refuse(pickler: Pickler, obj: Any) -> Any:
        # A pickler given its own reducer for this type knows better: loky
        # pickles its workers' Process objects with LOKY_PICKLER's Pickler and a
        # dispatch_table whose Connection reducer duplicates the descriptor.
        if type(obj) in pickler._table:
            return NotImplemented
        name = f"{type(obj).__module__}.{type(obj).__qualname__}"
        raise PicklingError(
            f"Cannot pickle {name}: {reason}. Fix: {hint}.",
            type_name=name,
            reason=reason,
            hint=hint,
        )

    return refuse


def classify(t: type) -> Handler | None:
    """Pick the handler for instances of ``t`` (called once per type)."""
    if t in _STATIC:
        return _STATIC[t]
    if t.__module__ == "dataclasses":
        singleton = _dataclass_singletons().get(t)
        if singleton is not None:
            return singleton
    refused = _REFUSED.get(f"{t.__module__}.{t.__qualname__}")
    if refused is not None:
        return _refuse(*refused)
    if issubclass(t, type):
        return reduce_class
    handler = _wrappers.handler_for(t)
    if handler is not None:
        return handler
    handler = _exceptions.handler_for(t)
    if handler is not None:
        return handler
    if _locator.python_call_type(t):
        return reduce_callable_instance
    if hasattr(t, "__get__"):
        return reduce_descriptor
    if _instances.is_plain(t):
        return _instances.reduce_plain_instance
    return None


# type -> handler (None: pickle's own way), filled by handler_for.
HANDLERS: dict[type, Handler | None] = {}


def handler_for(t: type) -> Handler | None:
    """The handler for instances of ``t``, classifying ``t`` on first sight."""
    try:
        return HANDLERS[t]
    except KeyError:
        handler = HANDLERS[t] = classify(t)
        return handler
