"""Tests for `picklable._reduce.wrappers`: wrapper kinds taken apart and rebuilt.

No sacred here: this file also runs in the wrapt 2.x environment (``.ci/run``).
In-process round trips check the rules; the ``child`` interpreter checks that
importable wrappers load as the very objects there and copies still run their
wrapper.
"""

from __future__ import annotations

import functools
import importlib
import pickle
import random
import sys
import threading

import pytest
import wrapt

import picklable
from picklable._diagnostics import culprit as _diagnose
from picklable._reduce import classes as _classes
from picklable._reduce import wrappers as _reduce_wrappers
from picklable_testpkg import wrapped as W
from support import wrapper_checks
from support.child import Child


def roundtrip(obj):
    return picklable.loads(picklable.dumps(obj))


class TestWraptProxies:
    """wrapt FunctionWrapper, BoundFunctionWrapper, ObjectProxy, @wrapt.decorator."""

    def test_stdlib_pickle_fails_on_wrapt_proxies(self):
        """The problem: stdlib pickle refuses any wrapt proxy."""
        local = W.make_wrapt_local(1)
        with pytest.raises(NotImplementedError, match="object proxy must define __reduce"):
            pickle.dumps(local)

    def test_proxies_recognised_by_exact_type(self):
        """A proxy claims to be a function; dispatch on type(obj) still finds it."""
        assert isinstance(W.double, type(W._square))  # the lie
        assert _reduce_wrappers.is_wrapt_proxy_type(type(W.double))
        assert _reduce_wrappers.is_wrapt_proxy_type(type(W.traced_square))
        assert not _reduce_wrappers.is_wrapt_proxy_type(type(W._square))

    @pytest.mark.parametrize(
        "obj",
        [
            W.double,
            W.tagged,
            W.traced_square,
            W.Service.__dict__["scale"],
            W.Service.__dict__["kind"],
        ],
        ids=["decorated", "decorator", "object-proxy", "method", "classmethod"],
    )
    def test_importable_proxy_is_identity(self, obj):
        """An importable proxy loads as the very same object."""
        assert roundtrip(obj) is obj

    def test_bound_function_wrapper_rebinds(self):
        """A BoundFunctionWrapper ships as its parent bound again to the instance."""
        service = W.Service()
        bound = roundtrip(service.scale)
        assert type(bound).__name__ == "BoundFunctionWrapper"
        assert bound(2) == ("tagged", 20)
        assert W.Service.kind() == roundtrip(W.Service.kind)() == ("tagged", "Service")
        assert roundtrip(W.Service.static)(4) == ("tagged", -4)

    def test_local_function_wrapper_copy_runs_wrapper(self):
        """A local @wrapt.decorator product is copied with its wrapper, closure included."""
        ident = W.make_wrapt_local(100)
        copy = roundtrip(ident)
        assert copy is not ident
        assert type(copy) is type(ident)
        assert copy(1) == ("shifted", 101)
        assert copy.__name__ == "ident" and copy.__qualname__ == ident.__qualname__

    def test_local_object_proxy_subclass_keeps_own_state(self):
        """An ObjectProxy subclass copy keeps its _self_ attributes on the proxy itself."""
        proxy = W.make_traced_local("L")
        copy = roundtrip(proxy)
        assert type(copy) is W.Traced
        assert copy._self_label == "L"
        assert copy(2) == ("L", 8)
        assert not hasattr(copy.__wrapped__, "_self_label")

    def test_plain_object_proxy_around_data(self):
        """A bare ObjectProxy around data is rebuilt around a copy of the data."""
        proxy = wrapt.ObjectProxy({"k": [1, 2]})
        copy = roundtrip(proxy)
        assert type(copy) is type(proxy)
        assert copy == {"k": [1, 2]} and copy["k"] == [1, 2]

    def test_copied_proxy_carries_state_set_through_it(self):
        """State set through a copied proxy onto an importable function travels with the copy."""

        def capture(func):
            func.config = {"a": 1}  # set on the importable function, as sacred does
            return wrapt.FunctionWrapper(
                func, lambda wrapped, instance, args, kwargs: ("cap", wrapped(*args))
            )

        proxy = capture(W._square)
        try:
            payload = picklable.dumps(proxy)
            del W._square.config  # the receiver's importable function has no config
            copy = picklable.loads(payload)
            assert copy(3) == ("cap", 9)
            assert copy.config == {"a": 1}
        finally:
            W._square.__dict__.pop("config", None)

    def test_main_style_decorator_object_ships(self):
        """A @wrapt.decorator decorator object itself (AdapterWrapper-like) is copyable when local."""

        def make():
            @wrapt.decorator
            def deco(wrapped, instance, args, kwargs):
                return ("deco", wrapped(*args, **kwargs))

            return deco

        deco = make()
        copy = roundtrip(deco)
        assert copy(len)("abc") == ("deco", 3)

    def test_wrapt_types_are_located(self):
        """wrapt's proxy types go by reference however their module misreports:
        compiled ones say builtins (wrapt 1) or _wrappers (wrapt 2), wrapt 1's
        pure-Python ones hold a property; wrapt 2's pure-Python ones name theirs."""
        t = type(W.double)
        assert roundtrip(t) is t
        module = t.__module__
        if type(module) is str and getattr(sys.modules.get(module), t.__name__, None) is t:
            assert _classes.locate_misnamed_type(t) is None  # pickle's own way finds it
            return
        found = _classes.locate_misnamed_type(t)
        assert found is not None
        module, path = found
        assert module.startswith("wrapt")
        assert getattr(importlib.import_module(module), path[0]) is t

    def test_unshippable_state_in_proxy_names_path(self):
        """A lock held inside a copied proxy's wrapped function is named by path."""

        def make():
            lock = threading.Lock()

            @W.tagged
            def guarded():
                with lock:
                    return 1

            return guarded

        with pytest.raises(picklable.PicklingError) as info:
            picklable.dumps({"job": make()})
        assert "_thread.lock" in str(info.value)
        assert "['job'].__wrapped__.__closure__[0].cell_contents" in info.value.path


class TestFunctools:
    """partial, partialmethod, lru_cache/cache, cached_property, property, singledispatch."""

    def test_importable_lru_cache_is_identity(self):
        """An importable lru_cache wrapper goes by reference."""
        assert roundtrip(W.fib) is W.fib
        assert roundtrip(W.cached_len) is W.cached_len

    def test_local_lru_cache_is_fresh_copy(self):
        """A local lru_cache wrapper goes by value; parameters kept, contents not."""
        plus, _, _ = W.make_functools_local(10)
        plus(1)
        plus(2)
        assert plus.cache_info().currsize == 2
        copy = roundtrip(plus)
        assert copy is not plus
        assert copy.cache_info().currsize == 0
        assert copy.cache_parameters() == {"maxsize": 8, "typed": False}
        assert copy(5) == 15
        assert copy.__qualname__ == plus.__qualname__
        assert copy.__wrapped__.__qualname__ == plus.__wrapped__.__qualname__

    def test_lru_cache_own_reduce_would_fail(self):
        """The problem: lru_cache's own __reduce__ goes by a name that does not exist."""
        plus, _, _ = W.make_functools_local(1)
        with pytest.raises((pickle.PicklingError, AttributeError)):
            pickle.dumps(plus)

    def test_local_singledispatch_registry_rebuilt(self):
        """A local singledispatch function keeps its registrations, cache empty."""
        _, kind, _ = W.make_functools_local(0)
        assert kind("ab") == ("str", 2)  # fills the dispatch cache (weak references)
        copy = roundtrip(kind)
        assert copy is not kind
        assert copy(1.5) == "object"
        assert copy("abc") == ("str", 3)
        assert set(copy.registry) == {object, str}
        assert copy.__qualname__ == kind.__qualname__

    def test_importable_singledispatch_is_identity(self):
        """An importable singledispatch function goes by reference."""
        assert roundtrip(W.describe) is W.describe
        assert roundtrip(W.describe)([1, "a"]) == ["int", "object"]

    def test_wrappers_of_a_class_with_setstate_load(self):
        """singledispatch, lru_cache and singledispatchmethod of a class whose
        namespace defines ``__setstate__`` load (they dumped, then never loaded:
        update_wrapper copies the class's ``__dict__`` into the rebuilt wrapper,
        and pickle's BUILD called that ``__setstate__`` with the wrapper's state)."""

        class Slotted:  # an attrs slots class has these in its namespace
            __slots__ = ("x",)

            def __init__(self, x=0):
                self.x = x

            def __getstate__(self):
                return (self.x,)

            def __setstate__(self, state):
                (self.x,) = state

        for cls in (random.Random, Slotted):
            dispatch = functools.singledispatch(cls)
            dispatch.register(str, lambda s: ("str", s))
            dispatch.tag = "mine"
            copy = roundtrip(dispatch)
            assert copy is not dispatch
            assert copy("a") == ("str", "a")
            assert type(copy(3)).__qualname__ == cls.__qualname__
            assert copy.tag == "mine"
            assert copy.__qualname__ == dispatch.__qualname__
            assert sorted(vars(copy)) == sorted(vars(dispatch))

            cached = functools.lru_cache(maxsize=None)(cls)
            cached.tag = "mine"
            copy = roundtrip(cached)
            assert copy is not cached
            assert type(copy(3)).__qualname__ == cls.__qualname__
            assert copy.tag == "mine"
            assert sorted(vars(copy)) == sorted(vars(cached))

            class K:
                m = functools.singledispatchmethod(cls)

            assert type(roundtrip(K).__dict__["m"].dispatcher(3)).__qualname__ == cls.__qualname__

        assert roundtrip(functools.singledispatch(random.Random))(5).random() == (
            random.Random(5).random()
        )

    def test_cached_property_lock_not_shipped(self):
        """A cached_property copy gets a new lock (3.11) and its name, never the old lock."""
        _, _, Box = W.make_functools_local(7)
        prop = Box.__dict__["total"]
        copy = roundtrip(prop)
        assert copy.attrname == "total"
        assert copy.func.__qualname__ == prop.func.__qualname__
        if hasattr(prop, "lock"):
            assert copy.lock is not prop.lock
            assert type(copy.lock) is type(prop.lock)

    def test_local_class_with_cached_property_and_property_subclass(self):
        """A local class with a cached_property and a property subclass works after loading."""
        _, _, Box = W.make_functools_local(7)
        BoxCopy = roundtrip(Box)
        box = BoxCopy(3)
        assert box.total == 10
        assert box.label == "box 3"
        assert type(BoxCopy.__dict__["label"]).__name__ == "described"

    def test_property_subclass_keeps_accessors(self):
        """A property subclass keeps fget (pickle's default drops the C slots)."""
        _, _, Box = W.make_functools_local(0)
        prop = Box.__dict__["label"]
        copy = roundtrip(prop)
        assert copy.fget is not None
        assert copy.fget.__qualname__ == prop.fget.__qualname__
        assert copy.__doc__ == prop.__doc__

    def test_partial_and_partialmethod(self):
        """partial of a local function and an importable class's partialmethod both ship."""
        ident = W.make_wrapt_local(0)
        part = roundtrip(functools.partial(ident, 4))
        assert part() == ("shifted", 4)
        assert roundtrip(W.Shape(2)).scaled() == 6
        method = roundtrip(W.Shape.__dict__["scaled"])
        assert isinstance(method, functools.partialmethod)

    def test_bound_methods_of_wrappers(self):
        """Bound methods of lru_cache wrappers and class-based decorators ship."""
        shape = W.Shape(2)
        assert roundtrip(shape.volume)(5) == 20
        stacked = W.Stacked()
        assert roundtrip(stacked.counted_tagged)(3) == ("counted", ("tagged", 3))


class TestClassBasedDecorators:
    """Callable objects holding a function, stacked with classmethod/staticmethod."""

    def test_importable_instances_are_identity(self):
        """Importable class-based decorator instances go by reference, however stacked."""
        for obj in (
            W.counted_add,
            W.Stacked.__dict__["outer_classmethod"].__func__,
            W.Stacked.__dict__["outer_staticmethod"].__func__,
            W.Stacked.__dict__["counted_tagged"],
            W.Stacked.__dict__["tagged_counted"],
        ):
            assert roundtrip(obj) is obj

    def test_stacked_orders_call_through(self):
        """Every stacking order still calls the wrappers in order after loading."""
        S = roundtrip(W.Stacked)
        assert S is W.Stacked
        assert S.outer_classmethod(1) == ("counted", 6)
        assert S.outer_staticmethod(1) == ("counted", -1)
        assert S().tagged_counted(2) == ("tagged", ("counted", 2))

    def test_local_class_based_decorator_copy_keeps_state(self):
        """A local class-based decorator instance is copied with its state."""

        def make():
            @W.Counted
            def hello(name):
                return f"hi {name}"

            return hello

        hello = make()
        hello("a")
        copy = roundtrip(hello)
        assert copy.calls == 1
        assert copy("b") == ("counted", "hi b")
        assert copy.calls == 2 and hello.calls == 1


class TestWithState:
    """What travels of a wrapper found by reference: its state by default, all of
    it with with_state, none of it with without_state."""

    def test_default_state_travels_but_what_cannot_pickle(self, monkeypatch):
        """A wrapper found by reference carries what the program set on it; a lock
        on it stays behind (the receiver's own is the only meaningful one)."""
        assert _diagnose.state_left_behind(W.counted_add) == []
        assert _diagnose.state_left_behind(W.make_wrapt_local(0)) == []
        monkeypatch.setattr(W.counted_add, "lock", threading.Lock(), raising=False)
        assert _diagnose.state_left_behind(W.counted_add) == ["lock"]

    def test_functions_by_their_own_name_carry_nothing(self, monkeypatch):
        """A function importable by its own name goes as pickle sends it: by name alone."""
        from picklable_testpkg import api

        monkeypatch.setattr(api.plain, "config", 30, raising=False)
        assert _diagnose.state_left_behind(api.plain) == ["config"]

    def test_with_state_loads_the_object_itself(self):
        """with_state(obj) loads as obj (by reference), never as the marker."""
        before = W.counted_add.calls
        try:
            loaded = roundtrip({"f": picklable.with_state(W.counted_add)})["f"]
            assert loaded is W.counted_add
            assert W.counted_add.calls == before
        finally:
            W.counted_add.calls = before

    def test_with_state_on_a_copy_changes_nothing(self):
        """A copy carries its state anyway: the marker just loads as the copy."""
        ident = W.make_wrapt_local(3)
        assert roundtrip(picklable.with_state(ident))(1) == ("shifted", 4)

    def test_with_state_repr(self):
        """The marker says what it is."""
        assert repr(picklable.with_state(1)) == "picklable.with_state(1)"

    def test_state_in_child(self, child):
        """In a fresh interpreter the importable wrapper's state travels by default
        and with with_state, on a copy (the child's own object keeps its own); with
        without_state the child's own object comes back, as it is."""
        before = W.counted_add.calls
        W.counted_add.calls = 41
        try:
            default = picklable.dumps(W.counted_add)
            carried = picklable.dumps(picklable.with_state(W.counted_add))
            alone = picklable.dumps(picklable.without_state(W.counted_add))
        finally:
            W.counted_add.calls = before
        assert child.run(wrapper_checks.state_after_load, alone, ["calls"]) == {"calls": 0}
        assert child.run(wrapper_checks.state_after_load, default, ["calls"]) == {"calls": 41}
        assert child.run(wrapper_checks.state_after_load, carried, ["calls"]) == {"calls": 41}
        assert child.run(wrapper_checks.state_after_load, alone, ["calls"]) == {"calls": 0}
        for payload, own in ((default, False), (carried, False), (alone, True)):
            assert (
                child.run(
                    wrapper_checks.loaded_is, payload, "picklable_testpkg.wrapped", "counted_add"
                )
                is own
            )

    def test_without_state_repr_and_copy(self):
        """without_state says what it is; on a copy it changes nothing."""
        assert repr(picklable.without_state(1)) == "picklable.without_state(1)"
        assert roundtrip(picklable.without_state(W.make_wrapt_local(3)))(1) == ("shifted", 4)


class TestInChild:
    """Importable wrappers are identity in a fresh interpreter; copies run their wrapper."""

    @pytest.mark.parametrize(
        "path",
        [
            "double",
            "tagged",
            "traced_square",
            "fib",
            "cached_len",
            "describe",
            "counted_add",
            "Service.scale",
            "Service.kind",
            "Stacked.tagged_counted",
            "Stacked.counted_tagged",
        ],
    )
    def test_importable_is_identity(self, child, path, monkeypatch):
        """Loads as the child's own object, where its state is what the child's has
        (a counter other tests advanced here is set back to its import value)."""
        obj = W
        for part in path.split("."):
            obj = vars(obj)[part] if isinstance(obj, type) else getattr(obj, part)
        if "calls" in getattr(obj, "__dict__", {}):
            monkeypatch.setattr(obj, "calls", 0)
        assert child.run(
            wrapper_checks.loaded_is, picklable.dumps(obj), "picklable_testpkg.wrapped", path
        )

    def test_copies_run_their_wrappers(self, child):
        """Local wrappers of every kind load and run their wrapper's code there."""
        plus, kind, Box = W.make_functools_local(10)
        objs = {
            "wrapt": W.make_wrapt_local(5),
            "proxy": W.make_traced_local("P"),
            "lru": plus,
            "dispatch": kind,
            "box": lambda n: (Box(n).total, Box(n).label),
            "bound": W.Service().scale,
            "partial": functools.partial(W.make_wrapt_local(1), 1),
        }
        calls = [
            ("wrapt", (1,)),
            ("proxy", (2,)),
            ("lru", (1,)),
            ("dispatch", ("xy",)),
            ("box", (2,)),
            ("bound", (3,)),
            ("partial", ()),
        ]
        assert child.run(wrapper_checks.call_each, picklable.dumps(objs), calls) == [
            ("shifted", 6),
            ("P", 8),
            11,
            ("str", 12),
            (12, "box 2"),
            ("tagged", 30),
            ("shifted", 2),
        ]

    def test_same_wrapt_in_child(self, child):
        """The child runs the same wrapt as this process (1.x here, 2.x in .venv-wrapt2)."""
        assert child.run(wrapper_checks.wrapt_version) == wrapt.__version__


@pytest.fixture(scope="module")
def pure_child():
    """A fresh interpreter whose wrapt uses its pure-Python proxies."""
    handle = Child(env={"WRAPT_DISABLE_EXTENSIONS": "1"})
    yield handle
    handle.close()


class TestPurePythonWrapt:
    """wrapt's pure-Python proxies, its fallback where no compiled wheel fits the
    Python (wrapt 1.17 on 3.15): their classes hold a property as __module__."""

    def test_the_child_uses_them(self, pure_child):
        """WRAPT_DISABLE_EXTENSIONS=1 gives the child the pure-Python classes."""
        assert pure_child.run(wrapper_checks.wrapt_compiled) is False

    def test_the_rules_hold_there(self, pure_child):
        """Identity, copies that run their wrapper, own state, rebinding, explain."""
        found, _ = pure_child.run(wrapper_checks.wrapt_rules_here)
        assert found == {
            "importable": True,
            "local": ("shifted", 6),
            "proxy": (True, "P", ("P", 8)),
            "proxy state on the proxy": False,
            "bound": ("tagged", 30),
            "classmethod": ("tagged", "Service"),
            "partial": ("shifted", 2),
            "explained": "wrapt.wrappers.BoundFunctionWrapper",
        }

    def test_payloads_cross_implementations(self, pure_child):
        """Made with the pure-Python proxies, loaded with this process's wrapt, and back."""
        _, payload = pure_child.run(wrapper_checks.wrapt_rules_here)
        objs = picklable.loads(payload)
        assert objs["wrapt"](1) == ("shifted", 8)
        assert type(objs["proxy"]) is W.Traced and objs["proxy"](2) == ("Q", 8)
        assert objs["bound"](1) == ("tagged", 10)
        assert pure_child.run(
            wrapper_checks.call_each, picklable.dumps(objs), [("wrapt", (2,)), ("proxy", (1,))]
        ) == [("shifted", 9), ("Q", 1)]


class _BoundCall:
    """What a dispatcher's descriptor binds: a new one at each access, holding
    what cannot travel (plum's bound functions, compiled by mypyc, cannot be
    rebuilt from their state either)."""

    def __init__(self) -> None:
        self.__name__ = "scale"  # the name it is bound under, as a function's
        self.lock = threading.Lock()

    def __call__(self, instance: object, x: int) -> tuple[str, int]:
        return ("called", x)


class _Dispatcher:
    def __get__(self, instance: object, owner: type | None = None) -> object:
        if instance is None:
            return self
        import types

        return types.MethodType(_BoundCall(), instance)


class _Shape:
    scale = _Dispatcher()


class _ModuleName(str):  # noqa: SLOT000 - as the library it stands for
    """A ``__module__`` that is a str subclass (plum's ``_ModuleDescriptor``)."""


class _OddlyNamed:
    pass


_OddlyNamed.__module__ = _ModuleName(__name__)


class TestMethodsAsPickleShipsThem:
    def test_a_method_a_descriptor_makes_anew_goes_by_its_name(self):
        """getattr(self, name) makes another bound callable of the same kind: where
        the one given cannot travel, pickle's own reduction (getattr) is used."""
        method = _Shape().scale
        assert pickle.loads(pickle.dumps(method))(2) == ("called", 2)
        assert picklable.loads(picklable.dumps(method))(2) == ("called", 2)

    def test_a_class_whose_module_is_a_str_subclass(self):
        """Its reference names its module with an exact str (STACK_GLOBAL needs one)."""
        assert picklable.loads(picklable.dumps(_OddlyNamed)) is _OddlyNamed
        assert picklable.loads(picklable.dumps([_OddlyNamed()]))[0].__class__ is _OddlyNamed
