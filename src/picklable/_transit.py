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
import traceback
from collections.abc import Callable, Iterable
from typing import Any

from ._api import dumps, loads
from ._envelope import Envelope, digest_of, load_cached
from ._pool._errors import RemoteError, RemoteTraceback

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


class ShippedException(Exception):
    """Carries an exception raised in a task from the worker to the client.

    Raised on the worker in place of the original; its pickle reduction is the
    original exception, shipped with picklable. Whoever unpickles it (the client,
    through ``future.exception()``, ``future.result()``, ``client.gather``,
    ``dask.compute``) gets the original: its class, attributes, ``__cause__``,
    ``__context__``, notes and the worker's traceback. The carrier itself shows up
    only in the worker's log, as ``ShippedException('mod.Error: message')``.

    An exception that picklable cannot ship arrives as a
    :class:`picklable.RemoteError` naming its type, message and the reason, with
    the worker's traceback text as ``__cause__``.

    Attributes
    ----------
    payload:
        The original exception's picklable payload.
    """

    def __init__(self, summary: str, payload: Any = b"") -> None:
        if isinstance(payload, bytes):
            super().__init__(summary)
        else:  # Dask's truncation passes the text as a second argument
            super().__init__(summary, payload)
        self.payload = payload

    def __reduce__(self) -> Any:
        if not isinstance(self.payload, bytes) or not self.payload:
            # Made by someone else: Dask rebuilds an error whose message is too
            # long as type(e)("Long error message", text).
            return (type(self), self.args)
        # A state setter (any protocol, Python 3.8+) runs after the rebuilder and anyone
        # who wraps this reduction: Dask's tblib sets __cause__, __context__ and
        # __traceback__ from the carrier on what the rebuilder returned; the
        # setter puts the original's back. The payload bytes are pickled once.
        return (_load_exception, (self.payload,), self.payload, None, None, _restore_exception)


# id -> (exception, its class, cause, context, suppress_context, traceback)
# between the rebuilder and the state setter of one unpickling.
_chains: dict[int, tuple[BaseException, type, Any, Any, bool, Any]] = {}
_set_cause = vars(BaseException)["__cause__"].__set__
_set_context = vars(BaseException)["__context__"].__set__
_set_suppress = vars(BaseException)["__suppress_context__"].__set__
_set_traceback = vars(BaseException)["__traceback__"].__set__
# Exception class -> a subclass that takes setattr again (see _thaw).
_thawed: dict[type, type] = {}


def _thaw(exc: BaseException) -> None:
    """Let ``exc`` take plain setattr until its state setter runs.

    Dask's tblib sets ``__cause__``, ``__context__`` and ``__traceback__`` on what
    the rebuilder returns with ordinary setattr, which a frozen exception (one
    whose ``__setattr__`` refuses) turns into a failed unpickling. For that
    moment the instance wears a subclass with object's ``__setattr__``; the
    state setter puts its own class back.
    """
    cls = type(exc)
    if cls.__setattr__ is object.__setattr__:
        return
    thawed = _thawed.get(cls)
    if thawed is None:
        namespace = {
            "__setattr__": object.__setattr__,
            "__slots__": (),
            "__module__": cls.__module__,
        }
        thawed = _thawed[cls] = type(cls.__name__, (cls,), namespace)
    try:
        object.__setattr__(exc, "__class__", thawed)
    except TypeError:  # an unusual layout: let tblib try as it is
        pass


def _load_exception(payload: bytes) -> BaseException:
    """Rebuilder named in carrier pickles: the original exception."""
    exc: BaseException = loads(payload)
    if len(_chains) > 1024:  # only unpicklings that failed midway leave entries
        _chains.clear()
    cls = type(exc)
    _chains[id(exc)] = (
        exc,
        cls,
        exc.__cause__,
        exc.__context__,
        exc.__suppress_context__,
        exc.__traceback__,
    )
    _thaw(exc)
    return exc


def _restore_exception(exc: BaseException, payload: bytes) -> None:
    """State setter named in carrier pickles: the original's class, chain and traceback."""
    entry = _chains.pop(id(exc), None)
    if entry is None or entry[0] is not exc:
        return
    if type(exc) is not entry[1]:
        object.__setattr__(exc, "__class__", entry[1])
    # Through the base descriptors: a frozen exception's __setattr__ refuses.
    _set_cause(exc, entry[2])
    _set_context(exc, entry[3])
    _set_suppress(exc, entry[4])
    _set_traceback(exc, entry[5])


def type_name(t: type) -> str:
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def summary(exc: BaseException) -> str:
    try:
        message = str(exc)
    except Exception as why:
        message = f"<str() failed: {why!r}>"
    # Short: Dask rebuilds an exception whose str() passes its error length limit.
    if len(message) > 2000:
        message = message[:2000] + "..."
    return f"{type_name(type(exc))}: {message}" if message else type_name(type(exc))


def carrier(exc: BaseException) -> ShippedException:
    """The carrier of ``exc``, with the worker's frames below the task's call."""
    tb = exc.__traceback__
    if tb is not None:
        tb = tb.tb_next  # our own frame: of no interest to the user
    _set_traceback(exc, tb)  # a frozen exception's __setattr__ refuses
    try:
        payload = dumps(exc)
        loads(payload)  # fails here, where it can still be reported, not in the client
    except BaseException as why:
        payload = dumps(remote_error(exc, why))
    return ShippedException(summary(exc), payload).with_traceback(tb)


def remote_error(exc: BaseException, why: BaseException) -> BaseException:
    try:
        text = "".join(traceback.format_exception(exc))
    except Exception as failure:
        text = f"{type_name(type(exc))}: <traceback could not be formatted: {failure!r}>\n"
    error = RemoteError(
        type_name(type(exc)),
        summary(exc).partition(": ")[2],
        f"{type_name(type(why))}: {why}",
        text,
    )
    error.__cause__ = RemoteTraceback(text)
    return error
