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
  arguments alone), ``hands out`` (gives a part of an object the payload
  names: never admitted under an allow-list).
* ``target`` / ``state`` (``state`` reach) -- the parameter whose object the
  call modifies, and the parameter holding what it sets (an empty state
  modifies nothing); ``writes``, when that is not the whole story, says
  exactly what it writes to: ``writes(**arguments)`` yields ``(object, how)``
  pairs, ``how`` being ``"through"`` (attributes set on it, landing on what a
  proxy wraps), ``"on"`` (set past any proxy: ``object.__setattr__``, its own
  dict) or ``"dict"`` (the object is the ``__dict__`` it found and updates).
  Nothing yielded: the call leaves its target as it is.
* ``origin`` -- the parameter holding a script object's origin ``(module,
  path, file, first line)``: the call returns this process's own object where
  it runs that script (:func:`script_original`), and builds (or refuses)
  otherwise; an origin whose file is None matches no script.
* ``made_for`` -- the parameter whose object the call's result is made for
  (``build`` reach): the result is new, made by this process's own code from
  that object (admitted already), and the allow-list counts it as the
  payload's, whatever module its code is in.

Most of a by-value function is rebuilt by C code alone (``marshal.loads``,
``types.FunctionType``, pickle's BUILD). The Python frames here run once per
class, per located reference or per payload, never once per function.
"""

from __future__ import annotations

import builtins
import collections
import functools
import importlib
import keyword
import reprlib
import sys
import threading
import types
import typing
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple, TypeVar

from . import _caches, _code, _traceback, _tracker
from ._code import CODES, HERE
from ._compat import (
    LAZY_IMPORT_TYPE,
    SENTINEL_TYPE,
    chained,
    class_namespace,
    is_heap_type,
    proxy_own_dict,
    wrapt_proxy_roots,
)
from ._layout import ITEMS, container_items, is_slot, replace_items, slot_values
from ._paths import Path, format_path, walk
from ._reads import missing_globals
from .exceptions import UnpicklingError, make_combined

__all__ = [
    "_bind_descriptor",
    "_built_setstate",
    "_check_interpreter",
    "_class_setstate",
    "_closure_cell",
    "_exception_setstate",
    "_fill_cell",
    "_fill_type_alias",
    "_first",
    "_import",
    "_load_code",
    "_main_object",
    "_make_cached_property",
    "_make_cell",
    "_make_class",
    "_make_dataclass_annotate",
    "_make_dict_view",
    "_make_enum",
    "_make_function",
    "_make_lazy_import",
    "_make_lru_cache",
    "_make_memoryview",
    "_make_module",
    "_make_partialmethod",
    "_make_property",
    "_make_recursive_repr",
    "_make_singledispatch",
    "_make_traceback",
    "_make_type_alias",
    "_make_typevar",
    "_make_wrapt_function_wrapper",
    "_make_wrapt_proxy",
    "_own_or_copy",
    "_resolve",
    "_script_or_build",
    "_set_instance_state",
    "_set_proxy_state",
    "_set_state_and_dict",
    "_update_globals",
    "_with_state",
]

F = TypeVar("F", bound=Callable[..., Any])

ROLES = ("reference", "value", "wrapper", "part")
REACHES = ("import", "code", "class", "state", "call", "build", "hands out")


class Rebuilder(NamedTuple):
    """What loading through one rebuilder means (see the module doc)."""

    name: str
    function: Callable[..., Any]
    role: str
    label: str
    reach: str
    target: str | None = None
    state: str | None = None
    writes: Callable[..., Iterable[tuple[Any, str]]] | None = None
    origin: str | None = None
    made_for: str | None = None


REBUILDERS: dict[str, Rebuilder] = {}
"""Rebuilder name -> its declaration; every name of ``__all__``, nothing else."""


def _rebuilder(
    role: str,
    label: str,
    reach: str,
    *,
    target: str | None = None,
    state: str | None = None,
    writes: Callable[..., Iterable[tuple[Any, str]]] | None = None,
    origin: str | None = None,
    made_for: str | None = None,
) -> Callable[[F], F]:
    assert role in ROLES and reach in REACHES, (role, reach)
    assert (reach == "state") == (target is not None), "a state rebuilder names its target"
    assert made_for is None or reach == "build", "only a build makes its result for an object"

    def declare(function: F) -> F:
        name = function.__name__
        REBUILDERS[name] = Rebuilder(
            name, function, role, label, reach, target, state, writes, origin, made_for
        )
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
            "environment, or ship the sender's module by value with "
            "picklable.register_by_value().",
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
    return chained(error, cause)


# ----------------------------------------------------------- script objects
#
# An object of the sender's script (its ``__main__``) is this process's own
# where this process runs the same script (a spawn worker re-imports it as
# ``__mp_main__``), and a copy elsewhere: see picklable._reduce.scripts.
# ``origin`` is ``(module, path, file, first line or None)``.

_MISSING = _tracker.MISSING
Origin = tuple[str, Path, "str | None", "int | None"]


def script_original(origin: Origin) -> Any:
    """This process's own object for ``origin``, or _MISSING: absent, another
    definition, or lacking a global it reads here (then the copy is right)."""
    _, path, filename, line = origin
    found, module = _tracker.script_original(path, filename, line)
    if module is None or _missing_globals(found, module):
        return _MISSING
    return found


@_rebuilder(
    "reference",
    "finds an object of the sender's script (it cannot be copied)",
    "import",
    origin="origin",
)
def _main_object(origin: Origin, reason: str) -> Any:
    """An object of the sender's script that could not be copied (it holds a
    lock, a connection...): this process's own, or an error saying why not.

    .. versionadded:: 0.2.0
    """
    found = script_original(origin)
    if found is not _MISSING:
        return found
    module, path, filename, _ = origin
    where = format_path(module, path)
    raise UnpicklingError(
        f"Cannot load {where}: it is an object of the sender's script {filename}, which "
        f"this process does not run (or runs another version of), and no copy of it "
        f"could travel: {reason.rstrip('.')}. Fix: load it where the same script runs (a "
        "spawn worker of that script), or make it copyable"
        + (" (create locks and connections inside the worker)." if "holds a" in reason else "."),
        reason=f"{where}: an object of the sender's script, not copyable",
        hint="run the same script on the receiving side, or make the object copyable",
    )


@_rebuilder("wrapper", "finds a script's wrapper, else builds its copy", "call", origin="origin")
def _script_or_build(
    origin: Origin, builder: Any, args: tuple[Any, ...], carried: dict[str, Any] | None = None
) -> Any:
    """A wrapper of the sender's script: this process's own where it has the
    state the sender set on it (``carried``), else ``builder(*args)`` (the copy),
    remembered as built so that its state applies to it alone.

    .. versionadded:: 0.2.0
    .. versionchanged:: 0.2.0
       ``carried``: this process's own object only where it has that state.
    """
    found = script_original(origin)
    if found is not _MISSING and _keeps_own(found, carried):
        return found
    obj = builder(*args)
    _tracker.mark_built(obj)
    return obj


def _built_state_writes(obj: Any, state: tuple[Any, ...]) -> Iterator[tuple[Any, str]]:
    """What :func:`_built_setstate` writes to: on this process's own object, what
    :func:`_with_state` would; on a copy, the copy (and the ``__dict__`` BUILD's
    way updates)."""
    inner, setter, _ = state
    if not _tracker.built(obj):
        return  # this process's own: checked, never written
    yield obj, "through"
    if setter is None and inner is not None and class_setstate(obj) is None:
        if type(inner) is tuple and len(inner) == 2:
            inner = inner[0]
        if inner:
            yield obj.__dict__, "dict"


@_rebuilder(
    "part",
    "sets a script object's copy's state (checks the original's)",
    "state",
    target="obj",
    state="state",
    writes=_built_state_writes,
)
def _built_setstate(obj: Any, state: tuple[Any, ...]) -> Any:
    """Give a copy built by :func:`_script_or_build` (or a script function's copy)
    its state; leave this process's own object as it is.

    ``state`` is ``(inner, setter, carried)``: on a copy, ``setter(obj, inner)``
    when the copy's reduction named one, else what pickle's BUILD does with
    ``inner``. This process's own object is returned by
    :func:`_script_or_build` only where it has ``carried`` already (its
    attributes other than metadata); a payload that did not send ``carried``
    there (written before it did) is checked as :func:`_with_state` checks.

    .. versionadded:: 0.2.0
    .. versionchanged:: 0.2.0
       Never writes on this process's own object.
    """
    inner, setter, carried = state
    if not _tracker.built(obj):
        if _keeps_own(obj, carried):
            return obj
        # A state setter's result is dropped: it cannot hand back a copy.
        raise _state_refused(obj, sorted(_differing(obj, carried or {})), "")
    if setter is not None:
        setter(obj, inner)
    elif inner is not None:
        _build(obj, inner)
    return obj


def class_setstate(obj: Any) -> Callable[[Any], Any] | None:
    """``obj.__setstate__`` as its class defines it, bound to ``obj``; None where
    its class defines none. Never one the object holds itself: a payload could
    have put any callable in an instance's ``__dict__`` under that name."""
    cls = type(obj)
    for klass in cls.__mro__:
        raw = vars(klass).get("__setstate__")
        if raw is not None:
            get = getattr(type(raw), "__get__", None)  # a callable object binds not
            bound: Callable[[Any], Any] = raw if get is None else get(raw, obj, cls)
            return bound
    return None


def _build(obj: Any, state: Any) -> None:
    """What pickle's BUILD does with ``state`` (``__setstate__``, else the
    ``__dict__`` and the slots of a ``(dict, slots)`` pair)."""
    setstate = class_setstate(obj)
    if setstate is not None:
        setstate(state)
        return
    slots = None
    if type(state) is tuple and len(state) == 2:
        state, slots = state
    if state:
        obj.__dict__.update(state)
    if slots:
        for key, value in slots.items():
            setattr(obj, key, value)


def _missing_globals(obj: Any, module: types.ModuleType) -> set[str]:
    """Globals ``obj`` reads (directly, or through the script's functions and
    classes it reads) that are not defined in this process's copy of the script."""
    return missing_globals(obj, {module.__name__, "__main__", "__mp_main__"})


# ------------------------------------------------------------- code by value


@_rebuilder("part", "checks that the payload was made by this Python minor version", "build")
def _check_interpreter(record: str) -> None:
    """Refuse a payload bound to another interpreter, before anything of it runs.

    A payload that carries code or classes by value (or references that mean
    other objects on other versions) starts with this call (see
    :data:`picklable._pickler.INTERPRETER_CHECK`): ahead of the imports and
    reductions of the rest, which would otherwise run before the first
    ``_make_function`` or ``_load_code`` checks its own record.

    .. versionadded:: 0.2.0
    """
    if record != HERE:
        _code.check_interpreter(record, _code.BOUND)


@_rebuilder("value", "builds a code object by value", "code")
def _load_code(data: _code.Sealed, record: str) -> types.CodeType:
    """Build a code object from marshal bytes, refusing another interpreter's."""
    return _code.load(data, record)


@_rebuilder("value", "builds a function by value", "code", origin="origin")
def _make_function(
    data: _code.Sealed,
    record: str,
    globals: dict[str, Any],
    name: str | None,
    defaults: tuple[Any, ...] | None,
    closure: tuple[types.CellType, ...] | None,
    annotations: dict[str, Any] | None = None,
    origin: Origin | None = None,
) -> types.FunctionType:
    """Build a function shipped by value (its other metadata comes by BUILD).

    One Python frame per function, but only one global per payload: at load a
    global costs ten times a frame. ``annotations`` (added after 0.1.0's first
    payloads, hence optional) come here when they cannot lead back to the
    function; otherwise by BUILD, once the function is memoized. ``origin``
    (0.2.0) marks a function of the sender's script: where this process runs
    the same script, the script's own function is the answer, and the state
    that follows is applied to copies only (:func:`_built_setstate`).
    ``data`` may be ``(bytes, file name)`` and ``name`` None, the code's name
    (0.2.0; see :mod:`picklable._code`). ``closure`` may hold the cells'
    contents in their place (plain data, never a cell), for cells that no
    other object of the payload holds (0.2.0): the cells are made here.

    .. versionchanged:: 0.2.0
       ``origin``; functions get ``__builtins__`` in their globals; ``data``
       without the file name; ``name`` None; ``closure`` of contents.
    """
    if record != HERE:
        # Before anything else, even for bytes this process has seen: a payload
        # whose first call this is gets no check in front (_check_interpreter).
        _code.check_interpreter(record)
    if origin is not None:
        found = script_original(origin)
        if found is not _MISSING:
            return found  # type: ignore[no-any-return]
    try:
        code = CODES.get(data)
    except TypeError:  # not bytes, nor (bytes, file name): load() says what it is
        code = None
    if code is None:
        code = _code.load(data, record)
    if name is None or name == code.co_name:
        name = code.co_name  # as where it was made: shared with the code, not with the payload
    if "__builtins__" not in globals:
        # What every module's globals hold: C code that imports (time.strptime,
        # pickle inside a task) reads __builtins__ from the caller's globals.
        globals["__builtins__"] = builtins
    if closure and type(closure[0]) is not _cell:
        closure = (_cell(closure[0]),) if len(closure) == 1 else tuple(map(_cell, closure))
    func = types.FunctionType(code, globals, name, defaults, closure)
    if annotations is not None:
        func.__annotations__ = annotations
    if origin is not None:
        _tracker.mark_built(func)
    return func


@_rebuilder(
    "part",
    "adds names to a copied function's globals",
    "state",
    target="namespace",
    state="names",
)
def _update_globals(namespace: dict[str, Any], names: dict[str, Any]) -> None:
    """Add ``names`` to the globals a payload shipped for its copied functions
    (those that lead back to a function, set once it is memoized).

    ``dict.update`` did this before 0.2.0; a rebuilder says what it writes to,
    so an allow-list admits it where it cannot admit ``dict.update``.

    .. versionadded:: 0.2.0
    """
    namespace.update(names)


_cell = types.CellType


@_rebuilder("part", "gives a cell of a function the payload made", "hands out")
def _closure_cell(func: types.FunctionType, index: int) -> types.CellType:
    """The cell ``index`` of ``func``'s closure: a function of this payload whose
    cells were made from their contents (``_make_function``), met again later in
    the payload (an object's reduction handed the closure out).

    .. versionadded:: 0.2.0
    """
    return func.__closure__[index]  # type: ignore[index]


@_rebuilder("part", "builds a closure cell", "build")
def _make_cell(*contents: Any) -> types.CellType:
    """A closure cell, empty or holding ``contents[0]``."""
    return types.CellType(*contents)


def _cell_written(cell: Any, content: Any) -> Iterator[tuple[Any, str]]:
    yield cell, "on"


@_rebuilder(
    "part", "fills a copied function's closure cell", "state", target="cell", writes=_cell_written
)
def _fill_cell(cell: types.CellType, content: Any) -> None:
    """Put ``content`` in ``cell``, a cell of a copied function that the payload
    made empty (its content may lead back to the function: set once the
    function is memoized).

    ``setattr(cell, "cell_contents", content)`` did this before 0.2.0; this
    names one global that pickle finds without a ``__reduce_ex__`` call, and
    writes to nothing but a cell.

    .. versionadded:: 0.2.0
    """
    if type(cell) is not types.CellType:
        raise UnpicklingError(
            f"Cannot load: _fill_cell was given a {type(cell).__name__}, not a closure "
            "cell: the payload is damaged or was not made by picklable.",
            reason="damaged payload: not a cell",
            hint="check that the bytes arrive unchanged",
        )
    cell.cell_contents = content


@_rebuilder("part", "names a copied function after its state's effects ran", "build")
def _first(qualname: str, *effects: Any) -> str:
    """``qualname``, once the ``effects`` after it loaded: the calls that fill a
    copied function's globals and cells (``_update_globals``, ``_fill_cell``),
    which a function's state carries in its ``__qualname__`` so that they run
    after the function is memoized.

    ``operator.itemgetter(0)((qualname, *effects))`` did this before 0.2.0,
    with an object more to pickle and a tuple more to load.

    .. versionadded:: 0.2.0
    """
    if type(qualname) is not str:
        raise UnpicklingError(
            f"Cannot load: _first was given a {type(qualname).__name__}, not a "
            "qualified name: the payload is damaged or was not made by picklable.",
            reason="damaged payload: not a name",
            hint="check that the bytes arrive unchanged",
        )
    return qualname


@_rebuilder("value", "builds a module in memory", "build")
def _make_module(name: str, namespace: dict[str, Any]) -> types.ModuleType:
    """Rebuild a module that exists only in memory on the sending side (or
    that is registered to ship by value), with this process's builtins."""
    module = types.ModuleType(name)
    module.__dict__.update(namespace)
    module.__dict__.setdefault("__builtins__", builtins.__dict__)
    return module


# ---------------------------------------------------------- classes by value


def _known_class(
    tracker_id: str, origin: _tracker.Origin | None, namespace: dict[str, Any]
) -> type | None:
    """The class this process already has for a by-value class: one it made or
    sent under ``tracker_id``, or the original a spawned child sends back."""
    known = _tracker.known(tracker_id)
    own = False
    if known is None:
        known = _tracker.main_original(origin)
        if known is not None:
            own = True
            _tracker.track(known, tracker_id)
    if known is not None:
        cell = namespace.get("__classdictcell__")
        if type(cell) is types.CellType:
            # What type() does for a class it makes: the copies of the class's
            # annotation scopes that this payload brings read its namespace;
            # read-only where it is this process's own script's class, never
            # the payload's to change (a class built from payloads is).
            found = class_namespace(known)
            cell.cell_contents = types.MappingProxyType(found) if own else found
    return known


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
    known = _known_class(tracker_id, origin, namespace)
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
    known = _known_class(tracker_id, origin, namespace)
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


@_rebuilder(
    "part",
    "sets the attributes of a class built by value",
    "state",
    target="cls",
    state="state",
)
def _class_setstate(cls: type, state: tuple[Any, ...]) -> type:
    """Give a class built from payloads the sender's attributes (again, if it was
    built by an earlier payload: the sender may have changed it since); leave a
    class that originates in this process untouched.

    ``state`` is ``(attributes, registered)``, and for an Enum
    ``(attributes, registered, members)``: the attributes of each member other
    than enum's own (what the class's ``__init__`` or ``__new__`` set on it, or
    the program later), by member name.

    .. versionchanged:: 0.2.0
       An Enum's members get their attributes.
    """
    if not _tracker.built(cls):
        return cls
    attributes, registered, *rest = state
    for key, value in attributes.items():
        setattr(cls, key, value)
    for subclass in registered:
        cls.register(subclass)  # type: ignore[attr-defined]
    if rest:
        members = vars(cls).get("_member_map_", {})
        for name, values in rest[0].items():
            member = members.get(name)
            if not isinstance(member, cls):  # only this class's own members
                raise UnpicklingError(
                    f"Cannot load the members of {cls.__qualname__}: {name!r} is not one. "
                    "The payload is damaged or was not made by picklable.",
                    reason="damaged payload: not an Enum member",
                    hint="check that the bytes arrive unchanged",
                )
            vars(member).update(values)
    return cls


# ------------------------------------------------------------------ wrappers


@_rebuilder("wrapper", "binds a descriptor to its instance", "call")
def _bind_descriptor(descriptor: Any, instance: Any, owner: Any) -> Any:
    """A bound wrapper is what binding its descriptor makes: bind it again."""
    return descriptor.__get__(instance, owner)


def _proxy_state_writes(proxy: Any, state: Any) -> Iterator[tuple[Any, str]]:
    """What :func:`_set_proxy_state` writes to: the proxy itself (its own state:
    for anything but a wrapt proxy, the dict its own-dict search finds), and,
    through it, what it wraps (the forwarded state)."""
    own, forwarded = state
    if own:
        if is_wrapt_proxy(proxy):
            yield proxy, "on"
        else:
            found = proxy_own_dict(proxy)
            yield (proxy, "on") if found is None else (found, "dict")
    if forwarded:
        yield proxy, "through"


@_rebuilder(
    "part",
    "sets a rebuilt wrapt proxy's state",
    "state",
    target="proxy",
    state="state",
    writes=_proxy_state_writes,
)
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


def is_wrapt_proxy(obj: Any) -> bool:
    """Whether ``obj`` is an instance of a wrapt proxy class."""
    roots = wrapt_proxy_roots()
    return bool(roots) and issubclass(type(obj), roots)


@_rebuilder("wrapper", "rebuilds a wrapt proxy around what it wraps", "call")
def _make_wrapt_proxy(cls: Any, wrapped: Any) -> Any:
    """An ``ObjectProxy`` subclass instance around ``wrapped``, bypassing a custom ``__init__``."""
    proxy = cls.__new__(cls)
    roots = wrapt_proxy_roots()
    for klass in cls.__mro__:
        if klass in roots:
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


@_rebuilder("wrapper", "rebuilds a functools.partialmethod", "build", made_for="func")
def _make_partialmethod(func: Any, args: Any, keywords: Any) -> functools.partialmethod[Any]:
    """``functools.partialmethod(func, *args, **keywords)``: what it stores is
    all it is. (Pickle's default reduction of one, ``object.__new__`` then its
    ``__dict__``, no longer loads on Python 3.14, whose ``partialmethod.__new__``
    wants the function.)"""
    if (
        type(args) is not tuple
        or type(keywords) is not dict
        or not all(type(key) is str for key in keywords)
    ):
        raise UnpicklingError(
            "Cannot load a functools.partialmethod: its arguments are not a tuple and a "
            "dict of names. The payload is damaged or was not made by picklable.",
            reason="damaged payload: bad partialmethod",
            hint="check that the bytes arrive unchanged",
        )
    return functools.partialmethod(func, *args, **keywords)


@_rebuilder("wrapper", "rebuilds a property subclass", "build")
def _make_property(cls: Any, fget: Any, fset: Any, fdel: Any, doc: Any) -> Any:
    """A property subclass instance with its accessors (C slots pickle drops)."""
    obj = cls.__new__(cls)
    property.__init__(obj, fget, fset, fdel, doc)
    return obj


@_rebuilder("wrapper", "rebuilds reprlib's recursion guard around a __repr__", "call")
def _make_recursive_repr(wrapped: Any, fillvalue: Any) -> Any:
    """``reprlib.recursive_repr(fillvalue)(wrapped)``: the guard dataclasses puts
    around a generated ``__repr__`` since Python 3.13 (and any class's own)."""
    return reprlib.recursive_repr(fillvalue)(wrapped)


@_rebuilder(
    "wrapper", "rebuilds dataclasses' __annotate__ of a generated method", "build", made_for="cls"
)
def _make_dataclass_annotate(cls: Any, method: str, fields: Any, return_type: Any) -> Any:
    """The ``__annotate__`` dataclasses gives a method it generates (Python 3.14+),
    made by this process's dataclasses for ``cls``: a closure that reads the
    annotations of the class's bases when asked, never dataclasses' code copied."""
    import dataclasses

    make = getattr(dataclasses, "_make_annotate_function", None)
    if make is None:
        raise UnpicklingError(
            f"Cannot load the __annotate__ of {getattr(cls, '__qualname__', cls)}.{method}: "
            f"it was made by dataclasses of Python 3.14 or later; this is {_code.HERE}.",
            reason="dataclasses of another Python version",
            hint="run the same Python minor version on both sides",
        )
    return make(cls, method, fields, return_type)


@_rebuilder("wrapper", "rebuilds a singledispatch function and its registry", "call")
def _make_singledispatch(base: Any, registrations: list[tuple[Any, Any]]) -> Any:
    """A singledispatch function with its registrations replayed, its cache empty."""
    dispatcher = functools.singledispatch(base)
    for cls, implementation in registrations:
        dispatcher.register(cls, implementation)
    return dispatcher


def _differing(obj: Any, state: dict[str, Any]) -> dict[str, Any]:
    """The shipped attributes whose values ``obj`` does not already have (this
    very value, or an equal one)."""
    differ = {}
    for key, value in state.items():
        if key == "__dict__":
            continue
        if key == ITEMS:  # a list's or dict's items
            items = container_items(obj)
            if items is None or not _same(items, value):
                differ[key] = value
            continue
        try:
            current = getattr(obj, key, _MISSING)
        except Exception:
            current = _MISSING
        if not _same(current, value):
            differ[key] = value
    return differ


class _Comparison:
    """One comparison of :func:`_same`: the pairs found the same (shared parts
    are compared once), and how many comparisons it may still make (a state
    made of shared parts could otherwise make it compare for days)."""

    __slots__ = ("left", "same")

    def __init__(self) -> None:
        self.left = _SAME_STEPS
        self.same: set[tuple[int, int]] = set()


# Past this many comparisons, a state is not the same (the receiver makes a
# copy: right, if not its own object).
_SAME_STEPS = 100_000


def _same(current: Any, value: Any, depth: int = 0, comparison: _Comparison | None = None) -> bool:
    """Whether ``value`` (shipped) is what ``current`` (here) is, as far as a copy
    could tell: this very value; an equal one; containers of such values; an
    instance of the same class without an ``__eq__`` of its own whose
    attributes are such values (a click ``Option``, a wrapper's settings); a
    function of the same code, defaults and closure (a per-instance helper
    such as ``cache_parameters``, copied); objects whose pickle reductions are
    the same so (an array's bytes, a random generator's state). Deeper than a
    dozen levels, beyond :data:`_SAME_STEPS` comparisons, or not comparable:
    not the same.
    """
    if current is value:
        return True
    t = type(current)
    if t is not type(value) or depth > 12:
        return False
    if comparison is None:
        comparison = _Comparison()
    key = (id(current), id(value))  # both alive while the comparison runs
    if key in comparison.same:
        return True
    comparison.left -= 1
    if comparison.left < 0:
        return False
    if _same_parts(current, value, t, depth + 1, comparison):
        comparison.same.add(key)
        return True
    return False


def _same_parts(current: Any, value: Any, t: type, depth: int, comparison: _Comparison) -> bool:
    """:func:`_same` for two objects of the same type ``t``, part by part."""
    if t is list or t is tuple:
        return len(current) == len(value) and all(
            _same(a, b, depth, comparison) for a, b in zip(current, value)
        )
    if t is dict:
        return current.keys() == value.keys() and all(
            _same(current[k], value[k], depth, comparison) for k in current
        )
    if t is types.FunctionType:
        if current.__code__ != value.__code__:
            return False
        left, right = current.__closure__ or (), value.__closure__ or ()
        if len(left) != len(right):
            return False
        try:
            cells = [(a.cell_contents, b.cell_contents) for a, b in zip(left, right)]
        except ValueError:  # an empty cell
            return False
        pairs = [(current.__defaults__, value.__defaults__), *cells]
        pairs.append((current.__kwdefaults__, value.__kwdefaults__))
        pairs.append((current.__dict__, value.__dict__))
        return all(_same(a, b, depth, comparison) for a, b in pairs)
    if getattr(t, "__eq__", None) is not object.__eq__:
        try:
            return bool(current == value)
        except Exception:  # an array's ambiguous truth: compare what a copy carries
            pass
    # Equal would mean the same object: compare what a copy of each would carry
    # (their pickle reductions: class, arguments, __dict__ and slots, bytes).
    try:
        mine = current.__reduce_ex__(4)
        theirs = value.__reduce_ex__(4)
    except Exception:
        return False
    if type(mine) is not tuple or type(theirs) is not tuple:
        return type(mine) is str and mine == theirs
    return len(mine) == len(theirs) and all(
        _same(a, b, depth, comparison) for a, b in zip(mine, theirs)
    )


def _keeps_own(obj: Any, state: dict[str, Any] | None) -> bool:
    """Whether ``obj`` (this process's own, found by reference) already holds the
    state the sender shipped with it: then it is the answer, as it is.

    This is the one test of the rule that loading never changes an object
    the receiver had before the load: where it fails, the receiver gets a copy
    carrying the sender's state (:func:`_own_or_copy`, :func:`_script_or_build`)
    or a refusal (:func:`_with_state`), never its own object modified.
    """
    return not state or not _differing(obj, state)


@_rebuilder("wrapper", "finds an object by reference; a copy if the state differs", "call")
def _with_state(obj: Any, state: dict[str, Any] | None) -> Any:
    """``obj`` (this process's own, by reference) if it has the shipped state,
    else a copy of it that has it (:func:`_own_or_copy`).

    0.1.0 wrote it for :func:`picklable.with_state` (and with no state, for a
    copy), and set the state on ``obj``: loading never writes the sender's
    state onto an object this process had before the load any more.

    .. versionchanged:: 0.2.0
       A copy where the state differs; ``obj`` is never modified.
    """
    return _own_or_copy(obj, state)


def _state_refused(obj: Any, names: list[str], why: str) -> UnpicklingError:
    what = _described(obj)
    listed = ", ".join(names)
    if why:
        because = f" and {why}"
        fix = (
            "ship picklable.without_state(obj) to use the receiver's own object as it "
            "is, or give it that state where the receiving process makes it"
        )
    else:
        because = ""
        fix = (
            "ship picklable.without_state(obj) to use the receiver's own object as it "
            "is, or dump the payload again with this version of picklable (it then "
            "carries a copy)"
        )
    return UnpicklingError(
        f"Cannot load the sender's state ({listed}) of {what}: this process's own "
        f"{what} has other values there{because}. Loading never writes the sender's "
        "state onto an object this process already has (other loads and threads "
        f"use it). Fix: {fix}.",
        reason=f"{what}: the sender's state differs ({listed}), and no copy is made",
        hint=fix,
    )


def _described(obj: Any) -> str:
    try:
        name, module = obj.__qualname__, obj.__module__
    except Exception:
        name = module = None
    if type(name) is str and type(module) is str:
        return f"{module}.{name}"
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__} object"


def _copy_of(obj: Any, links: dict[str, Any] | None = None) -> Any:
    """A new object standing for ``obj`` (this process's own), or None.

    A function: a new function of the same code, globals, defaults and
    closure, its attributes copied. An instance: a new one of the same class
    with a copy of its ``__dict__`` and slots, made past any ``__init__`` or
    ``__getattr__`` (as pickle rebuilds an instance). None when its state lives
    in C (a builtin): no copy can be made here. A wrapt proxy: a proxy around
    a copy of what it wraps; an ``lru_cache`` wrapper: a fresh cache.

    ``links``: globals of the copied function's module that this payload
    loads otherwise than the module holds them (see :func:`_links_scope`).
    """
    scope = _links_scope(obj, links)
    if type(obj) is types.FunctionType:
        return _function_copy(obj, scope, {})
    cls = type(obj)  # past a proxy's __class__
    if is_wrapt_proxy(obj):
        return _copy_of_wrapt_proxy(obj, links)
    if cls is _LRU_WRAPPER:
        parameters = obj.cache_parameters()
        wrapped = obj.__wrapped__
        if scope is not None and type(wrapped) is types.FunctionType:
            wrapped = _function_copy(wrapped, scope, {})
        made = _make_lru_cache(wrapped, parameters["maxsize"], parameters["typed"])
        made.__dict__.update(obj.__dict__)  # a fresh cache, as any lru_cache copy
        if wrapped is not obj.__wrapped__:
            made.__wrapped__ = wrapped
        return made
    items = container_items(obj)  # a list's or dict's, kept in C
    if items is None and not all(is_heap_type(klass) for klass in cls.__mro__[:-1]):
        return None  # another builtin base keeps state in C, which no copy of the dict holds
    try:
        state = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        state = None
    slots = slot_values(obj)
    if type(state) is not dict and not slots and items is None:
        return None
    try:
        copy = _fresh_instance(cls, obj)
    except Exception:
        return None
    if items is not None:
        replace_items(copy, items)
    for key, value in slots.items():
        object.__setattr__(copy, key, value)
    if type(state) is dict:
        object.__getattribute__(copy, "__dict__").update(state)
    return copy


def _fresh_instance(cls: Any, own: Any) -> Any:
    """``cls.__new__(cls)``, as pickle makes an instance, unless that hands back
    ``own``, this process's own object (a singleton's ``__new__``): then a new
    one made by the first ``__new__`` of its bases written in C, so that the
    state set next lands on a copy, never on the receiver's own."""
    made = cls.__new__(cls)
    return _base_new(cls) if made is own else made


def _base_new(cls: Any) -> Any:
    """A new instance of ``cls`` made past any ``__new__`` of Python code: the
    first of its bases' written in C (``object``'s)."""
    for klass in cls.__mro__:
        if not is_heap_type(klass):
            return klass.__new__(cls)
    raise UnpicklingError(f"Cannot make an instance of {cls.__qualname__}")  # pragma: no cover


class _LinkedGlobals(dict):  # type: ignore[type-arg]
    """The globals of copies this process made of its own functions, for one
    load: the objects the payload loaded for the names in ``links``, and,
    for any other name, the module's own globals, read live."""

    __slots__ = ("home",)

    def __init__(self, home: dict[str, Any], links: dict[str, Any]) -> None:
        super().__init__(links)
        self.home = home
        if "__builtins__" in home:
            self["__builtins__"] = home["__builtins__"]

    def __missing__(self, key: str) -> Any:
        return self.home[key]

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self.home


def home_function(obj: Any) -> types.FunctionType | None:
    """The function a copy of ``obj`` is made of: ``obj`` itself, or, through
    wrapt proxies and an ``lru_cache`` wrapper, the function they wrap."""
    for _ in range(16):
        if type(obj) is types.FunctionType:
            return obj
        if not (is_wrapt_proxy(obj) or type(obj) is _LRU_WRAPPER):
            return None
        try:
            obj = obj.__wrapped__
        except Exception:
            return None
    return None


def _links_scope(obj: Any, links: dict[str, Any] | None) -> _LinkedGlobals | None:
    """The globals a copy of ``obj`` reads where ``links`` (names of its
    module's globals, with what this payload loaded for them) differ from
    what the module holds; None where they do not (the module's own globals).

    A copy that read the module's own objects where the payload loaded
    copies of them would split one graph: ``ex.captured_functions`` holding
    a copy of ``scaled`` while ``main``, copied too, calls the module's
    ``scaled``. The copy reads what the payload loaded instead.
    """
    if not links:
        return None
    func = home_function(obj)
    if func is None:
        return None
    home = func.__globals__
    if type(home) is _LinkedGlobals:
        home = home.home
    if all(home.get(name, _MISSING) is value for name, value in links.items()):
        return None
    return _LinkedGlobals(home, links)


def _linked(obj: Any, links: dict[str, Any] | None) -> bool:
    """Whether ``links`` are what ``obj``'s module holds (keeping ``obj`` keeps
    the graph whole)."""
    return _links_scope(obj, links) is None


_LINKED_LIMIT = 64


def _function_copy(
    obj: types.FunctionType, scope: _LinkedGlobals | None, made: dict[int, Any]
) -> types.FunctionType:
    """A new function of ``obj``'s code, defaults and closure, its attributes
    copied. With ``scope``, it reads its globals there, and so do copies of
    the functions of its module that it holds (in its closure, as
    ``__wrapped__``): what its code runs reads what the payload loaded."""
    home = obj.__globals__
    follow = scope is not None and (home is scope.home or home is scope)
    closure, pending = obj.__closure__, []
    if closure is not None:
        cells = []
        for cell in closure:
            try:
                content = cell.cell_contents
            except ValueError:  # an empty cell
                cells.append(cell)
                continue
            # A closure that holds the function itself (a decorator's wrapper
            # reading its own attributes: wrapper.config) holds the copy in the copy.
            held = (
                follow
                and type(content) is types.FunctionType
                and content.__globals__ is home
                and len(made) < _LINKED_LIMIT
            )
            if content is obj or held:
                cells.append(types.CellType())
                pending.append((cells[-1], content))
            else:
                cells.append(cell)
        closure = tuple(cells)
    globals_ = scope if follow else home
    copy = types.FunctionType(obj.__code__, globals_, obj.__name__, obj.__defaults__, closure)  # type: ignore[arg-type]
    made[id(obj)] = copy
    for cell, content in pending:
        done = made.get(id(content))
        cell.cell_contents = done if done is not None else _function_copy(content, scope, made)
    copy.__kwdefaults__ = None if obj.__kwdefaults__ is None else dict(obj.__kwdefaults__)
    copy.__qualname__ = obj.__qualname__
    copy.__module__ = obj.__module__
    copy.__doc__ = obj.__doc__
    copy.__dict__.update(obj.__dict__)
    wrapped = obj.__dict__.get("__wrapped__")
    if follow and type(wrapped) is types.FunctionType and wrapped.__globals__ is home:
        done = made.get(id(wrapped))
        copy.__dict__["__wrapped__"] = (
            done if done is not None else _function_copy(wrapped, scope, made)
        )
    return copy


_LRU_WRAPPER = type(functools.lru_cache(maxsize=1)(len))

# The fields of a wrapt function wrapper (``_self_<name>``) that make it what it is.
WRAPT_FIELDS = ("instance", "wrapper", "enabled", "binding", "parent", "owner")


def _copy_of_wrapt_proxy(proxy: Any, links: dict[str, Any] | None = None) -> Any:
    """A wrapt proxy like ``proxy`` around a copy of what it wraps (where the
    state a proxy shows lives), its own ``_self_*`` state copied; or None."""
    inner = _copy_of(proxy.__wrapped__, links)
    if inner is None:
        return None
    cls = type(proxy)
    if any(klass.__name__ == "_FunctionWrapperBase" for klass in cls.__mro__):
        fields = {
            name: getattr(proxy, "_self_" + name)
            for name in WRAPT_FIELDS
            if hasattr(proxy, "_self_" + name)
        }
        made = _make_wrapt_function_wrapper(cls, inner, fields)
    else:
        made = _make_wrapt_proxy(cls, inner)
    own = proxy_own_dict(proxy)
    if own:
        _set_proxy_state(made, (dict(own), None))
    return made


@_rebuilder(
    "reference",
    "finds an object by reference; a copy of it if the sender's state differs",
    "call",
)
def _own_or_copy(
    obj: Any,
    state: dict[str, Any] | None,
    copy: bool = False,
    links: dict[str, Any] | None = None,
) -> Any:
    """This process's own ``obj`` where it already has the state the sender
    shipped with it (identity kept); otherwise a copy of it carrying that state,
    so that the receiver's own object is never modified by a load.

    ``state`` is the sender's attributes (metadata left out; what could not
    travel, a lock, is not in it: the copy keeps the receiver's own value
    there). ``copy``: always a copy, its state set afterwards by a state
    setter (a state that leads back to the object itself).

    ``links``: the globals the function ``obj`` runs reads (of its own
    module), with what this payload loaded for them where it carries their
    state. Where one is not what the module holds (a copy), ``obj`` is
    copied too, and the copy reads them (:func:`_links_scope`): the copies
    this payload makes reference each other, never the originals they stand for.

    Raises :class:`UnpicklingError` when a copy is needed and none can be made
    (an object whose state lives in C, a wrapt proxy).

    .. versionadded:: 0.2.0
    """
    if not copy and _keeps_own(obj, state) and _linked(obj, links):
        return obj
    made = _copy_of(obj, links)
    if made is None:
        raise _state_refused(
            obj,
            sorted(_differing(obj, state or {})) if state else ["its state"],
            "it cannot be copied here (its state lives in C)",
        )
    if state and is_wrapt_proxy(made):
        for key, value in state.items():
            setattr(made, key, value)  # through the proxy: on the copy it wraps
    elif state:
        _set_copy_state(made, state)
    return made


def _set_copy_state(made: Any, state: dict[str, Any]) -> None:
    """Set the sender's ``state`` on ``made``, a copy: the items of a list or
    dict, the slots, the rest in its ``__dict__`` (past any property or
    ``__setattr__`` of its class, as pickle's BUILD sets them)."""
    cls = type(made)
    try:
        own = object.__getattribute__(made, "__dict__")
    except AttributeError:
        own = None
    for key, value in state.items():
        if key == ITEMS:
            replace_items(made, value)
        elif own is None or is_slot(cls, key):
            object.__setattr__(made, key, value)
        else:
            own[key] = value


def _instance_state_writes(obj: Any, state: Any) -> Iterator[tuple[Any, str]]:
    """What :func:`_set_instance_state` writes to: ``obj`` past any proxy, and
    the ``__dict__`` it finds on it."""
    slots = None
    if type(state) is tuple:
        state, slots = state
    if state or slots:
        yield obj, "on"
    if state:
        yield object.__getattribute__(obj, "__dict__"), "dict"


@_rebuilder(
    "part",
    "sets an instance's __dict__ and slots, past __getattr__",
    "state",
    target="obj",
    state="state",
    writes=_instance_state_writes,
)
def _set_instance_state(obj: Any, state: Any) -> Any:
    """Give a rebuilt instance its state without looking anything up on it.

    pickle's BUILD looks ``__setstate__`` up on the instance, which runs a
    ``__getattr__`` of its class while the instance is still empty (a
    configuration object whose ``__getattr__`` reads its own fields recurses
    then). ``state`` is a ``__dict__``, or ``(__dict__ or None, slots)``; the
    slots of a copy of a ``list`` or ``dict`` subclass's instance may hold its
    items (under :data:`picklable._layout.ITEMS`).

    .. versionadded:: 0.2.0
    """
    if type(state) is tuple:
        state, slots = state
        for key, value in slots.items():
            if key == ITEMS:  # a copy's list or dict items (see _layout)
                replace_items(obj, value)
            else:
                object.__setattr__(obj, key, value)
    if state:
        object.__getattribute__(obj, "__dict__").update(state)
    return obj


def _state_and_dict_writes(obj: Any, state: Any) -> Iterator[tuple[Any, str]]:
    """What :func:`_set_state_and_dict` writes to: ``obj``, through its own
    ``__setstate__``, and its ``__dict__``."""
    yield obj, "through"
    yield object.__getattribute__(obj, "__dict__"), "dict"


@_rebuilder(
    "part",
    "sets a C type's state on an instance, then its __dict__",
    "state",
    target="obj",
    state="state",
    writes=_state_and_dict_writes,
)
def _set_state_and_dict(obj: Any, state: tuple[Any, dict[str, Any]]) -> Any:
    """Give an instance of a class of Python code over a C type (an ``ndarray``
    subclass) the state its C type's reduction ships, as pickle's BUILD gives
    it, then its ``__dict__``, which that reduction leaves out.

    ``state`` is ``(inner, attributes)``.

    .. versionadded:: 0.2.0
    """
    inner, attributes = state
    if inner is not None:
        setstate = class_setstate(obj)
        if setstate is not None:
            setstate(inner)
        else:
            _set_instance_state(obj, inner)
    object.__getattribute__(obj, "__dict__").update(attributes)
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
            # The method's type alone: a payload's object could run code in repr().
            f"Cannot load a dict view: the payload asks for "
            f"{repr(method) if type(method) is str else type(method).__name__} of a "
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


# What _make_typevar builds: an object made of a name and options, one per
# process (sentinel: Python 3.15; NewType(name, supertype) from 0.2.0).
_TYPE_VARIABLES = tuple(
    t
    for t in (
        typing.TypeVar,
        typing.ParamSpec,
        typing.TypeVarTuple,
        SENTINEL_TYPE,
        typing.NewType,
    )
    if t is not None
)


@_rebuilder("value", "builds a type variable or a sentinel by value", "call")
def _make_typevar(
    factory: Any,
    name: str,
    constraints: tuple[Any, ...],
    options: dict[str, Any],
    module: str | None,
    tracker_id: str,
) -> Any:
    """A ``TypeVar`` (``ParamSpec``, ``TypeVarTuple``; ``sentinel`` from 0.2.0)
    shipped by value; in the process that made it (or one that built it
    before), that very object."""
    if factory not in _TYPE_VARIABLES:
        raise UnpicklingError(
            f"Cannot load a type variable made by {factory!r}: the payload is damaged or "
            "was not made by picklable.",
            reason="damaged payload: not a type variable's class",
            hint="check that the bytes arrive unchanged",
        )
    known = _tracker.known_object(tracker_id)
    if known is not None:
        return known
    variable = factory(name, *constraints, **options)
    if module is not None:
        try:
            variable.__module__ = module  # else it says picklable._reconstruct
        except (AttributeError, TypeError):
            pass
    _tracker.track_object(variable, tracker_id)
    return variable


# How a type statement declares a parameter of each kind.
_PARAM_PREFIX = {"TypeVar": "", "ParamSpec": "**", "TypeVarTuple": "*"}
_BOX = "__picklable_values__"


def _type_alias_source(
    name: str, params: tuple[tuple[str, str, int, bool, str], ...], qualname: str | None
) -> str:
    """A ``type`` statement for the alias, its value and its parameters' bounds,
    constraints and defaults read from the box, inside the classes and
    functions its ``__qualname__`` names (3.15), leaving it in ``__alias__``."""
    declared = []
    at = 1  # the box holds the value first, then what the parameters read, in order
    for kind, param, shape, has_default in (p[:4] for p in params):
        text = _PARAM_PREFIX[kind] + param
        if shape > 0:
            text += ": (" + ", ".join(f"{_BOX}[{at + i}]" for i in range(shape)) + ",)"
            at += shape
        elif shape < 0:
            text += f": {_BOX}[{at}]"
            at += 1
        if has_default:
            text += f" = {_BOX}[{at}]"
            at += 1
        declared.append(text)
    statement = f"type {name}" + (f"[{', '.join(declared)}]" if declared else "")
    statement += f" = {_BOX}[0]"
    steps = qualname.split(".") if qualname else [name]
    return "\n".join(_nested(steps, statement, name, ""))


def _nested(steps: list[str], statement: str, name: str, indent: str) -> list[str]:
    if len(steps) == 1:
        inner = indent
        return [f"{inner}global __alias__", inner + statement, f"{inner}__alias__ = {name}"]
    if len(steps) > 2 and steps[1] == "<locals>":
        body = _nested(steps[2:], statement, name, indent + "    ")
        return [f"{indent}def {steps[0]}():", *body, f"{indent}{steps[0]}()"]
    return [f"{indent}class {steps[0]}:", *_nested(steps[1:], statement, name, indent + "    ")]


def _identifier(text: Any) -> bool:
    return type(text) is str and text.isidentifier() and not keyword.iskeyword(text)


def _malformed(what: str) -> UnpicklingError:
    return UnpicklingError(
        f"Cannot load {what}: the payload is damaged or was not made by picklable.",
        reason=f"damaged payload: {what}",
        hint="check that the bytes arrive unchanged",
    )


@_rebuilder("value", "builds a type alias by value (a type statement)", "build", origin="origin")
def _make_type_alias(
    name: str,
    params: tuple[tuple[str, str, int, bool, str], ...],
    module: str | None,
    qualname: str | None,
    tracker_id: str,
    box: list[Any],
    origin: Origin | None = None,
) -> Any:
    """A ``type`` alias (Python 3.12) shipped by value: made by a ``type``
    statement whose value, and whose parameters' bounds, constraints and
    defaults, are read from ``box`` when first used (:func:`_fill_type_alias`
    fills it once the alias exists: its value may name the alias itself).
    Its parameters are the statement's own, tracked under the sender's ids
    ``params[i][4]``. In the process that made it, or one that built it before,
    that very alias.

    ``params``: ``(kind, name, shape, has_default, tracker_id)`` per parameter;
    ``shape`` is the number of constraints, -1 for a bound, 0 for neither.
    ``qualname`` (Python 3.15 aliases have one) places the statement inside the
    classes and functions it names. ``module`` is None for an alias made where
    the globals had no ``__name__`` (``exec(source, {})``): so is the copy's
    ``__module__``. ``origin``: an alias of the sender's
    script, this process's own where it runs the same script.

    .. versionadded:: 0.2.0
    """
    if origin is not None:
        found = script_original(origin)
        if found is not _MISSING:
            return found
    known = _tracker.known_object(tracker_id)
    if known is not None:
        return known
    if type(params) is not tuple or type(box) is not list:
        raise _malformed("a type alias")
    if module is not None and type(module) is not str:
        raise _malformed("a type alias")
    for param in params:
        if (
            type(param) is not tuple
            or len(param) != 5
            or param[0] not in _PARAM_PREFIX
            or not _identifier(param[1])
            or type(param[2]) is not int
            or type(param[4]) is not str
        ):
            raise _malformed("a type alias's parameter")
    steps = qualname.split(".") if type(qualname) is str else [name]
    if not _identifier(name) or steps[-1] != name or not _nestable(steps):
        raise _malformed(f"a type alias named {name!r} ({qualname!r})")
    taken = [_tracker.known_object(p[4]) for p in params]
    if any(t is not None for t in taken):
        clash = next(p[1] for p, t in zip(params, taken, strict=True) if t is not None)
        raise UnpicklingError(
            f"Cannot load type alias {name!r}: its type parameter {clash!r} came in an "
            "earlier payload (or earlier in this one) on its own, and this process "
            "made it then; the alias, made now, would have another one. Fix: ship the "
            "alias before (or with) its type parameters.",
            reason=f"type alias {name!r}: its parameter {clash!r} shipped apart first",
            hint="ship the alias before its type parameters",
        )
    namespace: dict[str, Any] = {_BOX: box, "__builtins__": builtins}
    if module is not None:  # None: made where the globals had no __name__ (exec(src, {}))
        namespace["__name__"] = module
    source = _type_alias_source(name, params, ".".join(steps))
    error: UnpicklingError | None = None
    try:
        code = compile(source, "<string>" if module is None else module, "exec")
    except SyntaxError as exc:
        if sys.version_info < (3, 12):
            error = _newer_python("a type alias (a type statement)", "3.12")
        else:
            error = _newer_python("a type parameter with a default", "3.13")
        chained(error, exc)
    if error is not None:
        raise error  # outside the handler: one traceback
    exec(code, namespace)
    alias = namespace["__alias__"]
    for variable, param in zip(alias.__type_params__, params, strict=True):
        _tracker.track_object(variable, param[4])
    _tracker.track_object(alias, tracker_id)
    return alias


def _nestable(steps: list[str]) -> bool:
    """Whether classes and functions named ``steps`` can hold the statement:
    names, each followed by ``<locals>`` (a function) or not (a class)."""
    i = 0
    while i < len(steps) - 1:
        if not _identifier(steps[i]):
            return False
        i += 2 if steps[i + 1] == "<locals>" else 1
    return i == len(steps) - 1


def _newer_python(what: str, version: str) -> UnpicklingError:
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return UnpicklingError(
        f"Cannot load {what}: it is new in Python {version}, and this is Python {here}. "
        f"The payload was made by Python {version} or later. Fix: load it with the "
        "Python version that made it.",
        reason=f"{what} needs Python {version}+ (this is Python {here})",
        hint="load it with the Python version that made it",
    )


def _alias_box_writes(alias: Any, state: Any) -> Iterator[tuple[Any, str]]:
    """What :func:`_fill_type_alias` writes to: the box of the payload's own."""
    box = state[0] if type(state) is tuple and state else None
    if box is not None:
        yield box, "on"


@_rebuilder(
    "part",
    "gives a type alias built by value its value",
    "state",
    target="alias",
    state="state",
    writes=_alias_box_writes,
)
def _fill_type_alias(alias: Any, state: tuple[list[Any], list[Any]]) -> Any:
    """Fill the box a :func:`_make_type_alias` alias reads its value from.

    ``state`` is ``(box, values)``; the box is this payload's, so an alias this
    process had before (the sender's own, back home; one an earlier payload
    built) reads its own box, not this one: it is left as it was.

    .. versionadded:: 0.2.0
    """
    box, values = state
    if type(box) is not list or type(values) is not list:
        raise _malformed("a type alias's value")
    box[:] = values
    return alias


# statement -> its code: a task's payload of a worker's pool names the same few.
_LAZY_STATEMENTS: dict[str, types.CodeType] = {}
_caches.register("reconstruct.lazy_statements", _LAZY_STATEMENTS.clear)


@_rebuilder("reference", "lazily imports a module (lazy import)", "import")
def _make_lazy_import(module: str, fromlist: tuple[str, ...] | None, name: str | None) -> Any:
    """A lazy import (Python 3.15) of ``module``: the module is imported when a
    function whose globals hold it first uses the name, as where it was made.

    ``name`` is what it resolves to: None, the top package (``lazy import
    a.b``); ``module`` itself (``lazy import a.b as x``); or one of
    ``fromlist`` (``lazy from a import b, c``, the one named).

    .. versionadded:: 0.2.0
    """
    if (
        type(module) is not str
        or not all(_identifier(part) for part in module.split("."))
        or (fromlist is not None and (type(fromlist) is not tuple or not fromlist))
        or (fromlist is not None and not all(_identifier(n) for n in fromlist))
        or (fromlist is None and name not in (None, module))
        or (fromlist is not None and name not in fromlist)
    ):
        raise _malformed("a lazy import")
    if LAZY_IMPORT_TYPE is None:
        raise _newer_python(f"a lazy import of {module!r}", "3.15")
    if fromlist is not None:
        names = ", ".join(f"{n} as _{i}" for i, n in enumerate(fromlist))
        statement, key = f"lazy from {module} import {names}", f"_{fromlist.index(name)}"
    elif name is None:
        statement, key = f"lazy import {module}", module.partition(".")[0]
    else:
        statement, key = f"lazy import {module} as _0", "_0"
    code = _LAZY_STATEMENTS.get(statement)
    if code is None:
        code = compile(statement, f"<lazy import of {module}>", "exec")
        if len(_LAZY_STATEMENTS) >= 1024:
            _LAZY_STATEMENTS.clear()
        _LAZY_STATEMENTS[statement] = code
    namespace: dict[str, Any] = {"__name__": module, "__builtins__": builtins}
    exec(code, namespace)
    # Read from the dict, never as a name: a name's lookup would import it now.
    return dict.__getitem__(namespace, key)


# ---------------------------------------------------------------- exceptions


@_rebuilder("part", "rebuilds a traceback", "build")
def _make_traceback(records: tuple[Any, ...]) -> types.TracebackType | None:
    """Rebuild a traceback shipped as frame records (see ``picklable._traceback``)."""
    return _traceback.build(records)


@_rebuilder("part", "sets an exception's state", "state", target="exc", state="state")
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
        setstate = class_setstate(exc)
        if setstate is not None:
            setstate(inner)
    for key, value in fields.items():
        object.__setattr__(exc, key, value)
    return exc


assert sorted(REBUILDERS) == sorted(__all__), "every rebuilder is declared, nothing else"
