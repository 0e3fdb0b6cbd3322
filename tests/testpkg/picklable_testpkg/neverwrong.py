"""Objects 0.1.0 shipped wrong, or where stdlib pickle did better (issue 16).

State the program sets on module-level objects, per-instance method
overrides, proxies that stand for something else, dispatchers, and a
configuration object whose ``__getattr__`` recurses while it is rebuilt.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from multipledispatch import dispatch

# -------------------------------------------------- state set by the sender


class Model:
    """A callable object (a model) whose weights the program sets."""

    def __init__(self) -> None:
        self.weights = [0.0]

    def __call__(self, x: float) -> float:
        return x * self.weights[0]


MODEL = Model()


def use(model: Any, x: float) -> float:
    return model(x)


class configurable:
    """A class-based decorator with configuration the program may change."""

    def __init__(self, func: Any) -> None:
        functools.update_wrapper(self, func)
        self.config = 3

    def __call__(self, *args: Any) -> Any:
        return self.__wrapped__(*args) * self.config


@configurable
def scaled_task(x: int) -> int:
    return x


class limited:
    """A class-based decorator holding a lock (process-local) and a counter."""

    def __init__(self, func: Any) -> None:
        functools.update_wrapper(self, func)
        self.lock = threading.Lock()
        self.calls = 0

    def __call__(self, *args: Any) -> Any:
        with self.lock:
            self.calls += 1
        return self.__wrapped__(*args)


@limited
def limited_task(x: int) -> int:
    return x + 1


def no_wraps_config(func: Any) -> Any:
    """A decorator without functools.wraps; the program sets .config on its product."""

    def wrapper(*args: Any) -> Any:
        return func(*args) * wrapper.config  # type: ignore[attr-defined]

    wrapper.config = 1  # type: ignore[attr-defined]
    return wrapper


@no_wraps_config
def closure_task(x: int) -> int:
    return x


# ------------------------------------------------ per-instance overrides


class Handler:
    def handler(self) -> str:
        return "class"


def handler(self: Any) -> str:
    return "instance"


# -------------------------------------------------------------- proxies


class LazyProxy:
    """A lazy proxy as libraries write them: it claims its target's class and
    pickles as its target (so pickle ships the target, another object)."""

    def __init__(self, factory: Any) -> None:
        object.__setattr__(self, "_factory", factory)

    @property
    def __wrapped__(self) -> Any:
        return object.__getattribute__(self, "_factory")()

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return type(self.__wrapped__)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__wrapped__, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__wrapped__(*args, **kwargs)

    def __reduce__(self) -> Any:
        return (_identity, (self.__wrapped__,))


def _identity(obj: Any) -> Any:
    return obj


def double(x: int) -> int:
    return 2 * x


lazy_double = LazyProxy(lambda: double)


@dispatch(int)
def describe(x: int) -> str:
    """Describe a number."""
    return "int"


@dispatch(str)  # type: ignore[no-redef]
def describe(x: str) -> str:  # noqa: F811 - multipledispatch registers by redefinition
    return "str"


# ------------------------------------ a __getattr__ that recurses on rebuild


class Settings:
    """Configuration read as attributes; ``__getattr__`` reads its own fields,
    so looking anything up on an empty instance recurses (pickle's BUILD does)."""

    def __init__(self, **values: Any) -> None:
        self._values = values

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Settings) and self._values == other._values

    __hash__ = None  # type: ignore[assignment]


class SlottedSettings:
    """Settings kept in a slot (pydantic's ``ConfigWrapper`` is made so): the
    same recursion, and no ``__dict__`` to set."""

    __slots__ = ("config",)

    def __init__(self, **values: Any) -> None:
        self.config = values

    def __getattr__(self, name: str) -> Any:
        try:
            return self.config[name]
        except KeyError:
            raise AttributeError(name) from None


def validated(settings: Settings) -> Any:
    """A validation decorator that keeps its settings object in its closure."""

    def decorate(func: Any) -> Any:
        @functools.wraps(func)
        def wrapper(x: Any) -> Any:
            if x > settings.limit:
                raise ValueError(f"{x} is over {settings.limit}")
            return func(x)

        return wrapper

    return decorate
