"""Dask distributed with picklable: functions, arguments, results and exceptions.

Dask pickles tasks with pickle, falling back to cloudpickle, and a client's
``serializers=`` choice never reaches the workers (dask/distributed#7381): the
graph, the results and the errors of a task are serialized by the scheduler and
the workers with their own settings. So picklable rides *inside* Dask's pickles,
in small envelopes that any pickler carries:

* The function becomes a :class:`ShippedFunction`: its picklable payload plus a
  digest, which Dask pickles as a class reference and those bytes. The
  scheduler unpickles and pickles it again unchanged; a worker loads the
  payload once per digest (:func:`picklable.ship`'s cache) and calls.
* An argument that Dask's own pickling would not ship exactly travels as its
  picklable payload, opened on the worker just before the call. Arguments that
  stdlib pickle writes byte for byte as picklable does (numbers, strings, lists
  and dicts of them, numpy arrays, pandas frames of plain data) are left to
  Dask, which ships them well (and numpy buffers out of band); so are futures
  and Dask collections, which Dask must see to resolve them.
* A result that only picklable ships exactly is kept on the worker in a
  :class:`Result` box whose pickle reduction loads it with picklable: the
  client (``future.result()``, ``client.gather``, ``dask.compute``) receives the
  object itself. Plain results stay plain.
* An exception raised by the function is caught on the worker and raised again
  as a :class:`ShippedException` carrier whose pickle reduction *is* the
  original, shipped with picklable: ``future.exception()`` returns the original
  exception (its class, attributes, chain, notes and the worker's traceback with
  source lines), and ``future.result()`` raises it. Dask itself then attaches
  the worker's frames (file, function, line) that it ships separately.

Workers and the scheduler need picklable installed (the scheduler unpickles
task graphs, and with them these envelopes), and by-value code needs the same
Python minor version everywhere: a worker on another version refuses it with a
:class:`picklable.UnpicklingError` naming both interpreters.

See ``docs/dask.md``.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import pickle
import traceback
import types
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

import distributed
from dask.base import is_dask_collection
from dask.delayed import delayed as _dask_delayed
from dask.sizeof import sizeof as _sizeof

from ._api import dumps, loads
from ._envelope import _open_envelope

__all__ = ["Client", "Result", "ShippedException", "ShippedFunction", "delayed", "map", "submit"]

T = TypeVar("T")

# Identifies this process: a task whose client runs in the same process (Dask's
# local schedulers, an in-process LocalCluster) needs no envelope on the way back.
_ORIGIN = os.urandom(8)


def _new_origin() -> None:
    global _ORIGIN
    _ORIGIN = os.urandom(8)


if hasattr(os, "register_at_fork"):  # a forked worker is another process
    os.register_at_fork(after_in_child=_new_origin)

# Plain by type: stdlib pickle and picklable write the same bytes, Dask ships them.
_SCALARS = frozenset({type(None), bool, int, float, complex, str, bytes})
_CONTAINERS = frozenset({list, tuple, dict, set, frozenset})


# --------------------------------------------------------------- arguments


class _Arg:
    """An argument in its picklable payload, opened on the worker by the task.

    Pickled as itself (bytes and a flag), so the scheduler, which unpickles and
    re-pickles task graphs, passes it on untouched. Callables are loaded once per
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
            return _open_envelope(self.digest, self.payload)
        return loads(self.payload)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Arg, (self.payload, self.digest, self.shared))

    def __dask_tokenize__(self) -> tuple[str, bytes]:
        return ("picklable.dask._Arg", self.digest)

    def __repr__(self) -> str:
        return (
            f"<picklable.dask argument, {len(self.payload)} bytes, digest {self.digest.hex()[:12]}>"
        )


def _is_dask(value: Any) -> bool:
    """Futures and Dask collections: Dask resolves them, so it must see them."""
    return isinstance(value, distributed.Future) or is_dask_collection(value)


def _is_plain_array(value: Any) -> bool:
    """A numpy array without Python objects: Dask ships its buffer out of band."""
    t = type(value)
    return t.__name__ == "ndarray" and t.__module__ == "numpy" and not value.dtype.hasobject


def _same_as_pickle(value: Any, payload: bytes) -> bool:
    """Whether stdlib pickle writes exactly ``payload`` for ``value``.

    Then Dask's own pickling (pickle first) ships it exactly too, and it can be
    left to Dask. Anything picklable treats specially (by value, by a located
    name, a wrapper taken apart, an exception's state) makes the bytes differ.
    """
    try:
        return pickle.dumps(value, 5) == payload
    except Exception:
        return False


def _holds_dask(value: Any) -> bool:
    """Whether a container holds a future or a Dask collection at any depth."""
    stack = [value]
    pop, push = stack.pop, stack.extend
    seen: set[int] = set()  # a list may hold itself: pickle allows it
    while stack:
        item = pop()
        t = type(item)
        if t in _SCALARS:
            continue
        if t in _CONTAINERS:
            if id(item) not in seen:
                seen.add(id(item))
                push(item.values() if t is dict else item)
        elif _is_dask(item):
            return True
    return False


def _pack(value: Any) -> tuple[Any, bool]:
    """What to hand Dask for one argument, and whether the worker must look into containers."""
    t = type(value)
    if t in _SCALARS:
        return value, False
    if t in _CONTAINERS:
        if _holds_dask(value):
            # Dask replaces the futures inside; the rest is packed piece by piece.
            return _pack_parts(value), True
    elif _is_dask(value) or _is_plain_array(value):
        return value, False
    payload = dumps(value)
    if _same_as_pickle(value, payload):
        return value, False
    return _Arg(payload, hashlib.blake2b(payload, digest_size=16).digest(), callable(value)), False


def _pack_parts(value: Any) -> Any:
    t = type(value)
    if t is dict:
        return {k: _pack_parts(v) for k, v in value.items()}
    if t in _CONTAINERS:
        return t(_pack_parts(v) for v in value)
    return _pack(value)[0]


def _pack_all(
    args: Iterable[Any], kwargs: dict[str, Any]
) -> tuple[list[Any], dict[str, Any], bool]:
    deep = False
    packed_args = []
    for value in args:
        packed, inside = _pack(value)
        packed_args.append(packed)
        deep = deep or inside
    packed_kwargs = {}
    for name, value in kwargs.items():
        packed, inside = _pack(value)
        packed_kwargs[name] = packed
        deep = deep or inside
    return packed_args, packed_kwargs, deep


def _open(value: Any) -> Any:
    t = type(value)
    if t is _Arg:
        return value.open()
    if t is Result:
        return value.value
    return value


def _open_deep(value: Any) -> Any:
    t = type(value)
    if t is _Arg:
        return value.open()
    if t is Result:
        return value.value
    if t is dict:
        return {k: _open_deep(v) for k, v in value.items()}
    if t in _CONTAINERS:
        return t(_open_deep(v) for v in value)
    return value


# ----------------------------------------------------------------- results


class Result(Generic[T]):
    """A task's result that only picklable ships exactly, as a worker stores it.

    Its pickle reduction loads the value with picklable: a client receives the
    value itself (``future.result()``, ``client.gather``, ``dask.compute``), and
    a worker fetching it from another worker receives the box again. Tasks made
    by :mod:`picklable.dask` open boxes given to them as arguments; a plain Dask
    function given such a future on the same worker receives the box: use
    :attr:`value`, or make that task with :mod:`picklable.dask` too.

    Results that stdlib pickle writes exactly as picklable does (numbers,
    strings, containers of plain data, numpy arrays) are never boxed.

    Attributes
    ----------
    value:
        The result.
    payload:
        Its picklable payload.
    """

    __slots__ = ("value", "payload")

    def __init__(self, value: T, payload: bytes) -> None:
        self.value = value
        self.payload = payload

    def __reduce__(self) -> tuple[Any, ...]:
        return (_load_result, (self.payload,))

    def __getitem__(self, index: Any) -> Any:
        # Dask splits a delayed call with nout=N by indexing its result.
        value: Any = self.value
        return _ship_result(value[index])

    def __repr__(self) -> str:
        kind = _type_name(type(self.value))
        return f"<picklable.dask.Result of {kind}, {len(self.payload)} bytes>"


def _hosts_worker() -> bool:
    """Whether this process runs a live Dask worker (a closed one that is not yet
    garbage-collected still sits in ``Worker._instances``)."""
    for worker in list(getattr(distributed.Worker, "_instances", ())):
        status = getattr(getattr(worker, "status", None), "name", None)
        if status not in _WORKER_GONE:
            return True
    return False


_WORKER_GONE = frozenset({"stopping", "stopped", "closing", "closed", "failed"})


def _load_result(payload: bytes) -> Any:
    """Rebuilder named in result pickles: the value, or its box again on a worker."""
    value = loads(payload)
    if _hosts_worker():
        # A replica on another worker: it may be sent on (to the client) from there.
        return Result(value, payload)
    return value


def _ship_result(value: Any) -> Any:
    if type(value) in _SCALARS or _is_plain_array(value):
        return value
    payload = dumps(value)
    if _same_as_pickle(value, payload):
        return value
    return Result(value, payload)


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


def _type_name(t: type) -> str:
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _summary(exc: BaseException) -> str:
    try:
        message = str(exc)
    except Exception as why:
        message = f"<str() failed: {why!r}>"
    # Short: Dask rebuilds an exception whose str() passes its error length limit.
    if len(message) > 2000:
        message = message[:2000] + "..."
    return f"{_type_name(type(exc))}: {message}" if message else _type_name(type(exc))


def _carrier(exc: BaseException) -> ShippedException:
    """The carrier of ``exc``, with the worker's frames below the task's call."""
    tb = exc.__traceback__
    if tb is not None:
        tb = tb.tb_next  # our own frame: of no interest to the user
    _set_traceback(exc, tb)  # a frozen exception's __setattr__ refuses
    try:
        payload = dumps(exc)
        loads(payload)  # fails here, where it can still be reported, not in the client
    except BaseException as why:
        payload = dumps(_remote_error(exc, why))
    return ShippedException(_summary(exc), payload).with_traceback(tb)


def _remote_error(exc: BaseException, why: BaseException) -> BaseException:
    from ._pool._errors import RemoteError, RemoteTraceback

    try:
        text = "".join(traceback.format_exception(exc))
    except Exception as failure:
        text = f"{_type_name(type(exc))}: <traceback could not be formatted: {failure!r}>\n"
    error = RemoteError(
        _type_name(type(exc)),
        _summary(exc).partition(": ")[2],
        f"{_type_name(type(why))}: {why}",
        text,
    )
    error.__cause__ = RemoteTraceback(text)
    return error


def _in_worker_task() -> bool:
    try:
        distributed.get_worker()
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------- function


class ShippedFunction:
    """A function in its picklable payload, as Dask tasks carry it.

    Made by :func:`submit`, :func:`map` and :func:`delayed`. Called on a worker,
    it loads the function (once per worker process and payload digest), opens
    the arguments that travel with picklable, calls, and returns the result (in a
    :class:`Result` box when only picklable ships it) or raises a
    :class:`ShippedException` carrying the exception. Called in the process that
    made it (Dask's local schedulers), it returns and raises as the function does.

    Pickled as itself (the payload's bytes), so the scheduler, which unpickles
    and re-pickles task graphs, neither loads nor changes it. ``__name__`` is the
    function's, so task keys and the dashboard show the function's name.
    """

    __slots__ = ("payload", "digest", "name", "origin", "deep")

    def __init__(self, payload: bytes, digest: bytes, name: str, origin: bytes, deep: bool) -> None:
        self.payload = payload
        self.digest = digest
        self.name = name
        self.origin = origin
        self.deep = deep

    @classmethod
    def of(cls, fn: Callable[..., Any], *, deep: bool = False) -> ShippedFunction:
        """Ship ``fn`` now (its current state; later changes do not travel).

        Raises
        ------
        picklable.PicklingError
            If ``fn`` cannot be shipped; names the attribute path of the culprit.
        """
        payload = dumps(fn)
        digest = hashlib.blake2b(payload, digest_size=16).digest()
        return cls(payload, digest, _function_name(fn), _ORIGIN, deep)

    @property
    def __name__(self) -> str:
        return self.name

    @property
    def function(self) -> Any:
        """The function, loaded in this process (once per digest)."""
        return _open_envelope(self.digest, self.payload)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        home = self.origin == _ORIGIN
        try:
            # Loading errors (a module missing on the worker, code from another
            # Python version) travel back like the function's own errors.
            fn = _open_envelope(self.digest, self.payload)
            if self.deep:
                args = _open_deep(args)
                kwargs = _open_deep(kwargs)
            else:
                args = tuple([_open(a) for a in args]) if args else args
                if kwargs:
                    kwargs = {k: _open(v) for k, v in kwargs.items()}
            value = fn(*args, **kwargs)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            if home and not _in_worker_task():
                raise  # Dask's local schedulers re-raise it as it is
            failure = _carrier(exc)
        else:
            # In the client's own process the result is never pickled.
            return value if home else _ship_result(value)
        raise failure

    def __reduce__(self) -> tuple[Any, ...]:
        return (ShippedFunction, (self.payload, self.digest, self.name, self.origin, self.deep))

    def __dask_tokenize__(self) -> tuple[str, bytes, bool]:
        return ("picklable.dask.ShippedFunction", self.digest, self.deep)

    def __repr__(self) -> str:
        size, digest = len(self.payload), self.digest.hex()[:12]
        return f"<picklable.dask.ShippedFunction {self.name}, {size} bytes, digest {digest}>"


def _function_name(fn: Any) -> str:
    try:
        name = fn.__name__
    except AttributeError:
        name = type(fn).__name__
    if not isinstance(name, str):
        name = type(fn).__name__
    return "lambda" if name == "<lambda>" else name[:50]


def _check_function(fn: Any, what: str) -> None:
    if not callable(fn):
        raise TypeError(
            f"picklable.dask.{what}: the first argument must be callable, got {type(fn).__name__}"
        )
    target = fn.__func__ if isinstance(fn, types.MethodType) else fn
    if inspect.iscoroutinefunction(target):
        raise TypeError(
            f"picklable.dask.{what}: {_function_name(fn)} is a coroutine function; a picklable "
            "task runs in the worker's thread pool, not on its event loop. Fix: submit a "
            "synchronous function (asyncio.run(...) inside it if need be)."
        )


def _sizeof_arg(value: _Arg) -> int:
    return len(value.payload) + 64


def _sizeof_result(value: Result[Any]) -> int:
    return int(_sizeof(value.value)) + len(value.payload)


# Dask's memory accounting (and its choice to ship big map keywords once).
_register: Any = _sizeof.register
_register(_Arg)(_sizeof_arg)
_register(Result)(_sizeof_result)


# --------------------------------------------------------------------- API


def submit(
    client: distributed.Client,
    fn: Callable[..., T],
    *args: Any,
    key: str | None = None,
    workers: str | Iterable[str] | None = None,
    resources: dict[str, Any] | None = None,
    retries: int | None = None,
    priority: int = 0,
    allow_other_workers: bool = False,
    fifo_timeout: str = "100 ms",
    pure: bool = True,
    **kwargs: Any,
) -> distributed.Future[T]:
    """``client.submit(fn, *args, **kwargs)``, with everything through picklable.

    Takes the keywords of :meth:`distributed.Client.submit` (except ``actor``);
    other keywords go to ``fn``. The future is a plain :class:`distributed.Future`:
    ``result()``, ``exception()``, ``client.gather``, ``as_completed``, and passing
    it to other tasks work as usual.

    Parameters
    ----------
    client:
        The client to submit with.
    fn:
        Any callable picklable ships: a lambda, a closure, a ``__main__`` or
        decorated function, a wrapt-wrapped function, a method made by a factory.
    *args, **kwargs:
        Its arguments; futures and Dask collections among them are resolved by
        Dask as usual.
    key, workers, resources, retries, priority, allow_other_workers, fifo_timeout, pure:
        As for :meth:`distributed.Client.submit`.

    Returns
    -------
    distributed.Future
        Its result is the function's result, loaded with picklable where needed.
        A failed task's ``exception()`` is the exception the function raised,
        with its attributes and the worker's traceback.

    Raises
    ------
    picklable.PicklingError
        If ``fn`` or an argument cannot be shipped; names the attribute path.
    TypeError
        If ``fn`` is not callable or is a coroutine function.

    Examples
    --------
    >>> future = picklable.dask.submit(client, lambda x: x + 1, 41)
    >>> future.result()
    42
    """
    _check_function(fn, "submit")
    packed_args, packed_kwargs, deep = _pack_all(args, kwargs)
    return distributed.Client.submit(
        client,
        ShippedFunction.of(fn, deep=deep),
        *packed_args,
        key=key,
        workers=workers,
        resources=resources,
        retries=retries,
        priority=priority,
        allow_other_workers=allow_other_workers,
        fifo_timeout=fifo_timeout,
        pure=pure,
        **packed_kwargs,
    )


def map(
    client: distributed.Client,
    fn: Callable[..., T],
    *iterables: Iterable[Any],
    key: str | list[str] | None = None,
    workers: str | Iterable[str] | None = None,
    retries: int | None = None,
    resources: dict[str, Any] | None = None,
    priority: int = 0,
    allow_other_workers: bool = False,
    fifo_timeout: str = "100 ms",
    pure: bool = True,
    batch_size: int | None = None,
    **kwargs: Any,
) -> list[distributed.Future[T]]:
    """``client.map(fn, *iterables, **kwargs)`` through picklable.

    ``fn`` is shipped once for the whole map; each worker loads it once. Items
    that Dask ships exactly (numbers, strings, plain containers, arrays) are left
    to Dask; others travel with picklable, item by item.

    Parameters
    ----------
    client:
        The client to map with.
    fn:
        Any callable picklable ships.
    *iterables:
        Sequences of arguments, of equal length (materialized here).
    key, workers, retries, resources, priority, allow_other_workers, fifo_timeout, pure, batch_size:
        As for :meth:`distributed.Client.map`.
    **kwargs:
        Keyword arguments passed to every call.

    Returns
    -------
    list of distributed.Future
        One per item, as from :meth:`distributed.Client.map`.

    Raises
    ------
    picklable.PicklingError
        If ``fn`` or an argument cannot be shipped; names the attribute path.
    TypeError
        If ``fn`` is not callable or is a coroutine function.

    Examples
    --------
    >>> futures = picklable.dask.map(client, lambda x: x * x, range(1000))
    >>> sum(client.gather(futures))
    332833500
    """
    _check_function(fn, "map")
    deep = False
    packed_iterables = []
    for iterable in iterables:
        items = []
        for value in iterable:
            packed, inside = _pack(value)
            items.append(packed)
            deep = deep or inside
        packed_iterables.append(items)
    _, packed_kwargs, inside = _pack_all((), kwargs)
    return distributed.Client.map(
        client,
        ShippedFunction.of(fn, deep=deep or inside),
        *packed_iterables,
        key=key,
        workers=workers,
        retries=retries,
        resources=resources,
        priority=priority,
        allow_other_workers=allow_other_workers,
        fifo_timeout=fifo_timeout,
        pure=pure,
        batch_size=batch_size,
        **packed_kwargs,
    )


class Client(distributed.Client):
    """A :class:`distributed.Client` whose ``submit`` and ``map`` ship with picklable.

    Everything else is Dask's own: futures, ``gather``, ``compute``/``persist``
    (graphs you build with :func:`delayed` go through picklable, plain
    ``dask.delayed`` graphs through Dask's serialization), ``scatter``, ``run``.

    Examples
    --------
    >>> from picklable.dask import Client
    >>> client = Client("tcp://scheduler:8786")
    >>> client.submit(lambda x: x + 1, 41).result()
    42
    """

    def submit(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> distributed.Future[T]:
        """:func:`picklable.dask.submit` with this client (keywords of ``Client.submit``)."""
        if kwargs.get("actor") or kwargs.get("actors"):
            raise TypeError(
                "picklable.dask.Client.submit: actors are not shipped through picklable. "
                "Fix: use distributed.Client.submit(client, ..., actor=True) for actors."
            )
        kwargs.pop("actor", None)
        kwargs.pop("actors", None)
        return submit(self, func, *args, **kwargs)

    def map(
        self, func: Callable[..., T], *iterables: Any, **kwargs: Any
    ) -> list[distributed.Future[T]]:
        """:func:`picklable.dask.map` with this client (keywords of ``Client.map``)."""
        if kwargs.get("actor") or kwargs.get("actors"):
            raise TypeError(
                "picklable.dask.Client.map: actors are not shipped through picklable. "
                "Fix: use distributed.Client.map(client, ..., actor=True) for actors."
            )
        kwargs.pop("actor", None)
        kwargs.pop("actors", None)
        return map(self, func, *iterables, **kwargs)


class DelayedFunction(Generic[T]):
    """A function whose calls build ``dask.delayed`` tasks that go through picklable.

    Made by :func:`delayed`. Calling it returns a :class:`dask.delayed.Delayed`,
    as calling ``dask.delayed(fn)`` does; ``dask_key_name=`` and ``pure=`` are
    taken as Dask takes them.
    """

    def __init__(
        self, fn: Callable[..., T], *, pure: bool | None, nout: int | None, name: str | None
    ) -> None:
        self.__wrapped__ = fn
        self.pure = pure
        self.nout = nout
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        options = {k: kwargs.pop(k) for k in ("dask_key_name", "pure") if k in kwargs}
        packed_args, packed_kwargs, deep = _pack_all(args, kwargs)
        shipped = ShippedFunction.of(self.__wrapped__, deep=deep)
        task = _dask_delayed(shipped, pure=self.pure, nout=self.nout, name=self.name)
        return task(*packed_args, **packed_kwargs, **options)

    def __repr__(self) -> str:
        return f"<picklable.dask.delayed {_function_name(self.__wrapped__)}>"


def delayed(
    fn: Callable[..., T] | None = None,
    *,
    pure: bool | None = None,
    nout: int | None = None,
    name: str | None = None,
) -> Any:
    """``dask.delayed`` for functions, through picklable.

    Use it where you would use ``dask.delayed`` on a function, also as a
    decorator (``@delayed`` or ``@delayed(pure=True)``). The Delayed objects it
    makes mix with others, and compute with ``dask.compute`` on a distributed
    client or a local scheduler. A plain ``dask.delayed`` function that takes
    the result of one of these on the same worker receives it as is when it is
    plain data, and in a :class:`Result` box when only picklable ships it.

    Parameters
    ----------
    fn:
        Any callable picklable ships.
    pure, nout, name:
        As for :func:`dask.delayed`.

    Returns
    -------
    DelayedFunction
        Calling it returns a :class:`dask.delayed.Delayed`. (Without ``fn``: a
        decorator.)

    Raises
    ------
    TypeError
        If ``fn`` is not callable (wrap data with ``dask.delayed`` itself) or is
        a coroutine function.

    Examples
    --------
    >>> @picklable.dask.delayed
    ... def load(path): ...
    >>> total = dask.delayed(sum)([load(p) for p in paths])
    >>> total.compute()
    """
    if fn is None:
        return lambda f: delayed(f, pure=pure, nout=nout, name=name)
    _check_function(fn, "delayed")
    return DelayedFunction(fn, pure=pure, nout=nout, name=name)
