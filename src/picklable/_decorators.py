"""A decorator toolkit whose wrappers ship by construction.

Two ways to write a decorator:

* :func:`decorator` turns a function ``wrapper(wrapped, instance, args, kwargs)``
  (the wrapt convention) into a decorator;
* :class:`Wrapper` is a base class for class-based decorators: subclass it,
  override :meth:`Wrapper.call` and keep state on ``self``.

What they make keeps ``inspect.signature``, ``__wrapped__``, ``__name__``,
``__qualname__`` and ``__doc__``; binds like a method (instance methods,
classmethods, staticmethods, with the instance passed to the wrapper; under
``classmethod``, Python 3.13+ passes the class in the arguments instead); stacks
with itself, with ``classmethod``/``staticmethod`` and with other decorators in
any order; and ships by reference when importable (the module attribute holding
it *is* it, its ``__qualname__`` is the function's) and by value otherwise, with
no code from the user: the wrapper is an ordinary instance of an importable
class whose ``__dict__`` holds the pieces.
"""

from __future__ import annotations

from collections.abc import Callable
from types import FunctionType as _FunctionType
from types import MethodType as _MethodType
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from . import _locator, _reconstruct

if TYPE_CHECKING:
    from typing import Self

__all__ = ["BoundWrapper", "Decorator", "FunctionWrapper", "Wrapper", "decorator"]

_new_object = object.__new__

P = ParamSpec("P")
P2 = ParamSpec("P2")
R = TypeVar("R")
R2 = TypeVar("R2")
S = TypeVar("S")

WrapperFunction = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]

_ASSIGNED = ("__module__", "__name__", "__qualname__", "__doc__")


def _copy_metadata(wrapper: Any, wrapped: Any) -> None:
    """``functools.update_wrapper``, minus copying a class's namespace."""
    namespace = wrapper.__dict__
    for name in _ASSIGNED:
        try:
            namespace[name] = getattr(wrapped, name)
        except AttributeError:
            pass
    if isinstance(wrapped, type):
        return
    try:
        extra = wrapped.__dict__
    except AttributeError:
        return
    if type(extra) is dict:
        for key, value in extra.items():
            if key not in namespace:
                namespace[key] = value
    namespace["__wrapped__"] = wrapped


class Wrapper(Generic[P, R]):
    """Base class for class-based decorators that ship.

    Subclass it and override :meth:`call`; keep state as attributes of ``self``.
    ``Counted(func)`` then behaves as ``func`` does (signature, metadata, method
    binding) and calls ``call`` on every call.

    Parameters
    ----------
    wrapped:
        The function, method, classmethod, staticmethod, class or other
        callable to wrap.

    Examples
    --------
    >>> class Counted(picklable.Wrapper):
    ...     def __init__(self, wrapped):
    ...         super().__init__(wrapped)
    ...         self.calls = 0
    ...     def call(self, wrapped, instance, args, kwargs):
    ...         self.calls += 1
    ...         return wrapped(*args, **kwargs)
    """

    __wrapped__: Callable[P, R]

    def __init__(self, wrapped: Callable[P, R]) -> None:
        self.__dict__["__wrapped__"] = wrapped
        _copy_metadata(self, wrapped)

    def call(
        self,
        wrapped: Callable[..., R],
        instance: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> R:
        """Run one call; override in subclasses.

        Parameters
        ----------
        wrapped:
            What to call: the wrapped callable, already bound when the wrapper
            was reached through an instance or a class.
        instance:
            The instance (or the class, for a classmethod) the wrapper was bound
            to; None for functions and staticmethods, and under ``classmethod``
            from Python 3.13 on (the class is then the first of ``args``).
        args, kwargs:
            The call's arguments, without the instance.

        Returns
        -------
        The call's result.
        """
        return wrapped(*args, **kwargs)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.call(self.__wrapped__, None, args, kwargs)

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> Self: ...

    @overload
    def __get__(
        self: Wrapper[Concatenate[S, P2], R2], instance: S, owner: type | None = None
    ) -> BoundWrapper[P2, R2]: ...

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        wrapped = self.__wrapped__
        if instance is not None and self._self_replaced_in_class and type(wrapped) is _FunctionType:
            # A stateless wrapper set on a class after its creation: a real bound
            # method of the entry function (made once), as a plain function gives.
            # Stateful Wrapper subclasses bind as BoundWrapper, which shows their state.
            try:
                entry = self.__dict__["_self_entry"]
            except KeyError:
                entry = self._make_entry()
            return _MethodType(entry, instance)
        get = getattr(type(wrapped), "__get__", None)
        if get is None or isinstance(wrapped, type):
            return self  # classes and builtins do not bind
        bound: Any
        if type(wrapped) is _FunctionType:
            if instance is None:
                if owner is None:
                    return self
                # Reached through the class: the instance may come as the first argument.
                bound, bound_to = wrapped, None
            else:
                bound, bound_to = _MethodType(wrapped, instance), instance
        elif instance is None and owner is None:
            return self
        else:
            bound = get(wrapped, instance, owner)
            bound_to = getattr(bound, "__self__", None)
        # Built without an __init__ frame: this runs on every method call.
        result = _new_object(BoundWrapper)
        result._self_parent = self
        result.__self__ = bound_to
        result._self_owner = owner
        result.__wrapped__ = bound
        result._self_given = instance
        return result

    def _entry_target(self) -> WrapperFunction:
        """What a call reached through an instance runs: ``call`` (or the user's wrapper)."""
        return self.call

    def _make_entry(self) -> Callable[..., Any]:
        call = self._entry_target()
        wrapped = self.__wrapped__

        def entry(instance: Any, /, *args: Any, **kwargs: Any) -> Any:
            return call(_MethodType(wrapped, instance), instance, args, kwargs)

        for name in _ASSIGNED:
            try:
                setattr(entry, name, getattr(self, name))
            except AttributeError:
                pass
        entry.__wrapped__ = wrapped  # type: ignore[attr-defined]  # inspect.signature follows it
        self.__dict__["_self_entry"] = entry
        return entry

    def __getstate__(self) -> dict[str, Any]:
        # The entry function is remade on first use; it is not part of the state.
        state = dict(self.__dict__)
        state.pop("_self_entry", None)
        return state

    def __reduce_ex__(self, protocol: Any) -> Any:
        # For picklers other than picklable's (stdlib pickle, multiprocessing):
        # the module attribute holding an importable wrapper is the wrapper, so
        # it goes by name; otherwise as an instance with its pieces in __dict__.
        if _locator.importable_by_own_name(self):
            return self.__dict__["__qualname__"]
        return object.__reduce_ex__(self, protocol)

    # Whether a wrapper of a plain function, set in a class body, puts its entry
    # function in the class instead of itself (see __set_name__).
    _self_replaced_in_class = False

    def __set_name__(self, owner: type, name: str) -> None:
        # Wrapped descriptors (cached_property, other wrappers) may need their name.
        set_name = getattr(type(self.__wrapped__), "__set_name__", None)
        if set_name is not None:
            set_name(self.__wrapped__, owner, name)
        if (
            self._self_replaced_in_class
            and type(self.__wrapped__) is _FunctionType
            and owner.__dict__.get(name) is self
        ):
            # A stateless wrapper of a method: the class holds a real function
            # (the entry), so binding runs in C and the instance reaches the
            # wrapper whether the method is called on an instance or on the class.
            entry = self.__dict__.get("_self_entry") or self._make_entry()
            setattr(owner, name, entry)

    def __repr__(self) -> str:
        return f"<{type(self).__qualname__} wrapping {self.__wrapped__!r}>"


class BoundWrapper(Generic[P, R]):
    """A :class:`Wrapper` bound to an instance or a class (made by ``__get__``).

    Ships as its parent bound again to the same instance and owner.
    """

    __slots__ = ("_self_parent", "__self__", "_self_owner", "__wrapped__", "_self_given")

    def __init__(
        self,
        parent: Wrapper[Any, R],
        instance: Any,
        owner: type | None,
        wrapped: Callable[P, R],
        given: Any,
    ) -> None:
        self._self_parent = parent
        self.__self__ = instance
        self._self_owner = owner
        self.__wrapped__ = wrapped
        self._self_given = given  # what __get__ was given: binding it again rebuilds this

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        instance = self.__self__
        wrapped: Callable[..., R] = self.__wrapped__
        if (
            instance is None
            and args
            and self._self_owner is not None
            and isinstance(args[0], self._self_owner)
        ):
            # C.method(obj, ...): bind to obj, as obj.method(...) would.
            instance, args = args[0], args[1:]  # type: ignore[assignment]
            wrapped = wrapped.__get__(instance, self._self_owner)
        return self._self_parent.call(wrapped, instance, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        # Metadata and state (__name__, __doc__, counters...) are the parent's.
        return getattr(self._self_parent, name)

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is BoundWrapper
            and other._self_parent is self._self_parent
            and other.__self__ is self.__self__
        )

    def __hash__(self) -> int:
        return hash((id(self._self_parent), id(self.__self__)))

    def __repr__(self) -> str:
        return f"<bound {self._self_parent!r} of {self.__self__!r}>"

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _reconstruct._bind_descriptor,
            (self._self_parent, self._self_given, self._self_owner),
        )


class FunctionWrapper(Wrapper[P, R]):
    """What a :func:`decorator` makes: ``wrapper(wrapped, instance, args, kwargs)`` per call."""

    # Slots for the two attributes every call reads (faster than the __dict__,
    # which holds the metadata); __wrapped__ stays in the __dict__ for introspection.
    __slots__ = ("_self_wrapper", "_self_wrapped")

    _self_wrapper: WrapperFunction
    _self_wrapped: Callable[P, R]

    def __init__(self, wrapped: Callable[P, R], wrapper: WrapperFunction) -> None:
        super().__init__(wrapped)
        self._self_wrapper = wrapper
        self._self_wrapped = wrapped

    def __getstate__(self) -> Any:
        return (
            super().__getstate__(),
            {"_self_wrapper": self._self_wrapper, "_self_wrapped": self._self_wrapped},
        )

    _self_replaced_in_class = True

    def _entry_target(self) -> WrapperFunction:
        return self._self_wrapper

    def call(
        self,
        wrapped: Callable[..., R],
        instance: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> R:
        result: R = self._self_wrapper(wrapped, instance, args, kwargs)
        return result

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        # The hot path: one frame between the caller and the user's wrapper.
        result: R = self._self_wrapper(self._self_wrapped, None, args, kwargs)
        return result


class Decorator:
    """A decorator made by :func:`decorator`; applying it makes a :class:`FunctionWrapper`."""

    __wrapped__: WrapperFunction

    def __init__(self, wrapper: WrapperFunction) -> None:
        self.__dict__["__wrapped__"] = wrapper
        _copy_metadata(self, wrapper)

    def __call__(self, wrapped: Callable[P, R]) -> FunctionWrapper[P, R]:
        return FunctionWrapper(wrapped, self.__wrapped__)

    def __get__(self, instance: Any, owner: type | None = None) -> Decorator:
        # A decorator written as a method binds to its instance or class.
        wrapper = self.__wrapped__
        get = getattr(type(wrapper), "__get__", None)
        if (instance is None and not isinstance(wrapper, classmethod)) or get is None:
            return self
        return Decorator(get(wrapper, instance, owner))

    def __repr__(self) -> str:
        return f"<picklable.decorator {getattr(self, '__qualname__', self.__wrapped__)!r}>"

    __reduce_ex__ = Wrapper.__reduce_ex__


def decorator(wrapper: WrapperFunction) -> Decorator:
    """Make a decorator from ``wrapper(wrapped, instance, args, kwargs)``.

    The decorated object keeps its signature and metadata, binds like a method
    (``instance`` is the object, or the class for a classmethod, or None), and
    ships with picklable (and stdlib pickle, where importable) without more code.
    Apply it over ``classmethod``: under it, from Python 3.13 on, ``classmethod``
    calls the product as a plain function (``instance`` None, the class first in
    ``args``), as it does wrapt's.

    Parameters
    ----------
    wrapper:
        Called on every call with the wrapped callable (already bound to the
        instance for methods), the instance, the positional arguments as a tuple
        and the keyword arguments as a dict. Its result is the call's result.

    Returns
    -------
    Decorator
        Apply it to functions, methods, classmethods, staticmethods or classes.

    Examples
    --------
    >>> @picklable.decorator
    ... def logged(wrapped, instance, args, kwargs):
    ...     print("calling", wrapped.__name__)
    ...     return wrapped(*args, **kwargs)
    >>> @logged
    ... def add(x: int, y: int) -> int:
    ...     return x + y
    """
    given: object = wrapper  # checked at run time: callers need not type-check
    if not callable(given) and not isinstance(given, (classmethod, staticmethod)):
        raise TypeError(
            f"picklable.decorator needs a callable wrapper, got {type(wrapper).__qualname__}"
        )
    return Decorator(wrapper)
