"""Tests for `picklable._reduce.type_cache`: fast for the hook, and it keeps no
class alive that the program let go of."""

from __future__ import annotations

import gc
import pickle
import sys
import types
import weakref
from collections.abc import Iterator

import pytest

import picklable
from picklable import _locator
from picklable._reduce import type_cache

SCRIPT = "__mp_main__"  # a script module name, put in place by the fixture


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    """A module in a script's place (``__mp_main__``, as in a spawn worker)."""
    module = types.ModuleType(SCRIPT)
    monkeypatch.setitem(sys.modules, SCRIPT, module)
    yield module
    module.__dict__.clear()
    gc.collect()


def define(module: types.ModuleType, source: str) -> None:
    exec(compile(source, "<script>", "exec"), module.__dict__)


class TestLasting:
    def test_static_types_last(self):
        """A C type is held by the type itself."""
        picklable.dumps(range(3))
        assert range in type_cache.LASTING
        assert id(range) not in type_cache.HANDLERS

    def test_a_script_class_lasts_while_the_script_binds_it(self, script):
        """A script's top-level class is held by the type; when the script drops
        it, the next full collection frees it and the cache forgets it."""
        define(script, "class Point:\n    def __init__(self):\n        self.x = 1\n")
        cls = script.Point
        assert picklable.dumps(cls())
        assert cls in type_cache.LASTING
        assert type_cache._release_dropped in gc.callbacks
        ref = weakref.ref(cls)
        del cls, script.Point
        gc.collect()
        assert ref() is None
        assert not any(t.__name__ == "Point" and t.__module__ == SCRIPT for t in type_cache.LASTING)

    def test_a_script_class_still_used_is_kept_by_its_users_only(self, script):
        """Dropped by the script but with an instance alive: let go by the
        cache, classified again (by id, weakly) when its instance ships again."""
        define(script, "class Point:\n    pass\n")
        instance = script.Point()
        picklable.dumps(instance)
        del script.Point
        gc.collect()
        assert type(instance) not in type_cache.LASTING
        assert picklable.dumps(instance)
        assert id(type(instance)) in type_cache.HANDLERS

    def test_a_nested_script_class_goes_by_id(self, script):
        """Only top-level names are read from the script's namespace."""
        define(script, "class Outer:\n    class Inner:\n        pass\n")
        inner = script.Outer.Inner
        picklable.dumps(inner())
        assert inner not in type_cache.LASTING
        assert id(inner) in type_cache.HANDLERS

    def test_the_callback_runs_no_code_in_the_scripts_place(self, script, monkeypatch):
        """Something that is no module in the script's place is not asked."""

        class Trap:
            def __getattr__(self, name):
                raise AssertionError(f"the collector's callback read {name}")

        define(script, "class Gone:\n    pass\n")
        picklable.dumps(script.Gone())  # stored as the script's, the way dumps stores it
        assert (SCRIPT, "Gone") in type_cache._script_names
        monkeypatch.setitem(sys.modules, SCRIPT, Trap())
        type_cache._release_dropped("start", {"generation": 2})
        assert (SCRIPT, "Gone") not in type_cache._script_names


class CountingMeta(type):
    calls = 0

    def __hash__(cls) -> int:
        CountingMeta.calls += 1
        return id(cls)

    def __eq__(cls, other: object) -> bool:
        return cls is other


class Counted(metaclass=CountingMeta):
    pass


class TestByName:
    def test_functions_and_plain_classes_are_keyed_by_themselves(self):
        picklable.dumps([_locator.by_name_key, TestByName])
        assert _locator.by_name.get(_locator.by_name_key) is _locator.by_name_key
        assert _locator.by_name.get(TestByName) is TestByName

    def test_clear_caches_lets_go_of_metaclasses_it_learnt(self):
        """A metaclass that keeps ``type.__hash__`` is learnt on first sight and
        forgotten by ``clear_caches()``; its classes still ship by name after."""

        class PlainMeta(type):
            pass

        Keyed = PlainMeta("Keyed", (), {"__module__": __name__, "__qualname__": "Keyed"})
        globals()["Keyed"] = Keyed
        try:
            assert pickle.loads(picklable.dumps(Keyed)) is Keyed
            assert PlainMeta in _locator.identity_hashed
            picklable.clear_caches()
            assert PlainMeta not in _locator.identity_hashed
            assert _locator.identity_hashed == {types.FunctionType, type}
            assert pickle.loads(picklable.dumps(Keyed)) is Keyed
            assert _locator.by_name.get(Keyed) is Keyed
        finally:
            del globals()["Keyed"]

    def test_a_metaclass_with_its_own_hash_is_never_asked(self):
        """A class whose metaclass defines ``__hash__`` is looked up by id: its
        dumps, by reference, run none of the metaclass's code (as pickle's)."""
        picklable.dumps(Counted)
        CountingMeta.calls = 0
        for _ in range(3):
            assert pickle.loads(picklable.dumps(Counted)) is Counted
        assert CountingMeta.calls == 0
        assert _locator.by_name.get(id(Counted)) is Counted
