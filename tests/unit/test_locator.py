"""Tests for `picklable._locator`."""

from __future__ import annotations

import sys
import types

import pytest

import picklable
from picklable import _locator
from picklable._locator import importable_by_own_name, locate
from picklable_testpkg import api


class TestImportableByOwnName:
    def test_plain_function(self):
        """A plain module function is importable by its own name."""
        assert importable_by_own_name(api.plain)

    def test_shadowed_function(self):
        """The function behind a no-wraps decorator is not (its name holds the wrapper)."""
        inner = api.add.__closure__[0].cell_contents
        assert not importable_by_own_name(inner)

    def test_locals_and_main(self):
        """<locals> qualnames and __main__ objects are never importable by name."""
        assert not importable_by_own_name(api.make_closure(1))
        fake = types.FunctionType(api.plain.__code__, {"__name__": "__main__"})
        fake.__module__ = "__main__"
        assert not importable_by_own_name(fake)


class TestLocate:
    @pytest.mark.parametrize(
        ("obj", "path"),
        [
            (api.add, ("add",)),
            (api.beat_interval_option.apply_function, ("beat_interval_option", "apply_function")),
            (api.counted_square.func, ("counted_square", "func")),
            (api.Frame.mean, ("Frame", "mean")),
            (api.Frame.Inner.count, ("Frame", "Inner", "count")),
            (api.Tools.scaled.__func__, ("Tools", "scaled", "__func__")),
            (api.add.__closure__[0].cell_contents, ("add", "__closure__", 0, "cell_contents")),
        ],
    )
    def test_paths(self, obj, path):
        """Each problem kind is found at the shortest identity-checked path."""
        assert locate(obj) == ("picklable_testpkg.api", path)

    def test_a_proxy_claiming_to_be_a_function(self, monkeypatch):
        """A module that holds a lazy proxy claiming the function class is indexed
        (dispatch on its real type: it has no __closure__)."""

        class Lazy:
            def __init__(self, target):
                self.target = target

            @property
            def __class__(self):
                return type(self.target)

            def __call__(self, *args):
                return self.target(*args)

        module = types.ModuleType("picklable_test_lazy_module")
        module.LAZY = Lazy(api.add)
        module.holder = Lazy(api.add)
        module.holder.inner = api.make_closure(2)
        monkeypatch.setitem(sys.modules, module.__name__, module)
        module.holder.inner.__module__ = module.__name__
        assert locate(module.holder.inner) == (module.__name__, ("holder", "inner"))

    def test_unexported_closure(self):
        """A closure nobody exports is not found."""
        assert locate(api.make_closure(1)) is None

    def test_reassigned_name_never_yields_another_object(self, monkeypatch):
        """After a module attribute changes, the old object is no longer located there."""
        original = api.Frame.mean
        assert locate(original) == ("picklable_testpkg.api", ("Frame", "mean"))
        replacement = api._make_stat("mean")  # __name__ matches the attribute it is set as
        monkeypatch.setattr(api.Frame, "mean", replacement)
        assert locate(original) is None  # stale hit rejected by the identity check
        assert locate(replacement) == ("picklable_testpkg.api", ("Frame", "mean"))
        back = picklable.loads(picklable.dumps(original))
        assert back is not replacement and back.__qualname__ == original.__qualname__

    def test_reassigned_to_unnamed_object_found_by_identity(self, monkeypatch):
        """A factory's product set where an earlier product was (under another
        __name__, the index not rebuilt) is still found there: the same object."""
        replacement = api._make_stat("mean", fix_name=False)  # __name__ is 'stat'
        locate(api.Frame.mean)
        monkeypatch.setattr(api.Frame, "mean", replacement)
        assert locate(replacement) == ("picklable_testpkg.api", ("Frame", "mean"))
        assert picklable.loads(picklable.dumps(replacement)) is replacement

    def test_unnamed_object_nowhere_ships_an_exact_copy(self):
        """A factory's product that no module holds is an exact copy, never another object."""
        orphan = api._make_stat("mean", fix_name=False)
        back = picklable.loads(picklable.dumps(orphan))
        assert back is not orphan and back is not api.Frame.mean
        assert (back.__qualname__, back.__name__) == (orphan.__qualname__, "stat")
        assert back(api.Frame([1])) == ("mean", [1], ())

    def test_attribute_added_later(self, monkeypatch):
        """A module that gains attributes after indexing is re-indexed."""
        fn = api.make_closure(42)
        assert locate(fn) is None
        monkeypatch.setattr(api, "late_addition", fn, raising=False)
        assert locate(fn) == ("picklable_testpkg.api", ("late_addition",))

    def test_class_attribute_added_later(self, monkeypatch):
        """A class that gains a factory-made method after indexing is re-indexed."""
        fn = api._make_stat("median")
        assert locate(fn) is None
        monkeypatch.setattr(api.Frame, "median", fn, raising=False)
        assert locate(fn) == ("picklable_testpkg.api", ("Frame", "median"))

    def test_sibling_module_of_package(self):
        """A factory in one module whose product is set on a class of another module."""
        from picklable_testpkg import siblings

        assert locate(siblings.Table.summary) == (
            "picklable_testpkg.siblings",
            ("Table", "summary"),
        )

    def test_clear_cache(self):
        """clear_cache forgets indexes; answers stay the same."""
        _locator.clear_cache()
        assert locate(api.add) == ("picklable_testpkg.api", ("add",))


class TestDescriptorsAndRelocatedClasses:
    def test_method_of_relocated_class(self):
        """A class whose __module__ names its package: its methods are still found."""
        from picklable_testpkg import Moved

        assert locate(Moved.build.__func__) == ("picklable_testpkg", ("Moved", "build", "__func__"))
        assert picklable.loads(picklable.dumps(Moved.build.__func__)) is Moved.build.__func__

    def test_property_by_identity(self):
        """A property living at Class.name ships by reference."""
        from picklable_testpkg import Moved

        prop = vars(Moved)["double"]
        assert picklable.loads(picklable.dumps(prop)) is prop

    def test_slot_descriptors(self):
        """getset and member descriptors (pickle cannot) ship as getattr(owner, name)."""
        import collections

        class Slotted:
            __slots__ = ("a",)

        assert (
            picklable.loads(picklable.dumps(collections.deque.maxlen)) is collections.deque.maxlen
        )
        assert (
            picklable.loads(picklable.dumps(api.Frame.__dict__["__dict__"]))
            is api.Frame.__dict__["__dict__"]
        )
        member = Slotted.a
        assert picklable.loads(picklable.dumps(member)) is member

    def test_bound_classmethod_rebuilt_by_getattr(self):
        """A method that getattr(owner, name) rebuilds ships as that getattr."""
        import pickletools

        from picklable_testpkg import Moved

        data = picklable.dumps(Moved.build)
        assert "getattr" in {arg for _, arg, _ in pickletools.genops(data) if isinstance(arg, str)}
        back = picklable.loads(data)
        assert back == Moved.build and back.__func__ is Moved.build.__func__
        # Over a no-wraps decorator the name is 'wrapper': the pieces travel instead.
        assert picklable.loads(picklable.dumps(api.Tools.scaled)) == api.Tools.scaled

    def test_name_mangled_method_ships_its_pieces(self):
        """A method whose name does not lead back ships as MethodType(func, self)."""

        class Private:
            def __hidden(self):
                return "hidden"

            def expose(self):
                return self.__hidden

        bound = Private().expose()
        assert bound.__func__.__name__ == "__hidden"
        assert picklable.loads(picklable.dumps(bound))() == "hidden"


class TestPackageSearchCache:
    """The package-wide search reads one id map per package, rebuilt only when the
    package's modules or their indexes change (it used to re-list sys.modules and
    consult every index for each factory-made function found nowhere)."""

    def test_reused_while_nothing_changes(self):
        from picklable_testpkg import siblings

        _locator.clear_cache()
        first = _locator._package_map("picklable_testpkg")
        assert id(siblings.Table.summary) in first
        assert _locator._package_map("picklable_testpkg") is first

    def test_rebuilt_when_a_module_of_the_package_is_imported(self, monkeypatch):
        _locator.clear_cache()
        first = _locator._package_map("picklable_testpkg")
        extra = types.ModuleType("picklable_testpkg._extra_for_test")

        def made_here():
            return 1

        made_here.__qualname__ = "factory.<locals>.made_here"
        extra.Holder = type("Holder", (), {"made_here": made_here, "__module__": extra.__name__})
        monkeypatch.setitem(sys.modules, extra.__name__, extra)
        second = _locator._package_map("picklable_testpkg")
        assert second is not first
        assert id(made_here) in second

    def test_rebuilt_when_an_index_of_the_package_is_rebuilt(self):
        _locator.clear_cache()
        first = _locator._package_map("picklable_testpkg")
        _locator._indexes.pop("picklable_testpkg.siblings")
        _locator._index_for("picklable_testpkg.siblings", revalidate=False)
        assert _locator._package_map("picklable_testpkg") is not first

    def test_closure_found_nowhere_goes_by_value(self):
        """A factory's closure on no class: searched, not found, shipped as a copy."""
        closure = api.make_closure(2)
        assert locate(closure) is None
        assert locate(closure) is None  # the cached map gives the same answer
        copy = picklable.loads(picklable.dumps(closure))
        assert copy is not closure and copy(1) == closure(1)


class TestIndexedPaths:
    """The index's table, revalidated once and read for many objects (a script's
    payload of closures): everything locate_in finds by the index is in it."""

    def test_holds_what_locate_in_finds(self, monkeypatch):
        module = types.ModuleType("picklable_paths_test")

        def factory(n):
            def made(x):
                return x + n

            return made

        class Holder:
            def method(self):
                return 1

            static = staticmethod(factory(1))

        module.factory = factory
        module.Holder = Holder
        module.kept = factory(3)  # a closure held under another name
        Holder.made = factory(5)  # a factory's product on a class
        Holder.__module__ = module.__name__
        monkeypatch.setitem(sys.modules, module.__name__, module)
        _locator.clear_cache()
        paths = _locator.indexed_paths(module.__name__)
        held = [factory, Holder, Holder.method, module.kept, Holder.made]
        for obj in [*held, vars(Holder)["static"].__func__]:
            assert paths[id(obj)] == _locator.locate_in(module.__name__, obj), obj
        stray = factory(4)  # nothing holds it
        assert id(stray) not in paths
        assert _locator.locate_in(module.__name__, stray) is None

    def test_a_new_table_when_the_module_changed(self, monkeypatch):
        module = types.ModuleType("picklable_paths_test2")
        monkeypatch.setitem(sys.modules, module.__name__, module)
        _locator.clear_cache()
        first = _locator.indexed_paths(module.__name__)
        module.added = lambda: 1
        second = _locator.indexed_paths(module.__name__)
        assert second is not first and id(module.added) in second

    def test_shortcuts_answer_as_the_general_rule(self):
        """The exact-type shortcuts of the index (issue 29: a script's first dump
        builds it) give the general tests' answers."""

        def general(obj):
            kinds = (types.FunctionType, type, classmethod, staticmethod, property)
            return isinstance(obj, kinds) or _locator._heap_callable(obj)

        samples = [sys, len, 1, 1.5, 2j, "s", b"b", True, None, (), [], {}, set(), frozenset()]
        samples += [api.plain, int, classmethod(api.plain), staticmethod(api.plain), property()]
        assert {type(o) for o in samples} == _locator._INDEXED_KINDS | _locator._PLAIN_KINDS
        for obj in samples:
            assert _locator._worth_indexing(obj) is general(obj), obj

    def test_function_wrapped_and_cells_are_indexed(self, monkeypatch):
        """A function's __wrapped__ (from its __dict__) and the function its cell
        holds are indexed under the paths that lead to them."""
        module = types.ModuleType("picklable_paths_test3")

        def inner(x):
            return x

        def outer(x):
            return inner(x)

        outer.__wrapped__ = api.plain
        module.outer = outer
        monkeypatch.setitem(sys.modules, module.__name__, module)
        _locator.clear_cache()
        paths = _locator.indexed_paths(module.__name__)
        assert paths[id(api.plain)] == ("outer", "__wrapped__")
        assert paths[id(inner)] == ("outer", "__closure__", 0, "cell_contents")

    def test_none_for_what_is_not_a_module(self, monkeypatch):
        monkeypatch.setitem(sys.modules, "picklable_not_a_module", object())
        assert _locator.indexed_paths("picklable_not_a_module") is None
        assert _locator.indexed_paths("picklable_never_imported") is None


class TestCallTypes:
    @pytest.mark.parametrize("t", [int, str, type, types.FunctionType, dict])
    def test_static_types_are_not_wrappers(self, t):
        assert not _locator.python_call_type(t)

    def test_python_call_is(self):
        class Wrapper:
            def __call__(self):
                return 1

        assert _locator.python_call_type(Wrapper)
        assert _locator._heap_callable(Wrapper())
