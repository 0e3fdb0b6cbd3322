"""What travels inside an engine's own pickles: arguments, results' checks, exceptions.

Engines (Dask, Ray) pickle tasks, results and errors with their own
serializer, in processes picklable does not control. These pieces ride inside
those pickles and carry picklable payloads through them:

* :class:`Arg`: an argument as its picklable payload, opened by the task just
  before the call. Arguments that stdlib pickle writes byte for byte as
  picklable does are left to the engine (:func:`pack`), as are the engine's own
  objects (futures, object refs, collections), which it must see to resolve.
* :class:`ShippedException`: raised in the worker in place of a task's
  exception; its pickle reduction *is* the original, shipped with picklable, so
  whoever unpickles it (the client) gets the original, attributes and chain.

Used by :mod:`picklable.dask` and :mod:`picklable.ray`; imports neither engine.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable
from typing import Any

from . import _envelope
from ._api import dumps, loads
from ._envelope import Envelope, digest_of, load_cached

# Plain by type: stdlib pickle and picklable write the same bytes; engines ship them.
SCALARS = frozenset({type(None), bool, int, float, complex, str, bytes})
CONTAINERS = frozenset({list, tuple, dict, set, frozenset})
# An engine's boxes of results that only picklable ships exactly (Dask's Result),
# which a task may be handed unopened: opened like arguments (by their .value).
BOXES: set[type] = set()


# --------------------------------------------------------------- arguments


class Arg:
    """An argument in its picklable payload, opened on the worker by the task.

    Pickled as itself (bytes and a flag), so a scheduler that unpickles and
    re-pickles task graphs passes it on untouched. Callables are loaded once per
    worker and digest (like the task's function); any other object is loaded
    afresh for each task, so a task that mutates its argument affects only itself.
    """

    __slots__ = ("payload", "digest", "shared")

    def __init__(self, payload: bytes, digest: bytes, shared: bool) -> None:
        self.payload = payload
        self.digest = digest
        self.shared = shared

    def open(self) -> Any:
        if self.shared:
            return load_cached(self.digest, self.payload)
        return loads(self.payload)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Arg, (self.payload, self.digest, self.shared))

    def __dask_tokenize__(self) -> tuple[str, bytes]:
        return ("picklable.dask._Arg", self.digest)

    def __repr__(self) -> str:
        return f"<picklable argument, {len(self.payload)} bytes, digest {self.digest.hex()[:12]}>"


def is_plain_array(value: Any) -> bool:
    """A numpy array without Python objects: engines ship its buffer out of band."""
    t = type(value)
    return t.__name__ == "ndarray" and t.__module__ == "numpy" and not value.dtype.hasobject


def same_as_pickle(value: Any, payload: bytes) -> bool:
    """Whether stdlib pickle writes exactly ``payload`` for ``value``.

    Then an engine's own pickling (pickle, or cloudpickle, which writes what
    pickle writes for importable objects and plain data) ships it exactly too,
    and it can be left to the engine. Anything picklable treats specially (by
    value, by a located name, a wrapper taken apart, an exception's state)
    makes the bytes differ.
    """
    try:
        return pickle.dumps(value, 5) == payload
    except Exception:
        return False


class Packer:
    """Packs one engine's task arguments: what the engine must see stays as it is.

    ``engine_owned(value)`` is true for the engine's own objects (futures, object
    refs, collections, actor handles), which it resolves or tracks itself.
    """

    __slots__ = ("engine_owned",)

    def __init__(self, engine_owned: Callable[[Any], bool]) -> None:
        self.engine_owned = engine_owned

    def holds_engine(self, value: Any) -> bool:
        """Whether a container holds one of the engine's objects at any depth."""
        stack = [value]
        pop, push = stack.pop, stack.extend
        owned = self.engine_owned
        seen: set[int] = set()  # a list may hold itself: pickle allows it
        while stack:
            item = pop()
            t = type(item)
            if t in SCALARS:
                continue
            if t in CONTAINERS:
                if id(item) not in seen:
                    seen.add(id(item))
                    push(item.values() if t is dict else item)
            elif owned(item):
                return True
        return False

    def pack(self, value: Any) -> tuple[Any, bool]:
        """What to hand the engine for one argument, and whether the worker must
        look into containers."""
        t = type(value)
        if t in SCALARS:
            return value, False
        if t in CONTAINERS:
            if self.holds_engine(value):
                # The engine replaces its objects inside; the rest is packed piece by piece.
                return self.pack_parts(value), True
        elif self.engine_owned(value) or is_plain_array(value):
            return value, False
        payload = dumps(value)
        if same_as_pickle(value, payload):
            return value, False
        return Arg(payload, digest_of(payload), callable(value)), False

    def pack_parts(self, value: Any) -> Any:
        t = type(value)
        if t is dict:
            return {k: self.pack_parts(v) for k, v in value.items()}
        if t in CONTAINERS:
            return t(self.pack_parts(v) for v in value)
        return self.pack(value)[0]

    def pack_all(
        self, args: Iterable[Any], kwargs: dict[str, Any]
    ) -> tuple[list[Any], dict[str, Any], bool]:
        deep = False
        packed_args = []
        pack = self.pack
        for value in args:
            packed, inside = pack(value)
            packed_args.append(packed)
            deep = deep or inside
        packed_kwargs = {}
        for name, value in kwargs.items():
            packed, inside = pack(value)
            packed_kwargs[name] = packed
            deep = deep or inside
        return packed_args, packed_kwargs, deep


def open_arg(value: Any) -> Any:
    t = type(value)
    if t is Arg:
        return value.open()
    if t in BOXES:
        return value.value
    if t is Envelope:  # as an envelope's call opens its envelope arguments
        return value.obj
    return value


def open_deep(value: Any) -> Any:
    """:func:`open_arg`, also inside dicts and the plain containers."""
    t = type(value)
    if t is dict:
        return {k: open_deep(v) for k, v in value.items()}
    if t in CONTAINERS:
        return t(open_deep(v) for v in value)
    return open_arg(value)


def open_all(args: tuple[Any, ...], kwargs: dict[str, Any], deep: bool) -> tuple[Any, Any]:
    """The task's arguments, opened (containers too when ``deep``)."""
    if deep:
        return open_deep(args), open_deep(kwargs)
    if args:
        args = tuple([open_arg(a) for a in args])
    if kwargs:
        kwargs = {k: open_arg(v) for k, v in kwargs.items()}
    return args, kwargs


# -------------------------------------------------------------- exceptions
# The carrier lives with the envelope (an opened envelope raises it too); its
# names stay importable here, where payloads and engines' pickles name them.
ShippedException = _envelope.ShippedException
_load_exception = _envelope._load_exception
_restore_exception = _envelope._restore_exception
_thaw = _envelope._thaw
type_name = _envelope.type_name
summary = _envelope.summary
carrier = _envelope.carrier
remote_error = _envelope.remote_error
