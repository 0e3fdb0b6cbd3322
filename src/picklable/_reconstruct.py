"""The payload format: every rebuilder a payload names, and what each one means.

Payloads name these functions by reference (``picklable._reconstruct._resolve``
and so on), so they are a promise: payloads written by earlier releases must
keep loading. Their names and signatures are frozen (``__all__`` is exactly
that set; ``tests/old_payloads`` holds payloads of every release, loaded by
the suite): add new ones, never rename, and only ever add optional trailing
parameters.

Each rebuilder is declared with :func:`_rebuilder`, and the declaration is the
one place that says what loading through it means. The readers:

* ``role`` -- how the object it builds ships (``reference``: the receiver's
  own object, found by name; ``value``: a copy built from the payload;
  ``wrapper``: rebuilt around its pieces; ``part``: a piece of another
  object). ``explain`` reports the decision the reducers took in these terms.
* ``label`` -- what ``picklable inspect`` says the call does.
* ``reach`` -- what the call can touch, which the allow-list guards
  (:mod:`picklable._allow`): ``import`` (imports and walks by name), ``code``
  (builds code from bytecode), ``class`` (creates or finds a class), ``state``
  (sets attributes on an object the payload gives it), ``call`` (calls
  objects the payload gives it), ``build`` (builds a new object from its
  arguments alone).

Most of a by-value function is rebuilt by C code alone (``marshal.loads``,
``types.FunctionType``, pickle's BUILD). The Python frames here run once per
class, per located reference or per payload, never once per function.
"""

from __future__ import annotations

import builtins
import collections
import dataclasses
import functools
import importlib
import sys
import threading
import types
from collections.abc import Callable
from typing import Any, TypeVar

from . import _code, _traceback, _tracker
from ._code import CODES, HERE
from ._compat import full_traceback, proxy_own_dict
from ._paths import Path, format_path, walk
from .exceptions import UnpicklingError, make_combined

__all__ = [
    "_bind_descriptor",
    "_class_setstate",
    "_exception_setstate",
    "_import",
    "_load_code",
    "_make_cached_property",
    "_make_cell",
    "_make_class",
    "_make_dict_view",
    "_make_enum",
    "_make_function",
    "_make_lru_cache",
    "_make_memoryview",
    "_make_module",
    "_make_property",
    "_make_singledispatch",
    "_make_traceback",
    "_make_typevar",
    "_make_wrapt_function_wrapper",
    "_make_wrapt_proxy",
    "_resolve",
    "_set_proxy_state",
    "_with_state",
]

F = TypeVar("F", bound=Callable[..., Any])

ROLES = ("reference", "value", "wrapper", "part")
REACHES = ("import", "code", "class", "state", "call", "build")


@dataclasses.dataclass(frozen=True)
class Rebuilder:
    """What loading through one rebuilder means (see the module doc)."""

    name: str
    function: Callable[..., Any]
    role: str
    label: str
    reach: str


REBUILDERS: dict[str, Rebuilder] = {}
"""Rebuilder name -> its declaration; every name of ``__all__``, nothing else."""


def _rebuilder(role: str, label: str, reach: str) -> Callable[[F], F]:
    assert role in ROLES and reach in REACHES, (role, reach)

    def declare(function: F) -> F:
        name = function.__name__
        REBUILDERS[name] = Rebuilder(name, function, role, label, reach)
        return function

    return declare


def rebuilder_of(func: Any) -> Rebuilder | None:
    """The declaration of ``func`` if it is one of the rebuilders, else None."""
    found = REBUILDERS.get(getattr(func, "__name__", None))  # type: ignore[arg-type]
    return found if found is not None and found.function is func else None


# ---------------------------------------------------------------- references


@_rebuilder("reference", "imports a module", "import")
def _import(module: str) -> Any:
    """Return the module named ``module``, importing it if needed."""
    found = sys.modules.get(module)
    if found is not None:
        return found
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        error = _load_error(
            exc,
            f"Cannot load: module {module!r} is not importable here ({exc}). "
            f"Fix: install the package that provides {module!r} in the receiving "
            "environment, or ship it by value with picklable.register_by_value().",
            reason=f"module {module!r} not importable",
            hint="install it where the payload is loaded",
        )
        error.name = exc.name  # type: ignore[attr-defined]
    # Outside the handler: one traceback
    raise error


@_rebuilder("reference", "imports an object through a located path", "import")
def _resolve(module: str, path: Path) -> Any:
    """Load an object shipped by reference through a located path."""
    root = _import(module)
    try:
        return walk(root, path)
    except (AttributeError, LookupError, TypeError) as exc:
        where = format_path(module, path)
        error = _load_error(
            exc,
            f"Cannot load {where}: {exc}. The sender had an object there; this "
            "environment does not (renamed attribute, or another version of "
            f"{module.partition('.')[0]!r}). Fix: install the same version on both sides.",
            reason=f"{where} not found",
            hint="install the same version on both sides",
        )
    raise error


def _load_error(cause: Exception, message: str, *, reason: str, hint: str) -> UnpicklingError:
    """An UnpicklingError that is also of ``cause``'s type (``ModuleNotFoundError``,
    ``AttributeError``...), chained to it as the front door chains errors."""
    error = make_combined(UnpicklingError, type(cause), message, reason=reason, hint=hint)
    if error is None:
        error = UnpicklingError(message, reason=reason, hint=hint)
    error.__context__ = cause
    if full_traceback():
        error.__cause__ = cause
    else:
        error.__suppress_context__ = True
    return error


# ------------------------------------------------------------- code by value


@_rebuilder("value", "builds a code object by value", "code")
def _load_code(data: bytes, record: str) -> types.CodeType:
    """Build a code object from marshal bytes, refusing another interpreter's."""
    return _code.load(data, record)


@_rebuilder("value", "builds a function by value", "code")
def _make_function(
    data: bytes,
    record: str,
    globals: dict[str, Any],
    name: str,
    defaults: tuple[Any, ...] | None,
    closure: tuple[types.CellType, ...] | None,
    annotations: dict[str, Any] | None = None,
) -> types.FunctionType:
    """Build a function shipped by value (its other metadata comes by BUILD).

    One Python frame per function, but only one global per payload: at load a
    global costs ten times a frame. ``annotations`` (added after 0.1.0's first
    payloads, hence optional) come here when they cannot lead back to the
    function; otherwise by BUILD, once the function is memoized.
    """
    if record != HERE:
        _code.check_interpreter(record)  # even for bytes this process has seen
    code = CODES.get(data)
    if code is None:
        code = _code.load(data, record)
    if name == code.co_name:
        name = code.co_name  # as where it was made: shared with the code, not with the payload
    func = types.FunctionType(code, globals, name, defaults, closure)
    if annotations is not None:
        func.__annotations__ = annotations
    return func


@_rebuilder("part", "builds a closure cell", "build")
def _make_cell(*contents: Any) -> types.CellType:
    """A closure cell, empty or holding ``contents[0]``."""
    return types.CellType(*contents)


@_rebuilder("value", "builds a module in memory", "build")
def _make_module(name: str, namespace: dict[str, Any]) -> types.ModuleType:
    """Rebuild a module that exists only in memory on the sending side (or
    that is registered to ship by value), with this process's builtins."""
    module = types.ModuleType(name)
    module.__dict__.update(namespace)
    module.__dict__.setdefault("__builtins__", builtins.__dict__)
    return module


# ---------------------------------------------------------- classes by value


def _known_class(tracker_id: str, origin: _tracker.Origin | None) -> type | None:
    """The class this process already has for a by-value class: one it made or
    sent under ``tracker_id``, or the original a spawned child sends back."""
    known = _tracker.known(tracker_id)
    if known is not None:
        return known
    original = _tracker.main_original(origin)
    if original is not None:
        _tracker.track(original, tracker_id)
    return original


@_rebuilder("value", "builds a class by value", "class")
def _make_class(
    metaclass: type,
    name: str,
    bases: tuple[type, ...],
    namespace: dict[str, Any],
    tracker_id: str,
    origin: _tracker.Origin | None,
) -> type:
    """Create (or find again) a class shipped by value; attributes come later."""
    known = _known_class(tracker_id, origin)
    if known is not None:
        return known
    if metaclass is type:
        cls = type(name, bases, dict(namespace))
    else:
        cls = types.new_class(
            name, bases, {"metaclass": metaclass}, lambda ns: ns.update(namespace)
        )
    _tracker.mark_built(cls)
    _tracker.track(cls, tracker_id)
    return cls


@_rebuilder("value", "builds an Enum class by value", "class")
def _make_enum(
    metaclass: type,
    name: str,
    bases: tuple[type, ...],
    namespace: dict[str, Any],
    members: dict[str, Any],
    tracker_id: str,
    origin: _tracker.Origin | None,
) -> type:
    """Create (or find again) an Enum class shipped by value."""
    known = _known_class(tracker_id, origin)
    if known is not None:
        return known
    classdict = metaclass.__prepare__(name, bases)
    for key, value in namespace.items():
        classdict[key] = value
    for key, value in members.items():
        classdict[key] = value
    cls: type = metaclass(name, bases, classdict)
    _tracker.mark_built(cls)
    _tracker.track(cls, tracker_id)
    return cls


@_rebuilder("part", "sets the attributes of a class built by value", "state")
def _class_setstate(cls: type, state: tuple[dict[str, Any], list[type]]) -> type:
    """Give a class built from payloads the sender's attributes (again, if it was
    built by an earlier payload: the sender may have changed it since); leave a
    class that originates in this process untouched."""
    if not _tracker.built(cls):
        return cls
    attributes, registered = state
    for key, value in attributes.items():
        setattr(cls, key, value)
    for subclass in registered:
        cls.register(subclass)  # type: ignore[attr-defined]
    return cls


# ------------------------------------------------------------------ wrappers


@_rebuilder("wrapper", "binds a descriptor to its instance", "call")
def _bind_descriptor(descriptor: Any, instance: Any, owner: Any) -> Any:
    """A bound wrapper is what binding its descriptor makes: bind it again."""
    return descriptor.__get__(instance, owner)


@_rebuilder("part", "sets a rebuilt wrapt proxy's state", "state")
def _set_proxy_state(
    proxy: Any, state: tuple[dict[str, Any] | None, dict[str, Any] | None] | None
) -> None:
    """Give a rebuilt proxy its state: ``(own, forwarded)``.

    ``own`` goes back on the proxy itself (its ``_self_*`` attributes), not on what
    it wraps; ``forwarded`` is set through the proxy, landing on the wrapped object.
    """
    if not state:
        return
    own, forwarded = state
    if own:
        own_dict = proxy_own_dict(proxy)
        if own_dict is not None:
            own_dict.update(own)
        else:
            for key, value in own.items():
                object.__setattr__(proxy, key, value)
    if forwarded:
        for key, value in forwarded.items():
            setattr(proxy, key, value)


# wrapt's proxy roots by the names its versions and implementations use.
_WRAPT_PROXY_ROOTS = ("ObjectProxy", "BaseObjectProxy")
_WRAPT_MODULES = ("builtins", "_wrappers", "wrapt.wrappers")


@_rebuilder("wrapper", "rebuilds a wrapt proxy around what it wraps", "call")
def _make_wrapt_proxy(cls: Any, wrapped: Any) -> Any:
    """An ``ObjectProxy`` subclass instance around ``wrapped``, bypassing a custom ``__init__``."""
    proxy = cls.__new__(cls)
    for klass in cls.__mro__:
        if klass.__name__ in _WRAPT_PROXY_ROOTS and klass.__module__ in _WRAPT_MODULES:
            klass.__init__(proxy, wrapped)
            return proxy
    cls.__init__(proxy, wrapped)
    return proxy


@_rebuilder("wrapper", "rebuilds a wrapt function wrapper", "call")
def _make_wrapt_function_wrapper(cls: Any, wrapped: Any, fields: dict[str, Any]) -> Any:
    """A wrapt ``FunctionWrapper`` (or subclass) with the very fields it had."""
    proxy = cls.__new__(cls)
    for klass in cls.__mro__:
        if klass.__name__ == "_FunctionWrapperBase":
            klass.__init__(proxy, wrapped=wrapped, **fields)
            return proxy
    raise UnpicklingError(
        f"Cannot load a wrapt function wrapper of type {cls.__qualname__}: the wrapt "
        "installed here has no _FunctionWrapperBase. Fix: install the same wrapt on both sides.",
        reason="incompatible wrapt",
        hint="install the same wrapt version on both sides",
    )


@_rebuilder("wrapper", "rebuilds an lru_cache wrapper (empty cache)", "call")
def _make_lru_cache(wrapped: Any, maxsize: int | None, typed: bool) -> Any:
    """A fresh (empty) lru_cache wrapper around ``wrapped``."""
    return functools.lru_cache(maxsize=maxsize, typed=typed)(wrapped)


@_rebuilder("wrapper", "rebuilds a cached_property", "build")
def _make_cached_property(cls: Any, with_lock: bool) -> Any:
    """An empty cached_property of ``cls``; its attributes come with BUILD."""
    obj = cls.__new__(cls)
    if with_lock:
        obj.lock = threading.RLock()
    return obj


@_rebuilder("wrapper", "rebuilds a property subclass", "build")
def _make_property(cls: Any, fget: Any, fset: Any, fdel: Any, doc: Any) -> Any:
    """A property subclass instance with its accessors (C slots pickle drops)."""
    obj = cls.__new__(cls)
    property.__init__(obj, fget, fset, fdel, doc)
    return obj


@_rebuilder("wrapper", "rebuilds a singledispatch function and its registry", "call")
def _make_singledispatch(base: Any, registrations: list[tuple[Any, Any]]) -> Any:
    """A singledispatch function with its registrations replayed, its cache empty."""
    dispatcher = functools.singledispatch(base)
    for cls, implementation in registrations:
        dispatcher.register(cls, implementation)
    return dispatcher


@_rebuilder("wrapper", "sets the shipped state on an object (with_state)", "state")
def _with_state(obj: Any, state: dict[str, Any] | None) -> Any:
    """``obj`` (usually this process's own, by reference) with the shipped attributes set."""
    if state:
        for key, value in state.items():
            if key == "__dict__":
                continue
            setattr(obj, key, value)
    return obj


# ------------------------------------------------------------ built-in kinds

_DICT_VIEWS: dict[tuple[str, bool], Callable[[Any], Any]] = {
    (name, ordered): getattr(collections.OrderedDict if ordered else dict, name)
    for name in ("keys", "values", "items")
    for ordered in (False, True)
}


@_rebuilder("part", "makes a view of a dict (keys, values or items)", "build")
def _make_dict_view(mapping: Any, method: str, ordered: bool = False) -> Any:
    """``mapping.keys()`` (or values, items) of the dict the payload carries;
    ``ordered``: the view of an ``OrderedDict``."""
    make = _DICT_VIEWS.get((method, ordered)) if type(method) is str else None
    if make is None or not isinstance(mapping, collections.OrderedDict if ordered else dict):
        raise UnpicklingError(
            f"Cannot load a dict view: the payload asks for {method!r} of a "
            f"{type(mapping).__name__}. The payload is damaged or was not made by picklable.",
            reason="damaged payload: bad dict view",
            hint="check that the bytes arrive unchanged",
        )
    return make(mapping)


@_rebuilder("part", "makes a memoryview of a copy of its bytes", "build")
def _make_memoryview(data: Any, format: str, shape: tuple[int, ...]) -> memoryview:
    """A view with ``format`` and ``shape`` of ``data`` (bytes: read-only;
    a bytearray: writable; an out-of-band buffer: as given)."""
    view = memoryview(data)
    try:
        if view.format != "B" or view.ndim != 1:
            view = view.cast("B")
        rebuilt: memoryview = view.cast(format, shape)  # type: ignore[call-overload]
        return rebuilt
    except (TypeError, ValueError) as exc:
        error = UnpicklingError(
            f"Cannot load a memoryview of format {format!r} and shape {shape!r} from "
            f"{view.nbytes} bytes ({exc}). The payload is damaged, or an out-of-band "
            "buffer given to loads is not the one the payload was made with.",
            reason="bad memoryview data",
            hint="give loads the buffers in the order dumps made them",
        )
    raise error


@_rebuilder("value", "builds a type variable by value", "call")
def _make_typevar(
    factory: Any,
    name: str,
    constraints: tuple[Any, ...],
    options: dict[str, Any],
    module: str | None,
    tracker_id: str,
) -> Any:
    """A ``TypeVar`` (``ParamSpec``, ``TypeVarTuple``) shipped by value; in the
    process that made it (or one that built it before), that very object."""
    known = _tracker.known_object(tracker_id)
    if known is not None:
        return known
    variable = factory(name, *constraints, **options)
    if module is not None:
        try:
            variable.__module__ = module  # else it says picklable._reconstruct
        except (AttributeError, TypeError):
            pass
    try:
        _tracker.track_object(variable, tracker_id)
    except TypeError:  # not weakly referenceable: identity within one payload only
        pass
    return variable


# ---------------------------------------------------------------- exceptions


@_rebuilder("part", "rebuilds a traceback", "build")
def _make_traceback(records: tuple[Any, ...]) -> types.TracebackType | None:
    """Rebuild a traceback shipped as frame records (see ``picklable._traceback``)."""
    return _traceback.build(records)


@_rebuilder("part", "sets an exception's state", "state")
def _exception_setstate(
    exc: BaseException, state: tuple[Any, Any, dict[str, Any]]
) -> BaseException:
    """Set an exception's state: its own first, then fields, past any ``__setattr__``.

    ``state`` is ``(inner, setter, fields)``: ``inner`` is the class's own state,
    given to ``setter(exc, inner)`` when the class's reduction named one, else to
    ``exc.__setstate__`` as pickle's BUILD would; ``fields`` (args, C fields,
    chain, traceback) are set with ``object.__setattr__``, so a frozen exception
    class that refuses ``setattr`` still gets them.
    """
    inner, setter, fields = state
    if setter is not None:
        setter(exc, inner)
    elif inner is not None:
        exc.__setstate__(inner)
    for key, value in fields.items():
        object.__setattr__(exc, key, value)
    return exc


assert sorted(REBUILDERS) == sorted(__all__), "every rebuilder is declared, nothing else"
