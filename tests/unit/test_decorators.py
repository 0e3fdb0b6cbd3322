"""Tests for `picklable._decorators`: the decorator toolkit (`picklable.decorator`,
`picklable.Wrapper`)."""

from __future__ import annotations

import functools
import inspect
import pickle
import sys

import pytest
import wrapt

import picklable
from picklable_testpkg import wrapped as W
from support import wrapper_checks


def roundtrip(obj):
    return picklable.loads(picklable.dumps(obj))


class TestDecorator:
    """`picklable.decorator`: a wrapper(wrapped, instance, args, kwargs) becomes a decorator."""

    def test_calls_wrapper_with_no_instance(self):
        """A decorated function calls the wrapper with instance None."""
        assert W.add(2, 3) == ("logged", None, 5)

    def test_keeps_metadata(self):
        """__name__, __qualname__, __module__, __doc__, __wrapped__ and the signature are kept."""
        assert W.add.__name__ == "add"
        assert W.add.__qualname__ == "add"
        assert W.add.__module__ == "picklable_testpkg.wrapped"
        assert W.add.__doc__ == "Adds two numbers."
        assert W.add.__wrapped__.__code__.co_name == "add"
        # The fixture module has `from __future__ import annotations`: strings.
        assert str(inspect.signature(W.add)) == "(x: 'int', y: 'int' = 1) -> 'int'"

    def test_decorator_keeps_its_own_metadata(self):
        """The decorator object itself looks like the wrapper function."""
        assert W.logged.__name__ == "logged"
        assert W.logged.__doc__ == "A toolkit decorator: reports the instance it was bound to."

    def test_instance_method_gets_instance(self):
        """Reached through an instance, the wrapper gets it as `instance` and args without it."""
        account = W.Account(10)
        assert account.deposit(5) == ("logged", "Account", 15)
        assert str(inspect.signature(account.deposit)) == "(amount)"

    def test_method_through_class_finds_instance(self):
        """Account.deposit(account, 5) passes the instance as with wrapt."""
        assert W.Account.deposit(W.Account(1), 5) == ("logged", "Account", 6)

    def test_over_classmethod_gets_class(self):
        """Over classmethod, the wrapper gets the class as `instance` on every Python."""
        assert W.Account.create(3) == W.Account(0).create(3) == ("logged", "Account", 3)

    def test_under_classmethod_per_version(self):
        """Under classmethod, the class is `instance` until Python 3.13, which
        dropped classmethod's binding of what it wraps: then None, the class in args."""
        who = "Account" if sys.version_info < (3, 13) else None
        assert W.Account.interest(3) == W.Account(0).interest(3) == ("logged", who, 6)

    @pytest.mark.parametrize("via", ["class", "instance"])
    @pytest.mark.parametrize("kind", ["decorator", "Wrapper"])
    def test_classmethod_orders_see_what_wrapt_sees(self, kind, via):
        """Under and over classmethod, both toolkit kinds: the wrapper sees the
        instance and arguments a @wrapt.decorator wrapper sees, on every Python."""
        seen = []

        def record(wrapped, instance, args, kwargs):
            seen.append((instance, args))
            return wrapped(*args, **kwargs)

        class Recorded(picklable.Wrapper):
            def call(self, wrapped, instance, args, kwargs):
                return record(wrapped, instance, args, kwargs)

        def observed(deco):
            class Made:
                @classmethod
                @deco
                def under(cls, x):
                    return cls, x

                @deco
                @classmethod
                def over(cls, x):
                    return cls, x

            seen.clear()
            target = Made if via == "class" else Made()
            assert target.under(1) == (Made, 1) and target.over(2) == (Made, 2)
            cls = lambda v: "cls" if v is Made else v  # noqa: E731
            return [(cls(instance), tuple(map(cls, args))) for instance, args in seen]

        toolkit = picklable.decorator(record) if kind == "decorator" else Recorded
        if sys.version_info < (3, 13):
            under = ("cls", (1,))
        else:  # classmethod calls what it wraps as a plain function (gh-89519)
            under = (None, ("cls", 1))
        assert observed(toolkit) == observed(wrapt.decorator(record)) == [under, ("cls", (2,))]

    @pytest.mark.parametrize("name", ["fee", "tax"])
    def test_staticmethod_either_order_gets_none(self, name):
        """Over or under staticmethod, the wrapper gets instance None."""
        assert getattr(W.Account, name)(2)[1] is None
        assert getattr(W.Account(0), name)(2)[1] is None

    def test_class_decorated(self):
        """A decorated class is called through the wrapper and keeps its signature."""
        tag, who, point = W.Point(1, 2)
        assert (tag, who, point.x, point.y) == ("logged", None, 1, 2)
        assert str(inspect.signature(W.Point)) == "(x, y=0)"
        assert W.Point.__name__ == "Point"

    def test_stacks_with_wrapper_classes_both_orders(self):
        """Toolkit decorators stack with class-based ones in either order."""
        account = W.Account(4)
        assert account.tallied(2) == ("tally", ("logged", "Account", 8))
        assert account.logged_tally(1)[0] == "logged"
        assert account.logged_tally(1)[2] == ("tally", 3)

    def test_stacks_with_functools(self):
        """A toolkit decorator over lru_cache and under functools.wraps-style decorators."""
        cached = W.logged(functools.lru_cache(maxsize=None)(lambda x: x * 2))
        assert cached(4) == ("logged", None, 8)
        assert cached.__wrapped__.cache_info().misses == 1

    def test_decorator_as_method(self):
        """A decorator written as a method binds to its instance."""

        class Registry:
            def __init__(self):
                self.seen = []

            @picklable.decorator
            def record(self, wrapped, instance, args, kwargs):
                self.seen.append(args)
                return wrapped(*args, **kwargs)

        registry = Registry()
        assert registry.record(len)("ab") == 2
        assert registry.seen == [("ab",)]

    def test_rejects_non_callable(self):
        """A wrapper that is not callable is refused at once."""
        with pytest.raises(TypeError, match="needs a callable wrapper"):
            picklable.decorator(42)  # type: ignore[arg-type]


class TestWrapper:
    """`picklable.Wrapper`: the base class for class-based decorators."""

    def test_state_on_self(self):
        """A subclass keeps state on self and sees every call."""
        tally = W.Tally(lambda x: x + 1)
        assert tally(1) == ("tally", 2)
        assert tally(2) == ("tally", 3)
        assert tally.calls == 2

    def test_metadata_and_signature(self):
        """Name, qualname, doc and signature are the wrapped function's."""
        assert W.negate.__name__ == "negate"
        assert W.negate.__qualname__ == "negate"
        assert inspect.signature(W.negate) == inspect.signature(W.negate.__wrapped__)
        assert list(inspect.signature(W.negate).parameters) == ["x"]

    def test_default_call_passes_through(self):
        """The base class alone just calls what it wraps."""
        assert picklable.Wrapper(len)("abc") == 3

    def test_bound_wrapper_forwards_attributes(self):
        """A bound wrapper shows its parent's metadata and state."""
        bound = W.Account(1).tallied
        assert bound.__name__ == "tallied"
        assert bound.calls == W.Account.__dict__["tallied"].calls

    def test_method_binding_passes_instance_and_shows_state(self):
        """A Wrapper subclass over a method gets the instance; the bound wrapper shows its state."""

        class Seen(picklable.Wrapper):
            def call(self, wrapped, instance, args, kwargs):
                self.last = instance
                return wrapped(*args, **kwargs)

        class Box:
            @Seen
            def size(self, extra):
                return 3 + extra

        box = Box()
        assert box.size(1) == 4
        assert box.size.last is box
        assert Box.size(box, 2) == 5 and Box.__dict__["size"].last is box
        assert str(inspect.signature(box.size)) == "(extra)"

    def test_decorator_products_are_functions_in_class(self):
        """A decorator product over a method leaves a real function in the class (C binding)."""
        entry = W.Account.__dict__["deposit"]
        assert type(entry).__name__ == "function"
        assert entry.__qualname__ == "Account.deposit"
        assert entry.__wrapped__.__qualname__ == "Account.deposit"
        assert type(W.Account(1).deposit).__name__ == "method"

    def test_product_set_after_class_creation_binds(self):
        """A product assigned to a class later still binds and passes the instance."""

        class Late:
            pass

        Late.method = W.logged(lambda self, x: x * 2)
        assert Late().method(4) == ("logged", "Late", 8)

    def test_bound_wrappers_compare_by_parent_and_instance(self):
        """Two bindings to the same instance are equal, as bound methods are."""
        account = W.Account(1)
        assert account.logged_tally == account.logged_tally
        assert hash(account.logged_tally) == hash(account.logged_tally)
        assert account.logged_tally != W.Account(1).logged_tally
        assert account.deposit == account.deposit

    def test_set_name_reaches_wrapped_descriptor(self):
        """A Wrapper around a cached_property gives it its name."""

        class Holder:
            @picklable.Wrapper
            @functools.cached_property
            def value(self):
                return 5

        assert Holder.__dict__["value"].__wrapped__.attrname == "value"


class TestShipping:
    """Products ship by reference when importable, by value otherwise, with no user code."""

    @pytest.mark.parametrize(
        "obj",
        [
            W.add,
            W.negate,
            W.logged,
            W.Point,
            W.Account.__dict__["deposit"],
            W.Account.__dict__["tallied"],
        ],
        ids=["function", "wrapper-class", "decorator", "class", "method", "stacked"],
    )
    def test_importable_is_identity(self, obj):
        """An importable product loads as the very same object."""
        assert roundtrip(obj) is obj

    def test_stdlib_pickle_by_reference(self):
        """Importable products ship with plain pickle too (they are where their name says)."""
        for obj in (W.add, W.negate, W.logged):
            assert pickle.loads(pickle.dumps(obj)) is obj

    def test_bound_product_rebinds(self):
        """A bound product ships as its parent bound again to (a copy of) the instance."""
        bound = roundtrip(W.Account(7).deposit)
        assert bound(1) == ("logged", "Account", 8)
        assert roundtrip(W.Account.create)(2) == ("logged", "Account", 2)
        under = roundtrip(W.Account.interest)  # under classmethod: see TestDecorator
        assert under == W.Account.interest
        assert under(2) == ("logged", "Account" if sys.version_info < (3, 13) else None, 4)

    def test_local_products_by_value(self):
        """Local products (closure over a local decorator) are exact copies."""
        inc, Local = W.make_toolkit_local(10)
        copy = roundtrip(inc)
        assert copy is not inc
        assert copy(1) == ("times", 20)
        assert copy.__qualname__ == inc.__qualname__
        LocalCopy = roundtrip(Local)
        assert LocalCopy().method(2) == ("times", 20)
        assert LocalCopy.cm(3) == ("times", 30)

    def test_state_of_a_copy_travels(self):
        """A copied Wrapper instance carries its state (the policy's second case)."""
        tally = W.Tally(lambda: 1)
        tally()
        assert roundtrip(tally).calls == 1

    def test_importable_in_child_is_identity(self, child, monkeypatch):
        """In a fresh interpreter, importable products are that interpreter's objects
        (where their state is what the interpreter's own have: a counter other
        tests advanced here is set back to its import value)."""
        for path in ("add", "negate", "Point", "Account.deposit", "Account.tallied"):
            obj = W
            for part in path.split("."):
                obj = vars(obj)[part] if isinstance(obj, type) else getattr(obj, part)
            if "calls" in getattr(obj, "__dict__", {}):
                monkeypatch.setattr(obj, "calls", 0)
            assert child.run(
                wrapper_checks.loaded_is, picklable.dumps(obj), "picklable_testpkg.wrapped", path
            )

    def test_local_products_run_in_child(self, child):
        """Local products run their wrapper in a fresh interpreter."""
        inc, Local = W.make_toolkit_local(3)
        objs = {"inc": inc, "method": Local().method, "cm": Local.cm}
        calls = [("inc", (1,)), ("method", (2,)), ("cm", (5,))]
        assert child.run(wrapper_checks.call_each, picklable.dumps(objs), calls) == [
            ("times", 6),
            ("times", 6),
            ("times", 15),
        ]
