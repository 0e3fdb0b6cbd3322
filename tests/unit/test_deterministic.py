"""Tests for `picklable._deterministic` (dumps(..., deterministic=True)) in one process.

Across processes and hash seeds: tests/xproc/test_guard_xproc.py.
"""

from __future__ import annotations

import dataclasses
import enum
import io
import marshal
import threading

import numpy as np
import pytest

import picklable
from picklable import _deterministic, _tracker
from picklable_testpkg import api


def det(obj, **options):
    return picklable.dumps(obj, deterministic=True, **options)


class TestSets:
    def test_insertion_order_does_not_matter(self):
        """Equal sets that iterate differently give the same bytes (and differ without the option)."""
        a, b = {1, 9}, {9, 1}  # 1 and 9 share a slot: iteration follows insertion
        assert list(a) != list(b)
        assert picklable.dumps(a) != picklable.dumps(b)
        assert det(a) == det(b)
        assert det(frozenset([1, 9])) == det(frozenset([9, 1]))

    def test_mixed_and_nested_elements(self):
        """Sets of mixed types, tuples and frozensets order and load back."""
        value = {None, 1, "a", b"b", 2.5, (1, "x"), frozenset({3, 4}), api.Color.RED, api.plain}
        assert picklable.loads(det(value)) == value
        assert det(value) == det(set(reversed(list(value))))  # noqa: C414 - another insertion order

    def test_sorted_items(self):
        """Elements are ordered by type name, then value."""
        assert _deterministic.sorted_items({"b", "a", 2, 1, None}) == [None, 1, 2, "a", "b"]

    def test_old_protocols(self):
        """Protocols below 4 write sets as reductions, sorted too."""
        for protocol in (2, 3):
            assert det({1, 9}, protocol=protocol) == det({9, 1}, protocol=protocol)
            assert picklable.loads(det({1, 9}, protocol=protocol)) == {1, 9}


class TestMemo:
    def test_equal_strings_are_one(self):
        """Two equal strings are written once whether or not they are one object."""
        a, b = "".join(["ab", "c"]), "".join(["a", "bc"])  # noqa: FLY002 - two str objects
        assert a == b and a is not b
        assert picklable.dumps([a, b]) != picklable.dumps([a, a])
        assert det([a, b]) == det([a, a])

    def test_equal_bytes_are_one(self):
        """The same holds for bytes."""
        a, b = bytes([1, 2, 3]), bytes([1, 2]) + bytes([3])
        assert det([a, b]) == det([a, a])

    def test_dicts_keep_their_order(self):
        """Dict order is part of the value: kept, not sorted."""
        assert list(picklable.loads(det({"b": 1, "a": 2}))) == ["b", "a"]


class TestCode:
    def test_refcounts_do_not_matter(self):
        """marshal's output changes with references held elsewhere; the canonical bytes do not."""

        def f(x):
            return (x, "hello world", 1.5, (1, 2, "t"))

        code = f.__code__
        _deterministic._codes.clear()
        before, plain_before = _deterministic.code_bytes(code), marshal.dumps(code)
        keep = [code.co_consts[2], code.co_consts] * 3
        _deterministic._codes.clear()
        assert marshal.dumps(code) != plain_before
        assert _deterministic.code_bytes(code) == before
        del keep

    def test_frozenset_constants_sorted(self):
        """A frozenset constant is spliced in with its elements sorted by their encoding.

        (CPython 3.11+ marshal sorts them itself in format 2; 3.10 does not.)
        """

        def f(x):
            return x in {1, 9, 17}

        code = f.__code__
        one = code.replace(
            co_consts=tuple(
                frozenset([1, 9, 17]) if type(c) is frozenset else c for c in code.co_consts
            )
        )
        two = code.replace(
            co_consts=tuple(
                frozenset([17, 9, 1]) if type(c) is frozenset else c for c in code.co_consts
            )
        )
        assert list(one.co_consts[-1]) != list(two.co_consts[-1])
        assert _deterministic.code_bytes(one) == _deterministic.code_bytes(two)
        rebuilt = marshal.loads(_deterministic.code_bytes(one))
        assert rebuilt == one

    def test_nested_code_and_tuples(self):
        """Frozensets inside nested code objects and tuple constants are handled too."""
        source = "def outer():\n    def inner(x):\n        return x in {'a', 'b'}, ('k', frozenset())\n    return inner\n"
        namespace: dict = {"__name__": "__main__"}
        exec(source, namespace)
        code = namespace["outer"].__code__
        assert marshal.loads(_deterministic.code_bytes(code)) == code

    def test_functions_load_and_run(self):
        """By-value functions in deterministic payloads load and run."""
        fn = lambda x: x in {"a", "b"}  # noqa: E731
        back = picklable.loads(det(fn))
        assert back("a") and not back("c")
        assert picklable.loads(det(api.make_closure(2)))(1) == 3
        assert picklable.loads(det(fn.__code__)) == fn.__code__


class TestTrackerIds:
    def test_content_derived(self):
        """A class shipped by value carries det-<32 hex> derived from its content."""

        class Local:
            x = 1

        tracker = _deterministic.tracker_id(Local)
        assert tracker.startswith("det-") and len(tracker) == 36
        assert _deterministic.tracker_id(Local) == tracker
        assert tracker.encode() in det(Local)
        assert picklable.loads(det(Local)) is Local  # back in its process: the class itself

    def test_different_content_different_id(self):
        """Two versions of a class (same name, other body) get other ids."""

        def make(value):
            class Versioned:
                x = value

            return Versioned

        assert _deterministic.tracker_id(make(1)) != _deterministic.tracker_id(make(2))

    def test_identical_twins_are_told_apart(self):
        """Two live classes with the same content get -2: loading never mixes them up."""

        def make():
            class Twin:
                def method(self):
                    return 1

            return Twin

        first, second = make(), make()
        one, two = _deterministic.tracker_id(first), _deterministic.tracker_id(second)
        assert two == one + "-2"
        assert picklable.loads(det(first)) is first and picklable.loads(det(second)) is second

    def test_dataclass_and_enum(self):
        """Dataclasses and enums shipped deterministically come back as themselves."""

        @dataclasses.dataclass
        class Point:
            x: int

        class Color(enum.Enum):
            RED = 1

        assert det(Point) == det(Point) and picklable.loads(det(Point)) is Point
        assert det(Color) == det(Color) and picklable.loads(det(Color)) is Color
        assert picklable.loads(det(Color.RED)) is Color.RED


class TestOptions:
    def test_out_of_band_buffers(self):
        """buffer_callback works in deterministic mode."""
        buffers: list = []
        array = np.arange(10)
        data = det(array, buffer_callback=buffers.append)
        assert len(buffers) == 1
        assert np.array_equal(picklable.loads(data, buffers=buffers), array)

    def test_dump_to_file(self):
        """dump(..., deterministic=True) writes the same bytes as dumps."""
        stream = io.BytesIO()
        picklable.dump({3, 1, 2}, stream, deterministic=True)
        assert stream.getvalue() == det({3, 1, 2})

    def test_errors_name_the_path(self):
        """What cannot ship is reported as by dumps."""
        with pytest.raises(picklable.PicklingError) as info:
            det({"lock": threading.Lock()})
        assert "lock" in str(info.value)

    def test_deep_nesting_is_a_clear_error(self):
        """The pure-Python pickler recurses more: deep data is a PicklingError, not a crash."""
        value: list = []
        for _ in range(5000):
            value = [value]
        with pytest.raises(picklable.PicklingError, match="recursion limit"):
            det(value)

    def test_tracked_ids_registered(self):
        """The deterministic id maps back to the class in this process."""

        class Local:
            pass

        tracker = _deterministic.tracker_id(Local)
        assert _tracker._class_by_id[tracker] is Local
