"""Module-level objects of every kind of the kinds table, each with state a
sender may change (issue 27).

``tests/xproc/test_receiver_untouched.py`` changes their state in the sending
process, ships each, and checks in a fresh interpreter that loading left this
module's objects exactly as that interpreter's import made them.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import io
import sys
import types
import typing
import weakref
from typing import Any

import wrapt


def plain(x: Any) -> Any:
    return x


plain.label = "import"  # type: ignore[attr-defined]


def make_closure(n: int) -> Any:
    def add(x: int) -> int:
        return x + n

    return add


CLOSURE = make_closure(1)
CLOSURE.label = "import"  # type: ignore[attr-defined]
CODE = plain.__code__
CELL = CLOSURE.__closure__[0]  # type: ignore[index]
MODULE = functools


class Point:
    """A plain instance's class; its class attribute may change in the sender."""

    default = "import"

    def __init__(self) -> None:
        self.x = 1
        self.tags = ["a"]

    def method(self) -> int:
        return self.x


POINT = Point()
BOUND = POINT.method


class Scorer:
    """A callable instance with attributes (a model, a configured transform)."""

    def __init__(self) -> None:
        self.weight = 1
        self.history = [0]

    def __call__(self, x: Any) -> Any:
        return x * self.weight


SCORER = Scorer()


class Counted:
    """A class-based decorator with a counter and a configuration."""

    def __init__(self, func: Any) -> None:
        functools.update_wrapper(self, func)
        self.calls = 0
        self.config = {"scale": 1}

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        return self.__wrapped__(*args) * self.config["scale"]


@Counted
def counted(x: int) -> int:
    return x


def no_wraps(func: Any) -> Any:
    def wrapper(*args: Any) -> Any:
        return func(*args) * wrapper.factor  # type: ignore[attr-defined]

    wrapper.factor = 1  # type: ignore[attr-defined]
    return wrapper


@no_wraps
def closure_wrapped(x: int) -> int:
    return x


@wrapt.decorator
def tagged(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    return ("tagged", wrapped(*args, **kwargs))


@tagged
def wrapt_wrapped(x: int) -> int:
    return x


WRAPT_PROXY = wrapt.ObjectProxy(Point())


@functools.lru_cache(maxsize=8)
def cached(x: int) -> int:
    return x


CLASSMETHOD = classmethod(plain)
STATICMETHOD = staticmethod(plain)
PROPERTY = property(plain)


class OwnProperty(property):
    pass


OWN_PROPERTY = OwnProperty(plain)


class OwnClassmethod(classmethod):  # type: ignore[type-arg]
    pass


OWN_CLASSMETHOD = OwnClassmethod(plain)


class WithCached:
    @functools.cached_property
    def value(self) -> int:
        return 1


CACHED_PROPERTY = vars(WithCached)["value"]
PARTIAL = functools.partial(plain)
PARTIAL.note = "import"  # type: ignore[attr-defined]
PARTIALMETHOD = functools.partialmethod(plain, 1)
PARTIALMETHOD.note = "import"  # type: ignore[attr-defined]
DEFAULTDICT = collections.defaultdict(list, a=[1])
MAPPINGPROXY = types.MappingProxyType({"a": [1]})
DICT = {"a": [1], "b": {"c": 2}}
KEYS = DICT.keys()
LIST = [1, [2]]
TUPLE = (1, [2])
SET = {1, 2}
FROZENSET = frozenset({1})
NUMBER = 1
BUFFER = bytearray(b"import")
MEMORYVIEW = memoryview(BUFFER)
T = typing.TypeVar("T")
UserId = typing.NewType("UserId", int)
WEAKSET = weakref.WeakSet([Point])
WEAKKEYS = weakref.WeakKeyDictionary({Point: "point"})
BUILTIN = len
METHOD_DESCRIPTOR = str.upper
SLOT_WRAPPER = int.__add__
METHOD_WRAPPER = NUMBER.__add__
GETSET = types.FunctionType.__dict__["__code__"]
CLASSMETHOD_DESCRIPTOR = vars(dict)["fromkeys"]  # getattr binds it: through the namespace


class Slotted:
    """No ``__dict__``: pickle's own reduction (its slots)."""

    __slots__ = ("a",)

    def __init__(self) -> None:
        self.a = [1]


SLOTTED = Slotted()
MEMBER = vars(Slotted)["a"]


class SlottedScaler:
    """A callable with its state in slots (as ``attrs.define`` makes them):
    found by reference, its slots are the state that travels."""

    __slots__ = ("factor", "__weakref__")

    def __init__(self) -> None:
        self.factor = 1

    def __call__(self, x: int) -> int:
        return x * self.factor


SLOTTED_SCALER = SlottedScaler()


class Registry(dict):  # type: ignore[type-arg]
    """A callable dict: its items, kept in C, are the state that travels."""

    def __call__(self, key: str, *args: Any) -> Any:
        return self[key](*args)

    @property
    def keys_now(self) -> list[str]:
        return sorted(self)


REGISTRY = Registry(neg=abs)


class Pipeline(list):  # type: ignore[type-arg]
    """A callable list of steps: its items are the state that travels."""

    def __call__(self, x: Any) -> Any:
        for step in self:
            x = step(x)
        return x

    @property
    def steps_now(self) -> list[str]:
        return [step.__name__ for step in self]


PIPELINE = Pipeline([abs])


class CountingProxy(wrapt.ObjectProxy):  # type: ignore[misc]
    """A proxy keeping a count of its own (``_self_calls``, on the proxy)."""

    def __init__(self, wrapped: Any) -> None:
        super().__init__(wrapped)
        self._self_calls = 0

    def __call__(self, *args: Any) -> Any:
        self._self_calls += 1
        return self.__wrapped__(*args)

    @property
    def calls_now(self) -> int:
        return self._self_calls


COUNTING_PROXY = CountingProxy(plain)


class Config:
    """Answers missing attributes in ``__getattr__`` (from its own fields)."""

    def __init__(self) -> None:
        self.values = {"mode": "import"}

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["values"][name]
        except KeyError:
            raise AttributeError(name) from None


CONFIG = Config()


class Descriptor:
    def __init__(self) -> None:
        self.note = "import"

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        return self


DESCRIPTOR = Descriptor()


class Lazy:
    """A lazy proxy: claims its target's class."""

    def __init__(self, target: Any) -> None:
        self.target = target

    @property  # type: ignore[misc]
    def __class__(self) -> Any:
        return type(self.target)

    def __call__(self, *args: Any) -> Any:
        return self.target(*args)


LAZY = Lazy(SCORER)


class JobError(Exception):
    def __init__(self, job: int) -> None:
        super().__init__(f"job {job}")
        self.job = job


ERROR = JobError(1)
try:
    raise ERROR
except JobError as exc:
    TRACEBACK = exc.__traceback__
STREAM = io.StringIO("import")
MISSING = dataclasses.MISSING
STDOUT_NAME = sys.stdout.__class__.__name__
