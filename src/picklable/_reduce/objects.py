"""Instances, modules, descriptors and the types picklable refuses.

**Plain instances: pickle's own reduction, answered directly.** For an instance
of a class that customises nothing about pickling, stdlib pickle calls
``obj.__reduce_ex__(protocol)``, and ``object.__reduce_ex__`` answers
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
``copyreg._reduce_ex`` instead). A class given a ``__reduce_ex__``,
``__reduce__`` or ``__getstate__`` after it was checked is noticed at its next
instance (three lookups in the type's attribute cache) and checked again.
"""

from __future__ import annotations

import collections
import copyreg
import functools
import sys
import types
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .. import _caches, _reconstruct
from .._compat import MAIN_MODULES, is_heap_type
from .._layout import class_lookup, slot_names
from .._locator import importable_by_own_name
from .._paths import Path
from ..exceptions import PicklingError
from .reference import class_attribute_reference, located_reference, took_a_name
from .registry import ships_by_value
from .scripts import script_reference_alone, with_origin

if TYPE_CHECKING:
    from .context import DumpContext

Handler = Callable[["DumpContext", Any], Any]

__all__ = [
    "answers_getattr",
    "c_reduced_with_dict",
    "dataclass_singletons",
    "defaultdict_pieces",
    "instance_pieces",
    "is_plain",
    "module_pieces",
    "plain_copy",
    "reduce_c_reduced_instance",
    "reduce_callable_instance",
    "reduce_descriptor",
    "reduce_getattr_instance",
    "reduce_mappingproxy",
    "reduce_module",
    "reduce_plain_instance",
    "reduce_proxy",
    "reduce_slot_descriptor",
    "refuse",
]

# ------------------------------------------------------------ plain instances


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
_NEWARGS = ("__getnewargs_ex__", "__getnewargs__")
_ABSENT = (*_NEWARGS, "__getattr__")
_OBJECT_REDUCE_EX = object.__reduce_ex__
_OBJECT_REDUCE = object.__reduce__
# Python 3.10's object has no __getstate__ (a late one is then missed here).
_OBJECT_GETSTATE = getattr(object, "__getstate__", None)


def _lookup(t: type, name: str) -> Any:
    """``name`` as the interpreter finds it on ``t``; ``_MISSING`` where no class
    of its MRO defines it (a class attribute may be None)."""
    return class_lookup(t, name, _MISSING)


def is_plain(t: type) -> bool:
    """Whether pickle reduces instances of ``t`` with object's default and no more."""
    if _layout(t) != _PLAIN_LAYOUT or issubclass(t, (list, dict)):
        return False
    if not _object_defaults(t) or any(_lookup(t, name) is not _MISSING for name in _ABSENT):
        return False
    # The instance dict must be the real one (not a class attribute named
    # __dict__), and no slots besides it: what object.__reduce_ex__ reads
    # (copyreg._slotnames), without the cache copyreg writes on the class (an
    # allow-list's check of a receiver's class must leave it as it was).
    slotnames = vars(t).get("__slotnames__")
    if slotnames is None:
        slotnames = slot_names(t)
    return type(_lookup(t, "__dict__")) is types.GetSetDescriptorType and not slotnames


def answers_getattr(t: type) -> bool:
    """Whether ``t`` is plain but for a ``__getattr__`` of its own, and maybe
    ``__slots__``: classes of Python code over ``object`` alone, reduced with
    object's default, so that their instances' state is their ``__dict__`` and
    slots (what :func:`plain_copy` ships), and no ``__setstate__`` of theirs
    reads it back."""
    if _lookup(t, "__getattr__") is _MISSING or not all(map(is_heap_type, t.__mro__[:-1])):
        return False
    if not _object_defaults(t) or any(_lookup(t, name) is not _MISSING for name in _NEWARGS):
        return False
    if _lookup(t, "__setstate__") is not _MISSING:
        return False
    has_dict = _lookup(t, "__dict__")
    has_weakref = _lookup(t, "__weakref__")
    if has_dict is not _MISSING and type(has_dict) is not types.GetSetDescriptorType:
        return False  # a class attribute named __dict__: not the instance's
    # Nothing kept in C: the layout a class statement gives these slots.
    slotnames = copyreg._slotnames(t)  # type: ignore[attr-defined]
    return _layout(t) == _slots_layout(
        len(slotnames), has_dict is not _MISSING, has_weakref is not _MISSING
    )


@functools.lru_cache(maxsize=64)
def _slots_layout(slots: int, has_dict: bool, has_weakref: bool) -> tuple[int, int, int, int]:
    """The layout of a class of Python code over ``object`` with that many
    slots (and a ``__dict__``, a ``__weakref__`` or not), on this Python."""
    names = [f"slot{i}" for i in range(slots)]
    names += ["__dict__"] * has_dict + ["__weakref__"] * has_weakref
    return _layout(type("_Slotted", (), {"__slots__": tuple(names)}))


def _object_defaults(t: type) -> bool:
    return all(_lookup(t, name) is default for name, default in _OBJECT_DEFAULTS.items())


def c_reduced_with_dict(t: type) -> bool:
    """Whether instances of ``t`` have a ``__dict__`` that their reduction may
    leave out: a class of Python code over a C type (an ``ndarray`` subclass)
    whose ``__reduce_ex__`` or ``__reduce__`` is the C type's own, not
    ``object``'s (which ships the ``__dict__``) nor a class's of Python code
    (which decides for itself)."""
    if not is_heap_type(t) or type(_lookup(t, "__dict__")) is not types.GetSetDescriptorType:
        return False
    for name in ("__reduce_ex__", "__reduce__"):
        found = _lookup(t, name)
        if found is _OBJECT_DEFAULTS[name]:
            continue
        owner = next((k for k in t.__mro__ if name in vars(k)), object)
        return not is_heap_type(owner)
    return False


def reduce_c_reduced_instance(context: DumpContext, obj: Any) -> Any:
    """An instance of a class of Python code over a C type (see
    :func:`c_reduced_with_dict`): the C type's reduction, and, where that
    leaves the instance's ``__dict__`` out, the ``__dict__`` too, set after the
    C type's own state (pickle, cloudpickle and dill's default lose it for an
    ``ndarray`` subclass; issue 27)."""
    try:
        if type(obj) in context.table:
            return NotImplemented  # a reducer registered for it decides (multiprocessing's)
        own = object.__getattribute__(obj, "__dict__")
        if not own:
            return NotImplemented
        reduction = obj.__reduce_ex__(context.protocol)
    except Exception:
        return NotImplemented  # pickle's own way, and its own error
    if type(reduction) is not tuple or len(reduction) < 2:
        return NotImplemented
    func, args, *rest = reduction
    rest += [None] * (4 - len(rest))
    state, listitems, dictitems, setter = rest
    inner = state[0] if type(state) is tuple and len(state) == 2 else state
    if (
        setter is not None
        or (type(inner) is dict and all(key in inner for key in own))
        or _holds(args, own)
    ):
        return NotImplemented  # its reduction ships the __dict__ already (or decides)
    return (func, args, (state, dict(own)), listitems, dictitems, _reconstruct._set_state_and_dict)


def _holds(args: Any, own: dict[str, Any]) -> bool:
    """Whether a reduction's arguments hold the ``__dict__`` itself (ctypes'
    ``_unpickle(cls, (__dict__, bytes))``), at most two tuples deep."""
    if type(args) is not tuple:
        return False
    for arg in args:
        if arg is own or (type(arg) is tuple and any(item is own for item in arg)):
            return True
    return False


def reduce_plain_instance(
    context: DumpContext,
    obj: Any,
    _newobj: Any = copyreg.__newobj__,  # type: ignore[attr-defined]
    _type: Any = type,
    _reduce_ex: Any = _OBJECT_REDUCE_EX,
    _reduce: Any = _OBJECT_REDUCE,
    _getstate: Any = _OBJECT_GETSTATE,
) -> Any:
    # Runs once per instance: locals only, cheapest tests first.
    state = obj.__dict__
    cls = _type(obj)
    if (
        "__reduce_ex__" in state
        or "__getstate__" in state
        or cls in context.table
        or context.protocol < 2
    ):
        return NotImplemented
    if (
        cls.__reduce_ex__ is not _reduce_ex
        or cls.__reduce__ is not _reduce
        or (_getstate is not None and cls.__getstate__ is not _getstate)
    ):
        # The class learnt to pickle itself after it was checked: classify again.
        return context.reclassify(obj)
    return (_newobj, (cls,), state or None)


def reduce_getattr_instance(context: DumpContext, obj: Any) -> Any:
    """An instance whose class answers missing attributes in ``__getattr__``.

    pickle rebuilds it, then looks ``__setstate__`` up on the empty instance:
    the class's ``__getattr__`` runs before any state is there, and one that
    reads its own fields (``self._values``) recurses until the interpreter
    gives up. The same class, ``__dict__`` and slots travel, set by
    ``_set_instance_state``, which looks nothing up on the instance.
    """
    try:
        state = object.__getattribute__(obj, "__dict__")
    except AttributeError:  # slots alone
        state = {}
    if (
        "__reduce_ex__" in state
        or "__getstate__" in state
        or type(obj) in context.table
        or context.protocol < 2
    ):
        return NotImplemented
    return plain_copy(obj)


# ------------------------------------------------------- callable instances


def reduce_callable_instance(context: DumpContext, obj: Any) -> Any:
    """Callable objects: by reference where a module holds them, with their state.

    A class-based decorator, a CLI option object, a dispatcher, a module's
    model: where the locator finds it, the receiver gets its own object, and
    the state the sender set on it travels and is set there (a model's
    weights, a decorator's configuration), so it is both the same object and
    in the same state. Pickle can often ship neither (a decorator took the
    name of the function it holds) or ships a lossy copy (a dispatcher's own
    ``__getstate__`` drops its name and docstring).

    Found nowhere, an ordinary callable object keeps pickle's semantics (its
    own reduction). A decorator product's own ``__reduce__`` would name what
    the receiver lacks (the name it took, in a script or a local scope): the
    rule wins, and it is copied as an instance, state and all.
    """
    by_reference = located_reference(context, obj)
    if by_reference is not None:
        return by_reference
    if not took_a_name(obj):
        return NotImplemented
    return with_origin(context, obj, plain_copy(obj))


_reconstructor = copyreg._reconstructor  # type: ignore[attr-defined]
_set_instance_state = _reconstruct._set_instance_state


def plain_copy(obj: Any, _newobj: Any = copyreg.__newobj__) -> Any:  # type: ignore[attr-defined]
    """``obj`` as pickle copies an ordinary instance (class, ``__dict__`` and slots),
    whatever its own ``__reduce__`` says; NotImplemented when it keeps its state
    in C (no ``__dict__``, no slots: only its own reduction knows it). The state
    is set by ``_set_instance_state``, which looks nothing up on the instance."""
    cls = type(obj)
    try:
        state = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        state = None
    slots = {}
    for name in copyreg._slotnames(cls):  # type: ignore[attr-defined]
        try:
            slots[name] = object.__getattribute__(obj, name)
        except AttributeError:
            continue
    if state is None and not slots:
        return NotImplemented
    shipped = (state or None, slots) if slots else (dict(state) if state else None)
    if obj.__class__ is not cls:  # a proxy claims another class: NEWOBJ would refuse it
        return (_reconstructor, (cls, object, None), shipped, None, None, _set_instance_state)
    return (_newobj, (cls,), shipped, None, None, _set_instance_state)


# ------------------------------------------------------------------ proxies


def is_proxy_type(t: type) -> bool:
    """Whether instances of ``t`` lie about their class (``__class__`` is a
    descriptor of their own: a lazy or a forwarding proxy). wrapt's proxies have
    a kind of their own."""
    return any("__class__" in vars(klass) for klass in t.__mro__[:-1])


def reduce_proxy(context: DumpContext, obj: Any) -> Any:
    """A proxy: the proxy itself, never what it stands for.

    Its own ``__reduce__`` usually gives what it stands for (a lazy proxy of a
    function arrives as the function): another object. Where a module holds it,
    it goes by reference (the receiver's own proxy); elsewhere it is copied as
    an instance, or refused when its state is out of reach (in C).
    """
    by_reference = located_reference(context, obj)
    if by_reference is not None:
        return by_reference
    copy = plain_copy(obj)
    if copy is NotImplemented:
        alone = script_reference_alone(obj, "a proxy that keeps its state in C cannot be copied")
        if alone is not None:
            return alone  # the script's own proxy, where the receiver runs the script
        name = f"{type(obj).__module__}.{type(obj).__qualname__}"
        raise PicklingError(
            f"Cannot pickle {name}: a proxy that keeps its state in C cannot be copied, and "
            "its own reduction ships what it stands for (another object). Fix: ship what "
            "it stands for explicitly (proxy.__wrapped__), or keep the proxy at module "
            "level, where it ships by reference.",
            type_name=name,
            reason="a proxy that keeps its state in C cannot be copied",
            hint="ship proxy.__wrapped__, or keep the proxy at module level",
        )
    return with_origin(context, obj, copy)


# -------------------------------------------------------------- descriptors


def reduce_slot_descriptor(context: DumpContext, obj: Any) -> Any:
    """getset and member descriptors (``deque.maxlen``, Cython properties):
    ``getattr(owner, name)`` returns the very descriptor; pickle has no reducer.
    A C class's classmethod descriptors (``vars(dict)["fromkeys"]``), which
    ``getattr`` binds, are reached through the class's namespace."""
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
        shared = _shared_descriptor_path(obj, owner, name)
        if shared is not None:
            # Another version shares no such descriptor: the path leads to
            # another object there, so the payload is bound to this one.
            context.state().bound = True
            return (_reconstruct._resolve, shared)
    by_reference = class_attribute_reference(context, obj)
    if by_reference is not None:
        return by_reference
    if owner is not None and type(name) is str and _namespace_holds(owner, name, obj):
        # A class's own '__dict__' descriptor, of a class that ships by value.
        owner_name = getattr(owner, "__qualname__", repr(owner))
        raise PicklingError(
            f"Cannot pickle the {name!r} descriptor of {owner_name}: getattr on the class "
            "gives another object, and no module holds the class by name. Fix: ship the "
            f"class and read vars(cls)[{name!r}] inside the worker.",
            type_name=type(obj).__name__,
            reason=f"the {name!r} descriptor of {owner_name}, a class that ships by value",
            hint=f"ship the class and read vars(cls)[{name!r}] inside the worker",
        )
    return NotImplemented  # pickle's own error, explained by the diagnostics


def _namespace_holds(owner: Any, name: str, obj: Any) -> bool:
    try:
        return vars(owner).get(name) is obj
    except TypeError:  # no namespace
        return False


# id(descriptor) -> (descriptor, (module, path)) of a descriptor many classes share
_shared_descriptors: dict[int, tuple[Any, tuple[str, Path]]] = {}
_caches.register("objects.shared_descriptors", _shared_descriptors.clear)


def _shared_descriptor_path(obj: Any, owner: Any, name: str) -> tuple[str, Path] | None:
    """A path to a descriptor that classes share, through one of them.

    Since Python 3.15 every class that adds ``__dict__`` or ``__weakref__`` to
    ``object``'s layout holds one shared descriptor for it, whose
    ``__objclass__`` is ``object`` (which has no such attribute). Any class
    holding it leads to it: the first, by module and name, of those that
    ``owner``'s direct subclasses in the standard library offer (the same
    choice in every process of one version).
    """
    known = _shared_descriptors.get(id(obj))
    if known is not None and known[0] is obj:
        return known[1]
    if not isinstance(owner, type):
        return None
    candidates = []
    cls: type
    for cls in type.__subclasses__(owner):
        module = getattr(cls, "__module__", None)
        qualname = getattr(cls, "__qualname__", None)
        if (
            type(module) is str
            and type(qualname) is str
            and module.partition(".")[0] in sys.stdlib_module_names
            and vars(cls).get(name) is obj
            and importable_by_own_name(cls)
        ):
            candidates.append((module, qualname))
    if not candidates:
        return None
    module, qualname = min(candidates)
    path: Path = (*qualname.split("."), "__dict__", (name,))
    _shared_descriptors[id(obj)] = (obj, (module, path))
    return module, path


def reduce_descriptor(context: DumpContext, obj: Any) -> Any:
    """Other descriptors (cached properties of compiled classes, ...) live as
    class attributes: by reference when the locator finds them there."""
    by_reference = class_attribute_reference(context, obj)
    return NotImplemented if by_reference is None else by_reference


# ------------------------------------------------------------------ modules


def reduce_module(context: DumpContext, module: types.ModuleType) -> Any:
    """A module: imported again by name; one built in memory, or registered
    with :func:`~picklable.register_by_value`, copied."""
    name = module.__name__
    if name in MAIN_MODULES:
        raise PicklingError(
            f"Cannot pickle the {name} module itself: the receiving process has its own.",
            type_name="module",
            reason="the __main__ module is not shippable",
            hint="refer to the names you need from it instead of the module",
        )
    if sys.modules.get(name) is module and not ships_by_value(name):
        return (_reconstruct._import, (name,))
    return (_reconstruct._make_module, (name, _module_namespace(module)))


_MODULE_SKIP = ("__builtins__", "__loader__", "__spec__")


def _module_namespace(module: types.ModuleType) -> dict[str, Any]:
    # A module built in memory (types.ModuleType(...)) exists nowhere else.
    return {k: v for k, v in vars(module).items() if k not in _MODULE_SKIP}


def module_pieces(module: types.ModuleType, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    for key, value in _module_namespace(module).items():
        yield f".{key}", value


# ------------------------------------------------------------------- others


def reduce_mappingproxy(context: DumpContext, obj: types.MappingProxyType) -> Any:  # type: ignore[type-arg]
    """A read-only view of a dict: rebuilt around a copy of the dict."""
    return (types.MappingProxyType, (dict(obj),))


def _dataclass_singleton(name_of: Callable[[Any], str]) -> Handler:
    """dataclasses compares its sentinels by identity: ship them by name."""

    def reduce(context: DumpContext, obj: Any) -> Any:
        return (_reconstruct._resolve, ("dataclasses", (name_of(obj),)))

    return reduce


def dataclass_singletons() -> dict[type, Handler]:
    """Handlers for dataclasses' sentinels, once dataclasses is imported (an
    object of those types cannot exist before)."""
    import dataclasses

    table: dict[type, Handler] = {
        dataclasses._FIELD_BASE: _dataclass_singleton(lambda obj: obj.name),  # type: ignore[attr-defined]
    }
    for name in _DATACLASS_SENTINELS:
        sentinel = getattr(dataclasses, name, None)
        # Python 3.15 made MISSING and KW_ONLY builtin sentinels, which pickle
        # by their own name: only dataclasses' own classes need a handler.
        if sentinel is not None and type(sentinel).__module__ == "dataclasses":
            table[type(sentinel)] = _dataclass_singleton(_named(name))
    return table


def _named(name: str) -> Callable[[Any], str]:
    return lambda obj: name


# dataclasses' module-level singletons of classes of its own: MISSING, KW_ONLY
# (3.10+), the default-factory marker and (3.15) the docstring descriptor that
# every dataclass without a docstring holds as its __doc__.
_DATACLASS_SENTINELS = ("MISSING", "KW_ONLY", "_HAS_DEFAULT_FACTORY", "_auto_docstring")


# Types that stdlib pickle copies "successfully" into something wrong: a
# multiprocessing Connection arrives holding another process's file descriptor
# number (and its __del__ then closes whatever that number is in the receiver).
# "module.qualname" -> (reason, fix); matched by name so nothing is imported.
def refuse(reason: str, hint: str) -> Handler:
    """A handler that refuses instances of a type, with ``reason`` and ``hint``."""

    def refuse(context: DumpContext, obj: Any) -> Any:
        # A pickler given its own reducer for this type knows better: loky
        # pickles its workers' Process objects with LOKY_PICKLER's Pickler and a
        # dispatch_table whose Connection reducer duplicates the descriptor.
        if type(obj) in context.table:
            return NotImplemented
        name = f"{type(obj).__module__}.{type(obj).__qualname__}"
        raise PicklingError(
            f"Cannot pickle {name}: {reason}. Fix: {hint}.",
            type_name=name,
            reason=reason,
            hint=hint,
        )

    return refuse


# ------------------------------------------------------------------- pieces

_MAX_ITEMS = 10_000


def instance_pieces(obj: Any, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    """What an ordinary instance's reduction ships, named after its attributes.

    ``reduction`` is the one the pickler takes (the decision already made);
    without it, the instance's own ``__reduce_ex__`` is asked.
    """
    reduced = reduction
    if not isinstance(reduced, tuple):
        try:
            reduced = obj.__reduce_ex__(5)
        except Exception:
            return
    if isinstance(reduced, str) or not isinstance(reduced, tuple):
        return
    args = reduced[1] if len(reduced) > 1 else ()
    state = reduced[2] if len(reduced) > 2 else None
    if (
        reduced[0] is getattr(copyreg, "__newobj__", None)
        or getattr(reduced[0], "__name__", "") == "__newobj__"
    ):
        args = args[1:]  # the class itself
    fields = getattr(type(obj), "_fields", None)
    named = isinstance(obj, tuple) and isinstance(fields, tuple) and len(fields) == len(args or ())
    field_names: tuple[Any, ...] = fields if named and isinstance(fields, tuple) else ()
    attributes = _attributes_for_paths(obj)
    for i, arg in enumerate(args or ()):
        if named:
            yield f".{field_names[i]}", arg
            continue
        # Name an argument after the attribute that holds it, when one does.
        name = next((k for k, v in attributes.items() if v is arg and isinstance(k, str)), None)
        yield (f".{name}" if name is not None else f".__reduce__()[1][{i}]"), arg
    yield from _state_pieces(state)
    if len(reduced) > 3 and reduced[3] is not None:
        for i, item in enumerate(reduced[3]):
            if i >= _MAX_ITEMS:
                break
            yield f"[{i}]", item
    if len(reduced) > 4 and reduced[4] is not None:
        for i, (key, value) in enumerate(reduced[4]):
            if i >= _MAX_ITEMS:
                break
            yield f"[{key!r}]", value


_FIELD_DESCRIPTORS = (types.GetSetDescriptorType, types.MemberDescriptorType)


def _attributes_for_paths(obj: Any) -> dict[str, Any]:
    """What names ``obj``'s reduction arguments in an error's path: its
    ``__dict__``, and the fields its class reads in C or declares for ``match``
    (a template string's ``interpolations``, an ``Interpolation``'s ``value``).
    Read on errors only."""
    try:
        attributes = dict(vars(obj))
    except TypeError:
        attributes = {}
    names: list[Any] = list(getattr(type(obj), "__match_args__", ()) or ())
    for klass in type(obj).__mro__[:-1]:
        names += [
            name
            for name, member in vars(klass).items()
            if type(member) in _FIELD_DESCRIPTORS and not name.startswith("__")
        ]
    for name in names:
        if type(name) is str and name not in attributes:
            try:
                attributes[name] = getattr(obj, name)
            except Exception:
                continue
    return attributes


def _state_pieces(state: Any) -> Iterator[tuple[str, Any]]:
    if (
        isinstance(state, tuple)
        and len(state) == 2
        and (state[0] is None or isinstance(state[0], dict))
    ):
        dict_state, slot_state = state
    else:
        dict_state, slot_state = state, None
    for part in (dict_state, slot_state):
        if isinstance(part, dict):
            for key, value in part.items():
                yield (
                    (f".{key}" if isinstance(key, str) and key.isidentifier() else f"[{key!r}]"),
                    value,
                )
        elif part is not None:
            yield ".__getstate__()", part


def defaultdict_pieces(
    obj: collections.defaultdict[Any, Any], reduction: Any = None
) -> Iterator[tuple[str, Any]]:
    yield ".default_factory", obj.default_factory
    for key, value in obj.items():
        yield f"[{key!r}]", value
