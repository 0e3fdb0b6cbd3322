"""The one table of object kinds: how each kind ships, and how that is told.

Every object the pickler meets belongs to one :class:`Kind`, found by its exact
type (``type(obj)``, never ``isinstance`` first: proxies lie about their
class). A kind says, side by side:

* ``reduce`` -- how it is reduced (the rule's steps for that kind; ``None``:
  pickle's own way);
* ``by_name`` -- whether "``NotImplemented``" from ``reduce`` means pickle
  saves it by its own name (functions and classes: pickle's save_global);
* ``taken_apart`` -- what ships in its place when it is rebuilt from pieces,
  in ``explain``'s words;
* ``pieces`` -- the parts it ships, named as Python reaches them
  (``.__closure__[0].cell_contents``), for error paths and ``explain``;
  called with the object and the reduction the pickler takes for it.

What a reduction *means* is read from the rebuilder it names (role, label and
reach are declared with each rebuilder in :mod:`picklable._reconstruct`):
:func:`verdict` turns a kind and a reduction into a :class:`Shipping`, the
answer ``explain`` gives. ``explain``, the error path, ``inspect``, the
allow-list and the deterministic pickler read this table and those
declarations; none of them decides again how an object ships.

Decisions are cached per type in :mod:`picklable._reduce.type_cache`, which
the hook reads for every non-builtin object; kinds whose answer depends on
class attributes check them again at each instance.
"""

from __future__ import annotations

import collections
import copyreg
import functools
import io
import types
import typing
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import _caches, _locator, _reconstruct
from .._compat import LAZY_IMPORT_TYPE, SENTINEL_TYPE, TYPE_ALIAS_TYPE
from .._paths import format_path
from . import builtins, classes, exceptions, functions, objects, refusals, type_cache, wrappers
from .reference import Reference, reduce_reference, reference_pieces, why_not_importable

if TYPE_CHECKING:
    from .context import DumpContext

__all__ = [
    "DATA_KIND",
    "Kind",
    "Shipping",
    "handler_for",
    "kind_for",
    "reclassify",
    "refusal",
    "verdict",
]

Handler = Callable[["DumpContext", Any], Any]
Pieces = Callable[[Any, Any], Iterator[tuple[str, Any]]]


class Kind:
    """One kind of object (see the module doc). Compared by identity.

    A plain class, not a dataclass: the serializer's import stays free of
    ``dataclasses`` and ``inspect`` (a spawn worker imports it at start).
    """

    __slots__ = ("name", "reduce", "pieces", "by_name", "taken_apart", "class_piece", "why_value")

    def __init__(
        self,
        name: str,
        reduce: Handler | None,
        pieces: Pieces | None = None,
        by_name: bool = False,
        taken_apart: str = "",
        # Instances whose class may itself go by value: the class is a piece too.
        class_piece: bool = False,
        # Why a copy, when "not importable" is not the story (a module built in memory).
        why_value: str = "",
    ) -> None:
        self.name = name
        self.reduce = reduce
        self.pieces = pieces
        self.by_name = by_name
        self.taken_apart = taken_apart
        self.class_piece = class_piece
        self.why_value = why_value

    def __repr__(self) -> str:
        return f"Kind({self.name!r}, {self.reduce!r})"


class Shipping(NamedTuple):
    """How the pickler ships one object (``explain``'s verdict).

    Attributes
    ----------
    how:
        ``"reference"`` (by name: the receiver imports its own), ``"value"`` (a
        copy of its code or class), ``"wrapper"`` (taken apart and rebuilt),
        ``"data"`` (copied as pickle copies any data) or ``"fails"``.
    via:
        For ``"reference"``: where the receiver finds it, ``module:path``.
    why:
        For ``"value"``: why it is not importable; for ``"wrapper"``: what is
        shipped in its place; for ``"fails"``: the reason.
    fix:
        For ``"fails"``: what to do instead.
    """

    how: str
    via: str = ""
    why: str = ""
    fix: str = ""


DATA = Shipping("data")


# ------------------------------------------------------------------- pieces


def _sequence_pieces(obj: Any, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    for i, item in enumerate(obj):
        yield f"[{i}]", item


def _set_pieces(obj: Any, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    for i, item in enumerate(obj):
        yield f"{{item {i}}}", item


def _dict_pieces(obj: Any, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    for key, value in obj.items():
        yield f"[{key!r}]", value


def _cell_pieces(cell: types.CellType, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    try:
        yield ".cell_contents", cell.cell_contents
    except ValueError:
        return


def _mappingproxy_pieces(
    obj: types.MappingProxyType[Any, Any], reduction: Any = None
) -> Iterator[tuple[str, Any]]:
    yield from _dict_pieces(obj)


# ------------------------------------------------------------------- kinds
#
# The C pickler saves the plain data types itself, before it would call the
# hook: they never reach the type cache, but explain and error paths walk them.
DATA_KIND = Kind("data", None)
_DATA_KINDS: dict[type, Kind] = {
    **dict.fromkeys((type(None), bool, int, float, complex, str, bytes, bytearray), DATA_KIND),
    list: Kind("list", None, _sequence_pieces),
    tuple: Kind("tuple", None, _sequence_pieces),
    dict: Kind("dict", None, _dict_pieces),
    set: Kind("set", None, _set_pieces),
    frozenset: Kind("frozenset", None, _set_pieces),
}

FUNCTION = Kind(
    "function",
    functions.reduce_function,
    functions.function_pieces,
    by_name=True,
    taken_apart=(
        "a function its library makes (singledispatch, dataclasses): rebuilt there by the "
        "library, around its pieces"
    ),
)
CLASS = Kind("class", classes.reduce_class, classes.class_pieces, by_name=True)
_INSTANCE = Kind("instance", None, objects.instance_pieces, class_piece=True)

_STATIC: dict[type, Kind] = {
    types.FunctionType: FUNCTION,
    types.MethodType: Kind(
        "bound method",
        wrappers.reduce_method,
        wrappers.method_pieces,
        taken_apart="a bound method: its object and its function",
    ),
    types.CodeType: Kind("code object", functions.reduce_code),
    types.CellType: Kind("closure cell", functions.reduce_cell, _cell_pieces),
    types.ModuleType: Kind("module", objects.reduce_module, objects.module_pieces),
    classmethod: Kind(
        "classmethod",
        wrappers.reduce_classmethod,
        wrappers.classmethod_pieces,
        taken_apart="a classmethod: its function",
    ),
    staticmethod: Kind(
        "staticmethod",
        wrappers.reduce_classmethod,
        wrappers.classmethod_pieces,
        taken_apart="a staticmethod: its function",
    ),
    property: Kind(
        "property",
        wrappers.reduce_property,
        wrappers.property_pieces,
        taken_apart="a property: fget, fset and fdel",
    ),
    types.MappingProxyType: Kind("mappingproxy", objects.reduce_mappingproxy, _mappingproxy_pieces),
    # Saved well by pickle itself (their __reduce__ names them, or getattr on
    # their object); listed so they never reach classify.
    types.BuiltinFunctionType: Kind("built-in function", None),
    types.MethodDescriptorType: Kind("method descriptor", None),
    types.WrapperDescriptorType: Kind("slot wrapper", None),
    types.MethodWrapperType: Kind("method-wrapper", None),
    types.GetSetDescriptorType: Kind("getset descriptor", objects.reduce_slot_descriptor),
    types.MemberDescriptorType: Kind("member descriptor", objects.reduce_slot_descriptor),
    types.ClassMethodDescriptorType: Kind("classmethod descriptor", objects.reduce_slot_descriptor),
    functools.partial: Kind(
        "partial",
        None,
        wrappers.partial_pieces,
        taken_apart="a partial: its function and arguments",
    ),
    functools.partialmethod: Kind(
        "partialmethod",
        wrappers.reduce_partialmethod,
        wrappers.partialmethod_pieces,
        taken_apart="a partialmethod: its function and arguments",
    ),
    collections.defaultdict: Kind("defaultdict", None, objects.defaultdict_pieces),
    types.TracebackType: Kind("traceback", exceptions.reduce_traceback),
    wrappers.LRU_WRAPPER: Kind(
        "lru_cache wrapper",
        wrappers.reduce_lru_cache,
        wrappers.lru_cache_pieces,
        taken_apart="an lru_cache wrapper: what it wraps and its settings, rebuilt",
    ),
    wrappers.WithState: Kind(
        "with_state marker", wrappers.reduce_with_state, wrappers.with_state_pieces
    ),
    wrappers.ByReference: Kind("module object", wrappers.reduce_by_reference),
    Reference: Kind("reference alone", reduce_reference, reference_pieces),
    wrappers.WithoutState: Kind(
        "without_state marker", wrappers.reduce_without_state, wrappers.without_state_pieces
    ),
    **{
        t: Kind("load-time effect", reduce)  # type: ignore[arg-type]
        for t, reduce in functions.EFFECT_REDUCERS.items()
    },
    # Built-in kinds pickle refuses or saves by a name that may not exist.
    **dict.fromkeys(
        builtins.DICT_VIEW_TYPES,
        Kind("dict view", builtins.reduce_dict_view, builtins.dict_view_pieces),
    ),
    memoryview: Kind("memoryview", builtins.reduce_memoryview, builtins.memoryview_pieces),
    **dict.fromkeys(
        builtins.TYPEVAR_TYPES,
        Kind(
            "type variable",
            builtins.reduce_typevar,
            builtins.typevar_pieces,
            why_value=(
                "its module does not hold it under its name (made in a function, or in a "
                "module shipped by value): a copy, and the original again where it was made"
            ),
        ),
    ),
    typing.NewType: Kind(
        "new type",
        builtins.reduce_newtype,
        builtins.newtype_pieces,
        why_value=(
            "its module does not hold it under its name (a script's, or made in a "
            "function): a copy made from its name and supertype, and the original again "
            "where it was made"
        ),
    ),
    # New in Python 3.12 (type aliases) and 3.15 (sentinels, lazy imports):
    # listed where the running Python has them.
    **{
        t: kind
        for t, kind in (
            (
                TYPE_ALIAS_TYPE,
                Kind(
                    "type alias",
                    builtins.reduce_type_alias,
                    builtins.type_alias_pieces,
                    why_value=(
                        "its module does not hold it under its name (made in a function, "
                        "or in a script or module shipped by value): a copy, made again by "
                        "a type statement, and the original again where it was made"
                    ),
                ),
            ),
            (
                SENTINEL_TYPE,
                Kind(
                    "sentinel",
                    builtins.reduce_sentinel,
                    why_value=(
                        "its module does not hold it under its name: a copy, one object "
                        "per process, and the original again where it was made"
                    ),
                ),
            ),
            (
                LAZY_IMPORT_TYPE,
                Kind("lazy import", builtins.reduce_lazy_import, builtins.lazy_import_pieces),
            ),
        )
        if t is not None
    },
    **dict.fromkeys(
        builtins.WEAK_COLLECTION_TYPES,
        Kind("weak collection", builtins.reduce_weak_collection, builtins.weak_collection_pieces),
    ),
}

_WRAPT = Kind(
    "wrapt proxy",
    wrappers.reduce_wrapt_proxy,
    wrappers.wrapt_pieces,
    taken_apart="a wrapt proxy: what it wraps and its settings, rebuilt",
)
_CACHED_PROPERTY = Kind(
    "cached_property",
    wrappers.reduce_cached_property,
    wrappers.cached_property_pieces,
    taken_apart="a cached_property: its function (a new lock is made)",
)
_PROPERTY_SUBCLASS = Kind(
    "property",
    wrappers.reduce_property_subclass,
    wrappers.property_pieces,
    taken_apart="a property: fget, fset and fdel",
)
_CALLABLE_INSTANCE = Kind(
    "callable instance", objects.reduce_callable_instance, objects.instance_pieces, class_piece=True
)
_PROXY = Kind("proxy", objects.reduce_proxy, objects.instance_pieces)
_DESCRIPTOR = Kind(
    "descriptor", objects.reduce_descriptor, objects.instance_pieces, class_piece=True
)
_GETATTR_INSTANCE = Kind(
    "instance", objects.reduce_getattr_instance, objects.instance_pieces, class_piece=True
)
_PLAIN_INSTANCE = Kind(
    "instance", objects.reduce_plain_instance, objects.instance_pieces, class_piece=True
)
_C_REDUCED_INSTANCE = Kind(
    "instance", objects.reduce_c_reduced_instance, objects.instance_pieces, class_piece=True
)
_STREAM = Kind("stream", builtins.reduce_stream, objects.instance_pieces, class_piece=True)
_CLASSMETHOD_SUBCLASS = Kind(
    "classmethod",
    wrappers.reduce_classmethod,
    wrappers.classmethod_pieces,
    taken_apart="a classmethod (or staticmethod) subclass: its function",
)


def classify(t: type) -> Kind:
    """The kind of instances of ``t`` (called once per type, and again when
    a class changed how it pickles)."""
    found = _STATIC.get(t) or _DATA_KINDS.get(t)
    if found is not None:
        return found
    if t.__module__ == "dataclasses":
        singleton = objects.dataclass_singletons().get(t)
        if singleton is not None:
            return Kind("dataclasses sentinel", singleton)
    refused = refusals.REFUSED.get(f"{t.__module__}.{t.__qualname__}")
    if refused is not None:
        return Kind("refused", objects.refuse(*refused))
    if issubclass(t, type):
        return CLASS
    if wrappers.is_wrapt_proxy_type(t):
        return _WRAPT
    if issubclass(t, functools.cached_property):
        return _CACHED_PROPERTY
    if issubclass(t, property):  # property itself is in the static table
        return _PROPERTY_SUBCLASS
    if issubclass(t, BaseException):
        return Kind("exception", exceptions.exception_kind(t), exceptions.exception_pieces)
    if objects.is_proxy_type(t):
        return _PROXY
    if issubclass(t, (classmethod, staticmethod)):  # abc.abstractclassmethod and kin
        return _CLASSMETHOD_SUBCLASS
    if _locator.python_call_type(t):
        return _CALLABLE_INSTANCE
    if hasattr(t, "__get__"):
        return _DESCRIPTOR
    if issubclass(t, io.IOBase):  # the standard streams, whatever their class
        return _STREAM
    if objects.is_plain(t):
        return _PLAIN_INSTANCE
    if objects.answers_getattr(t):
        return _GETATTR_INSTANCE
    if objects.c_reduced_with_dict(t):
        return _C_REDUCED_INSTANCE
    return _INSTANCE


def kind_for(t: type) -> Kind:
    """The kind of instances of ``t``, classifying ``t`` on first sight."""
    kind: Kind | None = type_cache.cached(t)
    if kind is None:
        kind = classify(t)
        type_cache.store(t, kind, kind.reduce)
    return kind


def handler_for(t: type) -> Handler | None:
    """The reducer for instances of ``t`` (what the pickler's hook calls)."""
    return kind_for(t).reduce


def reclassify(t: type) -> Kind:
    """Forget the kind of ``t`` (it changed how it pickles) and classify it again."""
    type_cache.forget(t)
    return kind_for(t)


_caches.register("reduce.kinds", type_cache.clear)


# ------------------------------------------------------------------ verdict


def refusal(obj: Any) -> refusals.Hint | None:
    """(reason, fix) when ``obj`` is of a kind that never ships, else None.

    The table's verdict on refusal, for the diagnostics: the one list of such
    kinds is :mod:`picklable._reduce.refusals` (types whose reducer here
    refuses them, and kinds pickle itself cannot save: locks, open files,
    running generators, connections...). Never asked on the dump path: pickle
    and the reducers refuse those objects on their own; the diagnostics ask
    to stop at the object itself and to give its reason and fix.
    """
    return refusals.refusal(obj)


def verdict(kind: Kind, obj: Any, reduction: Any) -> Shipping:
    """What ``reduction`` (``kind.reduce``'s answer for ``obj``, or pickle's own
    when ``NotImplemented``) means for how ``obj`` ships.

    ``NotImplemented`` from a by-name kind is pickle's save by name; a string
    is a global name in the object's module; a tuple means what the rebuilder
    it names is declared to mean (:data:`picklable._reconstruct.REBUILDERS`).
    Any other callable (a class, ``copyreg.__newobj__``, ``getattr``) rebuilds
    the object from data, except where the kind says it takes it apart.
    """
    if reduction is NotImplemented:  # by-name kinds only: others pass pickle's own
        return Shipping("reference", _own_name(obj)) if kind.by_name else DATA
    if isinstance(reduction, str):
        module = getattr(obj, "__module__", None) or getattr(type(obj), "__module__", "?")
        return Shipping("reference", f"{module}:{reduction}")
    if not isinstance(reduction, tuple) or not reduction:
        return DATA
    func = reduction[0]
    args: Any = reduction[1] if len(reduction) > 1 else ()
    declared = _reconstruct.rebuilder_of(func)
    if declared is None:
        if kind is CLASS and func is type:
            # A built-in type no module exports under its own name, as type(x).
            return Shipping("reference", f"types:{_types_name(obj)}")
        if func is getattr and kind.reduce is objects.reduce_slot_descriptor:
            owner, name = args
            return Shipping("reference", f"{_own_name(owner)}.{name}")
        if kind.taken_apart:
            return Shipping("wrapper", why=kind.taken_apart)
        return DATA
    if declared.function is _reconstruct._own_or_copy and type(args[0]) is Reference:
        found = verdict(kind, obj, args[0].reduction)
        return found._replace(why=_carried(reduction) or found.why)
    if declared.role == "reference":
        why = _carried(reduction)
        if declared.function is _reconstruct._resolve:
            return Shipping("reference", format_path(*args), why)
        if declared.function is _reconstruct._main_object:
            module, path, _, _ = args[0]
            return Shipping(
                "reference",
                format_path(module, path),
                why
                or "an object of this script: loads where the same script runs (a spawn "
                f"worker of it), and nowhere else: it cannot be copied ({args[1]})",
            )
        if declared.function is _reconstruct._make_lazy_import:
            module, fromlist, name = args
            where = f"{module}:{name}" if fromlist else module
            return Shipping("reference", where, "a lazy import: imported where first used")
        return Shipping("reference", str(args[0]), why)
    if declared.function is _reconstruct._script_or_build:
        # An object of the script: the receiver's own where it runs the script,
        # else what the builder builds; a copy when that is a value rebuilder.
        inner = _reconstruct.rebuilder_of(args[1]) if len(args) > 1 else None
        if inner is not None and inner.role == "value":
            return Shipping("value", why=why_not_importable(obj))
    if declared.role == "value":
        return Shipping("value", why=kind.why_value or why_not_importable(obj))
    if declared.role == "wrapper":
        return Shipping("wrapper", why=kind.taken_apart or declared.label)
    return DATA


def _carried(reduction: tuple[Any, ...]) -> str:
    """What a reference says about the state that travels with it, if any."""
    state = None
    if reduction[0] is _reconstruct._own_or_copy and len(reduction) > 1:
        state = reduction[1][1] if len(reduction[1]) > 1 else None
        if state is None and len(reduction) > 2:
            state = reduction[2]
    elif len(reduction) > 5 and reduction[5] is _reconstruct._with_state:
        state = reduction[2]
    if not state or type(state) is not dict:
        return ""
    names = ", ".join(sorted(state))
    return (
        f"with the state the program set on it ({names}): the receiver's own where it "
        "has that state, else a copy that has it"
    )


def _own_name(obj: Any) -> str:
    module = getattr(obj, "__module__", None)
    if module is None:
        module = getattr(getattr(obj, "__self__", None), "__name__", "?")
    return f"{module}:{getattr(obj, '__qualname__', getattr(obj, '__name__', '?'))}"


def _types_name(cls: type) -> str:
    for name, value in vars(types).items():
        if value is cls:
            return name
    return cls.__name__


def default_reduction(context: DumpContext, obj: Any) -> Any:
    """What pickle does after the hook answers ``NotImplemented`` for ``obj``:
    the pickler's dispatch table, copyreg's, then ``obj.__reduce_ex__``."""
    reducer = context.table.get(type(obj)) or copyreg.dispatch_table.get(type(obj))
    if reducer is not None:
        return reducer(obj)
    return obj.__reduce_ex__(context.protocol)
