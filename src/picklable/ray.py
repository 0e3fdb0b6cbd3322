"""Ray with picklable: functions, actors, arguments, results and exceptions.

Ray pickles remote functions, arguments and results with its copy of
cloudpickle, in the driver *and in the workers* (results and exceptions are
made there), so a driver-side setting cannot reach them. ``picklable.ray``
rides inside Ray's own pickles instead, as :mod:`picklable.dask` does in Dask's:

* ``remote(fn)`` ships ``fn`` with picklable once and hands Ray a small task
  function holding that payload (Ray exports it once per job; each worker
  loads the payload once per digest). Its ``.remote(...)`` packs the
  arguments that Ray's cloudpickle would not ship exactly (a wrapt-wrapped
  function, a factory-made method, a ``__main__`` object) as picklable
  payloads, opened in the worker before the call; plain data, numpy arrays,
  object refs and actor handles are left to Ray.
* In the worker, a result that only picklable ships exactly is returned in a
  box whose pickle reduction loads it with picklable: ``ray.get(ref)``
  anywhere (the driver, another task given the ref) receives the object
  itself. Plain results stay plain. A tuple result is split by index, so
  ``num_returns=N`` works.
* An exception raised by the function is raised again in the worker as a
  carrier whose pickle reduction *is* the original, shipped with picklable;
  Ray wraps it as it always does, so ``ray.get`` raises
  ``RayTaskError(JobError)``: an instance of both ``ray.exceptions.RayTaskError``
  and the original class, whose attributes are the original's (``except
  JobError`` catches it; ``.cause`` is the original exception itself).
* ``remote(cls)`` makes an actor class the same way: the class and the
  constructor's arguments travel with picklable, and the methods of the
  handle (``handle.method.remote(...)``, ``.options(...)``) ship their
  arguments, results and exceptions like tasks.

Workers need picklable installed (it is imported to run the task function),
and by-value code needs the same Python minor version as the driver.

See ``docs/ray.md``.

.. versionadded:: 0.2.0
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

try:
    import ray
    import ray.actor
except ModuleNotFoundError as missing:
    if missing.name != "ray":
        raise  # Ray is installed but something it imports is not: its own error
    raise ModuleNotFoundError(
        f"picklable.ray needs Ray, which is not installed for this Python "
        f"({sys.version_info[0]}.{sys.version_info[1]}). Fix: pip install 'picklable[ray]'. "
        "Ray publishes wheels for some Python versions only (none for 3.15 as of Ray 2.60, "
        "see docs/ray.md); where pip finds none, picklable.dask and picklable's pools run "
        "the same functions.",
        name="ray",
    ) from None

from ._api import dumps, loads
from ._envelope import Envelope, digest_of, load_cached
from ._reduce.wrappers import WithState
from ._transit import (
    CONTAINERS,
    SCALARS,
    Packer,
    carrier,
    is_plain_array,
    open_all,
    same_as_pickle,
    type_name,
)

__all__ = ["ActorClass", "ActorHandle", "ActorMethod", "RemoteFunction", "put", "remote"]

T = TypeVar("T")


# ------------------------------------------------------------- what travels


class _Shipped:
    """A function or class in its picklable payload, inside Ray's task function.

    Pickled as its bytes (Ray's cloudpickle pickles it with the task function,
    once per job); a worker loads the payload once per digest.
    """

    __slots__ = ("payload", "digest")

    def __init__(self, payload: bytes, digest: bytes) -> None:
        self.payload = payload
        self.digest = digest

    @classmethod
    def of(cls, obj: Any) -> _Shipped:
        if type(obj) is Envelope:
            return cls(obj.payload, obj.digest)
        payload = dumps(obj)
        return cls(payload, digest_of(payload))

    def load(self) -> Any:
        return load_cached(self.digest, self.payload)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Shipped, (self.payload, self.digest))


def _is_ray(value: Any) -> bool:
    """Object refs and actor handles: Ray resolves and tracks them, so it must see them."""
    return isinstance(
        value, (ray.ObjectRef, ray.actor.ActorHandle, ActorHandle, ray.ObjectRefGenerator)
    )


_packer = Packer(_is_ray)
_pack_all = _packer.pack_all


class Result(Generic[T]):
    """A task's result that only picklable ships exactly, as a worker returns it to Ray.

    Its pickle reduction loads the value with picklable, so whoever calls
    ``ray.get`` on the ref (the driver, a task given the ref) receives the value
    itself, never the box. Indexing splits it (Ray splits a result by index for
    ``num_returns=N``), each part shipped on its own.

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
        return (loads, (self.payload,))

    def __len__(self) -> int:
        return len(self.value)  # type: ignore[arg-type]

    def __getitem__(self, index: Any) -> Any:
        value: Any = self.value
        return ship_result(value[index])

    def __repr__(self) -> str:
        kind = type_name(type(self.value))
        return f"<picklable.ray.Result of {kind}, {len(self.payload)} bytes>"


def ship_result(value: Any) -> Any:
    """``value`` as a task hands it to Ray: itself when Ray ships it exactly, else boxed."""
    t = type(value)
    if t in SCALARS or is_plain_array(value):
        return value
    if (t in CONTAINERS and _packer.holds_engine(value)) or _is_ray(value):
        return value  # Ray must see its refs to keep their objects alive
    payload = dumps(value)
    if same_as_pickle(value, payload):
        return value
    return Result(value, payload)


def put(value: Any, **options: Any) -> ray.ObjectRef[Any]:
    """``ray.put(value)``, with ``value`` shipped through picklable where needed.

    ``ray.get`` of the ref, in the driver or in a task given it, returns the
    object itself (a wrapt-wrapped function keeps its wrapper; a factory-made
    method is the receiver's own object).

    .. versionadded:: 0.2.0

    Parameters
    ----------
    value:
        Any object picklable ships.
    **options:
        Keywords of :func:`ray.put` (``_owner``).

    Returns
    -------
    ray.ObjectRef
    """
    return ray.put(ship_result(value), **options)


# ------------------------------------------------------------------ tasks


class _Loadable(Protocol):
    def load(self) -> Any: ...


def _run(shipped: _Loadable, args: tuple[Any, ...], kwargs: dict[str, Any], deep: bool) -> Any:
    """Body of every task: load the function, open the arguments, call, box the result."""
    try:
        fn = shipped.load()
        args, kwargs = open_all(args, kwargs, deep)
        value = fn(*args, **kwargs)
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as exc:
        failure = carrier(exc)
    else:
        return ship_result(value)
    raise failure from None


def _run_generator(
    shipped: _Loadable, args: tuple[Any, ...], kwargs: dict[str, Any], deep: bool
) -> Any:
    """Body of every generator task: each item boxed as it is yielded."""
    failure = None
    try:
        fn = shipped.load()
        args, kwargs = open_all(args, kwargs, deep)
        for item in fn(*args, **kwargs):
            yield ship_result(item)
    except (SystemExit, KeyboardInterrupt, GeneratorExit):
        raise
    except BaseException as exc:
        failure = carrier(exc)
    if failure is not None:
        raise failure from None


def _task_function(shipped: _Shipped, fn: Any, generator: bool) -> Callable[..., Any]:
    """The function Ray is given: named like ``fn``, holding its payload.

    Ray keys, names and exports a remote function by its module, qualname and
    pickled bytes; named like ``fn``, it shows as ``fn`` in Ray's dashboard and
    errors, and its bytes (this small function and the payload) are ``fn``'s.
    """
    if generator:

        def task(*args: Any, _picklable_deep: bool = False, **kwargs: Any) -> Any:
            yield from _run_generator(shipped, args, kwargs, _picklable_deep)

    else:

        def task(*args: Any, _picklable_deep: bool = False, **kwargs: Any) -> Any:
            return _run(shipped, args, kwargs, _picklable_deep)

    _name_like(task, fn)
    return task


def _name_like(target: Any, fn: Any) -> None:
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str):
        name = type(fn).__name__
    qualname = getattr(fn, "__qualname__", None)
    module = getattr(fn, "__module__", None)
    target.__name__ = name
    target.__qualname__ = qualname if isinstance(qualname, str) else name
    if isinstance(module, str):
        target.__module__ = module
    target.__doc__ = getattr(fn, "__doc__", None)


def _signature(fn: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):  # a callable without one: the worker will say
        return None


class RemoteFunction(Generic[T]):
    """A function made remote by :func:`remote`; ``.remote(...)`` runs it as a Ray task.

    Mirrors :class:`ray.remote_function.RemoteFunction`: ``.remote(*args,
    **kwargs)`` returns a :class:`ray.ObjectRef` (a list of them for
    ``num_returns=N``, an ``ObjectRefGenerator`` for a generator function), and
    ``.options(**options)`` takes Ray's task options. Arguments are checked
    against the function's signature here, as Ray does.
    """

    _shipped: _Shipped
    _signature: inspect.Signature | None
    _name: str
    _ray: Any

    def __init__(
        self,
        fn: Callable[..., T],
        options: dict[str, Any],
        *,
        _base: RemoteFunction[T] | None = None,
    ) -> None:
        if _base is not None:
            self._shipped = _base._shipped
            self._signature = _base._signature
            self._name = _base._name
            self._ray = _base._ray.options(**options)
            return
        target = _content(fn)
        generator = inspect.isgeneratorfunction(inspect.unwrap(target))
        self._shipped = _Shipped.of(fn)
        self._signature = _signature(target)
        self._name = getattr(target, "__name__", type(target).__name__)
        task = _task_function(self._shipped, target, generator)
        self._ray = ray.remote(**options)(task) if options else ray.remote(task)

    def remote(self, *args: Any, **kwargs: Any) -> Any:
        """Run the function as a Ray task; returns its object ref(s)."""
        if self._signature is not None:
            self._signature.bind(*args, **kwargs)  # a TypeError here, as Ray raises
        packed_args, packed_kwargs, deep = _pack_all(args, kwargs)
        if deep:
            packed_kwargs["_picklable_deep"] = True
        return self._ray.remote(*packed_args, **packed_kwargs)

    def options(self, **options: Any) -> RemoteFunction[T]:
        """The same function with Ray task options (``num_cpus``, ``num_returns``, ...)."""
        return RemoteFunction(None, options, _base=self)  # type: ignore[arg-type]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"Remote functions cannot be called directly. Instead of running "
            f"'{self._name}()', try '{self._name}.remote()'."
        )

    def __repr__(self) -> str:
        return f"<picklable.ray.RemoteFunction {self._name}>"


# ----------------------------------------------------------------- actors

# Attributes ray.method() sets on a method (num_returns, concurrency group,
# retries, ...): copied onto the method Ray is given.
_RAY_METHOD_PREFIX = "__ray_"


def _public_methods(cls: type) -> dict[str, Any]:
    """The methods a handle offers: what Ray would offer for ``cls`` (not dunders)."""
    methods = {}
    for name, member in inspect.getmembers(cls):
        if name.startswith("__") or not (inspect.isfunction(member) or inspect.ismethod(member)):
            continue
        methods[name] = member
    return methods


def _actor_method(name: str, member: Any) -> Any:
    """The method Ray's actor class gets for ``name``: runs the instance's own method."""
    target = inspect.unwrap(member)
    if inspect.isasyncgenfunction(target) or inspect.iscoroutinefunction(target):
        raise TypeError(
            f"picklable.ray.remote: {name} is an async method; picklable.ray actors run "
            "synchronous methods. Fix: make it synchronous (asyncio.run(...) inside), or "
            "use ray.remote for an async actor."
        )
    if inspect.isgeneratorfunction(target):

        def method(self: Any, *args: Any, _picklable_deep: bool = False, **kwargs: Any) -> Any:
            bound = _Bound(getattr(self._picklable_instance, name))
            yield from _run_generator(bound, args, kwargs, _picklable_deep)

    else:

        def method(self: Any, *args: Any, _picklable_deep: bool = False, **kwargs: Any) -> Any:
            return _run(
                _Bound(getattr(self._picklable_instance, name)), args, kwargs, _picklable_deep
            )

    method.__name__ = method.__qualname__ = name
    for attr, value in vars(member if not inspect.ismethod(member) else member.__func__).items():
        if attr.startswith(_RAY_METHOD_PREFIX):
            setattr(method, attr, value)
    return method


class _Bound:
    """An instance's bound method, in the shape ``_run`` loads a function from."""

    __slots__ = ("fn",)

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def load(self) -> Any:
        return self.fn


def _actor_init(shipped: _Shipped) -> Callable[..., None]:
    def __init__(self: Any, *args: Any, _picklable_deep: bool = False, **kwargs: Any) -> None:
        try:
            cls = shipped.load()
            args, kwargs = open_all(args, kwargs, _picklable_deep)
            self._picklable_instance = cls(*args, **kwargs)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            failure = carrier(exc)
        else:
            return
        raise failure from None

    return __init__


class ActorClass(Generic[T]):
    """A class made remote by :func:`remote`; ``.remote(...)`` starts an actor.

    Mirrors :class:`ray.actor.ActorClass`: ``.remote(*args, **kwargs)`` creates
    the actor (the class and the arguments travel with picklable) and returns
    an :class:`ActorHandle`; ``.options(**options)`` takes Ray's actor options
    (``name``, ``num_cpus``, ``max_restarts``, ...).
    """

    _methods: frozenset[str]
    _name: str
    _signature: inspect.Signature | None
    _ray: Any

    def __init__(
        self, cls: type[T], options: dict[str, Any], *, _base: ActorClass[T] | None = None
    ) -> None:
        if _base is not None:
            self._methods = _base._methods
            self._name = _base._name
            self._signature = _base._signature
            self._ray = _base._ray.options(**options)
            return
        shipped = _Shipped.of(cls)
        members = _public_methods(cls)
        namespace: dict[str, Any] = {
            name: _actor_method(name, member) for name, member in members.items()
        }
        namespace["__init__"] = _actor_init(shipped)
        namespace["__module__"] = cls.__module__
        namespace["__qualname__"] = cls.__qualname__
        namespace["__doc__"] = cls.__doc__
        actor_cls = type(cls.__name__, (), namespace)
        self._methods = frozenset(members)
        self._name = cls.__name__
        self._signature = _signature(cls)
        self._ray = ray.remote(**options)(actor_cls) if options else ray.remote(actor_cls)

    def remote(self, *args: Any, **kwargs: Any) -> ActorHandle[T]:
        """Start the actor; returns its handle."""
        if self._signature is not None:
            self._signature.bind(*args, **kwargs)
        packed_args, packed_kwargs, deep = _pack_all(args, kwargs)
        if deep:
            packed_kwargs["_picklable_deep"] = True
        return ActorHandle(
            self._ray.remote(*packed_args, **packed_kwargs), self._methods, self._name
        )

    def options(self, **options: Any) -> ActorClass[T]:
        """The same actor class with Ray actor options."""
        return ActorClass(None, options, _base=self)  # type: ignore[arg-type]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"Actors cannot be instantiated directly. Instead of '{self._name}()', "
            f"use '{self._name}.remote()'."
        )

    def __repr__(self) -> str:
        return f"<picklable.ray.ActorClass {self._name}>"


class ActorHandle(Generic[T]):
    """The handle of an actor started by :meth:`ActorClass.remote`.

    ``handle.method.remote(...)`` calls a method (arguments, result and
    exception through picklable); ``handle.method.options(...)`` takes Ray's
    method options. The handle can be passed to tasks and actors (Ray ships
    the Ray handle inside it). :attr:`ray_handle` is Ray's own handle, for
    Ray's functions that take one (``ray.kill(handle.ray_handle)``).
    """

    __slots__ = ("ray_handle", "_methods", "_name")

    def __init__(self, ray_handle: Any, methods: frozenset[str], name: str) -> None:
        self.ray_handle = ray_handle
        self._methods = methods
        self._name = name

    def __getattr__(self, name: str) -> ActorMethod:
        if name in self._methods:
            return ActorMethod(getattr(self.ray_handle, name))
        raise AttributeError(f"actor {self._name} has no method {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (ActorHandle, (self.ray_handle, self._methods, self._name))

    def __repr__(self) -> str:
        return f"<picklable.ray.ActorHandle {self._name} {self.ray_handle._actor_id.hex()}>"


class ActorMethod:
    """A method of an actor: ``.remote(...)`` calls it, ``.options(...)`` sets Ray's options."""

    __slots__ = ("_method",)

    def __init__(self, method: Any) -> None:
        self._method = method

    def remote(self, *args: Any, **kwargs: Any) -> Any:
        packed_args, packed_kwargs, deep = _pack_all(args, kwargs)
        if deep:
            packed_kwargs["_picklable_deep"] = True
        return self._method.remote(*packed_args, **packed_kwargs)

    def options(self, **options: Any) -> ActorMethod:
        return ActorMethod(self._method.options(**options))


# --------------------------------------------------------------------- API


def _content(fn: Any) -> Any:
    """The callable inside an envelope or a with_state marker (or ``fn`` itself)."""
    kind = type(fn)
    return fn.obj if kind is Envelope or kind is WithState else fn


def _make(target: Any, options: dict[str, Any]) -> Any:
    inner = _content(target)
    if inspect.isclass(inner):
        if inner is not target:
            raise TypeError(
                "picklable.ray.remote: give the class itself, not a ship() envelope or a "
                "with_state marker of it"
            )
        return ActorClass(inner, options)
    if not callable(inner):
        raise TypeError(
            "picklable.ray.remote must be applied to a function, a callable object or a "
            f"class, got {type(inner).__name__}"
        )
    unwrapped = inspect.unwrap(inner) if inspect.isfunction(inner) else inner
    if inspect.iscoroutinefunction(unwrapped) or inspect.isasyncgenfunction(unwrapped):
        raise TypeError(
            f"picklable.ray.remote: {getattr(inner, '__name__', inner)!s} is a coroutine "
            "function; picklable.ray tasks run synchronous functions. Fix: make it "
            "synchronous (asyncio.run(...) inside it)."
        )
    return RemoteFunction(target, options)


def remote(*args: Any, **options: Any) -> Any:
    """``ray.remote``, with functions, arguments, results and exceptions through picklable.

    Use it where you would use ``ray.remote``: as ``@remote``, as
    ``@remote(num_cpus=1, ...)`` with Ray's options, or as ``remote(fn)``.

    .. versionadded:: 0.2.0

    Parameters
    ----------
    *args:
        The function or class (without options).
    **options:
        Ray's task or actor options (``num_cpus``, ``num_returns``, ``resources``,
        ``max_retries``, ``name``, ...).

    Returns
    -------
    RemoteFunction or ActorClass
        For a function (any callable picklable ships: a lambda, a closure, a
        wrapt-wrapped or ``__main__`` function, a :func:`picklable.ship`
        envelope, a :func:`picklable.with_state` marker) or a class. Without a
        function: a decorator.

    Raises
    ------
    picklable.PicklingError
        If the function or class cannot be shipped; names the attribute path.
    TypeError
        For a coroutine function or an async actor method.

    Examples
    --------
    >>> @picklable.ray.remote
    ... def double(x):
    ...     return 2 * x
    >>> ray.get([double.remote(x) for x in (1, 2, 3)])
    [2, 4, 6]
    >>> counter = picklable.ray.remote(Counter).options(name="counter").remote(start=10)
    >>> ray.get(counter.incr.remote())
    11
    """
    if args:
        if len(args) != 1 or options:
            raise TypeError(
                "picklable.ray.remote takes a function or a class, or only keyword "
                "options: @remote, @remote(num_cpus=1), remote(fn)"
            )
        return _make(args[0], {})
    return functools.partial(_make, options=options)
