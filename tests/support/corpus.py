"""A corpus of objects of every kind the tests know, for differential tests.

``corpus()`` returns ``(name, object)`` pairs: importable functions and
classes, decorator products found by the locator, closures, lambdas, local
classes and enums, wrapt proxies, functools wrappers, descriptors, bound
methods, modules, exceptions with chains and tracebacks, instances plain and
callable, containers of all of these.
"""

from __future__ import annotations

import abc
import collections
import dataclasses
import enum
import functools
import io
import os.path
import sys
import types
import typing
import weakref
from collections.abc import Iterator
from typing import Any

import picklable
from picklable_testpkg import api, clicommands, decorators, errors, wrapped


def _raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:
        return caught


def _chained() -> BaseException:
    try:
        try:
            raise KeyError("inner")
        except KeyError as inner:
            raise errors.KwOnlyError("outer", code=3) from inner
    except errors.KwOnlyError as outer:
        return outer


@dataclasses.dataclass
class _Point:
    x: int
    y: int


class _Callable:
    def __init__(self, factor: int) -> None:
        self.factor = factor

    def __call__(self, x: int) -> int:
        return x * self.factor


class _LocalEnum(enum.Enum):
    A = 1
    B = 2


# Members of the weak collections below (alive as long as the corpus is).
_MEMBERS = [_Callable(1), _Callable(2)]
_BYTES = b"Hello!" * 3
_BUFFER = bytearray(range(12))


def corpus() -> Iterator[tuple[str, Any]]:
    """(name, object) for every kind of object the tests know."""
    scale = 3

    def closure(x: int) -> int:
        return x * scale

    @functools.lru_cache(maxsize=4)
    def cached(x: int) -> int:
        return x + 1

    @functools.singledispatch
    def dispatch(x: Any) -> str:
        return "any"

    @dispatch.register
    def _(x: int) -> str:
        return "int"

    class Local:
        attribute = 1

        def method(self) -> int:
            return self.attribute

        @classmethod
        def build(cls) -> Local:
            return cls()

        @property
        def prop(self) -> int:
            return 2

        def set(self, key: str, value: int) -> tuple[str, int]:
            return (key, value)

        set_a = functools.partialmethod(set, "a")

    local = Local()
    module = types.ModuleType("in_memory_module")
    module.value = 5  # type: ignore[attr-defined]
    exec("def absolute(x):\n    return abs(x)\n", module.__dict__)  # gets __builtins__

    T = typing.TypeVar("T", bound=int)
    P = typing.ParamSpec("P")

    class Box(typing.Generic[T]):
        pass

    class Abstract(abc.ABC):
        @abc.abstractclassmethod  # type: ignore[arg-type]
        def make(cls) -> None:
            """Make one."""

    mapping = {"a": 1, "f": closure}
    ordered = collections.OrderedDict([("b", 2)])
    yield from [
        ("module function", api.add),
        ("os.path.join", os.path.join),
        ("builtin function", len),
        ("builtin method", [].append),
        ("builtin type", int),
        ("types.FunctionType", types.FunctionType),
        ("importable class", api.Frame),
        ("factory-made method", api.Frame.mean),
        ("decorator", decorators.no_wraps),
        ("decorated without wraps", api.plain),
        ("class-based decorator product", api.counted_square),
        ("CLI option object", api.beat_interval_option),
        ("click command", clicommands.greet),
        ("click group", clicommands.cli),
        ("wrapt function", wrapped.double),
        ("wrapt ObjectProxy subclass", wrapped.traced_square),
        ("wrapt local", wrapped.make_wrapt_local(5)),
        ("lru_cache importable", wrapped.fib),
        ("singledispatch importable", wrapped.describe),
        ("toolkit wrapper", wrapped.add),
        ("closure", closure),
        ("lambda", lambda x: x + 1),
        ("closure made by a package factory", api.make_closure(2)),
        ("recursive closure", api.make_recursive()),
        ("local class", Local),
        ("instance of local class", local),
        ("bound method of local instance", local.method),
        ("classmethod bound to a local class", Local.build),
        ("raw classmethod", vars(Local)["build"]),
        ("raw property", vars(Local)["prop"]),
        ("local dataclass", api.make_dataclass()),
        ("local enum", api.make_enum()),
        ("module-level enum member", api.Color.RED),
        ("enum class of this module", _LocalEnum),
        ("lru_cache local", cached),
        ("singledispatch local", dispatch),
        ("partial", functools.partial(api.add, 1)),
        ("partial of a closure", functools.partial(closure)),
        ("raw partialmethod", vars(Local)["set_a"]),
        ("partialmethod of a closure", functools.partialmethod(closure, x=2)),
        ("dataclass instance", _Point(1, 2)),
        ("callable instance", _Callable(3)),
        ("with_state", picklable.with_state(api.plain)),
        ("module", os.path),
        ("module in memory", module),
        ("mappingproxy", types.MappingProxyType({"a": 1})),
        ("defaultdict", collections.defaultdict(list, {"a": [1]})),
        ("getset descriptor", vars(type(local))["__dict__"]),
        ("member descriptor", collections.deque.maxlen),
        ("dataclasses.MISSING", dataclasses.MISSING),
        ("builtin exception", ValueError("bad")),
        ("exception with a traceback", _raised(OSError(2, "missing", "f.txt"))),
        ("chained custom exception", _chained()),
        ("traceback", _raised(ValueError("x")).__traceback__),
        ("code object", closure.__code__),
        ("closure cell", closure.__closure__[0]),  # type: ignore[index]
        ("sys.version_info", sys.version_info),
        ("bytes io", io.BytesIO(b"abc")),
        ("nested data", {"f": [closure, (api.plain, {"c": Local})], "n": [1, 2.0, "s"]}),
        ("dict keys", mapping.keys()),
        ("dict values", mapping.values()),
        ("dict items with a closure", mapping.items()),
        ("OrderedDict keys", ordered.keys()),
        ("OrderedDict items", ordered.items()),
        ("memoryview of bytes", memoryview(_BYTES)),
        ("writable memoryview", memoryview(_BUFFER)),
        ("sliced memoryview", memoryview(_BYTES)[2:15:2]),
        ("cast memoryview", memoryview(_BUFFER).cast("H", (2, 3))),
        ("local TypeVar", T),
        ("local ParamSpec", P),
        ("typing's own TypeVar", typing.AnyStr),
        ("local generic class", Box),
        ("local generic alias", Box[int]),
        ("abstract classmethod", vars(Abstract)["make"]),
        ("class with an abstract classmethod", Abstract),
        ("WeakSet", weakref.WeakSet(_MEMBERS)),
        ("WeakKeyDictionary", weakref.WeakKeyDictionary({_MEMBERS[0]: 1})),
        ("WeakValueDictionary", weakref.WeakValueDictionary({"m": _MEMBERS[1]})),
        ("sys.stdout", sys.stdout),
        ("sys.__stderr__", sys.__stderr__),
    ]
