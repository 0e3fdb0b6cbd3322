"""Tests for `picklable._pickler` and `picklable._api` (Pickler, dumps, dump)."""

from __future__ import annotations

import copyreg
import gc
import io
import pickle
import sys
import threading
import weakref

import pytest

import picklable
from picklable import Pickler, _api
from picklable_testpkg import api


class TestDumps:
    def test_plain_data_matches_stdlib_bytes(self):
        """Plain data gives exactly stdlib pickle's bytes."""
        data = {"a": [1, 2.5, "x", b"y", None, True], "b": (1, {2, 3})}
        assert picklable.dumps(data) == pickle.dumps(data, protocol=5)

    def test_failed_dump_writes_nothing(self):
        """dump writes the payload once it is complete: a failure leaves the file as it was."""
        stream = io.BytesIO(b"kept")
        stream.seek(4)
        with pytest.raises(picklable.PicklingError):
            picklable.dump([list(range(100_000)), threading.Lock()], stream)
        assert stream.getvalue() == b"kept"

    def test_module_function_matches_stdlib_bytes(self):
        """A function importable by name is a plain global reference."""
        assert picklable.dumps(api.plain) == pickle.dumps(api.plain, protocol=5)

    @pytest.mark.parametrize("protocol", [2, 3, 4, 5, -1])
    def test_protocols(self, protocol):
        """Every protocol from 2 up round-trips located and by-value objects."""
        for obj in (api.add, api.make_closure(3), api.Frame.mean):
            back = picklable.loads(picklable.dumps(obj, protocol))
            assert (
                back(api.Frame([1]))
                if obj is api.Frame.mean
                else back(1, 2)
                if obj is api.add
                else back(1) == 4
            )

    def test_located_reference_with_old_protocol(self):
        """Protocols without STACK_GLOBAL load located paths through _resolve."""
        assert picklable.loads(picklable.dumps(api.beat_interval_option.apply_function, 2)) is (
            api.beat_interval_option.apply_function
        )

    def test_reentrant_dumps(self):
        """A reducer that calls dumps again does not share the idle pickler."""

        class Envelope:
            def __init__(self, obj):
                self.obj = obj

            def __reduce__(self):
                return (picklable.loads, (picklable.dumps(self.obj),))

        fn = api.make_closure(1)
        back = picklable.loads(picklable.dumps([Envelope(fn), fn]))
        assert back[0](1) == 2 and back[1](1) == 2

    def test_threads(self):
        """Concurrent dumps from threads give correct payloads."""
        errors = []

        def work(n):
            try:
                for i in range(200):
                    fn = api.make_closure(n + i)
                    assert picklable.loads(picklable.dumps(fn))(0) == n + i
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(k * 1000,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []

    def test_failure_leaves_the_idle_pickler_clean(self):
        """After a failed dumps the next dumps is unaffected."""
        with pytest.raises(picklable.PicklingError):
            picklable.dumps([1, threading.Lock()])
        assert picklable.loads(picklable.dumps([1, 2])) == [1, 2]


class _Node:
    """An instance a weak reference can watch (see TestPooledPicklers)."""

    def __init__(self, value):
        self.value = value


class TestPooledPicklers:
    """dumps reuses idle picklers: what one payload left must not reach the next (issue 18)."""

    @pytest.mark.parametrize("count", [3, 100_000])
    def test_memo_keeps_nothing_alive(self, count):
        """After dumps, the objects of the payload are freed (the memo let go of them)."""
        node = _Node(1)
        watch = weakref.ref(node)
        picklable.dumps([node, *([i] for i in range(count))])
        del node
        gc.collect()
        assert watch() is None

    def test_next_payload_has_stdlib_bytes(self):
        """A payload made after a large one refers to nothing of it: stdlib's exact bytes."""
        shared = ["shared"]
        picklable.dumps([shared, [[i] for i in range(100_000)], shared])
        for data in ([shared, shared], {"a": shared}, [[i] for i in range(50)]):
            assert picklable.dumps(data) == pickle.dumps(data, protocol=5)

    def test_memo_table_shrinks_after_a_large_payload(self):
        """The idle pickler's memo table is back to its first size after 100,000 objects.

        The C pickler's table never shrinks by itself, and clearing it walks all of
        it: a pooled pickler that kept it made every later dumps ~300x slower.
        """
        picklable.clear_caches()  # idle picklers included
        picklable.dumps(1)
        small = max(sys.getsizeof(pickler) for pickler in _api._idle)
        picklable.dumps([[i] for i in range(100_000)])
        picklable.dumps([_Node(i) for i in range(10_000)])
        assert max(sys.getsizeof(pickler) for pickler in _api._idle) == small

    def test_a_long_payload_leaves_a_small_table_either_way(self):
        """Past 512 bytes a table that stayed small (one 8 KB blob) is cleared and
        one that grew (200 strings) is replaced: the next payload finds a small
        table both times, and stdlib's bytes."""
        picklable.clear_caches()  # idle picklers included
        picklable.dumps(1)
        small = max(sys.getsizeof(pickler) for pickler in _api._idle)
        for payload in (b"x" * 8192, [str(i) for i in range(200)]):
            assert picklable.dumps(payload) == pickle.dumps(payload, protocol=5)
            assert max(sys.getsizeof(pickler) for pickler in _api._idle) == small
            assert picklable.dumps([payload, payload]) == pickle.dumps(
                [payload, payload], protocol=5
            )

    def test_buffer_callback_reaches_its_own_payload_only(self):
        """A callback given to one dumps sees that payload's buffers; the next dumps
        without one writes them in band, pickle's bytes, and calls nothing."""
        seen: list[bytes] = []
        buffer = pickle.PickleBuffer(b"out of band")
        picklable.dumps(buffer, buffer_callback=lambda b: seen.append(bytes(b)))
        assert seen == [b"out of band"]
        assert picklable.dumps(buffer) == pickle.dumps(buffer, protocol=5)
        in_band: list[bytes] = []
        picklable.dumps(buffer, buffer_callback=lambda b: in_band.append(bytes(b)) or True)
        assert in_band == [b"out of band"]
        assert seen == [b"out of band"]  # the first callback was not kept

    def test_class_with_a_metaclass_reducer_is_pickles_own(self):
        """A class whose metaclass has a copyreg reducer (numpy's dtype classes) goes
        pickle's way, from the first dump and from the cache of names after it."""
        import numpy as np  # a test dependency

        first = picklable.dumps(np.dtype)
        assert type(np.dtype) in copyreg.dispatch_table
        assert first == picklable.dumps(np.dtype) == pickle.dumps(np.dtype, protocol=5)
        array = np.arange(6.0).reshape(2, 3)
        assert picklable.dumps(array) == pickle.dumps(array, protocol=5)


class TestPicklerClass:
    def test_dump_to_file_and_load(self):
        """Pickler writes to a file; Unpickler/load read it back."""
        buffer = io.BytesIO()
        Pickler(buffer).dump(api.make_closure(2))
        buffer.seek(0)
        assert picklable.load(buffer)(1) == 3

    def test_dump_function(self, tmp_path):
        """picklable.dump writes to an open binary file."""
        path = tmp_path / "payload.pkl"
        with path.open("wb") as f:
            picklable.dump(api.add, f)
        with path.open("rb") as f:
            assert picklable.load(f) is api.add

    def test_subclass_is_a_stdlib_pickler(self):
        """Pickler is the C pickler with a reducer_override hook (what loky expects)."""
        assert issubclass(Pickler, pickle.Pickler)
        assert Pickler(io.BytesIO(), protocol=4).protocol == 4
        assert Pickler(io.BytesIO()).protocol == picklable.DEFAULT_PROTOCOL == 5

    def test_memo_shared_across_dump_calls(self):
        """Like stdlib: one Pickler's memo spans dump calls."""
        buffer = io.BytesIO()
        p = Pickler(buffer)
        fn = api.make_closure(9)
        p.dump(fn)
        p.dump(fn)
        buffer.seek(0)
        u = picklable.Unpickler(buffer)
        assert u.load()(1) == 10 and u.load()(1) == 10


class TestErrors:
    def test_message_names_what_where_why_fix(self):
        """The floor: type, attribute path, reason and fix in one message."""
        lock = threading.Lock()

        def job():
            return lock

        with pytest.raises(picklable.PicklingError) as info:
            picklable.dumps(job)
        err = info.value
        assert str(err) == (
            "Cannot pickle _thread.lock - at job.__closure__[0].cell_contents: locks hold OS "
            "state. Fix: create it inside the worker (e.g. in the pool initializer)."
        )
        assert err.path == "job.__closure__[0].cell_contents"
        assert err.type_name == "_thread.lock"
        assert isinstance(err, pickle.PicklingError)

    def test_path_through_containers_and_attributes(self):
        """Paths follow dict keys, list indices and instance attributes."""

        class Holder:
            def __init__(self):
                self.items = [1, {"conn": threading.RLock()}]

        with pytest.raises(picklable.PicklingError) as info:
            picklable.dumps({"job": Holder()})
        assert info.value.path == "obj['job'].items[1]['conn']"

    def test_deep_recursion_is_a_clear_error(self):
        """Nesting beyond the recursion limit raises PicklingError, not RecursionError."""
        nested: list = []
        for _ in range(100_000):
            nested = [nested]
        with pytest.raises(picklable.PicklingError, match="recursion limit"):
            picklable.dumps(nested)


class TestNeverWrong:
    def test_pipe_connection_refused(self):
        """A Connection would arrive as a foreign fd number: refused, with a fix."""
        import multiprocessing

        reader, writer = multiprocessing.Pipe(duplex=False)
        try:
            with pytest.raises(picklable.PicklingError) as info:
                picklable.dumps({"pipe": reader})
            assert info.value.path == "obj['pipe']"
            assert info.value.type_name == "multiprocessing.connection.Connection"
            assert "pass it as an argument of multiprocessing.Process" in str(info.value)
        finally:
            reader.close()
            writer.close()


@pytest.mark.parametrize("reset", ["clear_memo", "memo", "fast"])
def test_a_new_memo_starts_a_new_payload(reset):
    """A Pickler used on its own, its memo cleared or replaced between two dumps
    of a closure (or off: ``fast``): the second payload refers to nothing the
    first wrote (a closure's cells sent as contents, met again, are not
    referred to through a function the memo no longer holds)."""
    from picklable_testpkg import api

    add = api.make_closure(5)  # its cell held by its closure alone: sent as contents
    buffer = io.BytesIO()
    pickler = picklable.Pickler(buffer)
    if reset == "fast":
        pickler.fast = True
        pickler.dump([add, add])
        first, second = picklable.loads(buffer.getvalue())
        assert first(1) == second(1) == 6
        return
    pickler.dump(add)
    if reset == "clear_memo":
        pickler.clear_memo()
    else:
        pickler.memo = {}
    pickler.dump(add)
    buffer.seek(0)
    one, other = picklable.load(buffer), picklable.load(buffer)
    assert one(1) == other(1) == 6
