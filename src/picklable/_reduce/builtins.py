"""Built-in kinds: views, buffers, weak collections, standard streams, type variables.

Objects of types that pickle refuses, or saves by a name that does not exist
where they were made, but that can ship exactly:

* **dict views** (``d.keys()``, ``.values()``, ``.items()``, and those of an
  ``OrderedDict``): a view of the very dict the payload carries, so a view and
  its dict shipped together stay linked (the dict is memoized once);
* **memoryviews**: a full view of an object (``memoryview(obj)``) ships as a
  view of that object; any other (a slice, a cast, a non-contiguous view) as a
  view of a copy of its bytes with its format, shape and writability;
* **type variables** (``TypeVar``, ``ParamSpec``, ``TypeVarTuple``), **type
  aliases** (``type Alias = ...``, Python 3.12) and **sentinels**
  (``sentinel("MISSING")``, Python 3.15): by reference where their module holds
  them under their name, else by value, and back in the process that made them
  the original again (as classes by value, :mod:`picklable._tracker`); those of
  the sender's script are the receiver's own where it runs the same script (a
  spawn worker), copies elsewhere;
* **lazy imports** (``lazy import json``, Python 3.15): a function's globals
  hold them until the name is first used; they ship as lazy imports of the same
  module, imported where (and when) the copy first uses the name, as here;
* **weak collections** (``WeakSet``, ``WeakKeyDictionary``,
  ``WeakValueDictionary``): the same kind of collection over the members the
  payload carries (members nothing else in the payload holds are gone after
  loading, as they would be here);
* **the standard streams** ``sys.stdout`` and ``sys.stderr``: the receiver's
  own (by reference, ``sys.stdout``), whatever their type.

Other streams and files go to pickle, which refuses them; the diagnostics say
why for each mode (:mod:`picklable._reduce.refusals`).
"""

from __future__ import annotations

import collections
import contextlib
import gc
import pickle
import sys
import typing
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .. import _caches, _locator, _reconstruct, _tracker
from .._compat import LAZY_IMPORT_TYPE, MAIN_MODULES
from .._paths import Path, walk
from ..exceptions import PicklingError
from .reference import reference
from .registry import ships_by_value
from .scripts import (
    note_copy,
    origin_of,
    same_in_workers,
    script_location,
    script_reference,
    with_origin,
)

if TYPE_CHECKING:
    from .context import DumpContext

__all__ = [
    "DICT_VIEW_TYPES",
    "STANDARD_STREAMS",
    "TYPEVAR_TYPES",
    "WEAK_COLLECTION_TYPES",
    "copied_parameters",
    "dict_view_pieces",
    "lazy_import_pieces",
    "lazy_import_spec",
    "memoryview_pieces",
    "newtype_pieces",
    "reduce_dict_view",
    "reduce_lazy_import",
    "reduce_memoryview",
    "reduce_newtype",
    "reduce_sentinel",
    "reduce_stream",
    "reduce_type_alias",
    "reduce_typevar",
    "reduce_weak_collection",
    "type_alias_pieces",
    "typevar_pieces",
    "weak_collection_pieces",
]

# ---------------------------------------------------------------- dict views

_ORDERED: collections.OrderedDict[Any, Any] = collections.OrderedDict()
_PLAIN: dict[Any, Any] = {}
# view type -> (method name, of an OrderedDict)
DICT_VIEW_TYPES: dict[type, tuple[str, bool]] = {
    type(_PLAIN.keys()): ("keys", False),
    type(_PLAIN.values()): ("values", False),
    type(_PLAIN.items()): ("items", False),
    type(_ORDERED.keys()): ("keys", True),
    type(_ORDERED.values()): ("values", True),
    type(_ORDERED.items()): ("items", True),
}


def _viewed(view: Any) -> Any:
    # A view holds one reference: its dict (``view.mapping`` is a read-only
    # proxy of it, and exists from 3.10 only).
    (mapping,) = gc.get_referents(view)
    return mapping


def reduce_dict_view(context: DumpContext, view: Any) -> Any:
    """A view of the dict the payload carries (the same dict, memoized once)."""
    method, ordered = DICT_VIEW_TYPES[type(view)]
    args: tuple[Any, ...] = (_viewed(view), method, True) if ordered else (_viewed(view), method)
    return (_reconstruct._make_dict_view, args)


def dict_view_pieces(view: Any, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    yield ".mapping", _viewed(view)


# --------------------------------------------------------------- memoryviews

# format -> whether memoryview.cast can make a view of it (one native item).
_castable: dict[str, bool] = {}


def _can_cast(fmt: str, itemsize: int) -> bool:
    found = _castable.get(fmt)
    if found is None:
        try:
            memoryview(bytes(itemsize)).cast(fmt)  # type: ignore[call-overload]
            found = True
        except (TypeError, ValueError):
            found = False
        if len(_castable) < 256:
            _castable[fmt] = found
    return found


def _full_view_of(view: memoryview, base: Any) -> bool:
    """Whether ``view`` is what ``memoryview(base)`` makes (the same window:
    with equal format, shape and strides, a view of ``base`` starts where
    ``base`` starts)."""
    try:
        fresh = memoryview(base)
    except TypeError:
        return False
    with fresh:
        return (
            fresh.format == view.format
            and fresh.shape == view.shape
            and fresh.strides == view.strides
            and fresh.readonly == view.readonly
        )


def reduce_memoryview(context: DumpContext, view: memoryview) -> Any:
    """A view of the object it views, or of a copy of its bytes."""
    try:
        base = view.obj
    except ValueError:
        raise PicklingError(
            "Cannot pickle memoryview: it is released.",
            type_name="memoryview",
            reason="the memoryview is released: it views nothing any more",
            hint="ship the object it viewed, or bytes(view) before releasing it",
        ) from None
    if base is not None and _full_view_of(view, base):
        return (memoryview, (base,))
    fmt = view.format
    if not _can_cast(fmt, view.itemsize):
        reason = (
            f"a memoryview of format {fmt!r} cannot be rebuilt exactly "
            "(memoryview.cast knows single native formats only)"
        )
        hint = "ship the object it views (view.obj), or bytes(view)"
        raise PicklingError(
            f"Cannot pickle memoryview: {reason}. Fix: {hint}.",
            type_name="memoryview",
            reason=reason,
            hint=hint,
        )
    data: Any
    if view.c_contiguous and context.protocol >= 5:
        # Written as bytes (read-only) or a bytearray (writable), or out of band.
        data = pickle.PickleBuffer(view)
    else:
        data = view.tobytes()  # C order, whatever the strides
        if not view.readonly:
            data = bytearray(data)
    return (_reconstruct._make_memoryview, (data, fmt, view.shape))


def memoryview_pieces(view: memoryview, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    try:
        base = view.obj
    except ValueError:
        return
    if reduction is not None and reduction[0] is memoryview:
        yield ".obj", base


# ------------------------------------------------------------ type variables

TYPEVAR_TYPES: tuple[type, ...] = tuple(
    t
    for t in (
        typing.TypeVar,
        getattr(typing, "ParamSpec", None),
        getattr(typing, "TypeVarTuple", None),
    )
    if isinstance(t, type)
)
# What a type variable's constructor takes besides its name and constraints,
# as the attribute that keeps it (``infer_variance`` from 3.12).
_OPTIONS = ("bound", "covariant", "contravariant", "infer_variance")


_ABSENT = object()


def _by_own_name(context: DumpContext, obj: Any, name: str, qualname: str | None = None) -> Any:
    """The reference to ``obj`` (a type variable, alias or sentinel: no class or
    function) where its module holds it under its name, or a located path
    (an alias in a class body); None where it has neither."""
    module = getattr(obj, "__module__", None)
    if type(module) is not str or ships_by_value(module):
        return None
    home = sys.modules.get(module)
    if home is None:
        return None
    held = home.__dict__.get(name, _ABSENT)  # a lazy import there stays one
    if held is _ABSENT:
        try:
            held = getattr(home, name)  # a module's __getattr__
        except Exception:
            held = _ABSENT
    if held is obj:
        return name  # pickle's own reduction: a global, loaded in C
    path = tuple((qualname or name).split("."))
    if qualname and "<" not in qualname:
        try:
            if walk(home, path) is obj:
                return reference(context, obj, module, path)
        except Exception:
            pass
    located = _locator.locate(obj)
    if located is not None:
        return reference(context, obj, *located)
    return None


def _tracker_id(context: DumpContext, obj: Any) -> str:
    canonical = context.canonical
    found: str = _tracker.object_id(obj) if canonical is None else canonical.object_id(obj)
    return found


def _with_script_origin(context: DumpContext, obj: Any, reduction: Any) -> Any:
    """A copy of an object of the sender's script, marked with where the script
    holds it: a receiver that runs the script (a spawn worker) uses its own."""
    if getattr(obj, "__module__", None) in MAIN_MODULES:
        return with_origin(context, obj, reduction, carry_state=False)
    return reduction


def reduce_typevar(context: DumpContext, variable: Any) -> Any:
    """By reference where its module holds it under its name, or (a type
    parameter of a ``def f[T]``, ``class C[T]`` or ``type A[T]`` statement) where
    an importable module holds it (see :func:`_parameter_home`), else by value."""
    name = variable.__name__
    found = _by_own_name(context, variable, name)
    if found is not None:
        return found
    home = _parameter_home(variable)
    if home is not None:
        return reference(context, variable, *home)
    options: dict[str, Any] = {}
    for option in _OPTIONS:
        value = _evaluated(variable, f"__{option}__")
        if value:  # None and False are the defaults
            options[option] = value
    has_default = getattr(variable, "has_default", None)
    if has_default is not None and has_default():  # 3.13
        options["default"] = _evaluated(variable, "__default__")
    reduction = (
        _reconstruct._make_typevar,
        (
            type(variable),
            name,
            tuple(_evaluated(variable, "__constraints__") or ()),
            options,
            getattr(variable, "__module__", None),
            _tracker_id(context, variable),
        ),
    )
    return _with_script_origin(context, variable, reduction)


# A type parameter of a statement (3.12+) -> where an importable module holds
# it, or None (see _parameter_home): found once per parameter, a found path
# walked again at each use.
_parameter_homes: weakref.WeakKeyDictionary[Any, tuple[str, Path] | None] = (
    weakref.WeakKeyDictionary()
)
_caches.register("builtins.parameter_homes", _parameter_homes.clear)


def copied_parameters(params: Any) -> None:
    """Note that ``params``, the ``__type_params__`` of a function or class
    copied by value, have no home to be found by (:func:`_parameter_home`):
    they go with their owner's copy (one made per call of a generic factory
    asks no search of the objects that refer to it)."""
    for param in params:
        if type(param) in TYPEVAR_TYPES and param not in _parameter_homes:
            with contextlib.suppress(TypeError):
                _parameter_homes[param] = None


def _parameter_home(variable: Any) -> tuple[str, Path] | None:
    """``(module, path)`` where an importable module holds ``variable``, a type
    parameter of a ``def f[T]``, ``class C[T]`` or ``type A[T]`` statement
    (3.12+), whose ``__module__`` (typing's) does not say where: under a name
    of the module (``T_ident = ident.__type_params__[0]``), or in the
    ``__type_params__`` of a function, class or alias the receiver imports.
    The receiver loads that very object, as pickle's rule for what it can
    import. None for any other type variable."""
    if getattr(variable, "__module__", None) != "typing":
        return None
    try:
        if variable in _parameter_homes:
            home = _parameter_homes[variable]
            if home is None or _holds_at(home, variable):
                return home
    except TypeError:  # no weak reference to it
        return None
    found = _search_parameter_home(variable)
    with contextlib.suppress(TypeError):
        _parameter_homes[variable] = found
    return found


def _holds_at(home: tuple[str, Path], obj: Any) -> bool:
    module = sys.modules.get(home[0])
    try:
        return module is not None and walk(module, home[1]) is obj
    except Exception:
        return False


def _search_parameter_home(variable: Any) -> tuple[str, Path] | None:
    """The objects that refer to ``variable`` (a search of the heap): a module's
    namespace, or the ``__type_params__`` tuple of its owner."""
    owners: list[tuple[Any, int]] = []
    for referrer in gc.get_referrers(variable):
        if type(referrer) is dict:
            module = _module_of_namespace(referrer)
            if module is not None:
                for key, value in list(referrer.items()):
                    if value is variable and type(key) is str and key.isidentifier():
                        return module, (key,)
        elif type(referrer) is tuple:
            index = next(i for i, item in enumerate(referrer) if item is variable)
            for holder in gc.get_referrers(referrer):
                owner = holder
                if type(holder) is dict:  # a class's namespace holds its parameters
                    owner = next((o for o in gc.get_referrers(holder) if isinstance(o, type)), None)
                if owner is not None and getattr(owner, "__type_params__", None) is referrer:
                    owners.append((owner, index))
    for owner, index in owners:
        found = _owner_home(owner)
        if found is not None:
            home = (found[0], (*found[1], "__type_params__", index))
            if _holds_at(home, variable):
                return home
    return None


def _module_of_namespace(namespace: dict[str, Any]) -> str | None:
    """The name of the importable module whose globals ``namespace`` is, or None."""
    name = namespace.get("__name__")
    if type(name) is not str or name in MAIN_MODULES or ships_by_value(name):
        return None
    module = sys.modules.get(name)
    if module is None or getattr(module, "__dict__", None) is not namespace:
        return None
    return name


def _owner_home(owner: Any) -> tuple[str, Path] | None:
    """Where the receiver imports ``owner``, a function, class or type alias."""
    module = getattr(owner, "__module__", None)
    if type(module) is not str or module in MAIN_MODULES or ships_by_value(module):
        return None
    qualname = getattr(owner, "__qualname__", None) or getattr(owner, "__name__", None)
    if type(qualname) is str and "<" not in qualname:
        path = tuple(qualname.split("."))
        if _holds_at((module, path), owner):
            return module, path
    return _locator.locate(owner)


def _evaluated(obj: Any, attribute: str) -> Any:
    """``obj.<attribute>``: the bound, constraints or default of a type
    parameter, or an alias's value, which ``def f[T: X]`` and ``type A = X``
    evaluate on first access (3.12+): a name defined nowhere fails the dump here
    with a reason, rather than the copy later."""
    try:
        return getattr(obj, attribute, None)
    except NameError as exc:
        what = f"{type(obj).__name__} {getattr(obj, '__name__', '?')}"
        reason = f"the {attribute.strip('_')} of {what} names something not defined ({exc})"
        hint = "define what it names before shipping it"
        raise PicklingError(
            f"Cannot pickle {what}: {reason}. Fix: {hint}.",
            type_name=type(obj).__name__,
            reason=reason,
            hint=hint,
        ) from None


def reduce_newtype(context: DumpContext, new_type: Any) -> Any:
    """``typing.NewType``: by reference where its module holds it under its
    name (pickle's own reduction, its qualified name), else made again from its
    name and supertype (a script's, one made in a function), the original
    again where it was made."""
    name = new_type.__name__
    found = _by_own_name(context, new_type, name, getattr(new_type, "__qualname__", None))
    if found is not None:
        return found
    reduction: tuple[Any, ...] = (
        _reconstruct._make_typevar,
        (
            typing.NewType,
            name,
            (new_type.__supertype__,),
            {},
            getattr(new_type, "__module__", None),
            _tracker_id(context, new_type),
        ),
    )
    return _with_script_origin(context, new_type, reduction)


def newtype_pieces(new_type: Any, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    yield ".__supertype__", new_type.__supertype__


def typevar_pieces(variable: Any, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    bound = getattr(variable, "__bound__", None)
    if bound is not None:
        yield ".__bound__", bound
    for i, constraint in enumerate(getattr(variable, "__constraints__", ())):
        yield f".__constraints__[{i}]", constraint


# -------------------------------------------------------------- type aliases


def reduce_type_alias(context: DumpContext, alias: Any) -> Any:
    """``type Alias = ...`` (3.12): by reference where its module holds it, else
    an alias made again by a ``type`` statement, its value (and its type
    parameters' bounds, constraints and defaults) evaluated on first use, as
    here. Its type parameters are the statement's own, each under the tracker
    id of the sender's: the payload's type variables that are these parameters
    (in its value, or shipped beside it) load as them."""
    name = alias.__name__
    qualname = getattr(alias, "__qualname__", None)  # 3.15
    found = _by_own_name(context, alias, name, qualname)
    if found is not None:
        return found
    params = []
    values = [_evaluated(alias, "__value__")]
    for param in alias.__type_params__:
        constraints = _evaluated(param, "__constraints__") or ()
        if constraints:
            shape = len(constraints)
            values.extend(constraints)
        elif _evaluated(param, "__bound__") is not None:
            shape = -1
            values.append(param.__bound__)
        else:
            shape = 0
        has_default = getattr(param, "has_default", None)
        default = has_default is not None and has_default()  # 3.13
        if default:
            values.append(_evaluated(param, "__default__"))
        kind = type(param).__name__
        params.append((kind, param.__name__, shape, default, _tracker_id(context, param)))
    alone, origin = _script_origin(context, alias)
    if alone is not None:
        return alone
    copied_parameters(alias.__type_params__)
    box: list[Any] = []  # the values, set once the alias is memoized (it may be in them)
    args = (name, tuple(params), alias.__module__, qualname, _tracker_id(context, alias), box)
    return (
        _reconstruct._make_type_alias,
        args if origin is None else (*args, origin),
        (box, values),
        None,
        None,
        _reconstruct._fill_type_alias,
    )


def _script_origin(context: DumpContext, obj: Any) -> tuple[Any, Any]:
    """For an object of the sender's script: ``(the reference alone, None)`` when
    that is what travels (see :func:`.scripts.script_reference`), else ``(None,
    its origin)`` (the receiver running the script uses its own, see
    :mod:`.scripts`; None if the main guard changes it); ``(None, None)`` for
    anything else. For kinds whose rebuilder takes the origin itself."""
    module = getattr(obj, "__module__", None)
    if module not in MAIN_MODULES or context.scripts == "copy":
        return None, None
    where = script_location(obj, module)
    if where is None:
        return None, None
    same = same_in_workers(obj, *where)
    alone = script_reference(context, obj, *where, same)
    if alone is not None:
        return alone, None
    note_copy(context)
    return None, origin_of(obj, *where) if same else None


def type_alias_pieces(alias: Any, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    try:
        yield ".__value__", alias.__value__
    except NameError:
        return
    for i, param in enumerate(alias.__type_params__):
        yield f".__type_params__[{i}]", param


# ------------------------------------------------------------------ sentinels


def reduce_sentinel(context: DumpContext, sentinel: Any) -> Any:
    """``sentinel("MISSING")`` (3.15): by its name, as pickle, where its module
    holds it; else a copy with its name, repr and module, the same object again
    wherever one payload or the next brings it."""
    name = sentinel.__name__
    found = _by_own_name(context, sentinel, name)
    if found is not None:
        return found
    shown = repr(sentinel)
    options = {} if shown == name else {"repr": shown}
    reduction = (
        _reconstruct._make_typevar,
        (type(sentinel), name, (), options, sentinel.__module__, _tracker_id(context, sentinel)),
    )
    return _with_script_origin(context, sentinel, reduction)


# -------------------------------------------------------------- lazy imports


def lazy_import_spec(lazy: Any) -> tuple[str, tuple[str, ...] | None, str | None] | None:
    """``(module, fromlist, name)`` of a lazy import, as :func:`_reconstruct.
    _make_lazy_import` takes them, or None for a shape no statement makes.

    A lazy import keeps what it imports in C fields that only the garbage
    collector's view shows: a root holds the module name and, for ``lazy from
    m import a, b``, the names imported from it; an attribute holds its parent
    and the attribute's name. ``lazy import a.b`` is a root (it binds ``a``);
    ``lazy import a.b as x`` the attributes ``b`` of a root ``a.b``; ``lazy
    from a import b`` the attribute ``b`` of a root ``a`` with a fromlist.
    """
    chain: list[str] = []
    current = lazy
    for _ in range(64):
        parts = [r for r in gc.get_referents(current) if type(r) in (str, tuple, LAZY_IMPORT_TYPE)]
        if not parts:
            return None
        head = parts[0]
        if type(head) is str:
            fromlist = parts[1] if len(parts) > 1 and type(parts[1]) is tuple else None
            break
        if len(parts) < 2 or type(parts[1]) is not str:
            return None
        chain.insert(0, parts[1])
        current = head
    else:
        return None
    module = head
    if fromlist is not None:
        if len(chain) == 1 and chain[0] in fromlist and all(type(n) is str for n in fromlist):
            return module, fromlist, chain[0]
        return None
    if not chain:
        return module, None, None
    if chain == module.split(".")[1:]:
        return module, None, module
    return None


def reduce_lazy_import(context: DumpContext, lazy: Any) -> Any:
    """A lazy import of the same module, resolved where the copy first uses it."""
    spec = lazy_import_spec(lazy)
    if spec is None:
        reason = f"{lazy!r} has a shape that no lazy import statement makes"
        hint = "use the name once before shipping (that imports it), or import it eagerly"
        raise PicklingError(
            f"Cannot pickle {lazy!r}: {reason}. Fix: {hint}.",
            type_name="lazy_import",
            reason=reason,
            hint=hint,
        )
    return (_reconstruct._make_lazy_import, spec)


def lazy_import_pieces(lazy: Any, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    return iter(())


# --------------------------------------------------------- weak collections

WEAK_COLLECTION_TYPES = (weakref.WeakSet, weakref.WeakKeyDictionary, weakref.WeakValueDictionary)


def reduce_weak_collection(context: DumpContext, collection: Any) -> Any:
    """The same kind of collection over the members (by identity in the payload)."""
    if type(collection) is weakref.WeakSet:
        return (weakref.WeakSet, (list(collection),))
    return (type(collection), (dict(collection.items()),))


def weak_collection_pieces(collection: Any, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    if type(collection) is weakref.WeakSet:
        for i, member in enumerate(list(collection)):
            yield f"{{item {i}}}", member
        return
    for key, value in list(collection.items()):
        yield f"[{key!r}]", value
        yield f"{{key {key!r}}}", key


# ------------------------------------------------------------------ streams

# The standard streams the receiver has its own of, by the name that finds them.
STANDARD_STREAMS = ("stdout", "stderr", "__stdout__", "__stderr__")


def reduce_stream(context: DumpContext, stream: Any) -> Any:
    """``sys.stdout`` and ``sys.stderr`` as the receiver's own; other streams
    and files as pickle does (it refuses open files: see refusals)."""
    if type(stream) in context.table:
        return NotImplemented
    for name in STANDARD_STREAMS:
        if getattr(sys, name, None) is stream:
            return (_reconstruct._resolve, ("sys", (name,)))
    return NotImplemented
