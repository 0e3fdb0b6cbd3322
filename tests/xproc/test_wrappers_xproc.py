"""Wrappers defined in a script run as ``__main__`` ship as exact copies that still
run their wrapper, in a fresh interpreter (issue 3).

One real script defines every wrapper kind in ``__main__``, dumps it with
picklable, cloudpickle, stdlib pickle and dill, and writes the payloads to files.
The test then loads each payload in a fresh interpreter (``child``: its
``__main__`` is another module) and calls everything. No sacred: this file also
runs in the wrapt 2.x environment.
"""

from __future__ import annotations

import json
import textwrap

import pytest

import picklable
from support import wrapper_checks
from support.child import run_script

SCRIPT = textwrap.dedent(
    '''
    import functools, json, pickle, sys
    import cloudpickle, dill, wrapt
    import picklable

    @wrapt.decorator
    def marked(wrapped, instance, args, kwargs):
        return ("marked", wrapped(*args, **kwargs))

    @marked
    def double(x):
        """Doubles."""
        return 2 * x

    class Traced(wrapt.ObjectProxy):
        def __init__(self, wrapped, label):
            super().__init__(wrapped)
            self._self_label = label
        def __call__(self, *args):
            return (self._self_label, self.__wrapped__(*args))

    traced_len = Traced(len, "traced")

    @functools.lru_cache(maxsize=4)
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    @functools.singledispatch
    def kind(x):
        return "object"

    @kind.register(int)
    def _(x):
        return ("int", fib(x))

    class Counted:
        def __init__(self, func):
            functools.update_wrapper(self, func)
            self.calls = 0
        def __call__(self, *args):
            self.calls += 1
            return ("counted", self.calls, self.__wrapped__(*args))

    @picklable.decorator
    def logged(wrapped, instance, args, kwargs):
        who = None if instance is None else getattr(instance, "__name__", type(instance).__name__)
        return ("logged", who, wrapped(*args, **kwargs))

    class Tally(picklable.Wrapper):
        def __init__(self, wrapped):
            super().__init__(wrapped)
            self.calls = 0
        def call(self, wrapped, instance, args, kwargs):
            self.calls += 1
            return ("tally", self.calls, wrapped(*args, **kwargs))

    class Shop:
        rate = 3

        def __init__(self, n):
            self.n = n

        @marked
        def price(self, x):
            return self.n * x

        @marked
        @classmethod
        def make(cls, n):
            return cls(n).n

        @classmethod
        @Counted
        def counted_rate(cls, x):
            return cls.rate * x

        @staticmethod
        @Counted
        def free(x):
            return x

        @logged
        def tip(self, x):
            return self.n + x

        @logged
        @classmethod
        def logged_rate(cls, x):
            return cls.rate + x

        @Tally
        @logged
        def both(self, x):
            return x

        @functools.cached_property
        def total(self):
            return self.n * 100

    @Counted
    def hello(name):
        return "hi " + name

    hello("warm")  # state on the copy: calls == 1

    objects = {
        "double": double,
        "traced": traced_len,
        "fib": fib,
        "kind": kind,
        "hello": hello,
        "Shop": Shop,
        "bound": Shop(2).price,
        "logged_add": logged(lambda x, y: x + y),
    }
    fib(10)
    out = {}
    for name, lib in [("picklable", picklable), ("cloudpickle", cloudpickle), ("pickle", pickle), ("dill", dill)]:
        try:
            data = lib.dumps(objects["double"]) if name != "picklable" else lib.dumps(objects)
        except Exception as exc:
            out[name] = "error: " + type(exc).__name__ + ": " + str(exc)
            continue
        with open(name + ".pkl", "wb") as f:
            f.write(data)
        out[name] = "ok"
    print(json.dumps(out))
    '''
)

CALLS = [
    ("double", (4,)),
    ("traced", ("abc",)),
    ("fib", (20,)),
    ("kind", (10,)),
    ("kind", ("s",)),
    ("hello", ("there",)),
    ("bound", (5,)),
    ("logged_add", (1, 2)),
]
EXPECTED = [
    ("marked", 8),
    ("traced", 3),
    6765,
    ("int", 55),
    "object",
    ("counted", 2, "hi there"),
    ("marked", 10),
    ("logged", None, 3),
]


@pytest.fixture(scope="module")
def payloads(tmp_path_factory):
    """Run the script once; return its dump report and directory."""
    directory = tmp_path_factory.mktemp("main_wrappers")
    report = json.loads(run_script(SCRIPT, directory).strip().splitlines()[-1])
    return report, directory


def test_picklable_copies_run_their_wrappers(child, payloads):
    """Every __main__ wrapper loads in a fresh interpreter and runs its wrapper code."""
    report, directory = payloads
    assert report["picklable"] == "ok"
    data = (directory / "picklable.pkl").read_bytes()
    assert child.run(wrapper_checks.call_each, data, CALLS) == EXPECTED


def test_picklable_main_class_methods_bind(child, payloads):
    """Methods of a __main__ class, wrapped every way, bind and run their wrappers there."""
    _, directory = payloads
    data = (directory / "picklable.pkl").read_bytes()
    assert child.run(wrapper_checks.exercise_shop, data) == {
        "price": ("marked", 6),
        "make": ("marked", 4),
        "counted_rate": ("counted", 1, 6),
        "free": ("counted", 1, 7),
        "tip": ("logged", "Shop", 5),
        "logged_rate": ("logged", "Shop", 4),
        "both": ("tally", 1, ("logged", "Shop", 9)),
        "total": 200,
        "name": ("price", "Shop.price"),
    }


def test_picklable_copy_keeps_metadata(child, payloads):
    """The copied wrapt wrapper keeps the function's name, qualname and doc."""
    _, directory = payloads
    data = (directory / "picklable.pkl").read_bytes()
    info = child.run(wrapper_checks.describe_item, data, "double")
    assert info["__name__"] == "double"
    assert info["__qualname__"] == "double"
    assert info["__doc__"] == "Doubles."
    assert info["signature"] == "(x)"
    assert info["type"] == "FunctionWrapper"


def test_cloudpickle_drops_the_wrapper(child, payloads):
    """cloudpickle 'succeeds' but loads the bare function: the wrapper is gone."""
    report, directory = payloads
    assert report["cloudpickle"] == "ok"
    data = (directory / "cloudpickle.pkl").read_bytes()
    assert child.run(wrapper_checks.call_with_pickle, data, (4,)) == 8  # not ("marked", 8)


@pytest.mark.parametrize("library", ["pickle", "dill"])
def test_pickle_and_dill_fail(payloads, library):
    """stdlib pickle and dill refuse the proxy outright."""
    report, _ = payloads
    assert report[library].startswith(
        "error: NotImplementedError: object proxy must define __reduce"
    )


def test_wrappers_of_a_class_with_setstate_load_elsewhere(child):
    """singledispatch and lru_cache of a class whose namespace defines
    ``__setstate__`` (random.Random's; every attrs slots class's) load in a fresh
    interpreter: they dumped, then failed to load in any process."""
    import functools
    import random

    dispatch = functools.singledispatch(random.Random)
    dispatch.register(str, lambda s: ("str", s))
    cached = functools.lru_cache(maxsize=None)(random.Random)
    data = picklable.dumps({"dispatch": dispatch, "cached": cached})
    calls = [("dispatch", (5,)), ("dispatch", ("s",)), ("cached", (7,))]
    made, text, other = child.run(wrapper_checks.call_each, data, calls)
    assert made.random() == random.Random(5).random()
    assert text == ("str", "s")
    assert other.random() == random.Random(7).random()
