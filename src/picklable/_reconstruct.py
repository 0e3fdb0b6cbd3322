"""Rebuilders named inside payloads.

Every public-looking name in this module is written into pickles by reference
(``picklable._reconstruct._resolve`` and so on). Old payloads must keep loading,
so these names and their signatures are frozen: add new ones, never rename.

Most of a by-value function is rebuilt by C code alone (``marshal.loads``,
``types.FunctionType``, pickle's BUILD). The Python frames here run once per
class, per located reference or per payload, never once per function.
"""

from __future__ import annotations

import importlib
import importlib.util
import marshal
import operator
import sys
import types
import weakref
import zlib
from typing import Any

from .exceptions import UnpicklingError

# ``_FIRST((value, effect, effect, ...))`` evaluates the effects at load time
# (they are REDUCE calls inside the tuple) and yields ``value``. It lets a
# function's state fill its globals and closure cells without a Python frame.
_FIRST = operator.itemgetter(0)

_MAIN_NAMES = ("__main__", "__mp_main__")

# Classes rebuilt by value are tracked by an id that travels with them, so a
# class that goes out and comes back is the very same class object.
_CLASS_BY_ID: weakref.WeakValueDictionary[str, type] = weakref.WeakValueDictionary()
_ID_BY_CLASS: weakref.WeakKeyDictionary[type, str] = weakref.WeakKeyDictionary()
# Classes this process built from payloads. Their attributes are (re)applied at
# every load, so a worker always runs the sender's latest version of a class; a
# class that originates in this process is never touched.
_BUILT: weakref.WeakSet[type] = weakref.WeakSet()


def _import(module: str) -> Any:
    """Return the module named ``module``, importing it if needed."""
    found = sys.modules.get(module)
    if found is not None:
        return found
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise UnpicklingError(
            f"Cannot load: module {module!r} is not importable here ({exc}). "
            f"Fix: install the package that provides {module!r} in the receiving "
            "environment, or ship it by value with picklable.register_by_value().",
            reason=f"module {module!r} not importable",
            hint="install it where the payload is loaded",
        ) from exc


def _walk(root: Any, path: tuple[Any, ...]) -> Any:
    """Follow ``path`` from ``root``: str = attribute, int = index, (key,) = item."""
    obj = root
    for step in path:
        if type(step) is str:
            obj = getattr(obj, step)
        elif type(step) is int:
            obj = obj[step]
        else:
            obj = obj[step[0]]
    return obj


def format_path(module: str, path: tuple[Any, ...]) -> str:
    """Render a located path as ``module:attr.attr[0]['key']``."""
    out: list[str] = []
    for step in path:
        if type(step) is str:
            out.append(("." if out else "") + step)
        elif type(step) is int:
            out.append(f"[{step}]")
        else:
            out.append(f"[{step[0]!r}]")
    return f"{module}:{''.join(out)}"


def _resolve(module: str, path: tuple[Any, ...]) -> Any:
    """Load an object shipped by reference through a located path."""
    root = _import(module)
    try:
        return _walk(root, path)
    except (AttributeError, LookupError, TypeError) as exc:
        where = format_path(module, path)
        raise UnpicklingError(
            f"Cannot load {where}: {exc}. The sender had an object there; this "
            "environment does not (renamed attribute, or another version of "
            f"{module.partition('.')[0]!r}). Fix: install the same version on both sides.",
            reason=f"{where} not found",
            hint="install the same version on both sides",
        ) from exc


def _check_interpreter(record: str) -> None:
    """Refuse by-value code made by another interpreter, before building any.

    ``record`` is ``"<implementation> <major.minor>"``, the part users can act
    on; the exact bytecode version (the magic number, which also changes
    between pre-releases of one minor version) is bound by the checksum of
    the code bytes (:func:`seal_code`).
    """
    if type(record) is not str:
        raise UnpicklingError(
            f"Cannot load: code shipped by value comes with a {type(record).__name__} "
            "where the interpreter record (a str) should be: the payload is damaged "
            "or was not made by picklable.",
            reason="damaged payload: no interpreter record",
            hint="check that the bytes arrive unchanged",
        )
    if record == _HERE:
        return
    theirs = record if _well_formed(record) else "an unknown interpreter"
    raise UnpicklingError(
        f"Cannot load: this payload carries code compiled by {theirs}; this interpreter "
        f"is {_HERE}. Fix: run the same Python minor version on both sides.",
        reason="bytecode from another interpreter",
        hint="run the same Python minor version on both sides",
    )


def _well_formed(record: str) -> bool:
    """Whether ``record`` reads like ``"cpython 3.11"`` (it is quoted in a message)."""
    implementation, _, version = record.partition(" ")
    major, _, minor = version.partition(".")
    return (
        len(record) <= 40 and implementation.isidentifier() and major.isdigit() and minor.isdigit()
    )


# marshal bytes -> code object. Functions that share a code object in the sender
# (closures from one factory) share it here too, and a payload's bytes object is
# hashed once. Bounded: a long-lived worker loads many payloads.
_codes: dict[bytes, types.CodeType] = {}
_CODES_LIMIT = 4096


def seal_code(data: bytes) -> bytes:
    """marshal bytes of a code object + their CRC32 (4 bytes, little-endian),
    computed from a start value derived from this interpreter's bytecode magic.

    marshal checks the structure of what it reads but not the bytecode inside,
    and a code object runs while a payload loads (a base class's
    ``__init_subclass__``, a ``__set_name__``): a flipped bit there can crash
    the interpreter instead of raising. The checksum turns damage in transit
    into an :class:`~picklable.UnpicklingError`, and so does bytecode of
    another build with the same version number (the magic number differs
    between pre-releases). It is no defence against a forged payload (use
    ``key=``). ``marshal.loads`` ignores the trailer.
    """
    return data + zlib.crc32(data, _SEAL_START).to_bytes(4, "little")


def _load_code(data: bytes, record: str) -> types.CodeType:
    """Build a code object from marshal bytes, refusing another interpreter's."""
    if record != _HERE:
        _check_interpreter(record)
    if type(data) is not bytes:
        raise UnpicklingError(
            f"Cannot load: code shipped by value comes as {type(data).__name__}, not bytes: "
            "the payload is damaged or was not made by picklable.",
            reason="damaged payload: code is not bytes",
            hint="check that the bytes arrive unchanged",
        )
    code = _codes.get(data)
    if code is not None:
        return code
    if len(data) < 5 or zlib.crc32(memoryview(data)[:-4], _SEAL_START) != int.from_bytes(
        data[-4:], "little"
    ):
        raise UnpicklingError(
            "Cannot load: the bytes of code shipped by value fail their checksum: the "
            "payload was damaged on the way, or made by another build of "
            f"{_HERE} whose bytecode differs (a pre-release).",
            reason="damaged payload: code checksum",
            hint="check that the bytes arrive unchanged; "
            "sign payloads with key= to detect any change",
        )
    try:
        code = marshal.loads(data)
    except (EOFError, ValueError, TypeError) as exc:
        raise UnpicklingError(
            f"Cannot load: the marshal bytes of code shipped by value are damaged ({exc}).",
            reason="damaged payload: bad code bytes",
            hint="check that the bytes arrive unchanged",
        ) from exc
    if type(code) is not types.CodeType:
        raise UnpicklingError(
            f"Cannot load: the bytes of code shipped by value hold a {type(code).__name__}, "
            "not a code object: the payload is damaged or was not made by picklable.",
            reason="damaged payload: not code",
            hint="check that the bytes arrive unchanged",
        )
    if len(_codes) >= _CODES_LIMIT:
        _codes.clear()
    _codes[data] = code
    return code


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
    if record != _HERE:
        _check_interpreter(record)  # even for bytes this process has seen
    code = _codes.get(data)
    if code is None:
        code = _load_code(data, record)
    func = types.FunctionType(code, globals, name, defaults, closure)
    if annotations is not None:
        func.__annotations__ = annotations
    return func


def _make_cell(*contents: Any) -> types.CellType:
    """A closure cell, empty or holding ``contents[0]``."""
    return types.CellType(*contents)


def _interpreter_record() -> str:
    """``"<implementation> <major.minor>"`` of this process (``"cpython 3.11"``)."""
    major, minor = sys.version_info[:2]
    return f"{sys.implementation.name} {major}.{minor}"


_HERE = _interpreter_record()
# Where the checksum of shipped code starts: this interpreter's bytecode magic.
_SEAL_START = zlib.crc32(importlib.util.MAGIC_NUMBER)


def _main_original(origin: tuple[str, str, str | None] | None) -> type | None:
    """The class a child process sends back, as the parent's own ``__main__`` class.

    Under spawn a worker re-imports the parent's script as ``__mp_main__``; its
    classes are re-executions of the parent's. Back in the parent (whose
    ``__main__`` runs that same file) they map to the original class by name.
    """
    if origin is None:
        return None
    module, qualname, filename = origin
    main = sys.modules.get("__main__")
    if (
        module not in _MAIN_NAMES
        or filename is None
        or main is None
        or getattr(main, "__name__", None) != "__main__"
        or getattr(main, "__file__", None) != filename
    ):
        return None
    try:
        found = _walk(main, tuple(qualname.split(".")))
    except AttributeError:
        return None
    if (
        isinstance(found, type)
        and found.__qualname__ == qualname
        and found.__module__ == "__main__"
    ):
        return found
    return None


def _track(cls: type, tracker_id: str) -> None:
    _CLASS_BY_ID[tracker_id] = cls
    _ID_BY_CLASS[cls] = tracker_id


def _known_class(tracker_id: str, origin: tuple[str, str, str | None] | None) -> type | None:
    """The class this process already has for a by-value class: one it made or
    sent under ``tracker_id``, or the original a spawned child sends back."""
    known = _CLASS_BY_ID.get(tracker_id)
    if known is not None:
        return known
    original = _main_original(origin)
    if original is not None:
        _track(original, tracker_id)
    return original


def _make_class(
    metaclass: type,
    name: str,
    bases: tuple[type, ...],
    namespace: dict[str, Any],
    tracker_id: str,
    origin: tuple[str, str, str | None] | None,
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
    _BUILT.add(cls)
    _track(cls, tracker_id)
    return cls


def _make_enum(
    metaclass: type,
    name: str,
    bases: tuple[type, ...],
    namespace: dict[str, Any],
    members: dict[str, Any],
    tracker_id: str,
    origin: tuple[str, str, str | None] | None,
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
    _BUILT.add(cls)
    _track(cls, tracker_id)
    return cls


def _class_setstate(cls: type, state: tuple[dict[str, Any], list[type]]) -> type:
    """Give a class built from payloads the sender's attributes (again, if it was
    built by an earlier payload: the sender may have changed it since); leave a
    class that originates in this process untouched."""
    if cls not in _BUILT:
        return cls
    attributes, registered = state
    for key, value in attributes.items():
        setattr(cls, key, value)
    for subclass in registered:
        cls.register(subclass)  # type: ignore[attr-defined]
    return cls


def _make_module(name: str, namespace: dict[str, Any]) -> types.ModuleType:
    """Rebuild a module that exists only in memory on the sending side."""
    module = types.ModuleType(name)
    module.__dict__.update(namespace)
    return module


# ------------------------------------------------------------------ wrappers
# Rebuilders for wrapper kinds taken apart by ``_wrappers`` (frozen names too).


def _bind_descriptor(descriptor: Any, instance: Any, owner: Any) -> Any:
    """A bound wrapper is what binding its descriptor makes: bind it again."""
    return descriptor.__get__(instance, owner)


def _proxy_own_dict(proxy: Any) -> dict[str, Any] | None:
    """The wrapt proxy's own ``__dict__`` (``vars(proxy)`` is the wrapped one's)."""
    try:
        own = object.__getattribute__(proxy, "__self_dict__")  # wrapt 2
    except AttributeError:
        own = None
    if isinstance(own, dict):
        return own
    # wrapt 1 keeps it in the C object's dict slot, reachable only as a GC
    # referent; the wrapper's other fields are never that dict.
    import gc

    fields = set()
    for name in ("_self_instance", "_self_enabled", "_self_wrapper", "_self_parent", "_self_owner"):
        try:
            fields.add(id(object.__getattribute__(proxy, name)))
        except AttributeError:
            pass
    for referent in gc.get_referents(proxy):
        if type(referent) is dict and id(referent) not in fields:
            return referent
    return None


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
        own_dict = _proxy_own_dict(proxy)
        if own_dict is not None:
            own_dict.update(own)
        else:
            for key, value in own.items():
                object.__setattr__(proxy, key, value)
    if forwarded:
        for key, value in forwarded.items():
            setattr(proxy, key, value)


def _make_wrapt_proxy(cls: Any, wrapped: Any) -> Any:
    """An ``ObjectProxy`` subclass instance around ``wrapped``, bypassing a custom ``__init__``."""
    proxy = cls.__new__(cls)
    for klass in cls.__mro__:
        if klass.__name__ in ("ObjectProxy", "BaseObjectProxy") and klass.__module__ in (
            "builtins",
            "_wrappers",
            "wrapt.wrappers",
        ):
            klass.__init__(proxy, wrapped)
            return proxy
    cls.__init__(proxy, wrapped)
    return proxy


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


def _make_lru_cache(wrapped: Any, maxsize: int | None, typed: bool) -> Any:
    """A fresh (empty) lru_cache wrapper around ``wrapped``."""
    import functools

    return functools.lru_cache(maxsize=maxsize, typed=typed)(wrapped)


def _make_cached_property(cls: Any, with_lock: bool) -> Any:
    """An empty cached_property of ``cls``; its attributes come with BUILD."""
    obj = cls.__new__(cls)
    if with_lock:
        import threading

        obj.lock = threading.RLock()
    return obj


def _make_property(cls: Any, fget: Any, fset: Any, fdel: Any, doc: Any) -> Any:
    """A property subclass instance with its accessors (C slots pickle drops)."""
    obj = cls.__new__(cls)
    property.__init__(obj, fget, fset, fdel, doc)
    return obj


def _make_singledispatch(base: Any, registrations: list[tuple[Any, Any]]) -> Any:
    """A singledispatch function with its registrations replayed, its cache empty."""
    import functools

    dispatcher = functools.singledispatch(base)
    for cls, implementation in registrations:
        dispatcher.register(cls, implementation)
    return dispatcher


def _with_state(obj: Any, state: dict[str, Any] | None) -> Any:
    """``obj`` (usually this process's own, by reference) with the shipped attributes set."""
    if state:
        for key, value in state.items():
            if key == "__dict__":
                continue
            setattr(obj, key, value)
    return obj


def _make_traceback(records: tuple[Any, ...]) -> types.TracebackType | None:
    """Rebuild a traceback shipped as frame records (see ``picklable._traceback``)."""
    from ._traceback import build

    return build(records)


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
