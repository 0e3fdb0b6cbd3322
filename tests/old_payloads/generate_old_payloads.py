"""Write the payloads of this release, to be loaded by every later one.

Run it as a script, with the release's own code, once per Python minor version::

    .venv/bin/python tests/old_payloads/generate_old_payloads.py

It writes ``cpython_<major><minor>/<case>.pkl`` next to itself (out-of-band
buffers beside their payload) and ``manifest.json``, which says for each file
what kind of object it holds and what must hold after loading it: Python
expressions over ``obj`` (the loaded object), each with the ``repr`` of its value
on the original object here (``tests/support/old_payloads.py`` evaluates them,
here and in the test). ``tests/unit/test_backward_compat.py`` loads every file.

The payloads of a release are frozen once committed: existing files are never
overwritten without ``--force`` (``--output DIR`` writes elsewhere, e.g. to check
that a second run still passes the test).

Every object below is defined in this script's ``__main__``, so its functions
and classes ship by value; the references are objects of the fixture package
``picklable_testpkg``. Nothing depends on a third-party version except the wrapt
cases (wrapt's classes go by reference, their fields by value).
"""

import abc
import argparse
import dataclasses
import enum
import functools
import json
import os
import pickle
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import types
from pathlib import Path
from typing import Any

# The tests directory: this file's parent's parent, or where the copy that main()
# runs (see there) was made from.
TESTS = Path(os.environ.get("PICKLABLE_TESTS") or Path(__file__).resolve().parent.parent)
sys.path[:0] = [str(TESTS / "testpkg"), str(TESTS)]
# Where that copy runs: code compiled there names a file no checkout has, so a
# loaded traceback always shows the source lines the payload carries (linecache
# prefers a file it can read, whatever it holds by then). A fixed path keeps the
# deterministic payload the same from run to run.
RUN_DIR = Path(tempfile.gettempdir()) / "picklable-old-payloads-generator"

import wrapt  # noqa: E402

import picklable  # noqa: E402
from picklable_testpkg import api, wrapt_methods  # noqa: E402
from support.old_payloads import evaluate, named_globals, namespace  # noqa: E402

# Signs the signed payload; tests/unit/test_backward_compat.py holds the same bytes.
KEY = b"picklable old payloads test key!"

# ------------------------------------------------------------------ functions

LABEL = "squared"
BASE = 100
GREETING = "hello"


# Annotations are objects (no ``from __future__ import annotations`` here).
def scale(x: int, factor: float = 2.0, *, offset: int = 1) -> float:
    """Multiply ``x`` by ``factor``, then add ``offset``."""
    return x * factor + offset


scale.unit = "metres"
scale.history = [1, 2, 3]

square_labelled = lambda x, power=2: (x**power, LABEL)  # noqa: E731 - a lambda on purpose


def fact(n):
    """``n!``, recursing through this module's globals."""
    return 1 if n <= 1 else n * fact(n - 1)


def make_accumulator(start, step):
    """Two closures sharing the cell ``total``; ``add`` also holds a nested function."""
    total = start

    def weigh(value):
        return value * step

    def countdown(n):  # refers to itself through its own cell
        return [] if n <= 0 else [n, *countdown(n - 1)]

    def add(value):
        nonlocal total
        total += weigh(value) + fact(3)
        return total

    def read():
        return (total, countdown(3))

    return add, read


def make_multiplier(factor):
    def multiply(x):
        return x * factor

    return multiply


def power(base, exponent, *, modulo=None):
    return pow(base, exponent, modulo)


def greet(name, punctuation="!"):
    return f"{GREETING}, {name}{punctuation}"


# -------------------------------------------------------------------- classes


class Account:
    """A bank account: a ``__main__`` class shipped by value."""

    currency = "EUR"

    def __init__(self, owner, balance=0):
        self.owner = owner
        self.balance = balance

    def __eq__(self, other):
        return type(other) is type(self) and vars(other) == vars(self)

    __hash__ = None

    def __repr__(self):
        return f"Account({self.owner!r}, {self.balance!r})"

    def deposit(self, amount):
        self.balance += amount
        return self.balance

    @classmethod
    def with_bonus(cls, owner):
        return cls(owner, 10)

    @staticmethod
    def fee(amount):
        return amount // 100

    @property
    def summary(self):
        return f"{self.owner}: {self.balance} {self.currency}"


class Tagged(type):
    """A ``__main__`` metaclass: every class it makes gets a ``tag``."""

    def __new__(mcls, name, bases, namespace):
        cls = super().__new__(mcls, name, bases, namespace)
        cls.tag = name.lower()
        return cls

    def describe(cls):
        return f"{cls.tag} with slots {cls.__slots__}"


class Vector(metaclass=Tagged):
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __eq__(self, other):
        return type(other) is type(self) and (self.x, self.y) == (other.x, other.y)

    __hash__ = None

    def __repr__(self):
        return f"Vector({self.x}, {self.y})"

    def norm1(self):
        return abs(self.x) + abs(self.y)


@dataclasses.dataclass(frozen=True, order=True)
class Point:
    x: int
    y: int = 0
    tags: list = dataclasses.field(default_factory=list, compare=False)

    def norm1(self):
        return abs(self.x) + abs(self.y)


class Shape(abc.ABC):
    @abc.abstractmethod
    def area(self): ...

    def describe(self):
        return f"{type(self).__name__} of area {self.area()}"


class Square(Shape):
    def __init__(self, side):
        self.side = side

    def area(self):
        return self.side**2


class LegacyShape:
    """Registered with ``Shape``, not derived from it."""

    def area(self):
        return 1


Shape.register(LegacyShape)


class Mode(enum.Enum):
    FAST = 1
    SLOW = 2
    QUICK = 1  # noqa: PIE796 - an alias of FAST, on purpose

    def describe(self):
        return f"mode {self.name}"


class Permission(enum.IntFlag):
    READ = 4
    WRITE = 2
    EXECUTE = 1


class Blob:
    """Bytes that travel out of band with protocol 5, as arrays do."""

    def __init__(self, data):
        self.data = data

    def __reduce_ex__(self, protocol):
        if protocol >= 5:
            return type(self), (pickle.PickleBuffer(self.data),)
        return type(self), (bytes(self.data),)

    def checksum(self):
        return sum(memoryview(self.data)) % 65521


# A module that exists only in this process (as notebooks and plugin loaders make them).
scratch = types.ModuleType("scratch", "Made in memory by the generator.")
exec(
    compile("RATE = 3\n\n\ndef triple(x):\n    return RATE * x\n", "<scratch>", "exec"),
    vars(scratch),
)

# ------------------------------------------------------------------- wrappers


@wrapt.decorator
def bracketed(wrapped, instance, args, kwargs):
    return ["<", wrapped(*args, **kwargs), ">"]


@bracketed
def shout(text):
    """Upper-case ``text``."""
    return text.upper()


class Labelled(wrapt.ObjectProxy):
    """An ObjectProxy subclass with state of its own (a ``_self_`` attribute)."""

    def __init__(self, wrapped, label):
        super().__init__(wrapped)
        self._self_label = label

    def __call__(self, *args, **kwargs):
        return (self._self_label, self.__wrapped__(*args, **kwargs))


def cube(x):
    return x**3


labelled_cube = Labelled(cube, "cube")


@functools.lru_cache(maxsize=16, typed=True)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


@functools.singledispatch
def kind_of(value):
    return "object"


@kind_of.register
def _kind_of_int(value: int):
    return "int"


@kind_of.register(list)
def _kind_of_list(value):
    return [kind_of(item) for item in value]


class Wallet:
    def __init__(self, owner):
        self.owner = owner


@kind_of.register(Wallet)
def _kind_of_wallet(value):
    return f"wallet of {value.owner}"


class described(property):
    """A property subclass (pickle's default reduction would drop its accessors)."""


class Box:
    def __init__(self, n):
        self.n = n

    @functools.cached_property
    def total(self):
        """``n`` plus the base."""
        return BASE + self.n

    @described
    def label(self):
        return f"box {self.n}"


@picklable.decorator
def audited(wrapped, instance, args, kwargs):
    """A toolkit decorator: reports the instance it was bound to."""
    who = None if instance is None else type(instance).__name__
    return ("audited", who, wrapped(*args, **kwargs))


@audited
def halve(x: float) -> float:
    """Half of ``x``."""
    return x / 2


class Tally(picklable.Wrapper):
    """A class-based toolkit decorator that counts calls."""

    def __init__(self, wrapped):
        super().__init__(wrapped)
        self.calls = 0

    def call(self, wrapped, instance, args, kwargs):
        self.calls += 1
        return wrapped(*args, **kwargs)


@Tally
def square(x):
    return x * x


class Greeter:
    def __init__(self, name):
        self.name = name

    @audited
    def hello(self, punctuation="!"):
        return f"hello {self.name}{punctuation}"

    @bracketed
    def bye(self):
        return f"bye {self.name}"


class Counter:
    def __init__(self, n):
        self.n = n

    def __repr__(self):
        return f"Counter({self.n})"

    def bump(self, by=1):
        self.n += by
        return self.n


# ----------------------------------------------------------------- exceptions


class ConfigError(Exception):
    """A configuration is wrong; ``__init__`` takes other arguments than ``args``."""

    def __init__(self, path, line, *, reason):
        super().__init__(f"{path}:{line}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


def read_port(settings):
    return settings["port"]


def load_settings(path, settings):
    try:
        return read_port(settings)
    except KeyError as missing:
        try:
            return int(settings.get("fallback", "eighty"))
        except ValueError:
            raise ConfigError(path, 3, reason="no usable port") from missing


class JobError(Exception):
    def __init__(self, job, *, attempts):
        super().__init__(f"job {job} failed after {attempts} attempts")
        self.job = job
        self.attempts = attempts


def run_job(job):
    raise JobError(job, attempts=2)


class RetryableError(Exception):
    """Reduces itself; picklable adds the chain and the traceback to its reduction."""

    def __init__(self, task, delay):
        super().__init__(f"retry {task} in {delay}s")
        self.task = task
        self.delay = delay

    def __reduce__(self):
        return (type(self), (self.task, self.delay))


class FrozenError(Exception):
    """Refuses setattr: its state is set past ``__setattr__``."""

    def __init__(self, code):
        super().__init__(code)
        object.__setattr__(self, "code", code)

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is frozen")


def retry_later(task):
    try:
        raise TimeoutError(task)
    except TimeoutError:
        raise RetryableError(task, 5)  # noqa: B904 - the implicit __context__ on purpose


def freeze(code):
    raise FrozenError(code)


def make_locked():
    lock = threading.Lock()

    def job():
        with lock:
            return 1

    return job


MISSING_DIR = "/nonexistent-picklable-dir"


def fail_all():
    problems = [
        caught(run_job, "resize"),
        caught(int, "x"),
        caught(open, f"{MISSING_DIR}/b.toml"),
    ]
    raise ExceptionGroup("3 of 3 jobs failed", problems)


def caught(function, *args):
    """The exception ``function(*args)`` raises, with its real traceback."""
    try:
        function(*args)
    except BaseException as exc:
        return exc
    raise AssertionError(f"{function.__name__}{args} did not raise")


# ---------------------------------------------------------------------- cases


@dataclasses.dataclass
class Case:
    """One payload file: what is written, how, and what must hold after loading."""

    name: str
    kind: str
    about: str
    obj: Any
    checks: tuple[str, ...]
    # How it is written: picklable.dumps, with key= / deterministic= /
    # buffer_callback=, or stdlib pickle (an envelope, as engines carry it).
    write: str = "picklable"
    # What loading must give, when that is not ``obj`` (an envelope, a marker).
    original: Any = None
    imports: tuple[str, ...] = ()


def cases() -> list[Case]:
    """Every case, made fresh (objects with state have not been used yet)."""
    add, read = make_accumulator(BASE, 10)
    counted = api.counted_square
    for n in range(3):
        counted(n)  # calls == 3: the state with_state carries
    square(1)
    square(2)  # calls == 2: by value, the state comes along
    config_error = caught(load_settings, "app.toml", {})
    config_error.add_note("while starting the server")
    return [
        Case(
            "function_main_full",
            "function",
            "a __main__ function by value: defaults, kwdefaults, annotations, docstring, __dict__",
            scale,
            (
                "obj(3)",
                "obj(3, 4.0, offset=0)",
                "obj.__name__",
                "obj.__qualname__",
                "obj.__module__",
                "obj.__doc__",
                "obj.__defaults__",
                "obj.__kwdefaults__",
                "obj.__annotations__",
                "obj.unit",
                "obj.history",
                "str(inspect.signature(obj))",
            ),
        ),
        Case(
            "function_lambda",
            "function",
            "a __main__ lambda reading a global",
            square_labelled,
            ("obj(3)", "obj(2, power=5)", "obj.__name__", "obj.__qualname__", "obj.__defaults__"),
        ),
        Case(
            "function_recursive",
            "function",
            "a __main__ function that calls itself through its globals",
            fact,
            ("obj(6)", "obj.__globals__['fact'] is obj", "obj.__doc__"),
        ),
        Case(
            "function_closure",
            "function",
            "two closures sharing a cell; a nested function and a self-recursive one in cells; "
            "a recursive global",
            (add, read),
            (
                "obj[1]()",
                "obj[0](2)",
                "obj[1]()",
                "obj[0](1)",
                "obj[0].__qualname__",
                "obj[0].__code__.co_freevars",
                "obj[1].__code__.co_freevars",
                "obj[0].__closure__[0] is obj[1].__closure__[1]",  # both 'total'
                "obj[0].__globals__['fact'](5)",
                "obj[0].__globals__['fact'].__globals__['fact'] is obj[0].__globals__['fact']",
            ),
        ),
        Case(
            "function_code_object",
            "function",
            "a code object alone (marshal bytes with the interpreter record)",
            scale.__code__,
            (
                "type(obj)",
                "obj.co_name",
                "obj.co_varnames",
                "obj.co_kwonlyargcount",
                "os.path.basename(obj.co_filename)",
                "types.FunctionType(obj, {})(3, 2.0, offset=1)",
            ),
        ),
        Case(
            "module_in_memory",
            "module",
            "a module built in memory (not importable anywhere), with a function by value",
            scratch,
            (
                "type(obj)",
                "obj.__name__",
                "obj.__doc__",
                "obj.RATE",
                "obj.triple(2)",
                "obj.triple.__module__",
                # Not "obj.triple.__globals__ is vars(obj)": in 0.1.0 the rebuilt module
                # and its function's globals are two dicts (a module attribute set after
                # loading does not reach the function): the divergence is not frozen here.
                "obj.triple.__globals__['RATE']",
            ),
        ),
        Case(
            "class_main",
            "class",
            "a __main__ class by value (method, classmethod, staticmethod, property) "
            "and two instances",
            (Account, [Account("ada", 5), Account.with_bonus("bob")]),
            (
                "obj[0].__name__",
                "obj[0].__qualname__",
                "obj[0].__module__",
                "obj[0].__doc__",
                "type(obj[0])",
                "sorted(k for k in vars(obj[0]) if not k.startswith('__'))",
                "[type(vars(obj[0])[k]).__name__ for k in ('with_bonus', 'fee', 'summary')]",
                "str(inspect.signature(obj[0]))",
                "obj[0].fee(250)",
                "obj[0].with_bonus('cy')",
                "obj[1][0] == obj[0]('ada', 5)",
                "type(obj[1][0]) is obj[0] and type(obj[1][1]) is obj[0]",
                "vars(obj[1][1])",
                "obj[1][1].summary",
                "obj[1][0].deposit(7)",
                "obj[1][0]",
                "obj[0].__hash__",
            ),
        ),
        Case(
            "class_slots_metaclass",
            "class",
            "a __main__ class with __slots__ and a __main__ metaclass, and an instance",
            (Vector, Vector(3, -4)),
            (
                "type(obj[0]).__name__",
                "type(obj[0]).__module__",
                "obj[0].tag",
                "obj[0].describe()",
                "obj[0].__slots__",
                "type(vars(obj[0])['x']).__name__",
                "hasattr(obj[1], '__dict__')",
                "(obj[1].x, obj[1].y)",
                "obj[1].norm1()",
                "obj[1] == obj[0](3, -4)",
                "setattr(obj[1], 'z', 1)",
            ),
        ),
        Case(
            "class_dataclass",
            "class",
            "a frozen, ordered __main__ dataclass with a default factory, and two instances",
            (Point, [Point(1, 2), Point(3, tags=["a"])]),
            (
                "obj[1]",
                "[f.name for f in dataclasses.fields(obj[0])]",
                "obj[1][0] == obj[0](1, 2)",
                "obj[1][0] < obj[1][1]",
                "hash(obj[1][0]) == hash(obj[0](1, 2))",
                "dataclasses.replace(obj[1][0], x=5)",
                "obj[0](1).tags is not obj[0](1).tags",
                "obj[0].__dataclass_params__.frozen",
                "obj[0].__match_args__",
                "setattr(obj[1][0], 'x', 9)",
                "obj[1][1].norm1()",
            ),
        ),
        Case(
            "class_abc_registered",
            "class",
            "an ABC with a subclass and a registered virtual subclass, and instances",
            (Shape, Square, LegacyShape, Square(3), LegacyShape()),
            (
                "type(obj[0])",
                "obj[0].__abstractmethods__",
                "issubclass(obj[1], obj[0]) and issubclass(obj[2], obj[0])",
                "isinstance(obj[4], obj[0])",
                "obj[0] in obj[2].__mro__",
                "issubclass(int, obj[0])",
                "obj[3].describe()",
                "obj[0]()",
            ),
        ),
        Case(
            "enum_main",
            "enum",
            "a __main__ Enum by value (an alias, a method) and members",
            (Mode, Mode.FAST, Mode.QUICK, [Mode.SLOW]),
            (
                "list(obj[0])",
                "list(obj[0].__members__)",
                "type(obj[0])",
                "obj[1] is obj[0].FAST and obj[2] is obj[1]",
                "obj[3][0] is obj[0](2)",
                "obj[0]['SLOW']",
                "obj[1].describe()",
                "obj[0](3)",
            ),
        ),
        Case(
            "enum_intflag",
            "enum",
            "a __main__ IntFlag by value and a combined member",
            (Permission, Permission.READ | Permission.WRITE),
            (
                "obj[1]",
                "list(obj[0])",
                "obj[1] == 6 and isinstance(obj[1], int)",
                "obj[0].READ in obj[1]",
                "obj[0].EXECUTE in obj[1]",
                "obj[1] | obj[0].EXECUTE",
                "~obj[1]",
                "obj[0](5)",
            ),
        ),
        Case(
            "reference_no_wraps",
            "reference",
            "a function decorated without functools.wraps: the wrapper, located (_resolve)",
            api.add,
            ("obj is picklable_testpkg.api.add", "obj(2, 3)", "obj.__qualname__"),
            imports=("picklable_testpkg.api",),
        ),
        Case(
            "reference_inside_wrapper",
            "reference",
            "the original function inside a wrapper without wraps, located in its closure",
            api.add.__closure__[0].cell_contents,
            (
                "obj is picklable_testpkg.api.add.__closure__[0].cell_contents",
                "obj(4, 5)",
                "obj.__qualname__",
            ),
            imports=("picklable_testpkg.api",),
        ),
        Case(
            "reference_decorator_objects",
            "reference",
            "products of class-based decorators that took the function's name, located",
            (api.counted_square, api.beat_interval_option, api.square_lambda),
            (
                "obj[0] is picklable_testpkg.api.counted_square",
                "obj[1] is picklable_testpkg.api.beat_interval_option",
                "obj[2] is picklable_testpkg.api.square_lambda",
                "obj[1]('x')",
                "obj[1].long_flag",
                "obj[2](7)",
            ),
            imports=("picklable_testpkg.api",),
        ),
        Case(
            "reference_factory_methods",
            "reference",
            "functions made by a factory and set on classes (one wrapped by wrapt), located",
            (
                api.Frame.total,
                api.Frame.mean,
                api.Frame.Inner.count,
                vars(wrapt_methods.Table)["total"],
            ),
            (
                "obj[0] is picklable_testpkg.api.Frame.total",
                "obj[1] is picklable_testpkg.api.Frame.mean",
                "obj[2] is picklable_testpkg.api.Frame.Inner.count",
                "obj[3] is vars(picklable_testpkg.wrapt_methods.Table)['total']",
                "obj[0](picklable_testpkg.api.Frame([1]))",
                "(obj[0].__name__, obj[1].__name__)",
                "obj[3](picklable_testpkg.wrapt_methods.Table([2]))",
            ),
            imports=("picklable_testpkg.api", "picklable_testpkg.wrapt_methods"),
        ),
        Case(
            "reference_methods",
            "reference",
            "a classmethod and a staticmethod over decorators without wraps, located",
            (api.Tools.scaled, vars(api.Tools)["scaled"].__func__, api.Tools.static_add),
            (
                "obj[0] == picklable_testpkg.api.Tools.scaled",
                "obj[0].__self__ is picklable_testpkg.api.Tools",
                "obj[0](2)",
                "obj[1] is vars(picklable_testpkg.api.Tools)['scaled'].__func__",
                "obj[2] is picklable_testpkg.api.Tools.static_add",
                "obj[2](1, 2)",
            ),
            imports=("picklable_testpkg.api",),
        ),
        Case(
            "reference_own_name",
            "reference",
            "objects importable by their own name (pickle's references), and an instance",
            (
                api.plain,
                api.Color.RED,
                api.Record,
                api.Record("disk", 3),
                sys.modules["picklable_testpkg"].Moved,
            ),
            (
                "obj[0] is picklable_testpkg.api.plain",
                "obj[1] is picklable_testpkg.api.Color.RED",
                "obj[2] is picklable_testpkg.api.Record",
                "obj[3] == picklable_testpkg.api.Record('disk', 3) and type(obj[3]) is obj[2]",
                "obj[4] is picklable_testpkg.Moved",
                "obj[0](1)",
            ),
            imports=("picklable_testpkg.api",),
        ),
        Case(
            "wrapper_wrapt_function",
            "wrapper",
            "a wrapt FunctionWrapper (a __main__ wrapt.decorator) of a __main__ function "
            "(depends on wrapt's FunctionWrapper fields)",
            shout,
            (
                "obj('hi')",
                "obj.__name__",
                "obj.__doc__",
                "obj.__wrapped__('a')",
                "type(obj).__name__",
                "isinstance(obj, wrapt.FunctionWrapper)",
                "str(inspect.signature(obj))",
            ),
            imports=("wrapt",),
        ),
        Case(
            "wrapper_wrapt_proxy",
            "wrapper",
            "a __main__ wrapt.ObjectProxy subclass with _self_ state around a __main__ function",
            labelled_cube,
            (
                "obj(2)",
                "obj._self_label",
                "obj.__name__",
                "type(obj).__name__",
                "obj.__wrapped__(3)",
                "isinstance(obj, wrapt.ObjectProxy)",
            ),
            imports=("wrapt",),
        ),
        Case(
            "wrapper_partial",
            "wrapper",
            "functools.partial of a __main__ function, with args and keywords",
            functools.partial(power, 2, modulo=1000),
            (
                "obj(10)",
                "obj(3, modulo=5)",
                "obj.args",
                "obj.keywords",
                "obj.func.__name__",
                "type(obj)",
            ),
        ),
        Case(
            "wrapper_lru_cache",
            "wrapper",
            "functools.lru_cache of a recursive __main__ function (loads with an empty cache)",
            fib,
            (
                "obj.cache_info()",
                "obj(20)",
                "obj.cache_info()",
                "obj.cache_parameters()",
                "obj.__wrapped__.__name__",
                "obj.__wrapped__.__globals__['fib'] is obj",
            ),
        ),
        Case(
            "wrapper_singledispatch",
            "wrapper",
            "a __main__ singledispatch function with registrations (one for a __main__ class)",
            (kind_of, Wallet("dee")),
            (
                "obj[0](1)",
                "obj[0]([1, 'a', [2]])",
                "obj[0]('s')",
                "obj[0](obj[1])",
                "sorted(t.__name__ for t in obj[0].registry)",
                "obj[0].dispatch(bool).__name__",
                "obj[0].__name__",
            ),
        ),
        Case(
            "wrapper_descriptors",
            "wrapper",
            "a __main__ class with a functools.cached_property and a property subclass",
            (Box, Box(3), vars(Box)["total"], vars(Box)["label"]),
            (
                "type(obj[2])",
                "obj[2].attrname",
                "obj[2].__doc__",
                "obj[2] is vars(obj[0])['total']",
                "vars(obj[1])",
                "obj[1].total",
                "vars(obj[1])",
                "type(obj[3]).__name__",
                "obj[3].fget.__name__",
                "obj[3] is vars(obj[0])['label']",
                "obj[1].label",
            ),
        ),
        Case(
            "wrapper_bound_methods",
            "wrapper",
            "bound methods: of a __main__ instance, and a factory-made method of a testpkg one",
            (Counter(3).bump, api.Frame([1, 2]).total),
            (
                "type(obj[0]).__name__",
                "obj[0].__name__",
                "obj[0](4)",
                "obj[0].__self__",
                "obj[0].__func__ is type(obj[0].__self__).bump",
                "obj[1]()",
                "obj[1].__func__ is picklable_testpkg.api.Frame.total",
            ),
            imports=("picklable_testpkg.api",),
        ),
        Case(
            "wrapper_toolkit",
            "wrapper",
            "picklable.decorator products of __main__ code (a function, a bound method), "
            "a bound wrapt method, a __main__ picklable.Wrapper subclass with state",
            (halve, Greeter("ann").hello, Greeter("bo").bye, square),
            (
                "obj[0](3)",
                "(obj[0].__name__, obj[0].__qualname__, obj[0].__doc__)",
                "str(inspect.signature(obj[0]))",
                "(type(obj[0]).__module__, type(obj[0]).__name__)",
                "obj[1]('?')",
                "obj[1].__self__.name",
                "type(obj[1]).__name__",
                "obj[2]()",
                "type(obj[2]).__name__",
                "type(obj[1].__self__) is type(obj[2].__self__)",
                "(type(obj[3]).__name__, isinstance(obj[3], picklable.Wrapper))",
                "obj[3].calls",
                "obj[3](5)",
                "obj[3].calls",
            ),
            imports=("picklable",),
        ),
        Case(
            "wrapper_with_state",
            "wrapper",
            "picklable.with_state of a located class-based decorator product called 3 times",
            picklable.with_state(counted),
            (
                "obj is picklable_testpkg.api.counted_square",
                "obj.calls",
                "obj(4)",
                "obj.calls",
            ),
            original=counted,
            imports=("picklable_testpkg.api",),
        ),
        Case(
            "exception_custom_chained",
            "exception",
            "a __main__ exception with a non-args __init__, __cause__, __context__, "
            "a note and real tracebacks",
            config_error,
            (
                "type(obj).__name__",
                "type(obj).__module__",
                "isinstance(obj, Exception)",
                "obj.args",
                "(obj.path, obj.line, obj.reason)",
                "obj.__notes__",
                "traceback.format_exception_only(obj)",
                "type(obj.__cause__)",
                "obj.__cause__.args",
                "type(obj.__context__)",
                "obj.__context__.args",
                "obj.__context__.__context__ is obj.__cause__",
                "obj.__suppress_context__",
                "[(f.name, f.lineno, f.line) for f in traceback.extract_tb(obj.__traceback__)]",
                "[(f.name, f.line) for f in traceback.extract_tb(obj.__cause__.__traceback__)]",
                "[os.path.basename(f.filename) for f in traceback.extract_tb(obj.__traceback__)]",
                "type(obj)('x.toml', 1, reason='r').args",
            ),
        ),
        Case(
            "exception_state_hooks",
            "exception",
            "__main__ exceptions with their own __reduce__ (plus context and traceback) "
            "and with a __setattr__ that refuses",
            (caught(retry_later, "sync"), caught(freeze, 7)),
            (
                "[type(e).__name__ for e in obj]",
                "obj[0].args",
                "(obj[0].task, obj[0].delay)",
                "type(obj[0].__context__)",
                "obj[0].__context__.args",
                "[f.name for f in traceback.extract_tb(obj[0].__traceback__)]",
                "[f.name for f in traceback.extract_tb(obj[0].__context__.__traceback__)]",
                "(obj[1].code, obj[1].args)",
                "setattr(obj[1], 'code', 8)",
                "[f.name for f in traceback.extract_tb(obj[1].__traceback__)]",
            ),
        ),
        Case(
            "exception_group",
            "exception",
            "an ExceptionGroup of a __main__ exception, a ValueError and an OSError, raised",
            caught(fail_all),
            (
                "type(obj)",
                "obj.message",
                "[type(e).__name__ for e in obj.exceptions]",
                "(obj.exceptions[0].job, obj.exceptions[0].attempts, obj.exceptions[0].args)",
                "(obj.exceptions[2].errno, obj.exceptions[2].filename)",
                "obj.subgroup(ValueError).exceptions",
                "[f.name for f in traceback.extract_tb(obj.__traceback__)]",
                "[f.name for f in traceback.extract_tb(obj.exceptions[0].__traceback__)]",
            ),
        ),
        Case(
            "exception_oserror",
            "exception",
            "builtin OSErrors raised by the OS: errno, strerror, filename, filename2",
            (
                caught(open, f"{MISSING_DIR}/settings.toml"),
                caught(os.rename, f"{MISSING_DIR}/a", f"{MISSING_DIR}/b"),
            ),
            (
                "type(obj[0])",
                "obj[0].args",
                "(obj[0].errno, obj[0].strerror, obj[0].filename, obj[0].filename2)",
                "str(obj[0])",
                "(obj[1].filename, obj[1].filename2)",
                "str(obj[1])",
                "[f.name for f in traceback.extract_tb(obj[0].__traceback__)]",
            ),
        ),
        Case(
            "exception_picklable_errors",
            "exception",
            "picklable's own errors, as a pool sends them back: a PicklingError naming the "
            "path of a lock, an UnpicklingError, WorkerDiedError, BrokenPoolError",
            (
                caught(picklable.dumps, {"job": make_locked()}),
                caught(picklable.loads, b"not a pickle"),
                picklable.WorkerDiedError("work(3)", -9, pid=4321, worker_index=1, attempts=2),
                picklable.BrokenPoolError("the pool was terminated", reason="terminated"),
            ),
            (
                "[type(e).__qualname__ for e in obj]",
                # Each class is found where its __module__ says (0.2.0 shows the pool's
                # errors under their public module, picklable, issue 19).
                "[getattr(sys.modules[type(e).__module__], type(e).__qualname__) is type(e) "
                "for e in obj]",
                "(obj[0].path, obj[0].type_name, obj[0].reason, obj[0].hint)",
                "obj[0].args",
                "type(obj[0].__cause__)",
                "[f.name for f in traceback.extract_tb(obj[0].__traceback__)][:2]",
                "(obj[1].reason, obj[1].hint, obj[1].args)",
                "isinstance(obj[1], pickle.UnpicklingError)",
                # The signal's name: 0.2.0 makes .signal a signal.Signals member (issue 19).
                "(obj[2].task, obj[2].exitcode, getattr(obj[2].signal, 'name', obj[2].signal), "
                "obj[2].pid, obj[2].attempts)",
                "'work(3)' in str(obj[2]) and 'SIGKILL' in str(obj[2])",
                "(obj[3].reason, obj[3].args)",
            ),
            imports=("pickle", "sys"),
        ),
        Case(
            "envelope_main_function",
            "envelope",
            "two picklable.ship() envelopes of one __main__ function, pickled by stdlib pickle",
            [picklable.ship(greet), picklable.ship(greet)],
            (
                "obj[0]('ada')",
                "obj[1]('bo', punctuation='?')",
                "obj[0] is obj[1]",
                "type(obj[0]).__name__",
                "obj[0].__name__",
                "obj[0].__module__",
            ),
            write="stdlib",
            original=[greet, greet],
        ),
        Case(
            "signed_closure",
            "signed",
            "a signed payload (key=KEY) of a __main__ closure and a string",
            {"multiply": make_multiplier(3), "label": LABEL},
            ("obj['multiply'](5)", "obj['multiply'].__qualname__", "obj['label']"),
            write="signed",
        ),
        Case(
            "deterministic_mixed",
            "deterministic",
            "a deterministic payload: a closure, a dataclass instance, a set, an Enum member",
            (make_multiplier(4), Point(1, 2), {"b", "a", "c"}, Mode.SLOW),
            ("obj[0](2)", "obj[1]", "sorted(obj[2])", "obj[3].describe()", "obj[3].name"),
            write="deterministic",
        ),
        Case(
            "out_of_band_buffer",
            "out_of_band",
            "protocol 5 with buffer_callback: a __main__ class whose bytes travel out of band",
            (Blob(bytearray(b"picklable out-of-band " * 4)), "in band"),
            (
                "type(obj[0]).__name__",
                "type(obj[0].data)",
                "bytes(obj[0].data)",
                "obj[0].checksum()",
                "obj[1]",
            ),
            write="out_of_band",
        ),
    ]


# ---------------------------------------------------------------------- write


def write_payload(case: Case) -> tuple[bytes, list[bytes]]:
    """The payload of ``case`` and its out-of-band buffers."""
    if case.write == "picklable":
        return picklable.dumps(case.obj), []
    if case.write == "signed":
        return picklable.dumps(case.obj, key=KEY), []
    if case.write == "deterministic":
        data = picklable.dumps(case.obj, deterministic=True)
        if picklable.dumps(case.obj, deterministic=True) != data:
            raise SystemExit(f"{case.name}: deterministic=True gave two different payloads")
        return data, []
    if case.write == "out_of_band":
        buffers: list[pickle.PickleBuffer] = []
        data = picklable.dumps(case.obj, buffer_callback=buffers.append)
        return data, [bytes(buffer.raw()) for buffer in buffers]
    if case.write == "stdlib":
        return pickle.dumps(case.obj, protocol=5), []
    raise ValueError(f"{case.name}: unknown way to write {case.write!r}")


def record(case: Case, data: bytes, buffers: list[str]) -> dict[str, Any]:
    """The manifest entry of ``case``, checks evaluated on the original object."""
    original = case.obj if case.original is None else case.original
    names = namespace(original, list(case.imports))
    checks = [[expression, evaluate(expression, names)] for expression in case.checks]
    for expression, value in checks:
        if " at 0x" in value:
            raise SystemExit(
                f"{case.name}: {expression!r} gives an address ({value}); pick another"
            )
    named = named_globals(data)
    return {
        "kind": case.kind,
        "about": case.about,
        "signed": case.write == "signed",
        "buffers": buffers,
        "imports": list(case.imports),
        "names": named,
        "checks": checks,
    }


def source_commit() -> dict[str, Any]:
    """The last commit that changed the picklable that writes (its version string says
    little between releases), and whether its ``src/`` differs from that commit."""
    src = Path(picklable.__file__).resolve().parent.parent
    last = subprocess.run(
        ["git", "-C", str(src), "log", "-1", "--format=%H", "--", "."],
        capture_output=True,
        text=True,
    )
    if last.returncode != 0 or not last.stdout.strip():
        return {"commit": None, "src_changed": None}
    changed = subprocess.run(["git", "-C", str(src), "diff", "--quiet", "HEAD", "--", "."])
    return {"commit": last.stdout.strip(), "src_changed": changed.returncode != 0}


def main_names() -> list[str]:
    """Names this script's ``__main__`` defines (the test plants decoys under them)."""
    main = vars(sys.modules["__main__"])
    return sorted(
        name
        for name, value in main.items()
        if not name.startswith("__")
        and not isinstance(value, types.ModuleType)
        and getattr(value, "__module__", "__main__") == "__main__"
    )


def generate(output: Path, force: bool) -> list[Path]:
    """Write every case into ``output``; refuse to replace files unless ``force``."""
    made = cases()
    planned = [output / "manifest.json"] + [output / f"{case.name}.pkl" for case in made]
    existing = [path for path in planned if path.exists()]
    if existing and not force:
        listing = "\n  ".join(str(path) for path in existing)
        raise SystemExit(
            f"refusing to overwrite frozen payloads (pass --force to replace them):\n  {listing}"
        )
    payloads = {case.name: write_payload(case) for case in made}
    # Checks run on the originals only after every payload is written: some
    # have effects (a call fills a cache), which must not reach the payloads.
    entries: dict[str, Any] = {}
    output.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for case in made:
        data, buffers = payloads[case.name]
        buffer_names = [f"{case.name}.buffer{i}.bin" for i in range(len(buffers))]
        entries[f"{case.name}.pkl"] = record(case, data, buffer_names)
        (output / f"{case.name}.pkl").write_bytes(data)
        written.append(output / f"{case.name}.pkl")
        for buffer_name, buffer in zip(buffer_names, buffers):
            (output / buffer_name).write_bytes(buffer)
            written.append(output / buffer_name)
    manifest = {
        "written_by": {
            "picklable": picklable.__version__,
            **source_commit(),
            "python": platform.python_version(),
            "implementation": sys.implementation.name,
            "wrapt": wrapt.__version__,
        },
        "main_names": main_names(),
        "payloads": entries,
    }
    (output / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    written.append(output / "manifest.json")
    return written


def run_from_copy(output: Path, force: bool) -> int:
    """Run a copy of this script from :data:`RUN_DIR`; return its exit status."""
    shutil.rmtree(RUN_DIR, ignore_errors=True)
    RUN_DIR.mkdir(parents=True)
    try:
        copy = RUN_DIR / Path(__file__).name
        shutil.copyfile(__file__, copy)
        command = [sys.executable, str(copy), "--output", str(output.resolve())]
        env = dict(os.environ, PICKLABLE_TESTS=str(TESTS))
        return subprocess.run([*command, *(["--force"] if force else [])], env=env).returncode
    finally:
        shutil.rmtree(RUN_DIR, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    major, minor = sys.version_info[:2]
    default = TESTS / "old_payloads" / f"{sys.implementation.name}_{major}{minor}"
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--output", type=Path, default=default, help=f"default: {default}")
    parser.add_argument("--force", action="store_true", help="replace existing payload files")
    args = parser.parse_args(argv)
    if Path(__file__).resolve().parent != RUN_DIR.resolve():
        sys.exit(run_from_copy(args.output, args.force))
    for path in generate(args.output, args.force):
        print(f"{path.stat().st_size:6d}  {path}")


if __name__ == "__main__":
    main()
