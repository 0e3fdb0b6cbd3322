"""Deterministic bytes: ``dumps(obj, deterministic=True)``.

The same function, class or data gives the same payload in another process and
under another ``PYTHONHASHSEED``, so a payload can be a cache key. Four things
make ordinary payloads vary, and each is fixed here:

* **Iteration order of sets.** ``str`` and ``bytes`` hashes are salted per
  process, so a set's order changes from run to run. Sets and frozensets are
  written sorted (by type, then value; other elements by their own
  deterministic pickle). The C pickler writes sets itself, without a hook, so
  this mode runs the pure-Python pickler (:class:`pickle._Pickler`): several
  times slower than the default. Dicts keep their insertion order, which is
  part of their value.
* **The memo.** pickle memoizes by identity, and whether two equal strings are
  one object (interning) depends on the process's history. Here ``str`` and
  ``bytes`` are memoized by value.
* **marshal bytes of code.** marshal's format 3+ marks objects that have more
  than one reference (``FLAG_REF``), which depends on refcounts; and a
  ``frozenset`` constant (``x in {"a", "b"}``) is written in hash order. Code is
  written in marshal format 2 (no references: ~30% larger, loads the same), with
  frozenset constants spliced in with their elements sorted by their encoding.
* **Class tracker ids.** A class shipped by value carries an id that makes it
  come back as the same class object (a random uuid normally). Here the id is a
  hash of the class's module, qualname, file, bases and content (attribute
  names, method code, plain-data values). Two live classes of one process with
  equal hashes get ``-2``, ``-3`` ... in the order they are first dumped.

What stays out of reach: objects whose own reduction varies (a ``__reduce__``
returning a set's order or an ``id()``), and by-value code that differs (another
file path in ``co_filename``, another Python version).
"""

from __future__ import annotations

import hashlib
import io
import marshal
import os
import pickle
import types
import weakref
from collections.abc import Callable
from typing import Any, ClassVar

from . import _caches, _code, _tracker
from ._pickler import ReducerHook, make_context, resolve_protocol

__all__ = ["DeterministicPickler", "code_bytes", "dumps", "tracker_id"]

_MARSHAL_VERSION = 2


# typeshed declares little of the pure-Python pickler's internals (save, memo, write ...).
_PurePickler: Any = pickle._Pickler


class DeterministicPickler(ReducerHook, _PurePickler):  # type: ignore[misc]
    """The pure-Python pickler with :class:`~picklable.Pickler`'s hook and sorted sets.

    The hook (and so every reducer) is :class:`~picklable.Pickler`'s
    (:class:`~picklable._pickler.ReducerHook`); its context carries the policy
    of deterministic code bytes and class ids.

    Parameters
    ----------
    file:
        A binary file-like object with a ``write`` method.
    protocol:
        Pickle protocol; defaults to 5.
    fix_imports, buffer_callback:
        As for :class:`pickle.Pickler`.
    """

    dispatch: ClassVar[dict[type, Callable[..., None]]] = dict(_PurePickler.dispatch)

    def __init__(
        self,
        file: Any,
        protocol: int | None = None,
        *,
        fix_imports: bool = True,
        buffer_callback: Callable[[pickle.PickleBuffer], Any] | None = None,
        scripts: str = "auto",
    ) -> None:
        protocol = resolve_protocol(protocol)
        super().__init__(file, protocol, fix_imports=fix_imports, buffer_callback=buffer_callback)
        self.protocol = protocol
        # The reducers read code bytes and class ids through this policy: the
        # only two answers of the default pickler that vary between processes.
        self.context = make_context(type(self), protocol, scripts, _CANONICAL)
        self._values: dict[tuple[type, Any], int] = {}

    def clear_memo(self) -> None:
        super().clear_memo()
        self._values.clear()

    def _save_by_value(self, obj: Any, save: Callable[[Any, Any], None]) -> None:
        index = self._values.get((type(obj), obj))
        if index is not None:
            self.write(self.get(index))
            return
        save(self, obj)
        memo = self.memo.get(id(obj))
        if memo is not None:
            self._values[type(obj), obj] = memo[0]

    def save_str(self, obj: str) -> None:
        self._save_by_value(obj, _PurePickler.save_str)

    def save_bytes(self, obj: bytes) -> None:
        self._save_by_value(obj, _PurePickler.save_bytes)

    def save_set(self, obj: set[Any]) -> None:
        if self.proto < 4:
            self.save_reduce(set, (sorted_items(obj),), obj=obj)
            return
        self.write(pickle.EMPTY_SET)
        self.memoize(obj)
        items = sorted_items(obj)
        for start in range(0, len(items), self._BATCHSIZE):
            self.write(pickle.MARK)
            for item in items[start : start + self._BATCHSIZE]:
                self.save(item)
            self.write(pickle.ADDITEMS)

    def save_frozenset(self, obj: frozenset[Any]) -> None:
        if self.proto < 4:
            self.save_reduce(frozenset, (sorted_items(obj),), obj=obj)
            return
        self.write(pickle.MARK)
        for item in sorted_items(obj):
            self.save(item)
        if id(obj) in self.memo:
            # Reached itself through one of its items: drop what was written.
            self.write(pickle.POP_MARK + self.get(self.memo[id(obj)][0]))
            return
        self.write(pickle.FROZENSET)
        self.memoize(obj)

    dispatch[str] = save_str
    dispatch[bytes] = save_bytes
    dispatch[set] = save_set
    dispatch[frozenset] = save_frozenset


def dumps(obj: Any) -> bytes:
    """Deterministic payload of ``obj`` (see the module doc); errors unlocated."""
    buffer = io.BytesIO()
    DeterministicPickler(buffer).dump(obj)
    return buffer.getvalue()


# ------------------------------------------------------------------ set order

_PLAIN = (str, bytes, int, float, bool, complex, type(None))


def _order_key(item: Any) -> tuple[Any, ...]:
    t = type(item)
    if t in (str, bytes, int, bool):
        return (t.__name__, item)
    if t is float:
        return ("float", item.hex())
    if t is type(None):
        return ("NoneType",)
    if t is tuple:
        return ("tuple", tuple(_order_key(x) for x in item))
    if t is frozenset:
        return ("frozenset", tuple(sorted(_order_key(x) for x in item)))
    # Anything else: by its own deterministic payload (not by repr: the default
    # repr holds an address).
    return ("~" + f"{t.__module__}.{t.__qualname__}", dumps(item))


def sorted_items(items: set[Any] | frozenset[Any]) -> list[Any]:
    """The elements of a set in an order that does not depend on hash salts."""
    return sorted(items, key=_order_key)


# ----------------------------------------------------------------- code bytes

# id(code) -> (code, canonical marshal bytes)
_codes: dict[int, tuple[types.CodeType, bytes]] = {}
_CODES_LIMIT = 4096
_caches.register("deterministic.code_bytes", _codes.clear)


def code_bytes(code: types.CodeType) -> bytes:
    """marshal bytes of ``code`` that depend on nothing but the code (see module doc)."""
    hit = _codes.get(id(code))
    if hit is not None and hit[0] is code:
        return hit[1]
    splices: list[tuple[bytes, bytes]] = []
    token = os.urandom(16)
    stripped = _strip_sets(code, splices, token)
    data = marshal.dumps(stripped, _MARSHAL_VERSION)
    for placeholder, encoding in splices:
        marked = marshal.dumps(placeholder, _MARSHAL_VERSION)
        if data.count(marked) != 1:  # pragma: no cover - 16 random bytes
            raise RuntimeError("deterministic marshal: placeholder collision")
        data = data.replace(marked, encoding)
    data = _code.seal(data)
    if len(_codes) >= _CODES_LIMIT:
        _codes.clear()
    _codes[id(code)] = (code, data)
    return data


def _holds_set(value: Any) -> bool:
    if type(value) is frozenset:
        return True
    if type(value) is tuple:
        return any(_holds_set(x) for x in value)
    return False


def _strip_sets(
    code: types.CodeType, splices: list[tuple[bytes, bytes]], token: bytes
) -> types.CodeType:
    """``code`` with each constant that holds a frozenset replaced by a placeholder."""
    consts = list(code.co_consts)
    changed = False
    for i, const in enumerate(consts):
        if type(const) is types.CodeType:
            inner = _strip_sets(const, splices, token)
            if inner is not const:
                consts[i] = inner
                changed = True
        elif _holds_set(const):
            placeholder = b"picklable-set-constant:" + token + len(splices).to_bytes(4, "little")
            splices.append((placeholder, _encode_const(const)))
            consts[i] = placeholder
            changed = True
    return code.replace(co_consts=tuple(consts)) if changed else code


def _encode_const(value: Any) -> bytes:
    """marshal format-2 bytes of a constant, frozenset elements sorted by encoding.

    Format 2 writes no back-references, so encodings compose: a frozenset is
    ``b">" + count + elements`` and a tuple ``b"(" + count + elements``.
    """
    if type(value) is frozenset:
        items = sorted(_encode_const(x) for x in value)
        return b">" + len(items).to_bytes(4, "little") + b"".join(items)
    if type(value) is tuple and _holds_set(value):
        return b"(" + len(value).to_bytes(4, "little") + b"".join(_encode_const(x) for x in value)
    return marshal.dumps(value, _MARSHAL_VERSION)


# ----------------------------------------------------------------- tracker ids

_DETERMINISTIC_PREFIX = "det-"
_ids: weakref.WeakKeyDictionary[type, str] = weakref.WeakKeyDictionary()
_caches.register("deterministic.class_ids", _ids.clear)


def tracker_id(cls: type) -> str:
    """A tracker id for ``cls`` made of its content, the same in every process."""
    found = _ids.get(cls)
    if found is not None:
        return found
    known = _tracker.current_id(cls)
    if known is not None and known.startswith(_DETERMINISTIC_PREFIX):
        found = known  # came in with a deterministic id: keep it
    else:
        found = _tracker.claim(cls, _DETERMINISTIC_PREFIX + class_digest(cls))
    _ids[cls] = found
    return found


def object_tracker_id(obj: Any) -> str:
    """A tracker id for a type variable made of what defines it (see :func:`tracker_id`)."""
    known = _tracker.known_id_of_object(obj)
    if known is not None and known.startswith(_DETERMINISTIC_PREFIX):
        return known
    h = hashlib.sha256()
    for part in (
        _name_of(type(obj)),
        getattr(obj, "__module__", ""),
        getattr(obj, "__name__", ""),
        *(repr(getattr(obj, f"__{key}__", None)) for key in _TYPEVAR_FIELDS),
    ):
        data = str(part).encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little") + data)
    return _tracker.claim_object(obj, _DETERMINISTIC_PREFIX + h.hexdigest()[:32])


# What makes a type variable that one (reprs of classes hold no address).
_TYPEVAR_FIELDS = ("bound", "constraints", "covariant", "contravariant", "infer_variance")


class _Canonical:
    """The deterministic answers the reducers ask the pickler for."""

    __slots__ = ()

    @staticmethod
    def code_bytes(code: types.CodeType) -> bytes:
        return code_bytes(code)

    @staticmethod
    def class_id(klass: type) -> str:
        return tracker_id(klass)

    @staticmethod
    def object_id(obj: Any) -> str:
        return object_tracker_id(obj)


_CANONICAL = _Canonical()


def class_digest(cls: type) -> str:
    """sha256 (32 hex digits) of what makes ``cls`` this class."""
    h = hashlib.sha256()

    def put(*parts: Any) -> None:
        for part in parts:
            data = part if type(part) is bytes else str(part).encode("utf-8", "surrogatepass")
            h.update(len(data).to_bytes(8, "little"))
            h.update(data)

    origin = _tracker.origin(cls)
    put(cls.__module__, cls.__qualname__, origin[2] if origin else "", _name_of(type(cls)))
    for base in cls.__bases__:
        put(_name_of(base))
    namespace = vars(cls)
    # Sorted: a class rebuilt from a payload has its attributes in another
    # order (its skeleton's first), and must get the same id.
    for key in sorted(namespace):
        if key in ("__dict__", "__weakref__", "_abc_impl"):
            continue
        put(key)
        _digest_value(namespace[key], put, 0)
    return h.hexdigest()[:32]


def _name_of(obj: Any) -> str:
    return (
        f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__qualname__)}"
    )


def _digest_value(value: Any, put: Callable[..., None], depth: int) -> None:
    t = type(value)
    if depth > 4:
        put("deep", _name_of(t))
    elif t in _PLAIN:
        put(t.__name__, repr(value))
    elif t is types.FunctionType:
        put("function", value.__qualname__, code_bytes(value.__code__))
        for default in value.__defaults__ or ():
            _digest_value(default, put, depth + 1)
    elif t in (classmethod, staticmethod):
        put(t.__name__)
        _digest_value(value.__func__, put, depth + 1)
    elif t is property:
        put("property")
        for accessor in (value.fget, value.fset, value.fdel):
            _digest_value(accessor, put, depth + 1)
    elif isinstance(value, type):
        put("class", _name_of(value))
    elif t in (tuple, list):
        put(t.__name__, len(value))
        for item in value:
            _digest_value(item, put, depth + 1)
    elif t in (set, frozenset):
        put(t.__name__, len(value))
        for item in sorted(value, key=repr):
            _digest_value(item, put, depth + 1)
    elif t is dict:
        put("dict", len(value))
        for key, item in value.items():
            _digest_value(key, put, depth + 1)
            _digest_value(item, put, depth + 1)
    else:
        # Opaque objects: their type, and their repr when it is not the
        # default one (that holds an address, which differs per process).
        try:
            text = repr(value)
        except Exception:
            text = ""
        put("object", _name_of(t), "" if " at 0x" in text else text)
