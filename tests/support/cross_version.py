"""Payloads made on one Python, loaded on another: the driver of the cross-version table.

::

    python tests/support/cross_version.py dump DIR
    python tests/support/cross_version.py load DIR --out FILE.json

``scripts/matrix`` (its ``cross_version_table``) runs ``dump`` under every
supported version, each into a directory of its own, then ``load`` of every
directory under every version, and prints the table.

``dump`` writes one payload per case (``CASE.pkl``; out-of-band buffers beside
it, ``CASE.buffer0.bin`` ...) and ``manifest.json``: the interpreter that made
them (``"cpython 3.11"``) and, per case, how it was written, how to load it and
what must hold after loading. A case expects one of two things:

* ``reference``: it loads right on every version. Plain data, numpy arrays (in
  band and out of band), functions, classes and methods of the stdlib and of
  ``picklable_testpkg`` by reference, decorator products found by the locator,
  wrapt proxies, enums and dataclasses by reference, exceptions of importable
  classes (chained, with notes, in groups, with tracebacks), envelopes,
  signed and deterministic payloads of these, and every object of
  ``support.corpus`` that ships without anything by value.
* ``value``: code or classes copied by value (functions, closures, lambdas,
  classes, enums, dataclasses, exceptions of this script, run as
  ``__main__``). They load right on the version that made them, and any other
  refuses them with a :class:`picklable.UnpicklingError` naming both versions,
  before anything of the payload runs: each is shipped behind a
  :class:`~support.cross_version_probe.Trace`, which records when it is
  unpickled (one case, written by a :class:`picklable.Pickler` straight into
  a stream, is refused only when its code is reached: see docs/safety.md).

The maker checks its own payloads as it writes them: a ``value`` case behind
its Trace starts with the check of its interpreter record, one alone (a
lambda, a script function) does not need it (its first call is its own
rebuilder, which checks the record first), and a ``reference`` case has none
(its bytes are what they were before that check existed).

``load`` loads the cases one after another in a worker interpreter; a case
that kills the worker (a crash, a hang) is recorded as bad, and a new worker
goes on with the next one. It writes ``{case: {"verdict": ..., "detail": ...}}``:

* ``right``: it loaded and every check holds (the very object for references;
  an equal value of the same type for data; the exception's own class, args,
  attributes, chain, notes and traceback);
* ``refused``: made on another version, and refused with a
  ``picklable.UnpicklingError`` whose message names both interpreters;
* ``bad``: anything else: a check failed, a ``value`` case loaded on another
  version, a ``reference`` case was refused, a refusal on the same version or
  one that does not name both, a refusal after the payload ran, any other
  exception, a dead worker.

It exits 0 when no case is bad.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import enum
import functools
import io
import json
import os
import pickle
import platform
import queue
import re
import subprocess
import sys
import threading
import types
import typing
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent.parent
for _path in (TESTS / "testpkg", TESTS):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import numpy as np  # noqa: E402

import picklable  # noqa: E402
from picklable._code import HERE  # noqa: E402
from picklable_testpkg import api, errors, wrapped  # noqa: E402
from support import cross_version_probe as probe  # noqa: E402
from support.corpus import corpus  # noqa: E402
from support.old_payloads import named_globals  # noqa: E402

# The key signed cases are made and loaded with.
KEY = b"picklable cross-version test key"
MANIFEST = "manifest.json"
# Seconds a worker may spend on one case before it is taken for hung.
CASE_TIMEOUT = 120


# ------------------------------------------------------ this script's objects
#
# Copied by value wherever they go (this file runs as __main__). A loader
# running this same script finds its own objects instead of building the
# copies (picklable._reduce.scripts), on the version that made them; either
# way the checks below hold.

GREETING = "hello"


def greet(name: str, punctuation: str = "!") -> str:
    """Say hello."""
    return f"{GREETING}, {name}{punctuation}"


def make_multiplier(factor: int) -> Callable[[int], int]:
    def multiply(x: int) -> int:
        return x * factor

    return multiply


square = lambda x: x * x  # noqa: E731 - a script's lambda on purpose


@functools.lru_cache(maxsize=32)
def fib(n: int) -> int:
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Counter:
    """A script class: a method, a classmethod, a property."""

    start = 10

    def __init__(self, step: int) -> None:
        self.step = step

    def advance(self, n: int) -> int:
        return self.start + n * self.step

    @classmethod
    def default(cls) -> Counter:
        return cls(1)

    @property
    def double_step(self) -> int:
        return 2 * self.step


class Mode(enum.Enum):
    FAST = 1
    SLOW = 2

    def describe(self) -> str:
        return f"mode {self.name}"


class Level(enum.IntEnum):
    """An enum without a method of its own: a class by value, no code."""

    LOW = 1
    HIGH = 2


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int = 0

    def norm1(self) -> int:
        return abs(self.x) + abs(self.y)


class MainError(Exception):
    """A script exception whose __init__ takes other arguments than args."""

    def __init__(self, what: str, *, code: int) -> None:
        super().__init__(what)
        self.code = code


class Empty:
    """A script class with nothing but a docstring."""


# ------------------------------------------------------------- data helpers


def plain_data() -> dict[str, Any]:
    """Every kind of plain data pickle writes itself, nested."""
    return {
        "none": None,
        "bools": (True, False),
        "ints": [0, -1, 255, 65536, 2**31, -(2**63), 2**100],
        "floats": [0.0, -1.5, 1e300, float("inf")],
        "complex": 1 + 2j,
        "text": "plain ascii, é, 漢字, \U0001f600",
        "bytes": bytes(range(256)),
        "bytearray": bytearray(b"\x00\xff" * 3),
        "tuple": (1, ("nested", ()), [2]),
        "set": {1, 2, 3},
        "frozenset": frozenset({"a", "b"}),
        "dict": {1: "int key", ("t",): "tuple key", "": {}},
        "range": range(2, 10, 3),
        "slice": slice(1, None, 2),
    }


def same_types(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` have the same types all the way down (and are equal)."""
    if type(a) is not type(b):
        return False
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(same_types(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return list(a) == list(b) and all(same_types(a[k], b[k]) for k in a)
    return bool(a == b)


def raises(call: Callable[[], Any], kind: type[BaseException]) -> bool:
    """Whether ``call()`` raises ``kind``."""
    try:
        call()
    except kind:
        return True
    return False


def raised(make: Callable[[], BaseException]) -> BaseException:
    """The exception ``make()`` returns, raised two frames down and caught: it has a
    traceback of this file's frames."""

    def inner() -> None:
        raise make()

    try:
        inner()
    except BaseException as exc:
        return exc
    raise AssertionError("not raised")


def chained() -> BaseException:
    """A testpkg exception raised from a KeyError, with a note."""
    try:
        try:
            {}["missing"]
        except KeyError as inner:
            raise errors.KwOnlyError("outer", code=3) from inner
    except errors.KwOnlyError as outer:
        outer.add_note("while looking up 'missing'")
        return outer
    raise AssertionError("not raised")


def with_notes() -> BaseException:
    error = ValueError("bad value", 42)
    error.add_note("first note")
    error.add_note("second note")
    return raised(lambda: error)


def group() -> BaseException:
    return raised(
        lambda: ExceptionGroup(
            "several",
            [
                ValueError("one"),
                errors.ExtraArgsError("conf.toml", 3, "bad key"),
                ExceptionGroup("inner", [KeyError("k"), errors.KwOnlyError("x", code=2)]),
            ],
        )
    )


def frames(exc: BaseException | types.TracebackType | None) -> list[tuple[str, str, int]]:
    """(function, file name, line) of each frame of a traceback (or an exception's)."""
    tb = exc.__traceback__ if isinstance(exc, BaseException) else exc
    found = []
    while tb is not None:
        code = tb.tb_frame.f_code
        found.append((code.co_name, os.path.basename(code.co_filename), tb.tb_lineno))
        tb = tb.tb_next
    return found


def _name(obj: Any) -> str:
    return f"{getattr(obj, '__module__', None)}.{getattr(obj, '__qualname__', None)}"


def _importable(obj: Any) -> bool:
    """Whether ``obj``'s module (imported already) and qualified name lead to it."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    try:
        found = functools.reduce(getattr, obj.__qualname__.split("."), module)
    except Exception:
        return False
    return found is obj


_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def fingerprint(obj: Any, depth: int = 0) -> str:
    """What ``obj`` is, as a string that is the same for equal objects on every
    version: types by module and qualified name, values by content,
    exceptions with their class, args, attributes, chain, notes and frames."""
    if depth > 12:
        return "..."
    t = type(obj)

    def fp(x: Any) -> str:
        return fingerprint(x, depth + 1)

    if obj is None or t in (bool, int, float, complex, str, bytes):
        return repr(obj)
    if t is bytearray:
        return f"bytearray({bytes(obj)!r})"
    if t in (list, tuple):
        return f"{t.__name__}[{', '.join(fp(x) for x in obj)}]"
    if t in (set, frozenset):
        return f"{t.__name__}{{{', '.join(sorted(fp(x) for x in obj))}}}"
    if isinstance(obj, dict):
        extra = f" default {fp(obj.default_factory)}" if hasattr(obj, "default_factory") else ""
        items = ", ".join(f"{fp(k)}: {fp(v)}" for k, v in obj.items())
        return f"{_name(t)}{{{items}}}{extra}"
    if isinstance(obj, BaseException):
        parts = [
            _name(t),
            f"args={fp(obj.args)}",
            f"dict={fp({k: v for k, v in vars(obj).items() if k != '__notes__'})}",
            f"notes={fp(getattr(obj, '__notes__', None))}",
            f"cause={fp(obj.__cause__)}",
            f"context={fp(obj.__context__)}",
            f"suppress={obj.__suppress_context__}",
            f"frames={fp(frames(obj))}",
        ]
        if isinstance(obj, BaseExceptionGroup):
            parts.append(f"exceptions={fp(list(obj.exceptions))}")
        return " ".join(parts)
    if t is types.TracebackType:
        return f"traceback {fp(frames(obj))}"
    if t is memoryview:
        return f"memoryview {obj.format} {obj.shape} ro={obj.readonly} {obj.tobytes()!r}"
    if t is types.CellType:
        try:
            return f"cell({fp(obj.cell_contents)})"
        except ValueError:
            return "cell()"
    if t is np.ndarray:
        return f"ndarray {obj.dtype.str} {obj.shape} {obj.tobytes()!r}"
    if isinstance(obj, typing.TypeVar | typing.ParamSpec | typing.TypeVarTuple):
        bound = getattr(obj, "__bound__", None)
        if bound is type(None) and t is typing.ParamSpec:
            bound = None  # Python 3.12 gives ParamSpec("P") a __bound__ of NoneType
        constraints = getattr(obj, "__constraints__", ())
        return f"{t.__name__} {obj.__name__} bound={fp(bound)} constraints={fp(constraints)}"
    if t in (types.BuiltinFunctionType, types.MethodWrapperType) and not isinstance(
        obj.__self__, types.ModuleType | None
    ):
        return f"{fp(obj.__self__)}.{obj.__name__}"
    if isinstance(obj, types.ModuleType):
        return f"module {obj.__name__}"
    if isinstance(obj, type | types.FunctionType | types.BuiltinFunctionType):
        return f"{_name(obj)}{'' if _importable(obj) else ' (not importable)'}"
    if t is functools.partial:
        return f"partial({fp(obj.func)}, {fp(obj.args)}, {fp(obj.keywords)}) {fp(vars(obj))}"
    if t in (type({}.keys()), type({}.values()), type({}.items())) or "odict_" in t.__name__:
        return f"{t.__name__}{fp(list(obj))}"
    if isinstance(obj, weakref.WeakSet | weakref.WeakKeyDictionary | weakref.WeakValueDictionary):
        members = list(obj) if isinstance(obj, weakref.WeakSet) else list(obj.items())
        return f"{_name(t)}{{{', '.join(sorted(fp(m) for m in members))}}}"
    if t is io.BytesIO:
        return f"BytesIO {obj.getvalue()!r} at {obj.tell()}"
    if t is types.MappingProxyType:
        return f"mappingproxy {fp(dict(obj))}"
    if hasattr(obj, "__dict__") and not isinstance(obj, types.ModuleType):
        return f"{_name(t)} {fp(dict(vars(obj)))}"
    return f"{_name(t)} {_ADDRESS.sub('', repr(obj))}"


# ------------------------------------------------------------------- cases


@dataclasses.dataclass
class Case:
    """One payload of the table (see the module doc)."""

    name: str
    expect: str  # "reference" or "value"
    make: Callable[[], Any]
    # Expressions over the loaded ``obj`` that must be true.
    holds: tuple[str, ...] = ()
    # Expressions whose fingerprint on the loaded ``obj`` must be the one the
    # maker computed on the original (or, with ``same_from == "roundtrip"``, on
    # what loading it in the maker's own process gives).
    same: tuple[str, ...] = ()
    same_from: str = "original"
    # How it is written: dumps, dump (a file), pickler (Pickler straight into a
    # stream), envelope (stdlib pickle of ship()), deterministic, out_of_band.
    write: str = "dumps"
    # How it is read: loads, pickle (pickle.loads), load (a file), allowed
    # (an allow-list), envelope (pickle.loads, then opened).
    read: str = "loads"
    signed: bool = False
    # A value case travels behind a Trace (something that runs, in front of
    # its code); without it, its first call is its own rebuilder.
    probe: bool = True
    # A value case's refusal comes before anything of the payload runs.
    refused_first: bool = True

    @property
    def file(self) -> str:
        return re.sub(r"[^a-z0-9]+", "_", self.name.lower()).strip("_") + ".pkl"


def _reference(name: str, make: Callable[[], Any], *holds: str, **options: Any) -> Case:
    return Case(name, "reference", make, holds, **options)


def _value(name: str, make: Callable[[], Any], *holds: str, **options: Any) -> Case:
    return Case(name, "value", make, holds, **options)


def _policy() -> picklable.Policy:
    # Modules admit their classes; the functions the cases ship, by their exact names.
    names = ["__main__", "support.cross_version_probe", "picklable_testpkg"]
    functions = ["picklable_testpkg.api.add", "support.cross_version_probe.mark"]
    return picklable.Policy([*names, *functions], by_value_code=True)


# The same checks, for each way a lambda or a reference can be written and read.
_LAMBDA = ("obj(7) == 49", "obj.__name__ == '<lambda>'", "obj.__module__ == '__main__'")
_RECORD = ("obj[0] is api.add", "obj[1] == api.Record('r', 2)", "type(obj[1]) is api.Record")


def _record() -> tuple[Any, ...]:
    return (api.add, api.Record("r", 2))


def explicit_cases() -> list[Case]:
    """The cases written for the table (corpus_cases adds the corpus's)."""
    return [
        # ---------------------------------------------------- plain data
        _reference(
            "data: builtins",
            plain_data,
            "obj == plain_data()",
            "same_types(obj, plain_data())",
        ),
        _reference(
            "data: numpy in band",
            lambda: {"f": np.arange(24.0).reshape(4, 6), "i": np.arange(5, dtype=np.int16)},
            "type(obj['f']) is np.ndarray and obj['f'].dtype == np.float64",
            "obj['f'].shape == (4, 6) and (obj['f'] == np.arange(24.0).reshape(4, 6)).all()",
            "obj['i'].dtype == np.int16 and obj['i'].tolist() == [0, 1, 2, 3, 4]",
        ),
        _reference(
            "data: numpy out of band",
            lambda: np.arange(1000, dtype=np.int64).reshape(10, 100),
            "type(obj) is np.ndarray and obj.dtype == np.int64 and obj.shape == (10, 100)",
            "(obj == np.arange(1000).reshape(10, 100)).all()",
            write="out_of_band",
        ),
        # ------------------------------------------------ by reference
        _reference(
            "reference: stdlib functions, classes, methods",
            lambda: (
                os.path.join,
                len,
                collections.OrderedDict,
                str.upper,
                dict.fromkeys,
                functools.reduce,
                json.dumps,
                "x".join,
            ),
            "obj[0] is os.path.join and obj[1] is len",
            "obj[2] is collections.OrderedDict and obj[3] is str.upper",
            "obj[4] == dict.fromkeys and obj[4].__self__ is dict",
            "obj[5] is functools.reduce and obj[6] is json.dumps",
            "obj[7](['a', 'b']) == 'axb'",
        ),
        _reference(
            "reference: testpkg functions and classes",
            lambda: (api.plain, api.Frame, api.Frame.Inner, api.square_lambda, errors.KwOnlyError),
            "obj[0] is api.plain and obj[1] is api.Frame and obj[2] is api.Frame.Inner",
            "obj[3] is api.square_lambda and obj[4] is errors.KwOnlyError",
        ),
        _reference(
            "reference: methods",
            lambda: (
                api.Frame.total,
                api.Frame.mean,
                api.Tools.scaled,
                api.Tools.static_add,
                api.Frame([1, 2]).total,
            ),
            "obj[0] is api.Frame.total and obj[1] is api.Frame.mean",
            "obj[2] == api.Tools.scaled and obj[2](2) == 6 and obj[3] is api.Tools.static_add",
            "obj[4].__func__ is api.Frame.total and obj[4]() == ('total', [1, 2], ())",
        ),
        _reference(
            "reference: located decorator products",
            lambda: (api.add, api.counted_square, api.tagged_double, api.beat_interval_option),
            "obj[0] is api.add and obj[1] is api.counted_square",
            "obj[2] is api.tagged_double and obj[3] is api.beat_interval_option",
            "obj[0](2, 3) == 5 and obj[2](4) == ('t', 8)",
        ),
        _reference(
            "reference: wrapt proxies",
            lambda: (
                wrapped.double,
                wrapped.traced_square,
                vars(wrapped.Service)["scale"],
                wrapped.add,
            ),
            "obj[0] is wrapped.double and obj[0](3) == ('tagged', 6)",
            "obj[1] is wrapped.traced_square and obj[1](3) == ('traced', 9)",
            "obj[2] is vars(wrapped.Service)['scale'] and obj[2].__get__(None, wrapped.Service)",
            "obj[3] is wrapped.add",
        ),
        _reference(
            "reference: enums",
            lambda: (api.Color, api.Color.RED, enum.Enum, enum.IntFlag),
            "obj[0] is api.Color and obj[1] is api.Color.RED",
            "obj[2] is enum.Enum and obj[3] is enum.IntFlag",
        ),
        _reference(
            "reference: dataclasses",
            lambda: (api.Record, api.Record("a", 3), [api.Record("b")] * 2),
            "obj[0] is api.Record and type(obj[1]) is api.Record",
            "obj[1] == api.Record('a', 3) and obj[2][0] is obj[2][1]",
        ),
        _reference(
            "reference: with_state",
            lambda: picklable.with_state(api.beat_interval_option),
            "obj is api.beat_interval_option and obj.short_flag == '-b'",
        ),
        # --------------------------------------------------- exceptions
        _reference(
            "exception: builtin with traceback",
            lambda: raised(lambda: FileNotFoundError(2, "No such file", "missing.txt")),
            "type(obj) is FileNotFoundError and obj.errno == 2",
            "obj.strerror == 'No such file' and obj.filename == 'missing.txt'",
            same=("obj", "frames(obj)"),
        ),
        _reference(
            "exception: custom (testpkg)",
            lambda: (
                errors.KwOnlyError("kw", code=7),
                errors.ExtraArgsError("a.py", 3, "oops"),
                errors.FrozenError("frozen", field="f"),
                errors.SlottedError("detail", "hidden"),
                errors.PlainError("plain", 1),
            ),
            "type(obj[0]) is errors.KwOnlyError and obj[0].code == 7",
            "obj[0].args == ('kw',)",
            "type(obj[1]) is errors.ExtraArgsError and (obj[1].path, obj[1].line) == ('a.py', 3)",
            "obj[1].args == ('a.py:3: oops',)",
            "type(obj[2]) is errors.FrozenError and obj[2].field == 'f'",
            "obj[3].detail == 'detail' and obj[3].hidden == 'hidden'",
            "type(obj[4]) is errors.PlainError and obj[4].args == ('plain', 1)",
            same=("obj",),
        ),
        _reference(
            "exception: chained, with a note",
            chained,
            "type(obj) is errors.KwOnlyError and obj.code == 3",
            "type(obj.__cause__) is KeyError and obj.__cause__.args == ('missing',)",
            "obj.__context__ is obj.__cause__ and obj.__suppress_context__",
            "obj.__notes__ == [\"while looking up 'missing'\"]",
            same=("obj", "frames(obj)", "frames(obj.__cause__)"),
        ),
        _reference(
            "exception: notes",
            with_notes,
            "type(obj) is ValueError and obj.args == ('bad value', 42)",
            "obj.__notes__ == ['first note', 'second note']",
            same=("obj",),
        ),
        _reference(
            "exception: group",
            group,
            "type(obj) is ExceptionGroup and obj.message == 'several'",
            "[type(e) for e in obj.exceptions] == "
            "[ValueError, errors.ExtraArgsError, ExceptionGroup]",
            "obj.exceptions[1].reason == 'bad key'",
            "obj.exceptions[2].exceptions[1].code == 2",
            same=("obj", "frames(obj)"),
        ),
        # ---------------------------------------------- ways to write them
        _reference(
            "reference: signed",
            _record,
            *_RECORD,
            signed=True,
        ),
        _reference("reference: deterministic", _record, *_RECORD, write="deterministic"),
        _reference("reference: dump to a file", _record, *_RECORD, write="dump", read="load"),
        _reference("reference: pickle.loads", _record, *_RECORD, read="pickle"),
        _reference("reference: allow-list", _record, *_RECORD, read="allowed"),
        _reference(
            "reference: envelope",
            lambda: api.add,
            "obj is api.add",
            write="envelope",
            read="envelope",
        ),
        _reference(
            "reference: Pickler into a stream", _record, *_RECORD, write="pickler", read="load"
        ),
        # ----------------------------------------------------- by value
        _value(
            "value: script function",
            lambda: greet,
            "obj('ada') == 'hello, ada!' and obj('bo', '?') == 'hello, bo?'",
            "obj.__name__ == 'greet' and obj.__qualname__ == 'greet'",
            "obj.__module__ == '__main__' and obj.__doc__ == 'Say hello.'",
            "obj.__defaults__ == ('!',)",
            "obj.__annotations__ == {'name': 'str', 'punctuation': 'str', 'return': 'str'}",
        ),
        _value(
            "value: closure",
            lambda: make_multiplier(3),
            "obj(5) == 15",
            "obj.__qualname__ == 'make_multiplier.<locals>.multiply'",
            "obj.__closure__[0].cell_contents == 3",
        ),
        _value("value: lambda", lambda: square, *_LAMBDA),
        _value(
            "value: lru_cache of a script function",
            lambda: fib,
            "obj(20) == 6765 and obj.cache_info().maxsize == 32",
        ),
        _value(
            "value: partial of a script function",
            lambda: functools.partial(greet, punctuation="?"),
            "type(obj) is functools.partial and obj('bo') == 'hello, bo?'",
        ),
        _value(
            "value: code object",
            lambda: greet.__code__,
            "type(obj) is types.CodeType and obj.co_name == 'greet'",
            "obj.co_varnames == ('name', 'punctuation')",
        ),
        _value(
            "value: class and instance",
            lambda: (Counter, Counter(2)),
            "type(obj[1]) is obj[0] and obj[0].__qualname__ == 'Counter'",
            "obj[1].advance(3) == 16 and obj[1].double_step == 4",
            "obj[0].default().step == 1",
        ),
        _value(
            "value: class without methods",
            lambda: Empty,
            "obj.__qualname__ == 'Empty' and obj.__doc__ == 'A script class with nothing but a "
            "docstring.'",
        ),
        _value(
            "value: enum",
            lambda: (Mode, Mode.SLOW),
            "obj[1] is obj[0].SLOW and obj[1].value == 2",
            "obj[1].describe() == 'mode SLOW'",
        ),
        _value(
            "value: enum without methods",
            lambda: (Level, Level.HIGH),
            "obj[1] is obj[0].HIGH and obj[1] == 2 and isinstance(obj[1], enum.IntEnum)",
        ),
        _value(
            "value: dataclass",
            lambda: (Point, Point(3, -4)),
            "dataclasses.is_dataclass(obj[0]) and type(obj[1]) is obj[0]",
            "obj[1] == obj[0](3, -4) and obj[1].norm1() == 7",
            "raises(lambda: setattr(obj[1], 'x', 1), dataclasses.FrozenInstanceError)",
        ),
        _value(
            "value: script exception",
            lambda: raised(lambda: MainError("boom", code=3)),
            "type(obj).__qualname__ == 'MainError' and obj.code == 3",
            "obj.args == ('boom',) and isinstance(obj, Exception)",
            same=("frames(obj)",),
        ),
        _value(
            "value: numpy out of band with a closure",
            lambda: (np.arange(100.0), make_multiplier(2)),
            "(obj[0] == np.arange(100.0)).all() and obj[1](4) == 8",
            write="out_of_band",
        ),
        _value("value: signed", lambda: square, *_LAMBDA, signed=True),
        _value("value: deterministic", lambda: square, *_LAMBDA, write="deterministic"),
        _value("value: dump to a file", lambda: square, *_LAMBDA, write="dump", read="load"),
        _value("value: pickle.loads", lambda: square, *_LAMBDA, read="pickle"),
        _value("value: allow-list", lambda: square, *_LAMBDA, read="allowed"),
        _value("value: envelope", lambda: square, *_LAMBDA, write="envelope", read="envelope"),
        _value(
            "value: lambda alone",
            lambda: square,
            *_LAMBDA,
            probe=False,
        ),
        _value(
            "value: script function alone",
            lambda: greet,
            "obj('ada') == 'hello, ada!' and obj.__qualname__ == 'greet'",
            probe=False,
        ),
        _value(
            "value: Pickler into a stream",
            lambda: square,
            *_LAMBDA,
            write="pickler",
            read="load",
            refused_first=False,
        ),
    ]


def _corpus_object(name: str) -> Any:
    """The corpus's object ``name``, as this process makes it."""
    return dict(corpus())[name]


def _ships_by_value(obj: Any) -> bool:
    """Whether ``obj`` ships code or classes by value (or cannot ship at all)."""
    pickler = picklable.Pickler(io.BytesIO())
    try:
        pickler.dump(obj)
    except Exception:
        return True  # the corpus holds objects that cannot ship at all
    payload = pickler.context.payload
    return payload is not None and payload.bound


def corpus_cases() -> Iterator[Case]:
    """support.corpus's objects that ship without anything by value: the very
    object where it is importable, else an equal one."""
    first = dict(corpus())
    second = dict(corpus())  # objects made per call differ between the two
    for name, obj in first.items():
        if _ships_by_value(obj):
            continue
        if picklable.loads(picklable.dumps(obj)) is obj and second[name] is obj:
            yield _reference(
                f"corpus: {name}", lambda obj=obj: obj, f"obj is _corpus_object({name!r})"
            )
        else:
            yield _reference(
                f"corpus: {name}", lambda obj=obj: obj, same=("obj",), same_from="roundtrip"
            )


def all_cases() -> list[Case]:
    cases = [*explicit_cases(), *corpus_cases()]
    files = [case.file for case in cases]
    assert len(set(files)) == len(files), "two cases share a file name"
    return cases


# -------------------------------------------------------------------- dump


def _carries_value(data: bytes) -> bool:
    """Whether a payload starts with the check of its interpreter record (a
    signed payload's pickle follows its header, an envelope's is inside it)."""
    return b"\n_check_interpreter\n" in data


def _write(case: Case, obj: Any, path: Path) -> list[bytes]:
    """Write ``obj`` as ``case`` says; the out-of-band buffers."""
    key = KEY if case.signed else None
    buffers: list[pickle.PickleBuffer] = []
    if case.write == "dumps":
        data = picklable.dumps(obj, key=key)
    elif case.write == "out_of_band":
        data = picklable.dumps(obj, buffer_callback=buffers.append, key=key)
    elif case.write == "deterministic":
        data = picklable.dumps(obj, key=key, deterministic=True)
    elif case.write == "envelope":
        data = pickle.dumps(picklable.ship(obj), protocol=5)
    elif case.write == "dump":
        stream = io.BytesIO()
        picklable.dump(obj, stream, key=key)
        data = stream.getvalue()
    elif case.write == "pickler":
        stream = io.BytesIO()
        picklable.Pickler(stream).dump(obj)
        data = stream.getvalue()
    else:
        raise ValueError(f"unknown way to write: {case.write!r}")
    path.write_bytes(data)
    return [bytes(buffer.raw()) for buffer in buffers]


def dump(directory: Path) -> int:
    """Write every case and the manifest into ``directory``.

    A case that cannot be made, or whose payload is not what it expects (the
    check of its record in front, or none), is written down as made wrong:
    every loader judges it bad, so the table shows it in the maker's row.
    """
    directory.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {
        "made_by": HERE,
        "python": platform.python_version(),
        "picklable": picklable.__version__,
        "cases": {},
    }
    for case in all_cases():
        entry = manifest["cases"][case.name] = {
            "file": case.file,
            "expect": case.expect,
            "write": case.write,
            "read": case.read,
            "signed": case.signed,
            "buffers": [],
            "probe": case.expect == "value" and case.probe,
            "refused_first": case.refused_first,
            "holds": list(case.holds),
            "same": [],
            "made_wrong": None,
        }
        try:
            _make(directory, case, entry)
        except Exception as exc:
            entry["made_wrong"] = f"{type(exc).__name__}: {exc}"
        if entry["made_wrong"]:
            print(f"cross-version dump: {case.name}: {entry['made_wrong']}", file=sys.stderr)
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"cross-version dump: {len(manifest['cases'])} cases made by {HERE} in {directory}")
    return 0


def _make(directory: Path, case: Case, entry: dict[str, Any]) -> None:
    """Write ``case``'s payload (and buffers); fill in its manifest ``entry``."""
    obj = case.make()
    reference = picklable.loads(picklable.dumps(obj)) if case.same_from == "roundtrip" else obj
    names = {**globals(), "obj": reference}
    entry["same"] = [[expr, fingerprint(eval(expr, names))] for expr in case.same]
    shipped = (probe.Trace(case.name), obj) if entry["probe"] else obj
    path = directory / case.file
    for i, buffer in enumerate(_write(case, shipped, path)):
        entry["buffers"].append(f"{path.stem}.buffer{i}.bin")
        (directory / entry["buffers"][-1]).write_bytes(buffer)
    marked = _carries_value(path.read_bytes())
    # Behind its Trace, a value case's code needs the check in front; alone,
    # its first call checks the record itself (a Pickler's stream: never).
    wanted = entry["probe"] and case.write != "pickler"
    if marked != wanted:
        rebuilders = [n for n in named_globals(path.read_bytes()) if n.startswith("picklable.")]
        entry["made_wrong"] = (
            f"the payload {'has' if marked else 'lacks'} the interpreter check "
            f"(it names {', '.join(rebuilders) or 'no rebuilder'})"
        )


# -------------------------------------------------------------------- load


def _read(directory: Path, entry: dict[str, Any]) -> Any:
    """Load one case's payload as its entry says (an envelope is opened)."""
    path = directory / entry["file"]
    data = path.read_bytes()
    buffers = [bytearray((directory / n).read_bytes()) for n in entry["buffers"]] or None
    key = KEY if entry["signed"] else None
    read = entry["read"]
    if read == "loads":
        return picklable.loads(data, buffers=buffers, key=key)
    if read == "pickle":
        return pickle.loads(data, buffers=buffers)
    if read == "load":
        with open(path, "rb") as file:
            return picklable.load(file, buffers=buffers, key=key)
    if read == "allowed":
        return picklable.loads(data, buffers=buffers, key=key, allowed=_policy())
    if read == "envelope":
        return pickle.loads(data).obj
    raise ValueError(f"unknown way to read: {read!r}")


def _check(name: str, entry: dict[str, Any], loaded: Any) -> list[str]:
    """What does not hold of the loaded object (empty: it is right)."""
    failures = []
    obj = loaded
    if entry["probe"]:
        if type(loaded) is not tuple or len(loaded) != 2 or loaded[0] != name:
            return [f"loaded {type(loaded).__name__}, not (its trace, the object)"]
        obj = loaded[1]
    names = {**globals(), "obj": obj}
    for expression in entry["holds"]:
        try:
            if not eval(expression, names):
                failures.append(f"does not hold: {expression}")
        except Exception as exc:
            failures.append(f"{expression} raised {type(exc).__name__}: {exc}")
    for expression, wanted in entry["same"]:
        try:
            got = fingerprint(eval(expression, names))
        except Exception as exc:
            got = f"raised {type(exc).__name__}: {exc}"
        if got != wanted:
            failures.append(f"{expression}: the maker had {wanted}; here {got}")
    return failures


def verdict(directory: Path, name: str, entry: dict[str, Any], made_by: str) -> dict[str, str]:
    """Load one case of ``directory`` here and judge it (see the module doc)."""
    same_version = made_by == HERE
    if entry["made_wrong"]:
        return {"verdict": "bad", "detail": f"made wrong on {made_by}: {entry['made_wrong']}"}
    try:
        loaded = _read(directory, entry)
    except Exception as exc:
        message = f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}"
        if not isinstance(exc, picklable.UnpicklingError):
            return {"verdict": "bad", "detail": f"raised {message}"}
        if same_version:
            return {"verdict": "bad", "detail": f"refused on the version that made it: {message}"}
        if made_by not in str(exc) or HERE not in str(exc):
            return {
                "verdict": "bad",
                "detail": f"refused without naming {made_by} and {HERE}: {message}",
            }
        if entry["expect"] == "reference":
            return {
                "verdict": "bad",
                "detail": f"refused, but it holds nothing by value: {message}",
            }
        ran = name in probe.RAN
        if ran and entry["refused_first"]:
            return {"verdict": "bad", "detail": f"refused after the payload ran: {message}"}
        after = " (after the payload ran: no check in front of a Pickler's stream)" if ran else ""
        return {"verdict": "refused", "detail": f"{exc}{after}"}
    failures = _check(name, entry, loaded)
    if failures:
        return {"verdict": "bad", "detail": "; ".join(failures)}
    if entry["expect"] == "value" and not same_version:
        return {"verdict": "bad", "detail": f"code or classes made by {made_by} loaded on {HERE}"}
    return {"verdict": "right", "detail": ""}


def worker(directory: Path, names: list[str]) -> None:
    """Judge the cases ``names`` of ``directory`` one after another, a JSON line
    on stdout before each (``begin``) and after it (the verdict)."""
    manifest = json.loads((directory / MANIFEST).read_text())
    out = sys.stdout
    sys.stdout = sys.stderr  # what a payload prints must not reach the channel
    for name in names:
        out.write(json.dumps({"begin": name}) + "\n")
        out.flush()
        result = verdict(directory, name, manifest["cases"][name], manifest["made_by"])
        out.write(json.dumps({"case": name, **result}) + "\n")
        out.flush()


def load(directory: Path, out: Path) -> int:
    """Judge every case of ``directory`` in worker interpreters; write the verdicts."""
    manifest = json.loads((directory / MANIFEST).read_text())
    names = list(manifest["cases"])
    results: dict[str, dict[str, str]] = {}
    while len(results) < len(names):
        rest = [n for n in names if n not in results]
        _run_worker(directory, rest, results)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    tally = collections.Counter(r["verdict"] for r in results.values())
    print(
        f"cross-version load: {len(names)} cases made by {manifest['made_by']}, loaded on "
        f"{HERE}: {tally['right']} right, {tally['refused']} refused, {tally['bad']} bad"
    )
    for name, result in results.items():
        if result["verdict"] == "bad":
            print(f"  BAD {name}: {result['detail']}")
    return 1 if tally["bad"] else 0


def _run_worker(directory: Path, names: list[str], results: dict[str, dict[str, str]]) -> None:
    """One worker over ``names``; the case it dies or hangs on is recorded as bad."""
    process = subprocess.Popen(
        [sys.executable, __file__, "worker", str(directory), *names],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    errors_seen: list[str] = []

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    def drain() -> None:
        assert process.stderr is not None
        errors_seen.extend(process.stderr)

    threads = [
        threading.Thread(target=pump, daemon=True),
        threading.Thread(target=drain, daemon=True),
    ]
    for thread in threads:
        thread.start()
    current = None
    try:
        while True:
            try:
                line = lines.get(timeout=CASE_TIMEOUT)
            except queue.Empty:
                process.kill()
                if current is not None:
                    results[current] = {"verdict": "bad", "detail": f"hung for {CASE_TIMEOUT} s"}
                break
            if line is None:
                break
            message = json.loads(line)
            if "begin" in message:
                current = message["begin"]
            else:
                results[message.pop("case")] = message
                current = None
    finally:
        status = process.wait()
        for thread in threads:
            thread.join(timeout=10)
    if current is not None and current not in results:
        tail = "".join(errors_seen)[-600:].strip()
        results[current] = {
            "verdict": "bad",
            "detail": f"the interpreter died (exit status {status}): {tail}",
        }
    elif len(results) < len(names) and not any(n in results for n in names):
        tail = "".join(errors_seen)[-600:].strip()
        for name in names:
            results[name] = {"verdict": "bad", "detail": f"the worker failed ({status}): {tail}"}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="cross_version.py", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("dump", help="write the payloads").add_argument("directory", type=Path)
    loading = commands.add_parser("load", help="load another version's payloads")
    loading.add_argument("directory", type=Path)
    loading.add_argument("--out", type=Path, required=True)
    working = commands.add_parser("worker", help="(internal) judge cases, JSON lines")
    working.add_argument("directory", type=Path)
    working.add_argument("names", nargs="*")
    options = parser.parse_args(argv)
    if options.command == "dump":
        return dump(options.directory)
    if options.command == "load":
        return load(options.directory, options.out)
    worker(options.directory, options.names)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
