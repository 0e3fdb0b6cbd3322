"""Tests for `picklable._reduce.builtins`: views, buffers, type variables, weak
collections and standard streams, in this process (fresh interpreters:
tests/xproc/test_builtins_xproc.py)."""

from __future__ import annotations

import collections
import mmap
import pickle
import sys
import threading
import typing
import weakref

import pytest

import picklable
from picklable._diagnostics.culprit import shipping

ModuleT = typing.TypeVar("ModuleT")


class Member:
    pass


class TestDictViews:
    def test_view_and_dict_are_linked(self):
        """A view and its dict in one payload: the view still follows the dict."""
        mapping = {"a": 1}
        view, again = picklable.loads(picklable.dumps((mapping.items(), mapping)))
        again["b"] = 2
        assert list(view) == [("a", 1), ("b", 2)]

    @pytest.mark.parametrize("protocol", [2, 5])
    def test_every_view_type(self, protocol):
        """dict and OrderedDict views keep their exact type, under any protocol."""
        ordered = collections.OrderedDict([("z", 1)])
        for view in (
            {"k": 1}.keys(),
            {"k": 1}.values(),
            {"k": 1}.items(),
            ordered.keys(),
            ordered.values(),
            ordered.items(),
        ):
            again = picklable.loads(picklable.dumps(view, protocol=protocol))
            assert type(again) is type(view)
            assert list(again) == list(view)

    def test_path_into_the_dict(self):
        """A culprit inside a view's dict is named through .mapping."""
        with pytest.raises(picklable.PicklingError) as info:
            picklable.dumps([{"lock": threading.Lock()}.values()])
        assert info.value.path == "obj[0].mapping['lock']"


class TestMemoryviews:
    def test_full_view_views_the_shipped_object(self):
        data = bytearray(b"abc")
        view, again = picklable.loads(picklable.dumps((memoryview(data), data)))
        assert view.obj is again and not view.readonly
        view[0] = ord("x")
        assert again == bytearray(b"xbc")

    @pytest.mark.parametrize("protocol", [2, 4, 5])
    def test_copies_are_exact(self, protocol):
        """Format, shape and writability of a slice or a cast, under any protocol."""
        for view in (
            memoryview(b"Hello!" * 3)[2:15:2],
            memoryview(bytearray(range(12))).cast("i", (3,)),
            memoryview(bytearray(range(24))).cast("d", (3, 1)),
        ):
            again = picklable.loads(picklable.dumps(view, protocol=protocol))
            assert (again.format, again.shape, again.readonly) == (
                view.format,
                view.shape,
                view.readonly,
            )
            assert again.tolist() == view.tolist()

    def test_view_of_something_unshippable(self):
        """A full view of an anonymous memory map: the map is the culprit, at .obj."""
        mapped = mmap.mmap(-1, 16)
        view = memoryview(mapped)
        try:
            with pytest.raises(picklable.PicklingError) as info:
                picklable.dumps({"view": view})
            assert info.value.path == "obj['view'].obj"
            assert info.value.reason == "a memory map holds an OS mapping of this process"
        finally:
            view.release()
            mapped.close()

    def test_explain_agrees(self):
        assert shipping(memoryview(b"x")).how == "data"


class TestTypeVariables:
    def test_importable_goes_by_name(self):
        """A TypeVar its module holds: pickle's own global, typing's too."""
        assert pickle.loads(picklable.dumps(ModuleT)) is ModuleT
        assert shipping(ModuleT).via == f"{__name__}:ModuleT"
        assert picklable.loads(picklable.dumps(typing.AnyStr)) is typing.AnyStr

    def test_local_is_itself_here(self):
        """By value, and the very object again in the process that made it."""
        local = typing.TypeVar("local", bound=Member)
        assert shipping(local).how == "value"
        assert picklable.loads(picklable.dumps([local, local])) == [local, local]

    def test_module_registered_by_value(self, monkeypatch):
        """A TypeVar of a module registered by value travels by value."""
        module = sys.modules[__name__]
        picklable.register_pickle_by_value(module)
        try:
            assert shipping(ModuleT).how == "value"
            assert picklable.loads(picklable.dumps(ModuleT)) is ModuleT
        finally:
            picklable.unregister_pickle_by_value(module)

    def test_deterministic(self):
        """Deterministic payloads of a type variable are stable."""
        local = typing.TypeVar("local", int, str)
        first = picklable.dumps(local, deterministic=True)
        assert picklable.dumps(local, deterministic=True) == first
        assert picklable.loads(first) is local


class TestWeakCollections:
    def test_members_keep_their_identity(self):
        a, b = Member(), Member()
        weak, first, second = picklable.loads(picklable.dumps((weakref.WeakSet([a, b]), a, b)))
        assert set(weak) == {first, second}

    def test_unshipped_members_are_gone(self):
        """Members nothing else in the payload holds die after loading, as they would here."""
        a = Member()
        weak = picklable.loads(picklable.dumps(weakref.WeakSet([a])))
        assert type(weak) is weakref.WeakSet and len(weak) == 0

    def test_path_to_a_member(self):
        event = threading.Event()
        with pytest.raises(picklable.PicklingError) as info:
            picklable.dumps(weakref.WeakValueDictionary({"e": event}))
        assert info.value.path == "obj['e']"


class TestStreams:
    def test_stdout_by_reference(self):
        assert picklable.loads(picklable.dumps(sys.stdout)) is sys.stdout
        assert shipping(sys.stdout).via == "sys:stdout"

    def test_a_reducer_of_the_users_wins(self):
        """With a copyreg reducer for its type, a file ships as that reducer says."""
        import copyreg
        import io

        stream = io.TextIOWrapper(io.BytesIO(b"text"), encoding="utf-8")
        copyreg.pickle(io.TextIOWrapper, lambda f: (str, ("a snapshot",)))
        try:
            assert picklable.loads(picklable.dumps(stream)) == "a snapshot"
            assert shipping(stream).how == "data"
        finally:
            del copyreg.dispatch_table[io.TextIOWrapper]
            stream.detach()
