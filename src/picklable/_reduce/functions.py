"""Functions: by their own name, by a located path, or by value.

A function importable by its own ``__module__`` + ``__qualname__`` goes by
reference, as pickle sends it. Otherwise the locator looks for another path to
it (a decorator took its name and keeps it in ``__wrapped__``; a factory made
it and a class holds it). Otherwise it is copied; a ``singledispatch``
function is copied as its base function plus its registry.

A copy becomes::

    REDUCE _make_function(code_bytes, record, shipped_globals, name, defaults, cells[, annotations])
    BUILD  (func.__dict__, {only the attributes FunctionType would not set itself})

``cells`` is the closure's tuple of cells, or a tuple of their contents where
they hold plain data and nothing else holds the tuple or a cell (no other
function shares them: see ``_closure_refs``); a cell the payload meets again
after that (an object's reduction hands the closure out) is written as
``_closure_cell(function, index)``, the loaded function's own.

``code_bytes`` is the marshal bytes of the code (of a copy whose bytes depend on
the code alone: :func:`picklable._code.unshared`) and their CRC32, computed once
per code object (see :func:`picklable._code.seal`), or ``(bytes, file name)``:
the bytes without the file name, which travels once per payload (issue 29);
``name`` is None for a script's function named as its code; ``record`` names the interpreter
that compiled it: another Python version is refused before marshal sees the
bytes. Loading costs one small Python frame per function and, per payload, one
global lookup -- at load a global costs about ten frames, so the format is
built to name as few globals as possible.

Globals and cells that could lead back to the function being pickled are filled
after it is memoized, by calls hidden in the state (``_first(qualname,
_update_globals(globals, refs), _fill_cell(cell, v))``): pickle never
recurses into a function it is still building. Functions of one module share one
globals dict per payload, as they share their module's namespace at home.

In deterministic mode the context carries a ``canonical`` policy whose
``code_bytes`` replaces the cached marshal bytes (see
:mod:`picklable._deterministic`); nothing else here depends on the mode.
"""

from __future__ import annotations

import builtins
import functools
import gc
import marshal
import reprlib
import sys
import types
import weakref
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .. import _caches, _code, _locator, _reconstruct
from .._compat import (
    CLASSDICT_CELL,
    CLASSDICT_GLOBAL_OP,
    LAZY_ANNOTATIONS,
    MAIN_MODULES,
    TYPE_PARAMS,
    class_namespace,
    is_heap_type,
)
from .._paths import walk
from .builtins import copied_parameters
from .reference import reference, with_carried_state
from .registry import ships_by_value
from .scripts import (
    UNKNOWN,
    known_origin,
    note_copy,
    origin_of,
    payload_script_paths,
    same_in_workers,
    script_location,
    script_reference,
    with_origin,
)

if TYPE_CHECKING:
    from .context import DumpContext
    from .state import PayloadState

__all__ = [
    "code_info",
    "copy_function",
    "function_pieces",
    "reduce_cell",
    "reduce_code",
    "reduce_function",
]

_RECORD = _code.HERE

_SINGLEDISPATCH_CODE: types.CodeType = functools.singledispatch(lambda arg: arg).__code__  # type: ignore[attr-defined]
# Made by singledispatch itself for every dispatcher: rebuilt, never shipped.
_SINGLEDISPATCH_MADE = frozenset(
    {"register", "dispatch", "registry", "_clear_cache", "__wrapped__"}
)


# ------------------------------------------------------------------ decision


def reduce_function(context: DumpContext, func: types.FunctionType) -> Any:
    """The rule for a function: own name, located path, else a copy."""
    # Pickler.reducer_override has already answered functions known to be
    # importable by their own name (the by_name cache).
    module = func.__module__
    if module in MAIN_MODULES:
        lambda_or_closure = "<" in func.__qualname__
        if lambda_or_closure:
            payload = context.payload
            if payload is not None and module in payload.script_paths:
                # The payload's table is at hand (1,000 closures of a loop: the
                # first looked the index up): one lookup, as below.
                paths = payload.script_paths[module]
                if paths is None or id(func) not in paths:
                    if _dataclasses_pending or id(func.__code__) in _REBUILT_CODE_IDS:
                        return copy_function(context, func)
                    return function_by_value(context, func)  # copy_function's plain case
        if context.scripts == "auto" and not context.check_copies:
            # Decided at an earlier dump of this script version (see .scripts):
            # checked by identity, no index needed (a top-level lambda).
            origin = known_origin(func, module)
            if origin is not UNKNOWN:
                if origin is None:
                    note_copy(context)
                return copy_function(context, func, origin)
        if lambda_or_closure:
            # A lambda or a closure: only the script's index can name it (one
            # lookup per function; 1,000 closures of a loop pay no more).
            paths = payload_script_paths(context, module)
            if paths is None or id(func) not in paths:
                return copy_function(context, func)
        if context.scripts != "copy":
            where = script_location(func, module, context)
            if where is not None:
                same = same_in_workers(func, *where)
                alone = script_reference(context, func, *where, same)
                if alone is not None:
                    return alone
                if same:
                    return copy_function(context, func, origin_of(func, *where))
                note_copy(context)  # the guard changes what it is or reads: a copy
        return copy_function(context, func)  # lambdas and closures of a script
    if ships_by_value(module):
        return copy_function(context, func)
    qualname = func.__qualname__
    # Fast path, stdlib's own test: the function is importable by its own name.
    if "<" not in qualname and type(module) is str:
        home = sys.modules.get(module)
        if home is not None:
            try:
                if "." not in qualname:
                    found = getattr(home, qualname)
                else:
                    found = walk(home, tuple(qualname.split(".")))
            except Exception:
                found = None
            if found is func:
                _locator.remember_by_name(func)
                return NotImplemented
    located = _locator.locate(func)
    if located is not None:
        # Found under another name (a decorator took its name, a factory set it on
        # a class): what the program set on it travels too.
        return with_carried_state(context, func, located[0], reference(context, func, *located))
    return copy_function(context, func)


def copy_function(context: DumpContext, func: types.FunctionType, origin: Any = None) -> Any:
    """A copy: a singledispatch function keeps its registry, a repr's recursion
    guard (dataclasses', reprlib's) is made again by the receiver's own, any
    other is copied.

    ``origin``: where the function lives in the sender's script (see
    :mod:`.scripts`): a receiver that runs the script uses its own.
    """
    if _dataclasses_pending or id(func.__code__) in _REBUILT_CODE_IDS:
        reduction = _rebuilt_by_receiver(context, func)
        if reduction is not None:
            if origin is None:
                return reduction
            return with_origin(context, func, reduction, carry_state=False)
    if origin is not None:
        # The origin's module name is the payload's copy of it (the globals'
        # __name__), and so are the steps of a method's path (its class's name,
        # the class's key for it): written once.
        # (Inlined PayloadState.adopt and .name: a class's methods come here
        # once each per dump.)
        payload = context.payload
        if payload is None:
            payload = context.state()
        names = payload.names
        if names is None:
            names = payload.names = {}
        module = names.setdefault(origin[0], origin[0])
        path = origin[1]
        if len(path) > 1:
            try:
                steps = tuple(map(names.get, path))  # a method's: its class's, met first
                if None in steps:
                    steps = tuple(map(payload.name, path))
                origin = (module, steps, origin[2], origin[3])
            except TypeError:  # an unhashable step: the path as it is
                origin = (module, path, origin[2], origin[3])
        elif module is not origin[0]:
            origin = (module, path, origin[2], origin[3])
        reduction = function_by_value(context, func)
        context.payload.script_copies = True  # type: ignore[union-attr]  # made by the copy
        return _script_function(reduction, origin, func)
    return function_by_value(context, func)


def _rebuilt_by_receiver(context: DumpContext, func: types.FunctionType) -> Any:
    """A function the receiver's own module makes again (a singledispatch
    function with its registry, a repr guard, dataclasses' ``__annotate__``),
    as that module's call; None for any other function."""
    _note_dataclasses()
    code = func.__code__
    if code is _SINGLEDISPATCH_CODE and "registry" in func.__dict__:
        return _reduce_singledispatch(context, func)
    reduction = _reduce_repr_guard(func)
    if reduction is not None:
        return reduction
    if code is _dataclass_annotate_code():
        return _reduce_dataclass_annotate(func)
    return None


def _script_function(reduction: tuple[Any, ...], origin: Any, func: types.FunctionType) -> Any:
    """A by-value function of the script, told where it lives: ``origin`` as the
    8th argument of ``_make_function``, its state for the copy alone (the
    receiver's own function keeps its attributes, as any function found by its
    own name does: case 1 of docs/state-policy.md)."""
    args = reduction[1]
    # None for a name that is its code's, as FunctionType takes it (the origin
    # names the function for an allow-list's refusal; issue 29: ~10 bytes).
    name = None if func.__name__ == func.__code__.co_name else args[3]
    # No annotations in the arguments: None in their place.
    annotations = args[6] if len(args) == 7 else None
    args = (args[0], args[1], args[2], name, args[4], args[5], annotations, origin)
    if len(reduction) == 2:
        return (reduction[0], args)
    state = (reduction[2], None, None)
    return (reduction[0], args, state, None, None, _reconstruct._built_setstate)


# dataclasses wraps every generated __repr__ in a guard against recursion, a
# closure of its own module (to Python 3.12) or of reprlib (reprlib.recursive_repr,
# since 3.13; any class's own __repr__ may have it too): rebuilt by the
# receiver's dataclasses or reprlib around the copied __repr__, rather than
# copied as their code (which an allow-list would have to admit as by-value
# code of 'dataclasses' or 'reprlib'). dataclasses' is looked up once dataclasses
# is imported: picklable's own import does not import it.
_recursive_repr: list[Any] = []  # [dataclasses._recursive_repr, its wrapper's code]
_REPRLIB_GUARD_CODE = reprlib.recursive_repr()(lambda self: "").__code__


# The codes of the functions above, by id: every copied function is checked
# against them with one set lookup (issue 29: a lambda's dump is ~9 us). While
# dataclasses is not imported, its codes are unknown and each copy looks again.
_REBUILT_CODE_IDS = {id(_SINGLEDISPATCH_CODE), id(_REPRLIB_GUARD_CODE)}
_dataclasses_pending = True


def _note_dataclasses() -> None:
    """Add dataclasses' codes to :data:`_REBUILT_CODE_IDS` once it is imported."""
    global _dataclasses_pending
    if _dataclasses_pending and "dataclasses" in sys.modules:
        _dataclasses_pending = False
        for code in (_recursive_repr_code(), _dataclass_annotate_code()):
            if code is not None:
                _REBUILT_CODE_IDS.add(id(code))


def rebuilt_by_receiver(code: types.CodeType) -> bool:
    """Whether a function of ``code`` may be one that the receiver's own module
    makes again (see :func:`copy_function`), not a copy of its code."""
    _note_dataclasses()
    return id(code) in _REBUILT_CODE_IDS


def _recursive_repr_code() -> types.CodeType | None:
    """The code of dataclasses' own repr guard, None while dataclasses is not
    imported, or since Python 3.13 (it uses reprlib's)."""
    if not _recursive_repr:
        module = sys.modules.get("dataclasses")
        if module is None:
            return None
        guard = getattr(module, "_recursive_repr", None)
        _recursive_repr[:] = [guard, guard(lambda self: "").__code__ if guard else None]
    code: types.CodeType | None = _recursive_repr[1]
    return code


_WRAPS_SETS = ("__module__", "__name__", "__qualname__", "__doc__")


def _reduce_repr_guard(func: types.FunctionType) -> Any:
    """A recursion guard around a ``__repr__`` as the receiver's own guard around
    the copied ``__repr__`` (None if ``func`` is no such guard): plus what differs
    from what the guard sets (dataclasses renames it; the program may add attributes)."""
    code = func.__code__
    if code is _REPRLIB_GUARD_CODE:
        cells = dict(zip(code.co_freevars, func.__closure__ or (), strict=True))
        inner = cells["user_function"].cell_contents
        rebuild: Any = _reconstruct._make_recursive_repr
        args: tuple[Any, ...] = (inner, cells["fillvalue"].cell_contents)
        copied: dict[str, Any] = {}  # reprlib copies no attributes of the function
    elif "__wrapped__" in func.__dict__ and code is _recursive_repr_code():
        inner = func.__wrapped__  # type: ignore[attr-defined]
        rebuild, args = _recursive_repr[0], (inner,)
        copied = vars(inner)  # functools.wraps copies its attributes
    else:
        return None
    slots = {
        name: getattr(func, name)
        for name in _WRAPS_SETS
        if getattr(func, name) != getattr(inner, name, None)
    }
    attributes = {
        key: value
        for key, value in vars(func).items()
        if not (key == "__wrapped__" and value is inner) and copied.get(key, _NOTHING) is not value
    }
    if not slots and not attributes:
        return (rebuild, args)
    return (rebuild, args, (attributes or None, slots or None))


# Since Python 3.14, dataclasses gives each method it generates an __annotate__
# of its own making, a closure over the class: rebuilt by the receiver's
# dataclasses (_reconstruct._make_dataclass_annotate, as the repr guard above),
# rather than copied as dataclasses' code.
_dataclass_annotate: list[Any] = []  # [dataclasses._make_annotate_function, its result's code]


def _dataclass_annotate_code() -> types.CodeType | None:
    """The code of dataclasses' generated ``__annotate__``, None before Python
    3.14 or while dataclasses is not imported."""
    if not _dataclass_annotate:
        if not LAZY_ANNOTATIONS:
            _dataclass_annotate[:] = [None, None]
        else:
            module = sys.modules.get("dataclasses")
            if module is None:
                return None
            make = module._make_annotate_function
            made = make(object, "__init__", (), module.MISSING)
            _dataclass_annotate[:] = [make, made.__code__]
    code: types.CodeType | None = _dataclass_annotate[1]
    return code


def _reduce_dataclass_annotate(func: types.FunctionType) -> Any:
    """``_make_annotate_function(cls, method, fields, return_type)``, plus what
    differs from what it sets."""
    cells = dict(zip(func.__code__.co_freevars, func.__closure__ or (), strict=True))
    cls = cells["__class__"].cell_contents
    # It names the function f"{cls.__qualname__}.{method}.__annotate__".
    method = func.__qualname__.rpartition(".__annotate__")[0].rpartition(".")[2]
    made = _dataclass_annotate[0](object, method, (), None)
    fields = cells["annotation_fields"].cell_contents
    args = (cls, method, fields, cells["return_type"].cell_contents)
    attributes = {k: v for k, v in vars(func).items() if vars(made).get(k, _NOTHING) != v}
    slots = {
        name: getattr(func, name)
        for name in ("__module__", "__doc__", "__defaults__", "__kwdefaults__")
        if getattr(func, name) != getattr(made, name)
    }
    if func.__qualname__ != f"{getattr(cls, '__qualname__', None)}.{method}.__annotate__":
        slots["__qualname__"] = func.__qualname__
    rebuild = _reconstruct._make_dataclass_annotate
    if not attributes and not slots:
        return (rebuild, args)
    return (rebuild, args, (attributes or None, slots or None))


def _reduce_singledispatch(context: DumpContext, func: types.FunctionType) -> Any:
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
    # Set by _set_instance_state, never by pickle's BUILD: singledispatch(base)
    # copies base's __dict__ into the rebuilt dispatcher, and a class's
    # __setstate__ there (random.Random's, an attrs class's) is what BUILD
    # would call with this state.
    return (
        _reconstruct._make_singledispatch,
        (base, list(registry.items())),
        (attributes or None, metadata),
        None,
        None,
        _reconstruct._set_instance_state,
    )


# -------------------------------------------------------------- code objects

# id(code) -> (code, marshal bytes, names of globals it may read, ...)
CodeInfo = tuple[types.CodeType, "_code.Sealed", tuple[str, ...], "str | None", str, str, str]
_code_cache: dict[int, CodeInfo] = {}
_CODE_CACHE_LIMIT = 8192
_caches.register("functions.code_info", _code_cache.clear)

_GLOBAL_OPS = frozenset({"LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL", CLASSDICT_GLOBAL_OP})
# Class bodies (code objects nested in a function) read globals with LOAD_NAME.
_NESTED_NAME_OPS = _GLOBAL_OPS | {"LOAD_NAME"}


def _global_names(code: types.CodeType) -> tuple[str, ...]:
    """Names a function's code may read or write as globals.

    From the bytecode, not ``co_names``, which also holds attribute names:
    ``x.real`` must not ship a global that happens to be called ``real``.
    """
    names = tuple(_code.instruction_names(code, _GLOBAL_OPS, _NESTED_NAME_OPS))
    if "__loader__" in names and "__spec__" not in names:
        # linecache reads a copy's globals as a module's: from Python 3.15 on, a
        # __loader__ without its __spec__ warns on every traceback through it.
        names = (*names, "__spec__")
    return names


def code_info(code: types.CodeType) -> CodeInfo:
    """What shipping a code object needs, computed once per code object:
    ``(code, sealed marshal bytes, global names it may read, the __doc__ and
    __qualname__ that FunctionType derives from it, its co_name and the copy of
    it that functions of this code ship as their name)``.

    The sealed bytes are ``(bytes, file name)`` where
    :func:`picklable._code.shared_filename` gives one: the bytes leave it out,
    and the one object per file name that it returns is memoized once per
    payload (issue 29). The name that functions of the code ship is the one
    object of its value too (:func:`picklable._code.carried`)."""
    info = _code_cache.get(id(code))
    if info is not None and info[0] is code:
        return info
    consts = code.co_consts
    default_doc = consts[0] if consts and type(consts[0]) is str else None
    default_qualname = code.co_qualname
    filename = _code.shared_filename(code)
    # Of an unshared copy: the same bytes in every process (see _code.unshared).
    data = _code.seal(marshal.dumps(_code.unshared(code, filename is not None)), filename)
    info = (
        code,
        data if filename is None else (data, filename),
        _global_names(code),
        default_doc,
        default_qualname,
        code.co_name,
        # One object per value (see PayloadState.name): functions of any code
        # of that name share it, in the payload as where it is loaded.
        _code.carried(code.co_name),
    )
    if len(_code_cache) >= _CODE_CACHE_LIMIT:
        _code_cache.clear()
    _code_cache[id(code)] = info
    return info


# id(code) -> (code, its sealed bytes without its file name and names, and those)
_named_cache: dict[int, tuple[types.CodeType, _code.Sealed]] = {}
_caches.register("functions.named_code", _named_cache.clear)


def named_code(code: types.CodeType, filename: str) -> _code.Sealed:
    """``(bytes, file name, name, qualname)``: the sealed bytes of ``code``
    without its own ``co_name`` and ``co_qualname``, which travel beside them
    as the one object of each value (:func:`picklable._code.carried`).

    What a payload carries for a code object whose qualname another code
    object of the payload has (see :func:`_code_for`): 1,000 lambdas made by
    ``eval`` or a code generator write their names once, as cloudpickle's memo
    does. (The first keeps them in its bytes: for a code object alone, marshal
    writes them in fewer bytes than a tuple of strings takes.)"""
    hit = _named_cache.get(id(code))
    if hit is not None and hit[0] is code:
        return hit[1]
    name, qualname = _code.carried(code.co_name), _code.carried(code.co_qualname)
    data = marshal.dumps(_code.unshared(code, True, True))
    sealed = (_code.seal(data, filename, name, qualname), filename, name, qualname)
    if len(_named_cache) >= _CODE_CACHE_LIMIT:
        _named_cache.clear()
    _named_cache[id(code)] = (code, sealed)
    return sealed


def _code_for(payload: PayloadState, code: types.CodeType, qualname: str, data: Any) -> Any:
    """What ``payload`` carries for ``code`` (``data``: its ``(bytes, file
    name)``): the same object for every function of one code, the names beside
    the bytes for a code object whose qualname another one met first."""
    seen = payload.code_qualnames
    if seen is None:
        payload.code_qualnames = {qualname: code}
        return data
    return data if seen.setdefault(qualname, code) is code else named_code(code, data[1])


def reduce_code(context: DumpContext, code: types.CodeType) -> tuple[Any, ...]:
    """A bare code object: its sealed bytes and the interpreter record."""
    # The interpreter record travels with the bytes (memoized: 2 bytes after the
    # first): marshal data from another Python version is refused, never loaded.
    canonical = context.canonical
    data = code_info(code)[1] if canonical is None else canonical.code_bytes(code)
    payload = context.state()
    if not payload.bound:
        payload.bound = True
        payload.first_value = code  # _load_code checks the record first
    return (_reconstruct._load_code, (data, _RECORD))


# ------------------------------------------------------------ by value

# Cell contents that can never lead back to the function being pickled: they go
# straight into CellType(...) in the arguments.
_LEAF_TYPES = frozenset({int, float, complex, str, bytes, bool, type(None)})


def _closure_refs(func: Any, _count: Any = sys.getrefcount) -> tuple[int, int, bool]:
    """How many references hold ``func``'s closure tuple, the most any of its
    cells has, as counted from here (this frame's own included), and whether
    it has one cell (counted another way)."""
    closure = func.__closure__
    if len(closure) == 1:  # the most closures: no map, no max
        return _count(closure), _count(closure[0]), True
    return _count(closure), max(map(_count, closure)), False


def _probe(cells: int) -> Any:
    x = y = 0
    return (lambda: x) if cells == 1 else (lambda: x + y)


# The counts of closures that their functions alone hold, whose cells their
# closures alone hold: measured once on closures made for it (one of a cell, one
# of two), by the function that measures the others (so the references the
# interpreter's own stack makes, which vary by version, count alike). Empty
# where the counts are not exact: a free-threaded build defers and splits them.
_PROBES = (_probe(1), _probe(2))
_SOLE: tuple[tuple[int, int, bool], ...] = (
    tuple(map(_closure_refs, _PROBES)) if getattr(sys, "_is_gil_enabled", lambda: True)() else ()
)

_MISSING = object()


def function_by_value(
    context: DumpContext,
    func: types.FunctionType,
    _leaf: Any = _LEAF_TYPES,
    _missing: Any = _MISSING,
    _id: Any = id,
    _type: Any = type,
    _module: Any = types.ModuleType,
    _str: Any = str,
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
    _, data, names, default_doc, default_qualname, code_name, name_copy = info
    canonical = context.canonical
    if canonical is not None:
        data = canonical.code_bytes(code)
    home = func.__globals__
    module_name = home.get("__name__")
    effects: list[Any] | None = None
    modules: list[types.ModuleType] | None = None  # modules among its globals and cells
    payload = context.payload
    if payload is None:
        payload = context.state()
    if _type(data) is tuple:
        seen = payload.code_qualnames
        if seen is None or seen.get(default_qualname) is not code:  # else: as before
            data = _code_for(payload, code, default_qualname, data)
    first = not payload.bound
    payload.bound = True
    plain = first  # whether loading its arguments runs nothing (see below)
    shipped = payload.globals_map.get(_id(home))
    # Whether the globals in the arguments hold an object whose reduction may
    # run code (which could hand this closure out before func is memoized).
    reach = False
    if shipped is None:
        refs: dict[str, Any] = {}
        if module_name is not None:
            refs["__name__"] = payload.name(module_name)  # shared as the class's __module__
        package = home.get("__package__")
        if package:
            refs["__package__"] = package
        for name in names:
            value = home.get(name, _missing)
            if value is not _missing:
                refs[name] = value
                kind = _type(value)
                if kind is _module:
                    modules = [value] if modules is None else [*modules, value]
                    plain = False
                elif kind not in _leaf:
                    plain = False
                    reach = reach or value is not func
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
            if _type(value) is _module:
                modules = [value] if modules is None else [*modules, value]
            if value is not _missing and known.get(name, _missing) is not value:
                if missing is None:
                    missing = {}
                missing[name] = value
        if missing is not None:
            known.update(missing)
            effects = [_GlobalsUpdate(shipped, missing)]
    # A closure whose tuple and cells nothing else holds (no other function of
    # the payload, no running frame, no earlier object of the payload: pickle's
    # memo holds what it wrote) can share them with nothing: where its cells
    # hold plain data, the contents travel in their place, the cells made again
    # by _make_function (no cell object, call nor memo entry per closure). A
    # cell the payload reaches again later (an object's reduction hands the
    # closure out) is then the loaded function's own (_closure_cell). Not in
    # deterministic payloads: their bytes depend on the object alone, the count
    # on what else holds it (another thread's dump of it, at that moment).
    # Nor where the globals in the arguments, saved before the closure, hold an
    # object whose reduction runs (it may hand the closure out before func is
    # memoized).
    inline: list[Any] | None = None
    if (
        not reach
        and canonical is None
        and not context.memo_off
        and func.__closure__
        and _closure_refs(func) in _SOLE
    ):
        inline = []
    closure = func.__closure__
    if closure is not None:
        for index, cell in enumerate(closure):
            try:
                content = cell.cell_contents
            except ValueError:
                inline = None
                continue  # an empty cell stays empty
            if _type(content) in _leaf:
                if inline is not None:
                    inline.append(content)
                continue  # reduce_cell puts it in the arguments
            inline = None
            if _id(cell) in payload.class_cells:
                continue  # a class's namespace: its copy's creation fills it
            payload.defer_cell(_id(cell))
            if effects is None:
                effects = []
            if _type(content) is dict and code.co_freevars[index] == CLASSDICT_CELL:
                fill = _classdict_fill(payload, cell, content)
                if fill is not None:
                    effects.append(fill)
                    continue
            effects.append(_CellFill(cell, content))
            if _type(content) is _module:
                modules = [content] if modules is None else [*modules, content]
        if inline is not None:
            contents = tuple(inline)
    if modules is not None:
        imported = submodules_used(code, modules)
        if imported:
            effects = [*(effects or ()), *imported]
    slots: dict[str, Any] | None = None
    qualname = func.__qualname__
    if effects is not None or (qualname is not default_qualname and qualname != default_qualname):
        # One copy per value and payload (see PayloadState.name): Python 3.14 names
        # each closure's __annotate__ with a string of its own.
        qualname = payload.name(qualname)
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
    # Its name as an unshared copy (see PayloadState.name): the code's name
    # object when equal to it (compared by value: in a process that loaded the
    # function they are two objects, and its payload must come out the same),
    # or (renamed, or given another function's name by functools.wraps) the
    # payload's.
    name = func.__name__
    name = name_copy if name == code_name else payload.name(name)
    annotate = func.__annotate__ if LAZY_ANNOTATIONS else None  # type: ignore[attr-defined]
    annotations: dict[str, Any] | None
    if annotate is None:
        annotations = func.__annotations__
    else:
        annotations = _annotations_instead(func, annotate, payload.class_cells)
        if annotations is None:
            # Evaluated where it is loaded, when asked, as where it was made (PEP
            # 649): names defined later, or never here, are no error to ship.
            slots = slots or {}
            slots["__annotate__"] = annotate
    quiet = False  # annotations in the arguments that load without running anything
    if annotations:
        # Strings alone (``from __future__ import annotations``, 1,000 closures
        # of one code) answered here: the call would cost as much as the loop.
        for value in annotations.values():
            if _type(value) is not _str:
                carried = _annotations_in_arguments(annotations)
                break
        else:
            carried = _QUIET
        if carried:
            quiet = carried is _QUIET
            if inline is not None and not quiet:
                inline = None  # what follows the closure might reach a cell before func is memoized
            args: tuple[Any, ...] = (
                data,
                _RECORD,
                shipped,
                name,
                defaults,
                closure if inline is None else contents,
                annotations,
            )
        else:
            slots = slots or {}
            slots["__annotations__"] = annotations  # may lead back to func: set once memoized
            args = (data, _RECORD, shipped, name, defaults, closure if inline is None else contents)
    else:
        args = (data, _RECORD, shipped, name, defaults, closure if inline is None else contents)
    if inline is not None:
        # Nothing around the closure in the arguments reaches the cells: a later
        # reference to one meets the function memoized (see reduce_cell).
        inlined = payload.inlined
        if inlined:
            inlined.append((func, closure))
        else:
            payload.inlined = [(func, closure)]
    if plain and (len(args) == 6 or quiet):
        # The payload's first by-value object, and its arguments are plain data
        # (cells are too: what they hold that is not comes later, in the state;
        # defaults that are not come in the state too): _make_function checks
        # the record before anything of the payload runs (see
        # picklable._pickler.needs_check).
        payload.first_value = func
    if TYPE_PARAMS:
        type_params = func.__type_params__  # type: ignore[attr-defined]
        if type_params:  # def f[T](...) (3.12+); FunctionType makes ()
            copied_parameters(type_params)  # they go with this copy
            slots = slots or {}
            slots["__type_params__"] = type_params
    attributes = func.__dict__
    if attributes:
        attributes = {payload.name(key): value for key, value in attributes.items()}
    if slots is None:
        if not attributes:
            return (_reconstruct._make_function, args)
        # The C unpickler refuses a (dict, None) state: "slot state is not a dictionary".
        return (_reconstruct._make_function, args, attributes)
    return (_reconstruct._make_function, args, (attributes or None, slots))


def _classdict_fill(payload: PayloadState, cell: types.CellType, namespace: dict[str, Any]) -> Any:
    """What fills the ``__classdict__`` cell of an annotation scope shipped
    apart from its class (3.14: a class's ``__annotate__`` alone): the class's
    namespace where it is loaded, read through the class found by name; or the
    class itself, copied with this cell, which its creation fills (see
    classes.class_by_value). None when no class has that namespace (a class
    that another replaced, as dataclass(slots=True) does): the dict is copied."""
    owner = namespace_owner(namespace)
    if owner is None:
        return None
    module = owner.__module__
    if (
        type(module) is str
        and module not in MAIN_MODULES
        and not ships_by_value(module)
        and _locator.importable_by_own_name(owner)
    ):
        path = (*owner.__qualname__.split("."), "__dict__")
        return _CellFill(cell, _Resolved(module, path))
    payload.keep_classdict_cell(id(namespace), cell)
    return owner  # loading it makes the class, which fills the cell


# id(namespace) -> the class whose namespace it is (see namespace_owner)
_namespace_owners: weakref.WeakValueDictionary[int, type] = weakref.WeakValueDictionary()
_caches.register("functions.namespace_owners", _namespace_owners.clear)


def namespace_owner(namespace: dict[str, Any]) -> type | None:
    """The class whose ``__dict__`` is a view of ``namespace``, or None (asked
    only of annotation scopes shipped apart from their class: a search of the
    objects that refer to it)."""
    owner = _namespace_owners.get(id(namespace))
    if owner is not None and class_namespace(owner) is namespace:
        return owner
    for referrer in gc.get_referrers(namespace):
        if isinstance(referrer, type) and class_namespace(referrer) is namespace:
            _namespace_owners[id(namespace)] = referrer
            return referrer
    return None


def _annotations_instead(
    func: types.FunctionType, annotate: Any, class_cells: Mapping[int, type]
) -> dict[str, Any] | None:
    """The evaluated annotations that a copy of ``func`` carries instead of its
    ``__annotate__`` (3.14+), or None: it carries ``__annotate__``.

    They are computed as any first access computes them (and kept on ``func``,
    as then); they travel when they say all ``__annotate__`` would (see
    :func:`same_in_every_format`), when ``__annotate__`` reads a class's
    namespace that the payload does not bring (:func:`_reads_unshipped_class`),
    or when they are not what ``__annotate__`` gives now (:func:`kept_apart`:
    changed in place, or computed before a name they read was rebound): what
    ``func.__annotations__`` says is then the copy's too.
    Annotations that cannot be computed yet (a name defined later, or only under
    ``TYPE_CHECKING``) leave ``__annotate__`` to compute them where loaded.
    """
    try:
        annotations: dict[str, Any] = func.__annotations__
    except Exception:
        return None
    if (
        same_in_every_format(annotations)
        or _reads_unshipped_class(annotate, class_cells)
        or kept_apart(annotations, annotate)
    ):
        return annotations
    return None


def kept_apart(annotations: dict[str, Any], annotate: Any) -> bool:
    """Whether ``annotations``, a function's evaluated annotations as kept on
    it (3.14+), differ from what its ``annotate`` gives now in the VALUE
    format: other keys, in another order, or a value neither the same object
    nor equal to it (evaluating ``list[A]`` again makes a new, equal alias).
    An ``annotate`` that raises now (a name since deleted) counts as different:
    the kept dict is what the function says."""
    try:
        fresh = annotate(1)  # annotationlib.Format.VALUE
        if type(fresh) is not dict or len(fresh) != len(annotations):
            return True
        for (key, value), (kept_key, kept) in zip(fresh.items(), annotations.items()):
            if key != kept_key or (value is not kept and not bool(value == kept)):
                return True
    except Exception:
        return True
    return False


def same_in_every_format(annotations: dict[str, Any]) -> bool:
    """Whether ``annotations`` (evaluated) are only None, strings and builtin
    types: then the dict alone gives what ``__annotate__`` gives in each of
    annotationlib's formats (VALUE, FORWARDREF, and STRING, which writes a
    builtin type by its bare name), and it is all the copy carries: the cheap
    way of Python 3.13 and before (some 300 bytes of code less per function)."""
    return all(
        value is None
        or type(value) is str
        or (type(value) is type and value in _BUILTIN_ANNOTATIONS)
        for value in annotations.values()
    )


def _reads_unshipped_class(annotate: Any, class_cells: Mapping[int, type]) -> bool:
    """Whether ``annotate`` (a method's, 3.14+) reads the namespace of a class
    that this payload does not copy with it: then the copy of the method carries
    its annotations evaluated, as before Python 3.14, rather than the class's
    namespace (the whole class, or a reference to it; see _classdict_fill)."""
    if type(annotate) is not types.FunctionType:
        return False
    code = annotate.__code__
    if CLASSDICT_CELL not in code.co_freevars:
        return False
    cell = annotate.__closure__[code.co_freevars.index(CLASSDICT_CELL)]  # type: ignore[index]
    return id(cell) not in class_cells


# Annotation values that are always plain references: None and the built-in
# types (int, str, list, ...). A set, so the common check is one C call.
_BUILTIN_ANNOTATIONS = frozenset(
    {None}
    | {
        value
        for value in vars(builtins).values()
        if type(value) is type and not is_heap_type(value)
    }
)


# What _annotations_in_arguments answers besides False: annotations that load
# without running anything (strings, None, built-in types) and the others.
_QUIET: Any = "quiet"
_IMPORTS: Any = "imports"


def _annotations_in_arguments(
    annotations: dict[str, Any],
    _named: Any = _locator.by_name.get,
    _builtin: Any = _BUILTIN_ANNOTATIONS,
) -> Any:
    """Whether ``annotations`` can travel in ``_make_function``'s arguments:
    False, or :data:`_QUIET` when loading them runs nothing (strings, None,
    built-in types), else :data:`_IMPORTS` (a class imports its module).

    They can when nothing in them leads back to the function, which pickle has
    not memoized while it saves the arguments: every value is a string, None, a
    built-in type, or a class importable by its own name (pickled as a plain
    reference). A pure function of the annotations and the importable modules
    (``by_name`` only caches the importable test), so deterministic payloads
    stay deterministic. One loop, no generator: it runs once per annotated
    function copied.
    """
    answer = _QUIET
    for value in annotations.values():
        kind = type(value)
        if kind is str or value is None:
            continue
        if kind is not type:
            return False
        if value in _builtin:  # hashable: its metaclass is type itself
            continue
        answer = _IMPORTS
        if not is_heap_type(value) or _named(value) is value:  # by_name's key: the class
            continue
        if ships_by_value(value.__module__) or not _locator.importable_by_own_name(value):
            return False
        _locator.remember_by_name(value)  # as reduce_class does: next time, one dict hit
    return answer


# ---------------------------------------------------------------- submodules

# id(code) -> (code, every name its code and nested code objects use)
_names_cache: dict[int, tuple[types.CodeType, frozenset[str]]] = {}
# (id(code), module name) -> (code, number of modules imported then, submodules)
_submodules_cache: dict[tuple[int, str], tuple[types.CodeType, int, tuple[str, ...]]] = {}
_caches.register("functions.names", _names_cache.clear)
_caches.register("functions.submodules", _submodules_cache.clear)


def _all_names(code: types.CodeType) -> frozenset[str]:
    hit = _names_cache.get(id(code))
    if hit is not None and hit[0] is code:
        return hit[1]
    names: set[str] = set()
    stack = [code]
    while stack:
        current = stack.pop()
        names.update(current.co_names)
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    found = frozenset(names)
    if len(_names_cache) >= _CODE_CACHE_LIMIT:
        _names_cache.clear()
    _names_cache[id(code)] = (code, found)
    return found


def submodules_used(code: types.CodeType, modules: list[types.ModuleType]) -> list[Any]:
    """The imported submodules of ``modules`` that ``code`` reaches as attributes.

    ``xml.etree.ElementTree.Comment`` in a function that holds ``xml`` works
    here because something imported ``xml.etree.ElementTree``; importing
    ``xml`` alone in the receiver does not. Every submodule whose dotted name
    continues the module's with names the code uses ships beside the
    function, imported when the payload loads (sorted, for deterministic bytes).
    """
    found: dict[str, Any] = {}
    for module in modules:
        name = getattr(module, "__name__", None)
        if type(name) is not str or sys.modules.get(name) is not module:
            continue  # a module built in memory has no submodules to import
        key = (id(code), name)
        hit = _submodules_cache.get(key)
        if hit is None or hit[0] is not code or hit[1] != len(sys.modules):
            used = _all_names(code)
            prefix = name + "."
            chosen = tuple(
                sorted(
                    other
                    for other in list(sys.modules)
                    if other.startswith(prefix)
                    and all(part in used for part in other[len(prefix) :].split("."))
                )
            )
            if len(_submodules_cache) >= _CODE_CACHE_LIMIT:
                _submodules_cache.clear()
            hit = _submodules_cache[key] = (code, len(sys.modules), chosen)
        for other in hit[2]:
            submodule = sys.modules.get(other)
            if submodule is not None:
                found[other] = submodule
    return [found[name] for name in sorted(found)]


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


class _Resolved:
    """What ``_resolve(module, path)`` finds where the payload is loaded."""

    __slots__ = ("module", "path")

    def __init__(self, module: str, path: tuple[str, ...]) -> None:
        self.module = module
        self.path = path


def _reduce_effects(context: DumpContext, obj: _Effects) -> tuple[Any, ...]:
    # The effects load as arguments, after the function is memoized (issue 29:
    # one global, where itemgetter(0) and setattr were two and an object).
    return (_reconstruct._first, (obj.value, *obj.effects))


def _reduce_globals_update(context: DumpContext, obj: _GlobalsUpdate) -> tuple[Any, ...]:
    # A rebuilder (payloads of 0.1.0 named dict.update): it declares what it
    # writes to, so an allow-list can admit it.
    return (_reconstruct._update_globals, (obj.target, obj.refs))


def _reduce_cell_fill(context: DumpContext, obj: _CellFill) -> tuple[Any, ...]:
    return (_reconstruct._fill_cell, (obj.cell, obj.content))


def _reduce_resolved(context: DumpContext, obj: _Resolved) -> tuple[Any, ...]:
    return (_reconstruct._resolve, (obj.module, obj.path))


# The load-time effects above, by type: in the table, so no detour through
# __reduce_ex__ (they exist only inside a payload being made).
EFFECT_REDUCERS = {
    _Effects: _reduce_effects,
    _GlobalsUpdate: _reduce_globals_update,
    _CellFill: _reduce_cell_fill,
    _Resolved: _reduce_resolved,
}


def reduce_cell(context: DumpContext, cell: types.CellType) -> tuple[Any, ...]:
    """A closure cell: its content in the arguments, or filled by a function's state."""
    payload = context.payload
    if payload is not None and payload.inlined:
        found = payload.inlined_cell(cell)
        if found is not None:
            # Its content went in its function's arguments: that function's own cell.
            return (_reconstruct._closure_cell, found)
    try:
        content = cell.cell_contents
    except ValueError:
        return (_reconstruct._make_cell, ())
    if type(content) in _LEAF_TYPES:
        return (_reconstruct._make_cell, (content,))
    if payload is not None and id(cell) in payload.deferred_cells:
        return (_reconstruct._make_cell, ())  # filled by the function's state
    return (_reconstruct._make_cell, (), (None, {"cell_contents": content}))


# ------------------------------------------------------------------- pieces

_NOTHING = object()


def function_pieces(obj: types.FunctionType, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    """What a copy of ``obj`` ships, named as Python reaches it (error paths)."""
    if obj.__code__ is _SINGLEDISPATCH_CODE and "registry" in obj.__dict__:
        registry = obj.registry  # type: ignore[attr-defined]
        yield ".__wrapped__", registry.get(object, obj.__wrapped__)  # type: ignore[attr-defined]
        for cls, implementation in registry.items():
            if cls is not object:
                yield f".registry[{getattr(cls, '__qualname__', cls)!s}]", implementation
        return
    if obj.__code__ is _dataclass_annotate_code():  # rebuilt around its cells alone
        for i, cell in enumerate(obj.__closure__ or ()):
            yield f".__closure__[{i}].cell_contents", cell.cell_contents
        return
    attributes = obj.__dict__
    # What a decorator wraps sits in a closure cell too: name it the readable way.
    wrapped = attributes.get("__wrapped__", _NOTHING)
    if wrapped is not _NOTHING:
        yield ".__wrapped__", wrapped
    freevars = obj.__code__.co_freevars
    for i, cell in enumerate(obj.__closure__ or ()):
        try:
            content = cell.cell_contents
        except ValueError:
            continue
        if content is wrapped:
            continue
        if type(content) is dict and freevars[i] == CLASSDICT_CELL:
            owner = namespace_owner(content)
            if owner is not None:
                yield f".__closure__[{i}].cell_contents", owner  # its namespace, with it
                continue
        yield f".__closure__[{i}].cell_contents", content
    home = obj.__globals__
    for name in code_info(obj.__code__)[2]:
        if name in home:
            yield f".__globals__[{name!r}]", home[name]
    for i, default in enumerate(obj.__defaults__ or ()):
        yield f".__defaults__[{i}]", default
    for key, value in (obj.__kwdefaults__ or {}).items():
        yield f".__kwdefaults__[{key!r}]", value
    annotate = obj.__annotate__ if LAZY_ANNOTATIONS else None  # type: ignore[attr-defined]
    if annotate is not None and _annotations_instead(obj, annotate, {}) is None:
        yield ".__annotate__", annotate
    for i, param in enumerate(obj.__type_params__ if TYPE_PARAMS else ()):  # type: ignore[attr-defined]
        yield f".__type_params__[{i}]", param
    for key, value in attributes.items():
        if key != "__wrapped__":
            yield f".{key}", value
