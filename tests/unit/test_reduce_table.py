"""Tests for `picklable._reduce.table`: the one table of kinds, read everywhere."""

from __future__ import annotations

import gc
import pickle
import sys
import types
import weakref
from typing import Any

import pytest

import picklable
from picklable import _reconstruct
from picklable._diagnostics import explain as _explain
from picklable._diagnostics.culprit import decide, shipping
from picklable._reduce import table, type_cache
from picklable._reduce.wrappers import WithState
from support.corpus import corpus
from support.payload_oracle import top_operation

CORPUS = list(corpus())


def expected_how(made: tuple[str, Any], loaded: Any, original: Any) -> set[str]:
    """The verdicts a payload whose top object was made this way allows."""
    how, what = made
    if how == "global":
        return {"reference"}
    if how == "data":
        return {"data"}
    declared = _reconstruct.rebuilder_of(what)
    if declared is None:
        # Made by a class, copyreg.__newobj__, getattr, types.MethodType ...:
        # rebuilt from data or from pieces; a reference only if it is the object.
        return {"data", "wrapper"} | ({"reference"} if loaded is original else set())
    if declared.function is _reconstruct._with_state:
        return {"reference", "value", "wrapper", "data"}  # its object's own verdict
    return {declared.role if declared.role != "part" else "data"}


def check_verdict(name: str, obj: Any) -> None:
    verdict = shipping(obj)
    if verdict.how == "fails":
        with pytest.raises(picklable.PicklingError):
            picklable.dumps(obj)
        return
    try:
        payload = picklable.dumps(obj)
    except picklable.PicklingError:
        # A piece fails (the verdict is about the object itself): explain says so.
        assert not picklable.explain(obj).ships, name
        return
    loaded, made = top_operation(payload)
    assert verdict.how in expected_how(made, loaded, obj), (name, verdict, made)
    if verdict.how == "reference":
        assert loaded is (obj.obj if isinstance(obj, WithState) else obj), (name, verdict)
        if made[0] == "global":
            assert verdict.via == made[1], (name, verdict, made)


class TestVerdicts:
    @pytest.mark.parametrize(("name", "obj"), CORPUS, ids=[name for name, _ in CORPUS])
    def test_root_verdict_is_what_the_payload_does(self, name, obj):
        """explain's verdict for an object is what its payload does when loaded."""
        check_verdict(name, obj)

    @pytest.mark.parametrize(("name", "obj"), CORPUS, ids=[name for name, _ in CORPUS])
    def test_every_node_verdict_is_what_its_payload_does(self, name, obj):
        """The same for every part explain tells, down the tree."""
        builder = _explain._Builder(max_nodes=500)
        builder.build(obj, "root")
        parts = list(builder.parts.values())
        assert parts
        for part, node in parts:
            if node.how != "fails":
                check_verdict(node.path, part)

    def test_the_corpus_covers_every_verdict(self):
        """Reference, value, wrapper and data verdicts all occur in the corpus."""
        seen = {shipping(obj).how for _, obj in CORPUS}
        assert {"reference", "value", "wrapper", "data"} <= seen

    def test_a_main_singledispatch_is_a_rebuild(self):
        """A singledispatch function copied by value is told as what it is: rebuilt
        (explain said 'value' in 0.1.0 while the payload was a _make_singledispatch)."""
        [(_, dispatch)] = [item for item in CORPUS if item[0] == "singledispatch local"]
        assert shipping(dispatch).how == "wrapper"
        assert decide(dispatch).reduction[0] is _reconstruct._make_singledispatch

    def test_failures_come_with_reason_and_fix(self):
        """A lock fails, with the reason and fix the error would give."""
        import threading

        verdict = shipping(threading.Lock())
        assert (verdict.how, verdict.why) == ("fails", "locks hold OS state")
        assert verdict.fix


class TestKinds:
    def test_one_kind_per_type(self):
        """kind_for answers the same Kind object for a type, every time."""
        assert table.kind_for(int) is table.kind_for(int)
        assert table.kind_for(type(api_plain())) is table.FUNCTION

    def test_handlers_hold_the_kinds_reducers(self):
        """The pickler's per-type caches hold each kind's reducer: types that
        last by the type itself, local classes by id."""
        kind = table.kind_for(type(lambda: 0))
        assert type_cache.LASTING[type(lambda: 0)] is kind.reduce
        assert id(type(lambda: 0)) not in type_cache.HANDLERS
        local = make_local_class(0)
        local_kind = table.kind_for(local)
        assert type_cache.HANDLERS[id(local)] is local_kind.reduce
        assert local not in type_cache.LASTING

    def test_classes_a_module_names_last(self):
        """A class its module binds under its own name is held by the type."""
        from picklable_testpkg import api

        picklable.dumps(api.Frame.__new__(api.Frame))
        assert api.Frame in type_cache.LASTING
        assert id(api.Frame) not in type_cache.HANDLERS

    def test_every_rebuilder_is_declared(self):
        """Each rebuilder has a role and reach the readers know."""
        for declared in _reconstruct.REBUILDERS.values():
            assert declared.role in _reconstruct.ROLES
            assert declared.reach in _reconstruct.REACHES
            assert getattr(_reconstruct, declared.name) is declared.function


def api_plain():
    from picklable_testpkg import api

    return api.plain


def make_local_class(i: int) -> type:
    class Local:
        value = i

        def get(self) -> int:
            return self.value

    return Local


class TestWeakTable:
    def test_dumped_local_classes_are_freed(self):
        """200 local classes dumped once (with instances) are freed when dropped."""
        classes = [make_local_class(i) for i in range(200)]
        payloads = [picklable.dumps((cls, cls())) for cls in classes]
        assert all(payloads)
        refs = [weakref.ref(cls) for cls in classes]
        keys = [id(cls) for cls in classes]
        assert all(key in type_cache.HANDLERS for key in keys)
        del classes, payloads
        gc.collect()
        assert [ref for ref in refs if ref() is not None] == []
        assert not any(key in type_cache.HANDLERS for key in keys)

    def test_a_class_defined_again_lets_the_old_one_go(self):
        """A module's class defined again under its name (a reload) is held
        once: the old class is freed when the new one is first pickled, and
        the new one ships as itself."""
        module = types.ModuleType("picklable_redefined")
        sys.modules["picklable_redefined"] = module
        try:
            source = "class Point:\n    def __init__(self):\n        self.x = 1\n"
            exec(source, module.__dict__)
            old = module.Point
            assert picklable.dumps(old())
            assert old in type_cache.LASTING
            ref = weakref.ref(old)
            del old
            exec(source, module.__dict__)
            new = module.Point
            assert pickle.loads(picklable.dumps(new())).__class__ is new
            gc.collect()
            assert ref() is None
            assert new in type_cache.LASTING
        finally:
            del sys.modules["picklable_redefined"]

    def test_a_loaded_class_is_freed_too(self):
        """A class built from a payload is freed with its last user."""
        cls = make_local_class(1)
        copy_payload = picklable.dumps(cls())
        ref = weakref.ref(cls)
        del cls
        gc.collect()
        assert ref() is None
        loaded = picklable.loads(copy_payload)
        built = weakref.ref(type(loaded))
        del loaded
        gc.collect()
        assert built() is None


class Late:
    def __init__(self, value: int) -> None:
        self.value = value


class LateError(Exception):
    def __init__(self, message: str, *, code: int) -> None:
        super().__init__(message)
        self.code = code


class TestLateHooks:
    def test_a_late_reduce_is_honoured(self):
        """A class given __reduce__ after its first dump: pickle's answer, not the old one."""
        picklable.dumps(Late(1))
        try:
            Late.__reduce__ = lambda self: (int, (self.value * 10,))  # type: ignore[method-assign,assignment]
            assert picklable.loads(picklable.dumps(Late(4))) == pickle.loads(pickle.dumps(Late(4)))
            assert picklable.loads(picklable.dumps(Late(4))) == 40
        finally:
            del Late.__reduce__

    def test_a_late_reduce_ex_and_getstate_are_honoured(self):
        """__reduce_ex__ and __getstate__ given later are noticed too."""
        picklable.dumps(Late(1))
        try:
            Late.__getstate__ = lambda self: {"value": -self.value}  # type: ignore[attr-defined]
            assert picklable.loads(picklable.dumps(Late(4))).value == -4
        finally:
            del Late.__getstate__
        try:
            Late.__reduce_ex__ = lambda self, protocol: (str, ("ex",))  # type: ignore[method-assign,assignment]
            assert picklable.loads(picklable.dumps(Late(4))) == "ex"
        finally:
            del Late.__reduce_ex__
        assert picklable.loads(picklable.dumps(Late(4))).value == 4  # and back again

    def test_a_late_exception_reduce_is_honoured(self):
        """An exception class given __reduce__ after its first dump."""
        picklable.dumps(LateError("m", code=1))
        try:
            LateError.__reduce__ = lambda self: (ValueError, ("reduced",))  # type: ignore[method-assign,assignment]
            loaded = picklable.loads(picklable.dumps(LateError("m", code=2)))
            assert type(loaded) is ValueError and loaded.args == ("reduced",)
        finally:
            del LateError.__reduce__
        loaded = picklable.loads(picklable.dumps(LateError("m", code=3)))
        assert type(loaded) is LateError and loaded.code == 3
