"""Large values of a pool's functions: never in the function's frame, sent at most
once per worker, kept there by digest (issue 18).

A function that travels by value carries what it reads: a task function of the
script that reads a 200 MB module-level array carried the array in every
function frame, pickled, signed and hashed again at each ``map`` call. Here,
when a pool encodes a function, every large buffer in it (a numpy array or
``bytes``/``bytearray`` of :data:`SHARE_MIN_BYTES` or more, anywhere: a global,
a closure cell, a default, inside a DataFrame) becomes a *persistent id*: its
content digest, its size, and where it sits (``module``, global name) when it is
a global of the function. The function frame stays small; its bytes, and so
its digest, change whenever such a value changes.

A worker resolves each id, in this order:

1. a value it already holds under that digest (received or matched earlier);
2. its own value of that global, when the worker set it itself since it
   imported the script (an initializer's doing: the worker's state, as pickle
   has it);
3. its own value of that global, when its digest is the sender's: the worker
   imported the same script, which made the same array (nothing travels);
4. otherwise the sender's value: the worker asks for it (``W digest``), the
   parent sends it out of band from the array's own memory (``B`` frame, signed;
   the worker also checks the digest: a value changed since it was hashed is
   refused, not used).

When a value had to come from the sender (case 4), the worker's own script
function would read its own, different, value: the function is then loaded as
the sender's copy (:class:`picklable._tracker.copies_of_scripts`), which reads
the value received. Never a stale global.

What it costs the sender: one digest of each large value per encode (the value
may have changed in place since the last ``map``: only its content tells).
What it saves: the copy into the payload, the signature's pass over it, and
the transfer (only when a worker has neither the value nor an equal one).

::

    parent (caller thread)                     worker
    encode_function(fn) ──F digest payload───▶ load: persistent ids
       large value -> id(digest, size, where)    1 held? 2 own, set here? 3 own, same digest?
       Shared kept (weakly) in the Core     ◀──W digest──── 4 ask
    manager thread ─────B digest sizes signed pickle, buffers──▶ check, keep, load
"""

from __future__ import annotations

import collections
import hashlib
import io
import pickle
import struct
import sys
import weakref
from collections.abc import Callable
from typing import Any

from .. import _signing, _tracker
from .._api import dumps, loads
from .._code import global_reads
from .._compat import MAIN_MODULES
from .._pickler import Pickler
from .._unpickler import Unpickler

__all__ = [
    "SHARE_MIN_BYTES",
    "Shared",
    "SharedStore",
    "encode_function",
    "note_imported",
    "shared_frame",
]

# Values this large or larger travel apart from the function frame.
SHARE_MIN_BYTES = 1 << 20
# A worker keeps this many shared values (the functions it keeps hold theirs too).
STORE_SIZE = 16

_TAG = "picklable.shared"
_SIZES = struct.Struct("<I")
_SIZE = struct.Struct("<Q")
_NUMPY_ARRAY = ("numpy", "ndarray")


def _large(obj: Any) -> int:
    """The size of ``obj`` if it is a value shared apart, else 0."""
    t = type(obj)
    if t is bytes or t is bytearray:
        size = len(obj)
    elif (t.__module__, t.__name__) == _NUMPY_ARRAY:
        size = obj.nbytes
    else:
        return 0
    return size if size >= SHARE_MIN_BYTES else 0


def _split(obj: Any) -> tuple[bytes, list[memoryview]]:
    """``(a small pickle, the raw buffers)`` that rebuild ``obj``; no copy of the data.

    A numpy array is pickled with out-of-band buffers (its memory, as is; a
    non-contiguous one is copied in band by numpy); bytes and bytearray are
    their own buffer.
    """
    if type(obj) is bytes or type(obj) is bytearray:
        return dumps(type(obj).__name__), [memoryview(obj).cast("B")]
    buffers: list[pickle.PickleBuffer] = []
    head = dumps(obj, buffer_callback=buffers.append)
    return head, [buffer.raw() for buffer in buffers]


def _join(head: Any, raws: list[memoryview]) -> Any:
    value = loads(head, buffers=raws)
    if type(value) is str:  # the name of the type whose bytes follow
        return bytes(raws[0]) if value == "bytes" else bytearray(raws[0])
    return value


_fast_hash: Any = None
try:  # the pool's "fast" extra: XXH3-128 reads memory about 4x faster than SHA-256
    import xxhash

    _fast_hash = xxhash.xxh3_128
except ImportError:  # pragma: no cover - exercised where xxhash is not installed
    pass


def _hasher(algorithm: int) -> Any:
    if algorithm == _XXH3 and _fast_hash is not None:
        return _fast_hash()
    if algorithm == _SHA256:
        return hashlib.sha256()
    return None


# The first byte of a digest names its algorithm: a worker without xxhash cannot
# compare its own value with an XXH3 digest (it asks for the value instead).
# Equality is all a digest decides: the B frame that brings a value is signed.
_XXH3, _SHA256 = 1, 2
_ALGORITHM = _XXH3 if _fast_hash is not None else _SHA256


def _digest(head: Any, raws: list[memoryview], algorithm: int = _ALGORITHM) -> bytes | None:
    """The content digest of a split value (16 bytes): its algorithm's byte, then 15
    (None: this process lacks that algorithm)."""
    h = _hasher(algorithm)
    if h is None:
        return None
    h.update(_SIZE.pack(len(head)))
    h.update(head)
    for raw in raws:
        h.update(_SIZE.pack(raw.nbytes))
        h.update(raw)
    digest: bytes = h.digest()
    return bytes([algorithm]) + digest[:15]


class Shared:
    """A large value a function frame names by digest (the sender's side).

    Kept by the pool's core (a bounded number of them) for workers that ask.
    A global of a module is held weakly: its module keeps the current value
    alive, and the values a program replaced are not kept for workers that may
    never ask (a worker that asks for one gets an error for its tasks, not an
    old value). Other values (in a closure, a default) are held until evicted:
    the function holding them may be gone before a worker asks.
    """

    __slots__ = ("digest", "size", "signed", "_ref")

    def __init__(self, obj: Any, digest: bytes, size: int, weak: bool = False) -> None:
        self.digest = digest
        self.size = size
        # The signed pickle of the first B frame, reused for the other workers:
        # one pass of HMAC over the value, not one per worker. (A value changed
        # in place since then fails the worker's checks: refused, never used.)
        self.signed: bytes | None = None
        self._ref: Callable[[], Any] = lambda: obj
        if weak:
            try:
                self._ref = weakref.ref(obj)
            except TypeError:  # bytes: no weak references
                pass

    def value(self) -> Any:
        """The value, or None if the program dropped it."""
        return self._ref()


class _SharingPickler(Pickler):
    """Picklable's Pickler, with large values named by digest (persistent ids)."""

    __slots__ = ("found", "where")

    def __init__(self, file: Any, where: dict[int, tuple[str, str, str | None]]) -> None:
        super().__init__(file)
        self.found: dict[int, tuple[Any, Shared]] = {}
        self.where = where

    def persistent_id(self, obj: Any) -> Any:
        size = _large(obj)
        if not size:
            return None
        key = id(obj)
        hit = self.found.get(key)
        if hit is None:
            digest = _digest(*_split(obj))
            assert digest is not None  # this process's own algorithm
            shared = Shared(obj, digest, size, weak=key in self.where)
            hit = self.found[key] = (obj, shared)
        return (_TAG, hit[1].digest, size, self.where.get(key))


def _where_globals_are(fn: Any) -> dict[int, tuple[str, str, str | None]]:
    """id(value) -> (module, global name, module file) for the large globals ``fn`` reads."""
    code = getattr(fn, "__code__", None)
    namespace = getattr(fn, "__globals__", None)
    if code is None or type(namespace) is not dict:
        return {}
    module = namespace.get("__name__")
    if type(module) is not str:
        return {}
    filename = namespace.get("__file__")
    where: dict[int, tuple[str, str, str | None]] = {}
    for name in global_reads(code):
        value = namespace.get(name)
        if value is not None and _large(value):
            where.setdefault(id(value), (module, name, filename))
    return where


def encode_function(fn: Any, key: bytes) -> tuple[bytes, list[Shared]] | None:
    """The signed frame payload of ``fn`` with its large values named by digest,
    and those values; None when ``fn`` holds none (or this way fails: the pool's
    usual encoding then says why, or ships it)."""
    buffer = io.BytesIO()
    pickler = _SharingPickler(buffer, _where_globals_are(fn))
    try:
        pickler.dump(fn)
    except Exception:
        return None
    if not pickler.found:
        return None
    shared = [entry for _, entry in pickler.found.values()]
    signed: bytes = _signing.sign(key, buffer.getvalue())
    return signed, shared


def shared_frame(kind: bytes, shared: Shared, key: bytes) -> list[Any]:
    """The pieces of the frame that takes ``shared`` to a worker (the value's own
    memory, not a copy), or of an empty one if the program dropped the value.

    Layout after the length: kind, digest(16), buffer count(4), the signed
    pickle's size(8), each buffer's size(8), the signed pickle, the buffers.
    """
    obj = shared.value()
    raws: list[memoryview] = []
    if obj is None:
        head = b""
    else:
        pickled, raws = _split(obj)
        signed = shared.signed
        if signed is None:
            signed = shared.signed = _signing.sign(key, pickled, raws)
        head = signed
    sizes = b"".join(_SIZE.pack(n) for n in (len(head), *(raw.nbytes for raw in raws)))
    prefix = kind + shared.digest + _SIZES.pack(len(raws)) + sizes
    total = len(prefix) + len(head) + sum(raw.nbytes for raw in raws)
    return [_SIZE.pack(total) + prefix, head, *raws]


def _parse_shared(body: memoryview, key: bytes, digest: bytes) -> Any:
    """The value in a ``B`` frame's body (after the length), checked: the frame's
    signature, then that its content is what the function was made with."""
    (count,) = _SIZES.unpack_from(body, 17)
    offset = 21 + 8 * (count + 1)
    sizes = [_SIZE.unpack_from(body, 21 + 8 * i)[0] for i in range(count + 1)]
    if sizes[0] == 0:
        raise LookupError(
            "the sender no longer holds this value (the program dropped it before this "
            "worker asked for it)"
        )
    head = body[offset : offset + sizes[0]]
    offset += sizes[0]
    raws = []
    for size in sizes[1:]:
        raws.append(body[offset : offset + size])
        offset += size
    pickled, _ = _signing.verify(key, head, raws)
    if _digest(pickled, raws, digest[0]) != digest:
        raise ValueError(
            "the value changed in the sender after its tasks were submitted (it was "
            "modified in place). Fix: do not modify a global that queued tasks read, "
            "or pass the value as an argument"
        )
    return _join(pickled, raws)


# (module, name) -> id of the large value the script bound at import, in a worker
# that imported the sender's script: a different value now was set here.
_imported: dict[tuple[str, str], int] = {}


def note_imported() -> None:
    """Remember the large globals of this worker's copy of the script, as imported
    (before the initializer runs): what the worker sets later is its own state."""
    for name in MAIN_MODULES:
        module = sys.modules.get(name)
        if module is None:
            continue
        for key, value in list(vars(module).items()):
            if type(key) is str and _large(value):
                _imported[(name, key)] = id(value)


_MISSING: Any = object()


def _own_value(where: tuple[str, str, str | None]) -> tuple[Any, bool]:
    """This worker's own value of the global ``where`` names (or _MISSING), and
    whether the worker set it itself since it imported the script."""
    module, name, filename = where
    here = module
    found = None
    if module in MAIN_MODULES:
        for here in MAIN_MODULES:
            candidate = sys.modules.get(here)
            if candidate is not None and getattr(candidate, "__file__", None) == filename:
                found = candidate
                break
    else:
        found = sys.modules.get(module)
    if found is None:
        return _MISSING, False
    value = vars(found).get(name, _MISSING)
    imported = _imported.get((here, name))
    return value, imported is not None and imported != id(value)


class SharedStore:
    """A worker's shared values by digest, and how it resolves a frame's ids.

    ``fetch(digest)`` asks the parent and returns the ``B`` frame's body (None:
    the parent went away).
    """

    __slots__ = ("values", "fetch", "key")

    def __init__(self, fetch: Callable[[bytes], memoryview | None], key: bytes) -> None:
        self.values: collections.OrderedDict[bytes, Callable[[], Any]] = collections.OrderedDict()
        self.fetch = fetch
        self.key = key

    def load_function(self, payload: Any) -> Any:
        """Load a function frame's payload (signed), resolving its shared values.

        Raises
        ------
        picklable.UnpicklingError, LookupError, ValueError
            The payload does not load, or a value could not be had.
        """
        view, _ = _signing.verify(self.key, payload)
        resolving = _Resolving(io.BytesIO(view), self)
        fn = resolving.load()
        if resolving.from_sender:
            # The worker's own function would read its own value of a global
            # whose value the sender has changed: load the sender's copy.
            with _tracker.copies_of_scripts():
                fn = _Resolving(io.BytesIO(view), self).load()
        return fn

    def keep(self, digest: bytes, value: Any) -> None:
        """Keep ``value`` under ``digest``: weakly where it can be (the functions
        loaded here hold what they use; a forgotten function's value goes with it)."""
        values = self.values
        try:
            values[digest] = weakref.ref(value)
        except TypeError:  # bytes
            values[digest] = _Strong(value)
        values.move_to_end(digest)
        while len(values) > STORE_SIZE:
            values.popitem(last=False)

    def held(self, digest: bytes) -> Any:
        ref = self.values.get(digest)
        value = _MISSING if ref is None else ref()
        if value is None:
            del self.values[digest]
            return _MISSING
        if value is not _MISSING:
            self.values.move_to_end(digest)
        return value

    def resolve(self, pid: Any) -> tuple[Any, bool]:
        """The value a persistent id names, and whether it is the sender's (not
        the worker's own value of that global)."""
        if type(pid) is not tuple or len(pid) != 4 or pid[0] != _TAG:
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
        _, digest, _, where = pid
        own: Any = _MISSING
        if where is not None:
            own, set_here = _own_value(where)
            if set_here:
                return own, False  # the worker's own state, as with pickle
        held = self.held(digest)
        if held is not _MISSING:
            return held, where is not None and held is not own
        if own is not _MISSING and _large(own) and _digest(*_split(own), digest[0]) == digest:
            self.keep(digest, own)  # the same script made the same value
            return own, False
        body = self.fetch(digest)
        if body is None:
            raise LookupError("the pool went away before this worker got a value it needs")
        value = _parse_shared(body, self.key, digest)
        self.keep(digest, value)
        return value, True


class _Strong:
    """A strong reference with a weak reference's call."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self) -> Any:
        return self.value


class _Resolving(Unpickler):
    """Loads one function frame, resolving its persistent ids through a store."""

    def __init__(self, file: Any, store: SharedStore) -> None:
        super().__init__(file)
        self.store = store
        self.from_sender = False

    def persistent_load(self, pid: Any) -> Any:
        value, from_sender = self.store.resolve(pid)
        if from_sender:
            self.from_sender = True
        return value
