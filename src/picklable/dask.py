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
Python minor version everywhere. Before its first task on a client (and again
for workers that joined since, at most every few seconds) :func:`submit`,
:func:`map` and :class:`Client` ask every worker and the scheduler which
picklable and Python they run, and raise :class:`IncompatibleWorkersError`
naming each one that differs: a worker that cannot import picklable would
otherwise die on the task and leave the client waiting.

See ``docs/dask.md``.
"""

from __future__ import annotations

import inspect
import os
import pkgutil
import sys
import threading
import time
import types
import weakref
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

try:
    import distributed
    from dask.base import is_dask_collection
    from dask.delayed import delayed as _dask_delayed
    from dask.sizeof import sizeof as _sizeof
except ModuleNotFoundError as missing:
    if missing.name not in ("dask", "distributed"):
        raise  # Dask is installed but something it imports is not: its own error
    raise ModuleNotFoundError(
        "picklable.dask needs Dask's distributed scheduler, which is not installed for "
        f"this Python ({sys.version_info[0]}.{sys.version_info[1]}). "
        "Fix: pip install 'picklable[dask]'.",
        name=missing.name,
    ) from None

from . import __version__
from ._api import dumps, loads
from ._envelope import Envelope, digest_of, load_cached
from ._reduce.wrappers import WithState
from ._transit import (
    BOXES,
    SCALARS,
    Arg,
    Packer,
    ShippedException,
    carrier,
    is_plain_array,
    open_all,
    same_as_pickle,
    type_name,
)

__all__ = [
    "Client",
    "IncompatibleWorkersError",
    "Result",
    "ShippedException",
    "ShippedFunction",
    "check_workers",
    "delayed",
    "map",
    "submit",
]

T = TypeVar("T")

# Identifies this process: a task whose client runs in the same process (Dask's
# local schedulers, an in-process LocalCluster) needs no envelope on the way back.
_ORIGIN = os.urandom(8)
_default_client: Callable[[], distributed.Client] = distributed.default_client


def _new_origin() -> None:
    global _ORIGIN
    _ORIGIN = os.urandom(8)


if hasattr(os, "register_at_fork"):  # a forked worker is another process
    os.register_at_fork(after_in_child=_new_origin)

# --------------------------------------------------------------- arguments

_Arg = Arg  # the name the tests and older notes use


def _is_dask(value: Any) -> bool:
    """Futures and Dask collections: Dask resolves them, so it must see them."""
    return isinstance(value, distributed.Future) or is_dask_collection(value)


_packer = Packer(_is_dask)
_pack = _packer.pack
_pack_all = _packer.pack_all


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
        kind = type_name(type(self.value))
        return f"<picklable.dask.Result of {kind}, {len(self.payload)} bytes>"


BOXES.add(Result)


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
    if type(value) in SCALARS or is_plain_array(value):
        return value
    payload = dumps(value)
    if same_as_pickle(value, payload):
        return value
    return Result(value, payload)


# -------------------------------------------------------------- exceptions


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

        ``fn`` may be a :func:`picklable.ship` envelope (its payload is used as
        it is), a :func:`picklable.with_state` marker, or a ``ShippedFunction``.

        Raises
        ------
        picklable.PicklingError
            If ``fn`` cannot be shipped; names the attribute path of the culprit.
        """
        kind = type(fn)
        if kind is ShippedFunction:
            shipped: ShippedFunction = fn  # type: ignore[assignment]
            if shipped.deep == deep:
                return shipped
            return cls(shipped.payload, shipped.digest, shipped.name, _ORIGIN, deep)
        if kind is Envelope:
            envelope: Envelope[Any] = fn  # type: ignore[assignment]
            return cls(envelope.payload, envelope.digest, _function_name(fn), _ORIGIN, deep)
        payload = dumps(fn)
        return cls(payload, digest_of(payload), _function_name(fn), _ORIGIN, deep)

    @property
    def __name__(self) -> str:
        return self.name

    @property
    def function(self) -> Any:
        """The function, loaded in this process (once per digest)."""
        return load_cached(self.digest, self.payload)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        home = self.origin == _ORIGIN
        try:
            # Loading errors (a module missing on the worker, code from another
            # Python version) travel back like the function's own errors.
            fn = load_cached(self.digest, self.payload)
            args, kwargs = open_all(args, kwargs, self.deep)
            value = fn(*args, **kwargs)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            if home and not _in_worker_task():
                raise  # Dask's local schedulers re-raise it as it is
            failure = carrier(exc)
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
    if type(fn) is WithState:
        fn = fn.obj
    try:
        name = fn.__name__
    except AttributeError:
        name = type(fn).__name__
    if not isinstance(name, str):
        name = type(fn).__name__
    return "lambda" if name == "<lambda>" else name[:50]


def _refuse_actors(kwargs: dict[str, Any], what: str) -> None:
    """Refuse ``actor=True`` (and ``actors=``) up front, and drop a false one.

    A Dask actor is made on the worker from the class the client submitted,
    and the client's ``Actor`` handle reads the methods of that very class:
    the envelope picklable ships (a :class:`ShippedFunction`) is no such
    class, so the handle failed only later, on its first method call
    (``type object 'Result' has no attribute 'add'``; issue 27).
    """
    if kwargs.get("actor") or kwargs.get("actors"):
        raise TypeError(
            f"picklable.dask.{what}: Dask actors are not shipped through picklable: Dask "
            "makes an actor from the class itself and its handle reads that class's "
            f"methods. Fix: use distributed.Client.{what}(client, cls, ..., actor=True) "
            "for actors (Dask ships the class itself), and picklable.dask for tasks."
        )
    kwargs.pop("actor", None)
    kwargs.pop("actors", None)


def _check_function(fn: Any, what: str) -> None:
    target = fn.obj if type(fn) is WithState else fn
    if not callable(target):
        raise TypeError(
            f"picklable.dask.{what}: the first argument must be callable, got {type(fn).__name__}"
        )
    if type(target) is Envelope or type(target) is ShippedFunction:
        return  # their content was checked when they were made
    target = target.__func__ if isinstance(target, types.MethodType) else target
    if inspect.iscoroutinefunction(target):
        raise TypeError(
            f"picklable.dask.{what}: {_function_name(fn)} is a coroutine function; a picklable "
            "task runs in the worker's thread pool, not on its event loop. Fix: submit a "
            "synchronous function (asyncio.run(...) inside it if need be)."
        )


def _sizeof_arg(value: Arg) -> int:
    return len(value.payload) + 64


def _sizeof_result(value: Result[Any]) -> int:
    return int(_sizeof(value.value)) + len(value.payload)


# Dask's memory accounting (and its choice to ship big map keywords once).
_register: Any = _sizeof.register
_register(Arg)(_sizeof_arg)
_register(Result)(_sizeof_result)


# ------------------------------------------------------------ environment

# What a process reports about itself: picklable's version and the interpreter
# that by-value code needs. Workers answer by importing this module (through
# pkgutil.resolve_name, which any worker can unpickle: a worker without
# picklable answers ModuleNotFoundError instead of dying on a task).
ENVIRONMENT = (
    f"picklable {__version__}, {sys.implementation.name} "
    f"{sys.version_info[0]}.{sys.version_info[1]}"
)
_PROBE = "picklable.dask:ENVIRONMENT"
# Workers that joined after a client's last check are asked at its next
# submit or map, at most this often (a check costs a scheduler round trip).
RECHECK_SECONDS = 5.0


class IncompatibleWorkersError(RuntimeError):
    """Workers (or the scheduler) that cannot run :mod:`picklable.dask` tasks.

    Raised by :func:`submit`, :func:`map` and :class:`Client` before any task is
    sent: a worker without picklable, or with another picklable version or
    another Python minor version than the client.

    .. versionadded:: 0.2.0

    Attributes
    ----------
    workers:
        Address -> what was found there, for each process that differs (the
        scheduler under ``"scheduler"``).
    """

    def __init__(self, message: str, workers: dict[str, str]) -> None:
        super().__init__(message)
        self.workers = workers

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.args[0], self.workers))


class _Checked:
    __slots__ = ("workers", "at", "lock")

    def __init__(self) -> None:
        self.workers: set[str] = set()
        self.at = float("-inf")
        self.lock = threading.Lock()


_checked: weakref.WeakKeyDictionary[distributed.Client, _Checked] = weakref.WeakKeyDictionary()


def _found(reply: Any) -> str | None:
    """What a probe reply says, or None when it is this client's environment."""
    if isinstance(reply, BaseException):
        if isinstance(reply, ImportError):
            return f"cannot import picklable.dask ({type(reply).__name__}: {reply})"
        return f"the check failed ({type(reply).__name__}: {reply})"
    if reply == ENVIRONMENT:
        return None
    return f"runs {reply}" if isinstance(reply, str) else f"answered {reply!r}"


def check_workers(client: distributed.Client, *, force: bool = False) -> None:
    """Check that the scheduler and every worker can run picklable tasks.

    Each process is asked once per client which picklable and Python it runs
    (``pkgutil.resolve_name("picklable.dask:ENVIRONMENT")``, which needs no
    picklable to be sent); workers that join later are asked on a later call, at
    most every :data:`RECHECK_SECONDS`. :func:`submit`, :func:`map` and
    :class:`Client` call it; call it yourself before handing
    :meth:`ShippedFunction.of` functions to other Dask APIs. Asynchronous
    clients are not checked.

    .. versionadded:: 0.2.0

    Parameters
    ----------
    client:
        A connected synchronous client.
    force:
        Ask every worker again, now.

    Raises
    ------
    IncompatibleWorkersError
        Naming each worker (address and name) without picklable, or with another
        picklable version or Python minor version, and how to fix it.
    """
    if client.asynchronous or getattr(client, "status", None) != "running":
        return
    state = _checked.setdefault(client, _Checked())
    now = time.monotonic()
    # Until workers are seen, every call asks (a cluster may still be starting).
    if not force and state.workers and now - state.at < RECHECK_SECONDS:
        return
    with state.lock:
        if not force and state.workers and now - state.at < RECHECK_SECONDS:
            return
        bad: dict[str, str] = {}
        first = state.at == float("-inf")
        if first or force:
            try:
                untyped: Any = client  # run_on_scheduler has no annotations
                reply: Any = untyped.run_on_scheduler(pkgutil.resolve_name, _PROBE)
            except Exception as exc:
                reply = exc
            problem = _found(reply)
            if problem is not None:
                bad["scheduler"] = problem
        info = client.scheduler_info(n_workers=-1)["workers"]
        new = [address for address in info if force or address not in state.workers]
        if new:
            replies = client.run(pkgutil.resolve_name, _PROBE, workers=new, on_error="return")
            for address in new:
                problem = _found(replies.get(address, "no answer"))
                if problem is not None:
                    name = info[address].get("name", address)
                    label = address if str(name) == address else f"{address} (name {name!r})"
                    bad[label] = problem
                else:
                    state.workers.add(address)
        state.at = time.monotonic()
    if bad:
        lines = "\n".join(f"  {where}: {problem}" for where, problem in bad.items())
        count = len([k for k in bad if k != "scheduler"])
        raise IncompatibleWorkersError(
            f"picklable.dask: {count} of {len(info)} workers"
            f"{' and the scheduler' if 'scheduler' in bad else ''} cannot run picklable "
            f"tasks (this client: {ENVIRONMENT}):\n{lines}\n"
            f"Fix: install picklable {__version__} (pip install 'picklable[dask]=={__version__}') "
            "with the same Python minor version in the environment that runs `dask worker` "
            "and `dask scheduler`, and restart them; no task was sent.",
            bad,
        )


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

    Takes the keywords of :meth:`distributed.Client.submit` (``actor=True`` is
    refused: use Dask's own for actors);
    other keywords go to ``fn``. The future is a plain :class:`distributed.Future`:
    ``result()``, ``exception()``, ``client.gather``, ``as_completed``, and passing
    it to other tasks work as usual.

    Parameters
    ----------
    client:
        The client to submit with.
    fn:
        Any callable picklable ships: a lambda, a closure, a ``__main__`` or
        decorated function, a wrapt-wrapped function, a method made by a factory;
        also a :func:`picklable.with_state` marker, a :func:`picklable.ship`
        envelope or a :class:`ShippedFunction`.
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
    IncompatibleWorkersError
        If a worker or the scheduler cannot run picklable tasks
        (:func:`check_workers`); nothing is submitted.

    Examples
    --------
    >>> future = picklable.dask.submit(client, lambda x: x + 1, 41)
    >>> future.result()
    42
    """
    _refuse_actors(kwargs, "submit")
    _check_function(fn, "submit")
    check_workers(client)
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
        Any callable picklable ships (also a :func:`picklable.with_state`
        marker or a :func:`picklable.ship` envelope).
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
    IncompatibleWorkersError
        If a worker or the scheduler cannot run picklable tasks
        (:func:`check_workers`); nothing is submitted.

    Examples
    --------
    >>> futures = picklable.dask.map(client, lambda x: x * x, range(1000))
    >>> sum(client.gather(futures))
    332833500
    """
    _refuse_actors(kwargs, "map")
    _check_function(fn, "map")
    check_workers(client)
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

    Connecting checks the scheduler and the workers already there
    (:func:`check_workers`), and closes the client again if one cannot run
    picklable tasks.

    .. versionchanged:: 0.2.0
       Checks the workers' picklable and Python when it connects.

    Raises
    ------
    IncompatibleWorkersError
        When a worker or the scheduler lacks picklable or runs another picklable
        or Python minor version.

    Examples
    --------
    >>> from picklable.dask import Client
    >>> client = Client("tcp://scheduler:8786")
    >>> client.submit(lambda x: x + 1, 41).result()
    42
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        base: Any = super()  # Client.__init__ and close have no annotations
        base.__init__(*args, **kwargs)
        if not self.asynchronous:
            try:
                check_workers(self)
            except IncompatibleWorkersError:
                base.close()
                raise

    def submit(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> distributed.Future[T]:
        """:func:`picklable.dask.submit` with this client (keywords of ``Client.submit``)."""
        _refuse_actors(kwargs, "submit")
        return submit(self, func, *args, **kwargs)

    def map(
        self, func: Callable[..., T], *iterables: Any, **kwargs: Any
    ) -> list[distributed.Future[T]]:
        """:func:`picklable.dask.map` with this client (keywords of ``Client.map``)."""
        _refuse_actors(kwargs, "map")
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
        try:
            client = _default_client()
        except ValueError:  # no client: a local scheduler will run it
            pass
        else:
            check_workers(client)
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
