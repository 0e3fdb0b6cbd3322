"""Functions and classes shipped by value.

A function becomes::

    REDUCE _make_function(code_bytes, record, shipped_globals, name, defaults, cells[, annotations])
    BUILD  (func.__dict__, {only the attributes FunctionType would not set itself})

``code_bytes`` is ``marshal.dumps(code)`` and its CRC32 (computed once per code
object; see :func:`_reconstruct.seal_code`), and
``record`` names the interpreter that compiled it: another Python version is
refused before marshal sees the bytes. Loading costs one small Python frame per
function and, per payload, one global lookup -- at load a global costs about
ten frames, so the format is built to name as few globals as possible.

Globals and cells that could lead back to the function being pickled are filled
after it is memoized, by C calls hidden in the state (``_FIRST((qualname,
dict.update(globals, refs), setattr(cell, "cell_contents", v)))``): pickle never
recurses into a function it is still building. Functions of one module share one
globals dict per payload, as they share their module's namespace at home.

A class becomes a skeleton made by :func:`_reconstruct._make_class` (name,
bases, metaclass, ``__slots__``) and its attributes, set once it is memoized.
"""

from __future__ import annotations

import abc
import builtins
import marshal
import os
import sys
import types
from typing import TYPE_CHECKING, Any

from . import _locator, _reconstruct
from ._reconstruct import _FIRST, _ID_BY_CLASS, _track

if TYPE_CHECKING:
    from ._pickler import Pickler

_MAIN_MODULES = frozenset({"__main__", "__mp_main__"})
# Importable modules the user asked to ship by value (see register_by_value).
_by_value_modules: set[str] = set()

_setattr = setattr
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: classes made by class statements
_dict_update = dict.update

# id(code) -> (code, marshal bytes, names of globals it may read)
_code_cache: dict[int, CodeInfo] = {}
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
    _locator.clear_cache()  # answers "by reference" given before no longer hold


def unregister_by_value(module: types.ModuleType | str) -> None:
    """Undo :func:`register_by_value`."""
    name = module if isinstance(module, str) else module.__name__
    if name not in _by_value_modules:
        raise ValueError(f"{name!r} was not registered with register_by_value()")
    _by_value_modules.discard(name)
    _locator.clear_cache()


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


_GLOBAL_OPS = frozenset({"LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL"})
# Class bodies (code objects nested in a function) read globals with LOAD_NAME.
_NESTED_NAME_OPS = _GLOBAL_OPS | {"LOAD_NAME"}


def _global_names(code: types.CodeType) -> tuple[str, ...]:
    """Names a function's code may read or write as globals.

    From the bytecode, not ``co_names``, which also holds attribute names:
    ``x.real`` must not ship a global that happens to be called ``real``.
    """
    import dis  # only once by-value code is shipped: workers that load need not pay

    names: dict[str, None] = {}
    stack = [(code, _GLOBAL_OPS)]
    while stack:
        current, ops = stack.pop()
        for instruction in dis.get_instructions(current):
            if instruction.opname in ops:
                names[instruction.argval] = None
        stack.extend(
            (c, _NESTED_NAME_OPS) for c in current.co_consts if isinstance(c, types.CodeType)
        )
    return tuple(names)


CodeInfo = tuple[types.CodeType, bytes, tuple[str, ...], "str | None", str]


def code_info(code: types.CodeType) -> CodeInfo:
    """What shipping a code object needs, computed once per code object:
    ``(code, sealed marshal bytes, global names it may read, and the __doc__ and
    __qualname__ that FunctionType derives from it)``."""
    info = _code_cache.get(id(code))
    if info is not None and info[0] is code:
        return info
    consts = code.co_consts
    default_doc = consts[0] if consts and type(consts[0]) is str else None
    # FunctionType takes __qualname__ from co_qualname (3.11+), else co_name (3.10).
    default_qualname = getattr(code, "co_qualname", code.co_name)
    info = (
        code,
        _reconstruct.seal_code(marshal.dumps(code)),
        _global_names(code),
        default_doc,
        default_qualname,
    )
    if len(_code_cache) >= _CODE_CACHE_LIMIT:
        _code_cache.clear()
    _code_cache[id(code)] = info
    return info


def reduce_code(pickler: Pickler, code: types.CodeType) -> tuple[Any, ...]:
    # The interpreter record travels with the bytes (memoized: 2 bytes after the
    # first): marshal data from another Python version is refused, never loaded.
    return (_reconstruct._load_code, (code_info(code)[1], _RECORD))


_RECORD = _reconstruct._interpreter_record()

# Cell contents that can never lead back to the function being pickled: they go
# straight into CellType(...) in the arguments.
_LEAF_TYPES = frozenset({int, float, complex, str, bytes, bool, type(None)})


_MISSING = object()


def reduce_function(
    pickler: Pickler,
    func: types.FunctionType,
    _leaf: Any = _LEAF_TYPES,
    _missing: Any = _MISSING,
    _id: Any = id,
    _type: Any = type,
) -> tuple[Any, ...]:
    """Reduce a function by value, keeping every piece of its metadata.

    ``_make_function`` (``FunctionType(code, globals, name, argdefs, closure)``)
    already sets ``__qualname__`` (from the code), ``__module__`` (from
    ``globals['__name__']``) and ``__doc__`` (the first constant if it is a str);
    only what differs from that travels in the state, so most functions need no
    BUILD at all. Runs once per function shipped (1,000 closures in a list):
    locals only, and nothing allocated that the common case does not need.
    """
    code = func.__code__
    info = _code_cache.get(_id(code))
    if info is None or info[0] is not code:
        info = code_info(code)
    _, data, names, default_doc, default_qualname = info
    home = func.__globals__
    module_name = home.get("__name__")
    effects: list[Any] | None = None
    payload = pickler._payload
    if payload is None:
        payload = pickler._state()
    shipped = payload.globals_map.get(_id(home))
    if shipped is None:
        refs = {}
        if module_name is not None:
            refs["__name__"] = module_name
        package = home.get("__package__")
        if package:
            refs["__package__"] = package
        for name in names:
            value = home.get(name, _missing)
            if value is not _missing:
                refs[name] = value
        # First function of its namespace in this payload: its globals travel in
        # the arguments, except a reference to itself, which would make pickle
        # build it twice (it is not memoized until its arguments are saved).
        own = refs.pop(func.__name__, None) if refs.get(func.__name__) is func else None
        shipped = payload.ship_globals(home, refs)
        if own is not None:
            effects = [_GlobalsUpdate(shipped, {func.__name__: own})]
            payload.globals_values[_id(home)][func.__name__] = own
    elif names:
        # Later functions of the namespace add only what the payload lacks.
        known = payload.globals_values[_id(home)]
        missing = None
        for name in names:
            value = home.get(name, _missing)
            if value is not _missing and known.get(name, _missing) is not value:
                if missing is None:
                    missing = {}
                missing[name] = value
        if missing is not None:
            known.update(missing)
            effects = [_GlobalsUpdate(shipped, missing)]
    closure = func.__closure__
    if closure is not None:
        for cell in closure:
            try:
                content = cell.cell_contents
            except ValueError:
                continue  # an empty cell stays empty
            if _type(content) in _leaf:
                continue  # reduce_cell puts it in the arguments
            payload.deferred_cells.add(_id(cell))
            if effects is None:
                effects = []
            effects.append(_CellFill(cell, content))
    slots: dict[str, Any] | None = None
    qualname = func.__qualname__
    if effects is not None or (qualname is not default_qualname and qualname != default_qualname):
        slots = {"__qualname__": _Effects(qualname, effects) if effects else qualname}
    if func.__module__ != module_name:
        slots = slots or {}
        slots["__module__"] = func.__module__
    doc = func.__doc__
    if doc is not default_doc and doc != default_doc:
        slots = slots or {}
        slots["__doc__"] = doc
    defaults = func.__defaults__
    if defaults is not None and not all(_type(d) in _leaf for d in defaults):
        slots = slots or {}
        slots["__defaults__"] = defaults  # may lead back to func: set once memoized
        defaults = None
    if func.__kwdefaults__:
        slots = slots or {}
        slots["__kwdefaults__"] = func.__kwdefaults__
    annotations = func.__annotations__
    if annotations:
        if _plain_annotations(annotations):
            args: tuple[Any, ...] = (
                data,
                _RECORD,
                shipped,
                func.__name__,
                defaults,
                closure,
                annotations,
            )
        else:
            slots = slots or {}
            slots["__annotations__"] = annotations  # may lead back to func: set once memoized
            args = (data, _RECORD, shipped, func.__name__, defaults, closure)
    else:
        args = (data, _RECORD, shipped, func.__name__, defaults, closure)
    attributes = func.__dict__
    if slots is None:
        if not attributes:
            return (_reconstruct._make_function, args)
        # The C unpickler refuses a (dict, None) state: "slot state is not a dictionary".
        return (_reconstruct._make_function, args, attributes)
    return (_reconstruct._make_function, args, (attributes or None, slots))


# Annotation values that are always plain references: None and the built-in
# types (int, str, list, ...). A set, so the common check is one C call.
_BUILTIN_ANNOTATIONS = frozenset(
    {None}
    | {
        value
        for value in vars(builtins).values()
        if type(value) is type and not value.__flags__ & _HEAPTYPE
    }
)


def _plain_annotations(
    annotations: dict[str, Any], _named: Any = _locator.by_name.get, _id: Any = id
) -> bool:
    """Whether ``annotations`` can travel in ``_make_function``'s arguments.

    They can when nothing in them leads back to the function, which pickle has
    not memoized while it saves the arguments: every value is a string, None, a
    built-in type, or a class importable by its own name (pickled as a plain
    reference). A pure function of the annotations and the importable modules
    (``by_name`` only caches the importable test), so deterministic payloads
    stay deterministic.
    """
    values = annotations.values()
    try:
        if _BUILTIN_ANNOTATIONS.issuperset(values):
            return True
    except TypeError:  # an unhashable annotation value
        return False
    for value in values:
        if value is None or type(value) is str:
            continue
        if type(value) is not type:
            return False
        if not value.__flags__ & _HEAPTYPE or _named(_id(value)) is value:
            continue
        if ships_by_value(value.__module__) or not _locator.importable_by_own_name(value):
            return False
        _locator.remember_by_name(value)  # as reduce_class does: next time, one dict hit
    return True


class _Effects:
    """``value``, after the effects have run at load time (see module doc)."""

    __slots__ = ("value", "effects")

    def __init__(self, value: Any, effects: list[Any]) -> None:
        self.value = value
        self.effects = effects


class _GlobalsUpdate:
    __slots__ = ("target", "refs")

    def __init__(self, target: dict[str, Any], refs: dict[str, Any]) -> None:
        self.target = target
        self.refs = refs


class _CellFill:
    __slots__ = ("cell", "content")

    def __init__(self, cell: types.CellType, content: Any) -> None:
        self.cell = cell
        self.content = content


def _reduce_effects(pickler: Pickler, obj: _Effects) -> tuple[Any, ...]:
    return (_FIRST, ((obj.value, *obj.effects),))


def _reduce_globals_update(pickler: Pickler, obj: _GlobalsUpdate) -> tuple[Any, ...]:
    return (_dict_update, (obj.target, obj.refs))


def _reduce_cell_fill(pickler: Pickler, obj: _CellFill) -> tuple[Any, ...]:
    return (_setattr, (obj.cell, "cell_contents", obj.content))


# Registered in the dispatch table: no detour through __reduce_ex__.
EFFECT_REDUCERS = {
    _Effects: _reduce_effects,
    _GlobalsUpdate: _reduce_globals_update,
    _CellFill: _reduce_cell_fill,
}


def reduce_cell(pickler: Pickler, cell: types.CellType) -> tuple[Any, ...]:
    try:
        content = cell.cell_contents
    except ValueError:
        return (_reconstruct._make_cell, ())
    if type(content) in _LEAF_TYPES:
        return (_reconstruct._make_cell, (content,))
    payload = pickler._payload
    if payload is not None and id(cell) in payload.deferred_cells:
        return (_reconstruct._make_cell, ())  # filled by the function's state
    return (_reconstruct._make_cell, (), (None, {"cell_contents": content}))


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
        found = os.urandom(16).hex()  # as unique as uuid4, without importing uuid
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
            slot_names.add(f"_{cls.__name__.lstrip('_')}{slot}")
        else:
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
    found = [ref() for ref in registry]
    # The registry is a set of weak references: its order is per process.
    return sorted(
        (c for c in found if c is not None), key=lambda c: (str(c.__module__), str(c.__qualname__))
    )


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
            (
                metaclass,
                cls.__name__,
                cls.__bases__,
                namespace,
                members,
                tracker_id(cls),
                _origin(cls),
            ),
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
