"""``ship(obj)``: an envelope any pickle-based engine can carry, through any hop.

Engines pickle tasks with stdlib pickle (multiprocessing, concurrent.futures,
mpi4py, Celery's pickle serializer) or with cloudpickle (loky, joblib, Ray,
Dask), and cannot ship what picklable ships. Wrap the object instead::

    pool.map(picklable.ship(fn), items)

An envelope stays sealed on the way. Its pickle reduction is
``(_sealed_envelope, (digest, payload, name))``: the picklable payload as
bytes, made once by :func:`ship`. Unpickled anywhere, it is an envelope again,
holding those bytes and nothing loaded; pickled again, by any pickler, it is
those bytes again. So a process that unpickles and re-pickles the task on its
way (Dask's scheduler, a queue forwarded by another process, an engine that
inspects tasks) passes the object on exactly as it was shipped. The envelope
opens only where it is used: called (the object is called), or asked for its
:attr:`Envelope.obj`. Opening loads the payload once per process, keeps the
object under the payload's digest, and hands out that same object for every
later envelope with that digest: an engine that pickles the envelope with
every task pays for the bytes, not for loading them again.

``_sealed_envelope`` and ``_open_envelope`` (what 0.1.0 wrote: it loads the
object itself) are written into payloads by name: they are frozen (add new
rebuilders, never rename these).
"""

from __future__ import annotations

import collections
import threading
import traceback
from typing import Any, Generic, TypeVar

try:
    from _blake2 import blake2b  # what hashlib.blake2b is, without importing OpenSSL
except ImportError:  # pragma: no cover - Pythons built without it
    from hashlib import blake2b

from . import _caches, _tracker
from ._api import dumps, loads
from ._remote import RemoteError, RemoteTraceback

__all__ = ["Envelope", "ship"]

T = TypeVar("T")

# Objects loaded from envelopes in this process, by digest (least recently
# used first). Big enough for the handful of functions and models a program
# ships; a shipped object that falls out is loaded again if it comes back.
CACHE_SIZE = 128
_cache: collections.OrderedDict[bytes, Any] = collections.OrderedDict()
_lock = threading.Lock()
_caches.register("envelope.opened", _cache.clear)

# An envelope that has not been opened in this process yet.
_SEALED: Any = object()


def digest_of(payload: bytes) -> bytes:
    """The cache key of a payload: its BLAKE2b digest, 16 bytes."""
    return blake2b(payload, digest_size=16).digest()


class Envelope(Generic[T]):
    """An object packed with picklable, for engines that pickle with something else.

    Made by :func:`ship`. Pickled by any pickler, it unpickles as an envelope
    again, still sealed: nothing is loaded until it is used, and pickled once
    more it is the same bytes, so it passes unchanged through any process that
    unpickles and re-pickles it on the way (Dask's scheduler, a forwarding
    queue). Calling it calls the object (loading it first, once per process
    and digest); envelopes among the arguments of that call are opened too.
    :attr:`obj` is the object itself.

    In the sending process the envelope holds the very object it was made
    from, so an engine that runs a task in-process (joblib with one job) calls
    that object.

    An exception whose class this process built from the payload (a class of
    the sender's script or a local class, copied by value) leaves the call as
    a :class:`ShippedException` carrier: the engine's own pickler would send
    that copy of the class on as another look-alike class, while the carrier
    ships the exception with picklable, so it loads as the original class in
    the process that defined it (``except JobError`` catches it there).

    .. versionchanged:: 0.2.0
       Unpickles as a sealed envelope, no longer as the object itself: call it
       or read :attr:`obj`.

    Attributes
    ----------
    payload:
        The object's picklable payload (made when the envelope was made).
    digest:
        BLAKE2b digest (16 bytes) of the payload: the receiver's cache key.
    """

    __slots__ = ("_obj", "payload", "digest", "_name", "__weakref__")

    def __init__(self, obj: T, payload: bytes, digest: bytes, name: str | None = None) -> None:
        self._obj = obj
        self.payload = payload
        self.digest = digest
        self._name = _name_of(obj) if name is None else name

    @property
    def obj(self) -> T:
        """The object: the one given to :func:`ship` in the sending process, and
        elsewhere the one loaded from the payload (once per process and digest)."""
        obj = self._obj
        if obj is _SEALED:
            obj = self._obj = load_cached(self.digest, self.payload)
        return obj

    @property
    def opened(self) -> bool:
        """Whether the object is at hand in this process (loaded, or the original)."""
        return self._obj is not _SEALED

    @property
    def __name__(self) -> str:
        # Engines name tasks after their function (Dask's keys, joblib's reports).
        return self._name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        obj: Any = self._obj
        if obj is _SEALED:
            obj = self._obj = load_cached(self.digest, self.payload)
        if args:
            for a in args:
                if type(a) is Envelope:
                    args = tuple([a.obj if type(a) is Envelope else a for a in args])
                    break
        if kwargs:
            for v in kwargs.values():
                if type(v) is Envelope:
                    kwargs = {k: v.obj if type(v) is Envelope else v for k, v in kwargs.items()}
                    break
        try:
            return obj(*args, **kwargs)
        except Exception as exc:
            if not _came_by_value(type(exc)):
                raise
            # The engine pickles what the task raises with its own pickler, which
            # would send this process's copy of the class on as a new look-alike:
            # the carrier ships it with picklable, so it loads as the original
            # class where that was defined (the sender's `except JobError`).
            raise carrier(exc) from None

    def __reduce__(self) -> tuple[Any, ...]:
        return (_sealed_envelope, (self.digest, self.payload, self._name))

    def __dask_tokenize__(self) -> tuple[str, bytes]:
        # Dask tokenizes task functions for their keys; the digest is the identity.
        return ("picklable.Envelope", self.digest)

    def __repr__(self) -> str:
        state = "opened" if self.opened else "sealed"
        return (
            f"<picklable.Envelope of {self._name}, {len(self.payload)} bytes, "
            f"digest {self.digest.hex()[:12]}, {state}>"
        )


def _came_by_value(cls: type) -> bool:
    """Whether ``cls`` (or a class it derives from) was built here from a payload:
    a copy of a class defined elsewhere (a script's, a local one)."""
    return any(_tracker.built(klass) for klass in cls.__mro__)


def _name_of(obj: Any) -> str:
    """A short name for repr and task names: the object's ``__name__`` or its type's."""
    try:
        name = obj.__name__
    except Exception:
        name = None
    if not isinstance(name, str):
        kind = type(obj)
        name = kind.__qualname__
        if kind.__module__ != "builtins":
            name = f"{kind.__module__}.{name}"
    return name[:80]


def ship(obj: T) -> Envelope[T]:
    """Pack ``obj`` with picklable into an envelope any pickler can carry.

    The payload is made now, so an object that cannot ship fails here, with
    picklable's explanation, and later changes to ``obj`` do not travel (ship
    again to send a new state). The envelope stays sealed through every
    process that unpickles and re-pickles it on its way, and opens where it is
    used: calling it calls the object, :attr:`Envelope.obj` is the object. The
    payload is loaded once per process and digest and the object reused after
    that, so treat it as read-only there.

    .. versionchanged:: 0.2.0
       The envelope survives processes that re-pickle it on the way (Dask's
       scheduler): it opens where it is used. An exception of a class copied by
       value comes home as the original class.

    Parameters
    ----------
    obj:
        Anything picklable ships: a lambda, a closure, a decorated or
        ``__main__`` function, an object holding them.

    Returns
    -------
    Envelope
        Callable like ``obj``, here and in the receiving process.

    Raises
    ------
    picklable.PicklingError
        If ``obj`` cannot be shipped; names the attribute path of the culprit.

    Examples
    --------
    >>> with multiprocessing.get_context("spawn").Pool(2) as pool:
    ...     pool.map(picklable.ship(lambda x: x * 2), range(4))
    [0, 2, 4, 6]
    >>> joblib.Parallel(n_jobs=2)(joblib.delayed(picklable.ship(fn))(x) for x in data)
    >>> client.map(picklable.ship(fn), data)  # Dask: sealed through the scheduler
    """
    payload = dumps(obj)
    return Envelope(obj, payload, digest_of(payload))


def load_cached(digest: bytes, payload: bytes) -> Any:
    """The object of ``payload``, loaded once per process and ``digest``."""
    with _lock:
        try:
            obj = _cache[digest]
        except KeyError:
            pass
        else:
            _cache.move_to_end(digest)
            return obj
    # Loaded outside the lock: a payload may itself hold envelopes.
    obj = loads(payload)
    with _lock:
        if digest in _cache:
            obj = _cache[digest]  # another thread won the race: one object per digest
            _cache.move_to_end(digest)
        else:
            _cache[digest] = obj
            if len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
    return obj


def _sealed_envelope(digest: bytes, payload: bytes, name: str) -> Envelope[Any]:
    """Rebuilder named in envelope pickles (frozen): the envelope again, still sealed."""
    return Envelope(_SEALED, payload, digest, name)


def _open_envelope(digest: bytes, payload: bytes) -> Any:
    """Rebuilder named in 0.1.0's envelope pickles (frozen): the object itself."""
    return load_cached(digest, payload)


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
