"""What picklable's rebuilders do with what a payload gives them, checked before
they run under an allow-list (``picklable._allow``).

A rebuilder is picklable's own code, but some of them call, bind or build from
their arguments: a copy's builder with its arguments, a state setter, a
descriptor's ``__get__``, a class's ``__init__``, ``singledispatch``'s
``register`` (which evaluates the annotations of what it is given when that is
no class). Each such use is held to what the unpickler allows any call: what
is called with what the payload chose is checked as a ``REDUCE`` of it would be
(``GuardedUnpickler.check_call``), no module is handed to code that may write
into it, no class that may not be called with the payload's arguments is handed
to what will call it (a cache wrapper's function, a property's getter, the
dunders Python calls on a payload's class), and the classes a rebuilder
instantiates are the kind it rebuilds. The state rebuilders (:data:`STATE_CHECKS`)
set no ``__dict__`` or ``__class__``, call their setter as a ``REDUCE`` would, and
register with a payload's class only classes the payload built. A rebuilder
missing from both (a cell, a dict view, a memoryview, a module in memory, a
traceback, a type variable) stores what it is given or checks it itself.
"""

from __future__ import annotations

import functools
import operator
import sys
import types
import typing
from collections.abc import Callable
from typing import Any

from . import _reconstruct, _tracker
from ._compat import MAIN_MODULES, wrapt_proxy_roots
from ._reconstruct import WRAPT_FIELDS

__all__ = [
    "CALL_CHECKS",
    "STATE_CHECKS",
    "called_dunders",
    "no_attribute_swap",
    "refuse_taken_place",
]

# (the guarded unpickler, the rebuilder's arguments by name, what is loaded)
Check = Callable[[Any, dict[str, Any], str], None]

# Attributes whose assignment replaces what an object is (its class) or where
# its attributes live (its __dict__: one handed out by another object would
# take the writes meant for this one). No payload of picklable's, pickle's or
# any class's own reduction sets them.
_SWAPS = frozenset({"__dict__", "__class__"})
# Attributes C code reads from an instance as a description of memory by its
# address (numpy's array interface, and CUDA's): set from a payload, the
# receiver's next np.asarray(obj) reads or writes wherever the address points.
_RAW_MEMORY = frozenset({"__array_interface__", "__array_struct__", "__cuda_array_interface__"})

# What binding leaves as it is, or makes a bound method of: nothing runs.
_BINDS_ONLY = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.ClassMethodDescriptorType,
    classmethod,
    staticmethod,
)


_wrapped = operator.attrgetter("__wrapped__")


def _refuse(load: Any, what: str, why: str) -> Exception:
    exc: Exception = load.policy.refuse(what, None, why)
    return exc


def _no_module(*names: str) -> Check:
    """No module among the arguments ``names`` (nor in containers in them)."""

    def check(load: Any, arguments: dict[str, Any], what: str) -> None:
        load.no_module_in([arguments.get(name) for name in names], f"the arguments of {what}")

    return check


def _subclass_of(name: str, base: Callable[[], tuple[type, ...] | type]) -> Check:
    """The argument ``name`` is a class deriving from what ``base()`` gives."""

    def check(load: Any, arguments: dict[str, Any], what: str) -> None:
        cls = arguments.get(name)
        bases = base()
        if not (isinstance(cls, type) and bases and issubclass(cls, bases)):
            raise _refuse(load, what, f"it builds a {_named(bases)} from {cls!r}, which is none")

    return check


def _named(bases: tuple[type, ...] | type) -> str:
    if isinstance(bases, type):
        bases = (bases,)
    return " or ".join(f"{b.__module__}.{b.__qualname__}" for b in bases) or "wrapt proxy"


def _no_refused_class(*names: str) -> Check:
    """No class that may not be called with arguments the payload chose (see
    ``GuardedUnpickler.no_constructor_in``) among the arguments ``names``: what
    the rebuilder makes calls them (a cache wrapper its function, a property
    its getter, a copy its attributes' methods)."""

    def check(load: Any, arguments: dict[str, Any], what: str) -> None:
        given = [arguments.get(name) for name in names]
        load.no_constructor_in(given, None, what, what)

    return check


def _both(*checks: Check) -> Check:
    def check(load: Any, arguments: dict[str, Any], what: str) -> None:
        for each in checks:
            each(load, arguments, what)

    return check


def _own_or_copy(load: Any, arguments: dict[str, Any], what: str) -> None:
    """This process's own object compared with the sender's state, or copied
    with it: only an object the payload reached by name or made (never one a
    call returned), a state that sets no ``__dict__`` or ``__class__`` and
    holds no class its copy's methods may not call."""
    obj = arguments.get("obj")
    if not load.named_or_made(obj):
        raise _refuse(
            load, what, "what it compares and copies was neither reached by name nor made here"
        )
    state = arguments.get("state")
    no_attribute_swap(load, state, what)
    load.no_constructor_in([state], None, what, what)
    links = arguments.get("links")
    if links:
        _links_are_copies(load, obj, links, what)


def _links_are_copies(load: Any, obj: Any, links: Any, what: str) -> None:
    """The globals a copy of ``obj``'s function reads instead of its module's:
    only copies this payload made of the module's own objects (what the sender's
    state made of them), never another object under the name (any admitted
    callable would run where the module's code calls its own)."""
    func = _reconstruct.home_function(obj)
    home = func.__globals__ if func is not None else {}
    if type(links) is not dict:
        raise _refuse(load, what, "its links are not a dict of names")
    for name, value in links.items():
        if type(name) is not str or not (home.get(name) is value or load.made_copy(value)):
            raise _refuse(
                load,
                what,
                f"it makes {_name_of_function(func)} read {name!r} from the payload, and what "
                "the payload gives there is no copy it made of the module's own object",
            )


def _name_of_function(func: Any) -> str:
    return "a copy of its function" if func is None else f"a copy of {func.__qualname__}"


def _script_or_build(load: Any, arguments: dict[str, Any], what: str) -> None:
    """The copy's ``builder(*args)``: as a REDUCE of it is checked."""
    builder, args = arguments.get("builder"), arguments.get("args")
    if type(args) is not tuple:
        raise _refuse(load, what, "its builder's arguments are not a tuple")
    load.check_call(builder, args, f"the copy {what} builds")
    no_attribute_swap(load, arguments.get("carried"), what)


def _bind_descriptor(load: Any, arguments: dict[str, Any], what: str) -> None:
    """``descriptor.__get__(instance, owner)``: only a wrapper (picklable's or
    wrapt's) bound again, whose innermost object binds without running
    anything (a function, a method, a classmethod), and no module bound."""
    load.no_module_in([arguments.get("instance"), arguments.get("owner")], what)
    descriptor = arguments.get("descriptor")
    # Wrapper classes: wrapt's proxies, picklable.decorator's (none exists before
    # that module is imported; it sits above this one).
    wrappers = wrapt_proxy_roots()
    decorators = sys.modules.get("picklable._decorators")
    if decorators is not None:
        wrappers = (*wrappers, decorators.Wrapper)
    inner: Any = descriptor
    for _ in range(16):
        if not (wrappers and isinstance(inner, wrappers)):
            break
        inner = _wrapped(inner)
    if inner is descriptor:
        raise _refuse(
            load, what, f"it binds a {type(descriptor).__qualname__}: only wrappers are bound again"
        )
    if not isinstance(inner, _BINDS_ONLY) and hasattr(type(inner), "__get__"):
        raise _refuse(
            load,
            what,
            f"the wrapper wraps a {type(inner).__qualname__}, whose binding runs code "
            "(a property's getter, a cached_property's write into the instance)",
        )


def _function_wrapper(load: Any, arguments: dict[str, Any], what: str) -> None:
    fields = arguments.get("fields")
    if type(fields) is not dict or not set(fields) <= set(WRAPT_FIELDS):
        raise _refuse(load, what, f"its fields are not wrapt's ({', '.join(WRAPT_FIELDS)})")


def _is_dispatch_key(cls: Any) -> bool:
    """What ``singledispatch`` registers without reading annotations: a class,
    or a union of classes."""
    if isinstance(cls, type):
        return True
    if isinstance(cls, types.UnionType) or typing.get_origin(cls) is typing.Union:
        return all(isinstance(arg, type) for arg in typing.get_args(cls))
    return False


def _singledispatch(load: Any, arguments: dict[str, Any], what: str) -> None:
    """``register(cls, implementation)`` evaluates the string annotations of
    ``cls`` when it is no class (``typing.get_type_hints``): only classes and
    unions of them, each with its implementation; what it calls (the base
    function, the implementations) is no class it may not call."""
    registrations: Any = arguments.get("registrations")
    if type(registrations) not in (list, tuple):
        raise _refuse(load, what, "its registrations are not a list")
    called = [arguments.get("base")]
    called += [entry[1] for entry in registrations if type(entry) is tuple and len(entry) == 2]
    load.no_constructor_in(called, None, what, what)
    for entry in registrations:
        if type(entry) is not tuple or len(entry) != 2:
            raise _refuse(load, what, "a registration is not a (class, function) pair")
        cls, implementation = entry
        if not _is_dispatch_key(cls) or not callable(implementation):
            raise _refuse(
                load,
                what,
                f"it registers {cls!r}: singledispatch registers classes (and unions of "
                "them) with a function; anything else has its annotations evaluated",
            )


def _module_namespace(load: Any, arguments: dict[str, Any], what: str) -> None:
    """A module built in memory: the dunders Python calls on it (``__getattr__``
    for any missing name, ``__dir__``) hold no class that may not be called with
    the payload's arguments, and, without by-value code, nothing made of parts."""
    namespace = arguments.get("namespace")
    if type(namespace) is dict:
        dunders = called_dunders(namespace)
        load.no_constructor_in(dunders, None, what, what)
        refuse_composed_dunder(load, dunders, what)


CALL_CHECKS: dict[str, Check] = {
    "_make_module": _module_namespace,
    "_script_or_build": _script_or_build,
    "_bind_descriptor": _bind_descriptor,
    "_make_wrapt_proxy": _both(
        _subclass_of("cls", wrapt_proxy_roots), _no_module("wrapped"), _no_refused_class("wrapped")
    ),
    "_make_wrapt_function_wrapper": _both(
        _subclass_of("cls", wrapt_proxy_roots),
        _function_wrapper,
        _no_module("wrapped", "fields"),
        _no_refused_class("wrapped", "fields"),
    ),
    "_make_lru_cache": _both(_no_module("wrapped"), _no_refused_class("wrapped")),
    "_make_recursive_repr": _both(_no_module("wrapped"), _no_refused_class("wrapped")),
    "_make_singledispatch": _both(_singledispatch, _no_module("base", "registrations")),
    "_make_cached_property": _subclass_of("cls", lambda: functools.cached_property),
    "_make_property": _both(
        _subclass_of("cls", lambda: property), _no_refused_class("fget", "fset", "fdel")
    ),
    "_make_partialmethod": _no_refused_class("func", "args", "keywords"),
    "_own_or_copy": _own_or_copy,
    "_with_state": _own_or_copy,
}


def no_attribute_swap(load: Any, state: Any, what: str) -> None:
    """Refuse a state (a ``__dict__``, a ``(__dict__, slots)`` pair, a dict of
    fields) that sets ``__dict__`` or ``__class__``: set on an object, they make
    it write into another's dict, or be another class; or an array interface
    (``__array_interface__``), whose address numpy would follow."""
    dicts = state if type(state) is tuple else (state,)
    for mapping in dicts:
        if type(mapping) is not dict:
            continue
        if not _SWAPS.isdisjoint(mapping):
            key = next(k for k in mapping if k in _SWAPS)
            raise _refuse(load, what, f"it sets {key}, which no object's state holds")
        _no_raw_memory(load, mapping, what, "it sets", "the object is used as an array")


def _no_raw_memory(load: Any, mapping: dict[Any, Any], what: str, sets: str, used: str) -> None:
    """Refuse ``mapping`` (a state, a class's namespace) if it holds an array
    interface (see _RAW_MEMORY); ``sets`` and ``used`` word the message."""
    if not _RAW_MEMORY.isdisjoint(mapping):
        key = next(k for k in mapping if k in _RAW_MEMORY)
        raise _refuse(
            load,
            what,
            f"{sets} {key}, a description of memory by its address that numpy follows when {used}",
        )


def _setter_state(target: str) -> Check:
    """``(inner, setter, ...)``: ``setter(target, inner)`` checked as a REDUCE of
    it is, and ``inner`` and the fields set no ``__dict__`` nor ``__class__``."""

    def check(load: Any, arguments: dict[str, Any], what: str) -> None:
        state = arguments.get("state")
        if type(state) is not tuple or len(state) != 3:
            return  # the rebuilder refuses a malformed state itself
        inner, setter, rest = state
        if setter is not None:
            load.check_call(setter, (arguments.get(target), inner), f"the state setter of {what}")
        no_attribute_swap(load, inner, what)
        no_attribute_swap(load, rest, what)

    return check


def _instance_state(load: Any, arguments: dict[str, Any], what: str) -> None:
    no_attribute_swap(load, arguments.get("state"), what)


# A class's dunders that hold data, never called by Python on its own.
_DATA_DUNDERS = frozenset(
    {
        "__module__",
        "__qualname__",
        "__doc__",
        "__slots__",
        "__annotations__",
        "__orig_bases__",
        "__parameters__",
        "__type_params__",
        "__match_args__",
        "__static_attributes__",
        "__firstlineno__",
        "__dataclass_fields__",
        "__dataclass_params__",
        "__abstractmethods__",
        "__classdictcell__",
        "__weakref__",
        "__dict__",
        # Enum's own (the sender leaves them out; a mixin type is data here)
        "_member_type_",
        "_member_names_",
        "_member_map_",
        "_value2member_map_",
        "_unhashable_values_",
        "_ignore_",
        "_order_",
    }
)


def called_dunders(namespace: dict[str, Any]) -> list[Any]:
    """The values of a class's namespace that Python or a library calls on its
    own: its dunders (``__init__``, ``__call__``, ``__getattr__``, operators...)
    and sunders (Enum's ``_missing_``, ``_generate_next_value_``): a class there
    runs its constructor with arguments no one chose to give it."""
    return [
        value
        for key, value in namespace.items()
        if type(key) is str
        and len(key) > 2
        and key.startswith("_")
        and key.endswith("_")
        and key not in _DATA_DUNDERS
    ]


# What a class's called dunder may be in a payload without by-value code: C
# methods and functions (the latter refused there anyway), descriptors of C.
_PLAIN_DUNDER_TYPES = frozenset(
    {
        types.FunctionType,
        types.BuiltinFunctionType,
        types.WrapperDescriptorType,
        types.MethodDescriptorType,
        types.ClassMethodDescriptorType,
        types.MethodWrapperType,
        types.GetSetDescriptorType,
        types.MemberDescriptorType,
    }
)


def composed_dunder(values: list[Any], inert: frozenset[type] = frozenset()) -> Any:
    """The first of a class's called dunders (:func:`called_dunders`) that is a
    callable or a descriptor made of other objects (a partial, an itemgetter,
    a property, a bound method, a callable instance), or None. Python calls a
    dunder from C (``iter()`` calls ``__iter__``): a chain of such objects through
    the payload's own instances recurses there without a check, a crash.
    ``inert``: types of stand-ins that refuse when called."""
    for held in values:
        value = held.__func__ if type(held) in (staticmethod, classmethod) else held
        kind = type(value)
        if value is None or isinstance(value, type) or kind in _PLAIN_DUNDER_TYPES or kind in inert:
            continue
        if hasattr(type(value), "__get__") or callable(value):
            return value
    return None


def refuse_composed_dunder(load: Any, values: list[Any], what: str) -> None:
    """Without by-value code, a class the payload builds has no code of its own:
    its called dunders are data or C (see :func:`composed_dunder`)."""
    if load.policy.by_value_code:
        return  # its functions run whatever they like: nothing more to keep out
    value = composed_dunder(values, load.inert_types)
    if value is not None:
        raise _refuse(
            load,
            what,
            f"a special method of the class is a {type(value).__qualname__}, which Python "
            "would call from C on its instances (such objects chained through the "
            "payload's own can recurse there without a check: a crash)",
        )


# Hooks that code of this process calls on a class's behalf: an ABC's
# issubclass() asks every subclass's __subclasshook__, and caches the answer.
_CLASS_HOOKS = ("__subclasshook__", "__instancecheck__", "__subclasscheck__")


def refuse_class_hooks(load: Any, namespace: dict[str, Any], what: str) -> None:
    """Without by-value code, a class the payload builds answers no one's
    ``issubclass`` or ``isinstance``: a builtin as its ``__subclasshook__``
    (``callable``) under ``collections.abc.Mapping`` made every class a Mapping
    for the whole process; nor describes memory to numpy (see _RAW_MEMORY)."""
    if load.policy.by_value_code:
        return
    for name in _CLASS_HOOKS:
        if name in namespace:
            raise _refuse(
                load,
                what,
                f"the class defines {name}, which this process's issubclass() and "
                "isinstance() would call for its bases (an ABC caches the answers)",
            )
    _no_raw_memory(load, namespace, what, "the class defines", "its instances are used as arrays")


def refuse_taken_place(load: Any, module: Any, qualname: Any, name: Any, what: str) -> None:
    """Refuse a class the payload builds whose names (``__module__``,
    ``__qualname__``, ``__name__``) are instances of a subclass of ``str`` (which
    print as the names they spell, and skip the check below), or which claims a
    place (module + qualname) where this process has an object of its own,
    other than one built from a payload: equal in name, it would pass for that
    object (``str``, hashes, caches keyed by them: pandas' ``PeriodDtype``
    cached a payload's ``Day``). Read from the namespaces alone (no import, no
    ``__getattr__``); a script's places are its copies' to share."""
    for label, value in (("__module__", module), ("__qualname__", qualname), ("__name__", name)):
        if isinstance(value, str) and type(value) is not str:
            kind = type(value).__name__
            raise _refuse(
                load, what, f"its {label} is a {kind}, a subclass of str (a class's names are str)"
            )
    occupant = _occupant(module, qualname)
    if occupant is not None:
        raise _refuse(
            load,
            what,
            f"it claims the place of {module}.{qualname}, where this process has its own "
            f"{type(occupant).__name__}: a class made there by the payload would pass for it "
            "(equal names, equal hashes) in the receiver's caches and registries. Load it "
            "without allowed= if the payload is trusted, or ship that module's classes by "
            "reference",
        )


def _occupant(module: Any, qualname: Any) -> Any:
    """The object this process has at ``module`` + ``qualname`` (not one built
    from a payload), or None if the place is free."""
    if type(module) is not str or module in MAIN_MODULES:
        return None
    if type(qualname) is not str or "<" in qualname:
        return None
    found: Any = sys.modules.get(module)
    if found is None:
        return None
    for step in qualname.split("."):
        if not isinstance(found, (type, types.ModuleType)):
            return None
        found = vars(found).get(step, _FREE)
        if found is _FREE:
            return None
    return None if _tracker.built(found) else found


_FREE: Any = object()


def _class_state(load: Any, arguments: dict[str, Any], what: str) -> None:
    """A payload's class gets its attributes (no class in a dunder it calls),
    its virtual subclasses and its Enum members' attributes: a class of this
    process registered with it would answer ``isinstance`` for its bases
    (``collections.abc.Mapping`` would take ``int``) in every module here."""
    state = arguments.get("state")
    if type(state) is not tuple or len(state) not in (2, 3):
        return  # the rebuilder refuses a malformed state itself
    attributes, registered = state[0], state[1]
    if type(attributes) is dict:
        dunders = called_dunders(attributes)
        load.no_constructor_in(dunders, None, what, what)
        refuse_composed_dunder(load, dunders, what)
        refuse_class_hooks(load, attributes, what)
        target = arguments.get("cls")
        if isinstance(target, type):
            load.no_constructor_as_method(target.__mro__[1:], attributes, what)
            if not _CLASS_NAMES.isdisjoint(attributes):
                # Renamed after it was made: the place it then claims.
                refuse_taken_place(
                    load,
                    attributes.get("__module__", target.__module__),
                    attributes.get("__qualname__", target.__qualname__),
                    attributes.get("__name__", target.__name__),
                    what,
                )
    for subclass in registered if type(registered) in (list, tuple) else ():
        if not load.built_class(subclass):
            raise _refuse(
                load,
                what,
                f"it registers {subclass!r} as a virtual subclass: only classes the payload "
                "builds are (a class of this process would then count as an instance of "
                "its bases for everyone here)",
            )


_CLASS_NAMES = frozenset({"__module__", "__qualname__", "__name__"})

STATE_CHECKS: dict[str, Check] = {
    "_class_setstate": _class_state,
    "_exception_setstate": _setter_state("exc"),
    "_built_setstate": _setter_state("obj"),
    "_set_instance_state": _instance_state,
    "_set_proxy_state": _instance_state,
    "_set_state_and_dict": _instance_state,
}

assert set(CALL_CHECKS) | set(STATE_CHECKS) <= set(_reconstruct.REBUILDERS), "rebuilders"
