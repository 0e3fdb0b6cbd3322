"""Tests for `picklable._pool._shared` (large values of a pool's functions, issue 18)."""

from __future__ import annotations

import numpy as np
import pytest

import picklable
from picklable import _signing
from picklable._pool import _shared

KEY = _signing.new_key()
SIZE = _shared.SHARE_MIN_BYTES
BIG = np.arange(SIZE // 8, dtype=np.float64)


def reads_nothing_large(i):
    return i + 1


class _Parent:
    """Answers a worker's requests as the pool's manager does."""

    def __init__(self, shared):
        self.shared = {entry.digest: entry for entry in shared}
        self.asked = []

    def fetch(self, digest):
        self.asked.append(digest)
        pieces = _shared.shared_frame(b"B", self.shared[digest], KEY)
        return memoryview(b"".join(bytes(p) for p in pieces))[8:]


class TestEncodeFunction:
    def test_small_function_is_left_to_the_codec(self):
        """A function without large values is encoded the usual way (None here)."""
        assert _shared.encode_function(reads_nothing_large, KEY) is None

    def test_large_global_is_named_by_digest(self):
        """The frame is small; the array is one shared value, weakly held (a global)."""

        def reads_big(i):  # local: by value, with its module's globals
            return float(BIG[i])

        payload, shared = _shared.encode_function(reads_big, KEY)
        assert len(payload) < SIZE // 10
        assert [entry.size for entry in shared] == [BIG.nbytes]
        assert shared[0].value() is BIG

    def test_digest_follows_content(self):
        """Equal content, equal digest; one changed element, another digest."""
        copy = BIG.copy()
        same = _shared._digest(*_shared._split(copy))
        assert same == _shared._digest(*_shared._split(BIG))
        copy[-1] += 1
        assert _shared._digest(*_shared._split(copy)) != same

    @pytest.mark.parametrize("value", [bytes(SIZE), bytearray(SIZE), BIG])
    def test_split_join_round_trip(self, value):
        """bytes, bytearray and arrays come back equal and of the same type."""
        back = _shared._join(*_shared._split(value))
        assert type(back) is type(value)
        assert bytes(memoryview(back)) == bytes(memoryview(value))


class TestSharedStore:
    def test_value_from_the_sender(self):
        """A worker without the value asks once; the next frame uses the one it holds."""

        def reader(i):
            return float(array[i])

        array = np.full(SIZE // 8, 3.0)
        payload, shared = _shared.encode_function(reader, KEY)
        parent = _Parent(shared)
        store = _shared.SharedStore(parent.fetch, KEY)
        first = store.load_function(payload)  # a worker keeps its loaded functions
        assert first(2) == 3.0
        assert store.load_function(payload)(2) == 3.0
        assert len(parent.asked) == 1

    def test_changed_after_hashing_is_refused(self):
        """A value changed in place after its frame was made is refused, not used."""

        def reader(i):
            return float(array[i])

        array = np.full(SIZE // 8, 3.0)
        payload, shared = _shared.encode_function(reader, KEY)
        array[0] = 4.0
        store = _shared.SharedStore(_Parent(shared).fetch, KEY)
        with pytest.raises(ValueError, match="changed in the sender"):
            store.load_function(payload)

    def test_tampered_value_is_refused(self):
        """A B frame that is not the pool's (bad signature) is refused before loading."""

        def reader(i):
            return float(array[i])

        array = np.full(SIZE // 8, 3.0)
        payload, shared = _shared.encode_function(reader, KEY)
        other = _signing.new_key()

        def forged(digest):
            pieces = _shared.shared_frame(b"B", shared[0], other)
            return memoryview(b"".join(bytes(p) for p in pieces))[8:]

        with pytest.raises(picklable.UnpicklingError):
            _shared.SharedStore(forged, KEY).load_function(payload)

    def test_dropped_value_says_so(self):
        """A value the sender no longer holds fails with the reason."""
        empty = _shared.Shared(None, b"\x02" + bytes(15), 0)
        body = memoryview(b"".join(bytes(p) for p in _shared.shared_frame(b"B", empty, KEY)))
        with pytest.raises(LookupError, match="no longer holds"):
            _shared._parse_shared(body[8:], KEY, empty.digest)
