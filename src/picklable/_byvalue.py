"""Functions and classes shipped by value.

A function becomes::

    REDUCE types.FunctionType(marshal.loads(code_bytes), shipped_globals, name, None, cells)
    BUILD  (func.__dict__, {"__qualname__": _FIRST((qualname, globals.update(refs),
                                                    setattr(cell, "cell_contents", v), ...)),
                            "__module__": ..., "__doc__": ..., "__defaults__": ...})

so loading runs no Python frame per function: ``marshal``, ``FunctionType``,
``CellType``, ``dict.update``, ``setattr`` and pickle's BUILD are all C. Globals
and cell contents are filled from the state, which pickle saves after it has
memoized the function, so recursive functions and closures never recurse while
pickling. Functions of one module share one globals dict per payload, as they
share their module's namespace at home.

A class becomes a skeleton made by :func:`_reconstruct._make_class` (name,
bases, metaclass, ``__slots__``) and its attributes, set once it is memoized.
"""

from __future__ import annotations

import abc
import marshal
import sys
import types
import uuid
from typing import TYPE_CHECKING, Any

from . import _reconstruct
from ._reconstruct import _FIRST, _ID_BY_CLASS, _track

if TYPE_CHECKING:
    from ._pickler import Pickler

_MAIN_MODULES = frozenset({"__main__", "__mp_main__"})
# Importable modules the user asked to ship by value (see register_by_value).
_by_value_modules: set[str] = set()

_setattr = setattr
_dict_update = dict.update

# id(code) -> (code, marshal bytes, names of globals it may read)
_code_cache: dict[int, tuple[types.CodeType, bytes, tuple[str, ...]]] = {}
_CODE_CACHE_LIMIT = 8192


def register_by_value(module: types.ModuleType | str) -> None:
    """Ship functions and classes of ``module`` (and its submodules) by value.

    For code that exists on the sending side only: a module imported from a
    local folder that workers do not have, or a script's helper module.
    """
    name = module if isinstance(module, str) else module.__name__
    if name not in sys.modules:
        raise ValueError(f"{name!r} is not an imported module; import it first")
    _by_value_modules.add(name)


def unregister_by_value(module: types.ModuleType | str) -> None:
    """Undo :func:`register_by_value`."""
    name = module if isinstance(module, str) else module.__name__
    if name not in _by_value_modules:
        raise ValueError(f"{name!r} was not registered with register_by_value()")
    _by_value_modules.discard(name)


def list_registry_by_value() -> list[str]:
    """Names of the modules registered with :func:`register_by_value`."""
    return sorted(_by_value_modules)


def ships_by_value(module_name: Any) -> bool:
    """Whether objects whose ``__module__`` is ``module_name`` must go by value."""
    if module_name in _MAIN_MODULES:
        return True
    if not _by_value_modules or type(module_name) is not str:
        return False
    if module_name in _by_value_modules:
        return True
    return any(module_name.startswith(m + ".") for m in _by_value_modules)


def _global_names(code: types.CodeType) -> tuple[str, ...]:
    names: dict[str, None] = dict.fromkeys(code.co_names)
    stack = [c for c in code.co_consts if isinstance(c, types.CodeType)]
    while stack:
        inner = stack.pop()
        names.update(dict.fromkeys(inner.co_names))
        stack.extend(c for c in inner.co_consts if isinstance(c, types.CodeType))
    return tuple(names)


def code_info(code: types.CodeType) -> tuple[types.CodeType, bytes, tuple[str, ...]]:
    """Marshal bytes and global names of a code object, computed once."""
    info = _code_cache.get(id(code))
    if info is not None and info[0] is code:
        return info
    info = (code, marshal.dumps(code), _global_names(code))
    if len(_code_cache) >= _CODE_CACHE_LIMIT:
        _code_cache.clear()
    _code_cache[id(code)] = info
    return info


def reduce_code(pickler: Pickler, code: types.CodeType) -> tuple[Any, ...]:
    data = code_info(code)[1]
    guard = pickler._interpreter_guard()
    if guard is not None:
        # First code object of this payload: check the interpreter before
        # marshal.loads ever sees bytes from another Python version.
        return (marshal.loads, (_FIRST((data, guard)),))
    return (marshal.loads, (data,))


def reduce_function(pickler: Pickler, func: types.FunctionType) -> tuple[Any, ...]:
    """Reduce a function by value, keeping every piece of its metadata."""
    code = func.__code__
    names = code_info(code)[2]
    home = func.__globals__
    shipped = pickler._shipped_globals(home)
    refs = {}
    for name in ("__name__", "__package__"):
        if name in home:
            refs[name] = home[name]
    for name in names:
        if name in home:
            refs[name] = home[name]
    effects: list[Any] = [_GlobalsUpdate(shipped, refs)]
    closure = func.__closure__
    if closure is not None:
        deferred = pickler._deferred_cells
        for cell in closure:
            deferred.add(id(cell))
            try:
                content = cell.cell_contents
            except ValueError:
                continue  # an empty cell stays empty
            effects.append(_CellFill(cell, content))
    slots: dict[str, Any] = {
        "__qualname__": _Effects(func.__qualname__, effects),
        "__module__": func.__module__,
        "__doc__": func.__doc__,
    }
    if func.__defaults__ is not None:
        slots["__defaults__"] = func.__defaults__
    if func.__kwdefaults__:
        slots["__kwdefaults__"] = func.__kwdefaults__
    if func.__annotations__:
        slots["__annotations__"] = func.__annotations__
    return (
        types.FunctionType,
        (code, shipped, func.__name__, None, closure),
        (func.__dict__ or None, slots),
    )


class _Effects:
    """``value``, after the effects have run at load time (see module doc)."""

    __slots__ = ("value", "effects")

    def __init__(self, value: Any, effects: list[Any]) -> None:
        self.value = value
        self.effects = effects

    def __reduce__(self) -> tuple[Any, ...]:
        return (_FIRST, ((self.value, *self.effects),))


class _GlobalsUpdate:
    __slots__ = ("target", "refs")

    def __init__(self, target: dict[str, Any], refs: dict[str, Any]) -> None:
        self.target = target
        self.refs = refs

    def __reduce__(self) -> tuple[Any, ...]:
        return (_dict_update, (self.target, self.refs))


class _CellFill:
    __slots__ = ("cell", "content")

    def __init__(self, cell: types.CellType, content: Any) -> None:
        self.cell = cell
        self.content = content

    def __reduce__(self) -> tuple[Any, ...]:
        return (_setattr, (self.cell, "cell_contents", self.content))


def reduce_cell(pickler: Pickler, cell: types.CellType) -> tuple[Any, ...]:
    if id(cell) in pickler._deferred_cells:
        return (types.CellType, ())  # filled by the function's state
    try:
        content = cell.cell_contents
    except ValueError:
        return (types.CellType, ())
    return (types.CellType, (), (None, {"cell_contents": content}))


# --------------------------------------------------------------------- classes

# Made by ``type`` itself for every class; never shipped.
_CLASS_SKIP = frozenset(
    {"__dict__", "__weakref__", "__module__", "__qualname__", "__doc__", "__slots__", "_abc_impl"}
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


def tracker_id(cls: type) -> str:
    found = _ID_BY_CLASS.get(cls)
    if found is None:
        found = uuid.uuid4().hex
        _track(cls, found)
    return found


def _origin(cls: type) -> tuple[str, str, str | None] | None:
    module = cls.__module__
    if module not in _MAIN_MODULES:
        return None
    main = sys.modules.get(module)
    return (module, cls.__qualname__, getattr(main, "__file__", None))


def _class_attributes(cls: type, skip: frozenset[str] = frozenset()) -> dict[str, Any]:
    namespace = cls.__dict__
    slots = namespace.get("__slots__", ())
    if isinstance(slots, str):
        slots = (slots,)
    slot_names = set()
    for slot in slots:
        # Private slot names are mangled in the class dict.
        if slot.startswith("__") and not slot.endswith("__"):
            slot = f"_{cls.__name__.lstrip('_')}{slot}"
        slot_names.add(slot)
    attributes = {}
    for key, value in namespace.items():
        if key in _CLASS_SKIP or key in skip:
            continue
        if key in slot_names and isinstance(value, types.MemberDescriptorType):
            continue
        attributes[key] = value
    return attributes


def _abc_registry(cls: type) -> list[type]:
    if not isinstance(cls, abc.ABCMeta):
        return []
    try:
        registry = abc._get_dump(cls)[0]  # type: ignore[attr-defined]
    except Exception:
        return []
    return [ref() for ref in registry if ref() is not None]


def reduce_class(pickler: Pickler, cls: type) -> tuple[Any, ...]:
    """Reduce a class by value: skeleton first, attributes once memoized."""
    metaclass = type(cls)
    namespace: dict[str, Any] = {
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
    }
    doc = cls.__dict__.get("__doc__")
    if doc is not None:
        namespace["__doc__"] = doc
    if "__slots__" in cls.__dict__:
        namespace["__slots__"] = cls.__dict__["__slots__"]
    enum = sys.modules.get("enum")
    if enum is not None and isinstance(cls, enum.EnumMeta):
        members = {name: member._value_ for name, member in cls.__members__.items()}
        attributes = _class_attributes(cls, _ENUM_SKIP | set(members))
        return (
            _reconstruct._make_enum,
            (metaclass, cls.__name__, cls.__bases__, namespace, members, tracker_id(cls), _origin(cls)),
            (attributes, _abc_registry(cls)),
            None,
            None,
            _reconstruct._class_setstate,
        )
    return (
        _reconstruct._make_class,
        (metaclass, cls.__name__, cls.__bases__, namespace, tracker_id(cls), _origin(cls)),
        (_class_attributes(cls), _abc_registry(cls)),
        None,
        None,
        _reconstruct._class_setstate,
    )
