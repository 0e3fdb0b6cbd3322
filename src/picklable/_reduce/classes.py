"""Classes: by name where they can be imported, else by value.

A class importable by its own name goes by reference, as with pickle; so do
built-in types that no module exports under their own name but that the
locator finds (``types.FunctionType`` is ``builtins.function``), and extension
types whose ``__module__`` lies (wrapt's C types say ``builtins``).

A class by value becomes a skeleton made by :func:`_reconstruct._make_class`
(name, bases, metaclass, ``__slots__``) and its attributes, set once it is
memoized (pickle's BUILD, through ``_class_setstate``). It carries a tracker id
(:mod:`picklable._tracker`): back in the process that defined it, it is the
original class again. Deterministic payloads take the id from the context's
``canonical`` policy instead of a random one.
"""

from __future__ import annotations

import abc
import sys
import types
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .. import _caches, _locator, _reconstruct, _tracker
from .._compat import (
    CLASSDICT_CELL,
    CLASSDICT_SCOPES,
    MAIN_MODULES,
    class_module,
    class_namespace,
    is_heap_type,
    written_in_c,
)
from .._layout import declared_slots, mangled
from ..exceptions import PicklingError
from .builtins import copied_parameters
from .reference import reference
from .registry import ships_by_value
from .scripts import guard_rebinds, note_copy, same_in_workers, script_location, script_reference

if TYPE_CHECKING:
    from .context import DumpContext
    from .state import PayloadState

__all__ = [
    "class_by_value",
    "class_pieces",
    "classdict_cell",
    "locate_misnamed_type",
    "reduce_class",
]

# Built-in types no module exports under their own name (types.FunctionType is
# 'builtins.function'): id -> (type, reduction). Static types never die.
_builtin_type_refs: dict[int, tuple[type, Any]] = {}


def _seed_builtin_refs() -> None:
    # type(f) of a function every by-value payload names anyway: loads in C,
    # where types.FunctionType would need a Python frame (_resolve).
    _builtin_type_refs.clear()
    _builtin_type_refs[id(types.FunctionType)] = (
        types.FunctionType,
        (type, (_reconstruct._make_function,)),
    )
    _builtin_type_refs[id(types.CellType)] = (
        types.CellType,
        (type, (_reconstruct._make_cell(),)),
    )


_seed_builtin_refs()
_caches.register("classes.builtin_type_refs", _seed_builtin_refs)


def reduce_class(context: DumpContext, cls: type) -> Any:
    """The rule for a class: own name, located path, misnamed type, else a copy."""
    # As for functions, classes in the by_name cache never get here.
    if type(cls) in context.table:
        # Its metaclass has a reducer (copyreg.pickle, as numpy's dtype classes):
        # pickle's own way. Remembered when its own name also finds it, as
        # pickle's save_global would under a table without that reducer: then
        # the answer holds for every pickler (numpy.dtype, once per array).
        module = getattr(cls, "__module__", None)
        if (
            module not in MAIN_MODULES
            and not ships_by_value(module)
            and _locator.importable_by_own_name(cls)
        ):
            _locator.remember_by_name(cls)
        return NotImplemented
    known = _builtin_type_refs.get(id(cls))
    if known is not None and known[0] is cls:
        return known[1]
    module = class_module(cls)
    if module == "builtins" and cls.__dict__.get("__qualname__") is None:
        builtins = sys.modules["builtins"]
        if getattr(builtins, cls.__name__, None) is cls:
            # Remembered as any class found by its own name: the hook then
            # answers it at once (``int`` in a function's annotations, per dump).
            _locator.remember_by_name(cls)
            return NotImplemented
    if module in MAIN_MODULES:
        if context.scripts != "copy":
            where = script_location(cls, module)
            alone = None if where is None else script_reference(context, cls, *where)
            if alone is not None:
                return alone
            note_copy(context)
        # Its origin travels with it: a receiver running the same script uses its own.
        return class_by_value(context, cls)
    if ships_by_value(module):
        return class_by_value(context, cls)
    if _locator.importable_by_own_name(cls):
        _locator.remember_by_name(cls)
        return NotImplemented
    located = _locator.locate(cls)
    if located is not None:
        reduction = reference(context, cls, *located)
        if not is_heap_type(cls) and context.protocol >= 4:
            _builtin_type_refs[id(cls)] = (cls, reduction)
        return reduction
    misnamed = locate_misnamed_type(cls)
    if misnamed is not None:
        return reference(context, cls, *misnamed)
    if written_in_c(cls):  # no copy of a C type can be made (even a heap type)
        name = f"{module}.{cls.__qualname__}"
        raise PicklingError(
            f"Cannot pickle class {name}: it is a built-in type that no module exports.",
            type_name=name,
            reason="built-in type that no module exports",
            hint="ship an instance or a function that refers to it instead",
        )
    return class_by_value(context, cls)


# ------------------------------------------------- misnamed extension types

# type -> where it lives, or None; weak: a heap type may die.
_misnamed: weakref.WeakKeyDictionary[type, tuple[str, tuple[str, ...]] | None] = (
    weakref.WeakKeyDictionary()
)
_caches.register("classes.misnamed", _misnamed.clear)


def locate_misnamed_type(cls: type) -> tuple[str, tuple[str, ...]] | None:
    """Where an extension type lives when its ``__module__`` does not say.

    wrapt's C types report ``__module__ == 'builtins'`` (wrapt 1.x) or
    ``'_wrappers'`` (wrapt 2.x, really ``wrapt._wrappers``); the classes of a
    ``__main__`` wrapper subclass, and the globals of any wrapt function copied by
    value, name them. Only types that stdlib's lookup and the locator missed get
    here, and only those whose module is a lie (``builtins``, or a name that is
    not an imported module).

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
    if type(name) is not str or type(qualname) is not str:
        return None
    if type(claimed) is not str:
        # No module name at all (wrapt's pure-Python proxies: a property): the
        # module its body's functions name, else any module that has it.
        defined_in = class_module(cls)
        if defined_in is not None and defined_in not in MAIN_MODULES:
            path = tuple(qualname.split("."))
            found: Any = sys.modules.get(defined_in)
            for part in path:
                found = getattr(found, part, None)
            if found is cls:
                return defined_in, path
        claimed = "builtins"
    if qualname != name:
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
        if module is None or module_name in MAIN_MODULES:
            continue
        try:
            if getattr(module, name, None) is cls:
                return module_name, (name,)
        except Exception:
            continue
    return None


# ------------------------------------------------------------------ by value

# Made by ``type`` itself for every class; never shipped.
_CLASS_SKIP = frozenset(
    {
        "__dict__",
        "__weakref__",
        "__module__",
        "__qualname__",
        "__doc__",
        "__slots__",
        "_abc_impl",
        "__orig_bases__",  # in the skeleton
    }
)
# What type's own setters take (``setattr(cls, "__name__", x)`` renames the
# class) or refuse (read-only): a class body that defines one of these (wrapt's
# pure-Python ObjectProxy makes __name__ a property) has it in its namespace
# from the start, in the skeleton's.
_TYPE_SETS_ELSEWHERE = frozenset(
    name
    for name, descriptor in vars(type).items()
    if hasattr(type(descriptor), "__set__")
    # These setters store the value in the class's namespace, as BUILD should.
    and name not in {"__module__", "__doc__", "__dict__", "__abstractmethods__", "__annotations__"}
    and name not in {"__type_params__", "__annotate__"}
)
_ENUM_SKIP = frozenset(
    {
        "_member_names_",
        "_member_map_",
        "_value2member_map_",
        "_unhashable_values_",
        "_member_type_",
        "_new_member_",
        "_use_args_",
        "_value_repr_",
        "__new__",
        "_generate_next_value_",
    }
)

# What enum itself keeps on a member (3.11 to 3.15).
_MEMBER_OWN = frozenset({"_value_", "_name_", "__objclass__", "_sort_order_"})


def _class_attributes(
    cls: type, payload: PayloadState, skip: frozenset[str] = frozenset()
) -> dict[str, Any]:
    namespace = cls.__dict__
    slots = slot_names(cls)
    attributes = {}
    slotnames_cache = "__slotnames__" in namespace and copyreg_cache(cls)
    for key, value in namespace.items():
        if key in _CLASS_SKIP or key in skip or key in _TYPE_SETS_ELSEWHERE:
            continue
        if key in slots and isinstance(value, types.MemberDescriptorType):
            continue
        if slotnames_cache and key == "__slotnames__":
            continue
        attributes[payload.name(key)] = value  # see PayloadState.name
    module = namespace.get("__module__")
    if module is not None and type(module) is not str and "__module__" not in skip:
        # A descriptor there (a proxy class showing its wrapped object's module):
        # the skeleton has the class statement's string, this comes after.
        attributes["__module__"] = module
    return attributes


def slot_names(cls: type) -> set[str]:
    """The names under which ``cls``'s own ``__slots__`` put their descriptors in
    its namespace (which the copy leaves out: its ``__slots__`` makes them)."""
    # Private slot names are mangled in the class dict.
    return {mangled(cls, slot) for slot in declared_slots(cls)}


def copyreg_cache(cls: type) -> bool:
    """Whether ``cls.__slotnames__`` is the ``[]`` that copyreg caches on a class
    without slots the first time one of its instances is pickled (by pickle as by
    picklable): the receiver's copyreg works it out again, so the copy leaves it
    out, and a class's payload does not depend on whether an instance of it was
    pickled before. Kept where a class of its MRO has ``__slots__``."""
    value = cls.__dict__["__slotnames__"]
    if type(value) is not list or value:
        return False
    return not any("__slots__" in klass.__dict__ for klass in cls.__mro__[:-1])


def _abc_registry(cls: type) -> list[type]:
    if not isinstance(cls, abc.ABCMeta):
        return []
    try:
        registry = abc._get_dump(cls)[0]  # type: ignore[attr-defined]
    except Exception:
        return []
    found = [ref() for ref in registry]
    # The registry is a set of weak references: its order is per process.
    return sorted(
        (c for c in found if c is not None), key=lambda c: (str(c.__module__), str(c.__qualname__))
    )


def script_origin(cls: type) -> Any:
    """Where a class of the script lives, for a receiver running the same script
    to use its own class; None when the script's main guard rebinds its name
    or a global its methods read (the receiver's would compute another thing).
    A spawn worker's class (``__mp_main__``: it never ran the guard) is the
    parent's, coming home, unless the parent's guard binds another class under
    its name (read as far as it can be: an unreadable guard, as pickle)."""
    origin = _tracker.origin(cls)
    if origin is None:
        return None
    path = tuple(cls.__qualname__.split("."))
    if cls.__module__ == "__mp_main__":
        return None if guard_rebinds(cls.__module__, path[0]) else origin
    if not same_in_workers(cls, origin[0], path):
        return None
    return origin


def _made_in_c(metaclass: type) -> type | None:
    """The class of ``metaclass``'s MRO (``type`` excepted) whose ``__new__`` or
    ``__init__`` is C code, or None: such a metaclass makes the class from its
    class statement (its body and keywords) in ways no copy can see or give it
    again (msgspec's ``StructMeta`` makes ``__slots__`` itself and refuses a
    namespace with them; ctypes' ``PyCStructType`` lays out ``_fields_``)."""
    for klass in metaclass.__mro__:
        if klass is type:
            return None
        own = vars(klass)
        if ("__new__" in own or "__init__" in own) and written_in_c(klass):
            return klass
    return None


def class_by_value(context: DumpContext, cls: type) -> tuple[Any, ...]:
    """Reduce a class by value: skeleton first, attributes once memoized."""
    metaclass = type(cls)
    module = class_module(cls)
    if module is None and "__module__" not in cls.__dict__:
        # type() called where no module name was at hand (an eval or exec whose
        # globals lack __name__): the copy's type() would give it one.
        raise PicklingError(
            f"Cannot pickle class {cls.__qualname__}: it has no __module__ (made by type() "
            "in an eval or exec whose globals lack __name__), so no copy of it can be exact. "
            f"Fix: give it one ({cls.__qualname__}.__module__ = 'its_module', or "
            "'__module__' in type()'s namespace).",
            type_name=cls.__qualname__,
            reason="class without __module__",
            hint="give the class a __module__",
        )
    if metaclass is not type:
        maker = _made_in_c(metaclass)
        if maker is not None:
            name = f"{cls.__module__ if module is None else module}.{cls.__qualname__}"
            meta = f"{maker.__module__}.{maker.__qualname__}"
            raise PicklingError(
                f"Cannot pickle class {name} by value: its metaclass {meta} makes the class "
                "in C code from its class statement (body and keywords), which a copy cannot "
                f"give it again exactly. Fix: define {cls.__qualname__} in a module the "
                "receiver imports (it then goes by reference, as with pickle).",
                type_name=name,
                reason=f"class made by the C metaclass {meta}",
                hint=f"define {cls.__qualname__} in an importable module",
            )
    payload = context.state()
    payload.bound = True  # first_value stays NOT_FIRST: making a class runs code
    copied_parameters(cls.__dict__.get("__type_params__", ()))  # class C[T]: with this copy
    # The payload's copies (see PayloadState.name): a class loaded from an earlier
    # payload keeps that payload's __module__, its functions this one's.
    origin = script_origin(cls)
    if origin is not None:
        # The origin's module name is the payload's copy of it (the namespace's
        # __module__, its methods' origins): written once.
        # Its qualname too: the namespace's __qualname__, its methods' paths.
        origin = (payload.adopt(origin[0]), payload.name(origin[1]), *origin[2:])
    namespace: dict[str, Any] = {
        # The class statement's own string (wrapt's metaclass puts its property back).
        "__module__": payload.name(cls.__module__ if module is None else module),
        "__qualname__": payload.name(cls.__qualname__),
    }
    doc = cls.__dict__.get("__doc__")
    if doc is not None:
        namespace["__doc__"] = doc
    if "__slots__" in cls.__dict__:
        namespace["__slots__"] = cls.__dict__["__slots__"]
    if "__orig_bases__" in cls.__dict__:
        # Generic.__init_subclass__ reads it while the class is created: a
        # class C(Generic[T]) made without it is refused ("Cannot inherit
        # from plain Generic") in a process that never saw C.
        namespace["__orig_bases__"] = cls.__dict__["__orig_bases__"]
    for key in sorted(_TYPE_SETS_ELSEWHERE.intersection(cls.__dict__)):
        namespace[key] = cls.__dict__[key]
    cell = None
    if CLASSDICT_SCOPES:
        cell = payload.take_classdict_cell(id(class_namespace(cls))) or classdict_cell(cls)
    if cell is not None:
        # The class's annotation scopes (3.14: every __annotate__ of its body)
        # read its namespace through this cell: type() fills the copy's with
        # the copy's namespace, as it did the original's (the cell itself
        # ships empty; see functions.function_by_value).
        namespace["__classdictcell__"] = cell
        payload.fill_class_cell(id(cell), cls)
    canonical = context.canonical
    tracker_id = _tracker.id_of(cls) if canonical is None else canonical.class_id(cls)
    enum = sys.modules.get("enum")
    if enum is not None and isinstance(cls, enum.EnumMeta):
        members = {name: member._value_ for name, member in cls.__members__.items()}
        attributes = _class_attributes(cls, payload, _ENUM_SKIP | set(members))
        # Made from their values alone (the class's __init__ and __new__ come
        # after, with its other attributes): what those set on each member, or
        # the program since, comes with the class's state.
        own = {
            name: extra
            for name, member in cls.__members__.items()
            if (extra := {k: v for k, v in vars(member).items() if k not in _MEMBER_OWN})
        }
        return (
            _reconstruct._make_enum,
            (
                metaclass,
                cls.__name__,
                cls.__bases__,
                namespace,
                members,
                tracker_id,
                origin,
            ),
            (attributes, _abc_registry(cls), own) if own else (attributes, _abc_registry(cls)),
            None,
            None,
            _reconstruct._class_setstate,
        )
    return (
        _reconstruct._make_class,
        (
            metaclass,
            payload.name(cls.__name__),
            _skeleton_bases(cls),
            namespace,
            tracker_id,
            origin,
        ),
        (_class_attributes(cls, payload), _abc_registry(cls)),
        None,
        None,
        _reconstruct._class_setstate,
    )


def _skeleton_bases(cls: type) -> tuple[Any, ...]:
    """The bases the copy is made from: its own, or, for a class a metaclass made
    (types.new_class resolves them), the ones its class statement named: a
    TypedDict's metaclass makes it a dict subclass, and refuses dict as a base."""
    metaclass = type(cls)
    if metaclass is not type:
        named = cls.__dict__.get("__orig_bases__")
        if type(named) is tuple and named:
            return named
        if metaclass.__name__ == "_TypedDictMeta":
            # Python 3.11 keeps no __orig_bases__ on a TypedDict whose bases are
            # TypedDicts (class Rated(Movie, total=False)): it is made from its
            # module's TypedDict, its keys (all its bases') set as attributes.
            typed_dict = getattr(sys.modules.get(metaclass.__module__), "TypedDict", None)
            if typed_dict is not None:
                return (typed_dict,)
    return cls.__bases__


def classdict_cell(cls: type) -> types.CellType | None:
    """The cell through which the annotation scopes of ``cls``'s body read its
    namespace (Python 3.12+: one per class body, shared by them all), found in
    the functions of its namespace and their ``__annotate__``; None without one."""
    if not CLASSDICT_SCOPES:
        return None
    namespace = class_namespace(cls)
    for value in namespace.values():
        for func in _body_functions(value):
            code = func.__code__
            if CLASSDICT_CELL not in code.co_freevars:
                continue
            cell = func.__closure__[code.co_freevars.index(CLASSDICT_CELL)]  # type: ignore[index]
            try:
                if cell.cell_contents is namespace:
                    return cell
            except ValueError:
                continue
    return None


def _body_functions(value: Any) -> Iterator[types.FunctionType]:
    """Functions a class body's entry holds (itself, a classmethod's or
    property's functions), their ``__annotate__`` (3.14), and the functions
    their closures hold, one level down: a metaclass's wrapper around the body's
    own ``__annotate__`` (3.14's TypedDict) reads the namespace through it."""
    if type(value) is types.FunctionType:
        found: tuple[Any, ...] = (value,)
    elif isinstance(value, (classmethod, staticmethod)):
        found = (value.__func__,)
    elif isinstance(value, property):
        found = (value.fget, value.fset, value.fdel)
    else:
        return
    for func in found:
        if type(func) is types.FunctionType:
            yield func
            annotate = getattr(func, "__annotate__", None)
            if type(annotate) is types.FunctionType:
                yield annotate
            for cell in func.__closure__ or ():
                try:
                    inner = cell.cell_contents
                except ValueError:  # an empty cell
                    continue
                if type(inner) is types.FunctionType:
                    yield inner


def class_pieces(cls: type, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    """What a copy of ``cls`` ships: its namespace, named as attributes."""
    for key, value in list(vars(cls).items()):
        if key not in ("__dict__", "__weakref__"):
            yield f".{key}", value
