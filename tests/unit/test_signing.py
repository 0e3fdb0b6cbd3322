"""Tests for `picklable._signing` (dumps/loads/dump/load with key=)."""

from __future__ import annotations

import hashlib
import hmac
import io
import pickle
import struct

import numpy as np
import pytest

import picklable
from picklable import _signing
from picklable_testpkg import api

KEY = bytes(range(32))
OTHER = bytes(range(1, 33))


def signed(obj=None, **options):
    return picklable.dumps(api.make_closure(1) if obj is None else obj, key=KEY, **options)


def refused(data, **options):
    with pytest.raises(picklable.UnpicklingError) as info:
        picklable.loads(data, **options)
    return info.value


class TestNewKey:
    def test_random_32_bytes(self):
        """new_key gives 32 fresh random bytes each call."""
        keys = {picklable.new_key() for _ in range(20)}
        assert len(keys) == 20 and all(type(k) is bytes and len(k) == 32 for k in keys)

    def test_exported_lazily(self):
        """picklable.new_key is the _signing helper."""
        assert picklable.new_key is _signing.new_key and "new_key" in picklable.__all__


class TestFraming:
    def test_layout(self):
        """magic, version, pickle length, buffer count, HMAC-SHA256, then the pickle."""
        data = signed([1, 2])
        magic, version, length, count = struct.unpack_from("<4sBQI", data)
        body = data[49:]
        assert (magic, version, length, count) == (b"\x00PKS", 1, len(body), 0)
        assert body == picklable.dumps([1, 2])
        assert data[17:49] == hmac.new(KEY, data[:17] + body, hashlib.sha256).digest()

    def test_pieces_are_the_payload(self):
        """signed_pieces: header and MAC, then the very pickle given (not a copy)."""
        body = picklable.dumps(list(range(1000)))
        head, rest = _signing.signed_pieces(KEY, body)
        assert rest is body and len(head) == _signing.HEADER_SIZE
        assert head + rest == _signing.sign(KEY, body) == signed(list(range(1000)))
        assert _signing.mac_of(head + rest) == head[17:49]

    def test_plain_pickle_refuses_it(self):
        """The magic starts with a byte that is no pickle opcode: pickle.loads fails at once."""
        with pytest.raises(pickle.UnpicklingError, match="invalid load key"):
            pickle.loads(signed())

    def test_round_trip(self):
        """A signed by-value closure loads with the same key and works."""
        assert picklable.loads(signed(), key=KEY)(2) == 3

    def test_bytearray_and_memoryview_inputs(self):
        """Signed payloads load from any bytes-like object."""
        data = signed([1, {"a": 2}])
        assert picklable.loads(bytearray(data), key=bytearray(KEY)) == [1, {"a": 2}]
        assert picklable.loads(memoryview(data), key=memoryview(KEY)) == [1, {"a": 2}]

    def test_other_protocol(self):
        """Signing wraps any protocol's pickle."""
        assert picklable.loads(signed([1, 2], protocol=2), key=KEY) == [1, 2]

    def test_deterministic_and_signed(self):
        """deterministic=True and key= combine: the same bytes twice."""
        assert signed({"b", "a"}, deterministic=True) == signed({"a", "b"}, deterministic=True)


class TestRefusals:
    def test_every_flipped_byte_refused(self):
        """Flipping any single byte (header, MAC or pickle) is refused."""
        data = signed()
        for i in range(len(data)):
            damaged = bytearray(data)
            damaged[i] ^= 0x40
            error = refused(bytes(damaged), key=KEY)
            assert error.args[0].startswith("Refusing to load")

    def test_every_truncation_refused(self):
        """Every prefix of a signed payload is refused."""
        data = signed()
        for n in range(len(data)):
            refused(data[:n], key=KEY)

    def test_truncated_message(self):
        """A cut payload says how much was announced and how much arrived."""
        data = signed([1, 2, 3])
        error = refused(data[:-3], key=KEY)
        assert error.reason == "truncated payload"
        assert f"announces a {len(data) - 49}-byte pickle, {len(data) - 52} bytes arrived" in str(
            error
        )

    def test_trailing_bytes_refused(self):
        """Bytes after the signed pickle are refused."""
        assert refused(signed() + b"x", key=KEY).reason == "bytes after the signed payload"

    def test_wrong_key(self):
        """Another key: bad signature."""
        error = refused(signed(), key=OTHER)
        assert error.reason == "bad signature"
        assert "changed after signing, or signed with another key" in str(error)

    def test_unsigned_payload_with_key(self):
        """An unsigned pickle given to loads with a key is refused, saying it is unsigned."""
        error = refused(picklable.dumps([1]), key=KEY)
        assert error.reason == "payload not signed" and "it is an unsigned pickle" in str(error)

    def test_garbage_with_key(self):
        """Bytes that are no payload at all are refused as unsigned."""
        assert refused(b"hello world, not a payload", key=KEY).reason == "payload not signed"

    def test_signed_without_key(self):
        """A signed payload given to loads without a key is refused, naming the fix."""
        error = refused(signed())
        assert error.reason == "signed payload, no key given" and "loads(data, key=...)" in str(
            error
        )

    def test_unknown_version(self):
        """A future framing version is refused as such (the MAC is not even tried)."""
        data = bytearray(signed())
        data[4] = 2
        assert refused(bytes(data), key=KEY).reason == "unknown signature format"

    def test_nothing_runs_before_the_check(self, monkeypatch):
        """A tampered payload never reaches the unpickler."""
        calls = []
        monkeypatch.setattr("picklable._loading._loads", lambda *a, **k: calls.append(a))
        data = bytearray(signed())
        data[-5] ^= 1
        refused(bytes(data), key=KEY)
        assert calls == []


class TestKeys:
    @pytest.mark.parametrize("key", ["a str key of many characters", 12345, None.__class__])
    def test_key_must_be_bytes(self, key):
        """Non-bytes keys are a TypeError, on both sides."""
        with pytest.raises(TypeError, match="key must be bytes"):
            picklable.dumps(1, key=key)
        with pytest.raises(TypeError, match="key must be bytes"):
            picklable.loads(signed(), key=key)

    def test_short_key(self):
        """Keys shorter than 16 bytes are refused with a ValueError."""
        with pytest.raises(ValueError, match="at least 16"):
            picklable.dumps(1, key=b"short")


class TestOutOfBandBuffers:
    def test_buffers_covered(self):
        """Out-of-band buffers are covered by the MAC: changed content is refused."""
        array = np.arange(1000, dtype=np.int64)
        buffers = []
        data = picklable.dumps(array, key=KEY, buffer_callback=buffers.append)
        assert struct.unpack_from("<I", data, 13)[0] == len(buffers) == 1
        raw = [bytearray(b.raw()) for b in buffers]
        back = picklable.loads(data, key=KEY, buffers=raw)
        assert np.array_equal(back, array)
        raw[0][8] ^= 1
        assert refused(data, key=KEY, buffers=raw).reason == "bad signature"

    def test_missing_buffers(self):
        """Loading without the buffers the payload was signed with says how many it needs."""
        data = picklable.dumps(np.arange(10), key=KEY, buffer_callback=lambda b: False)
        error = refused(data, key=KEY)
        assert error.reason == "out-of-band buffer count differs"
        assert "signed with 1 out-of-band buffer(s); 0 given" in str(error)

    def test_in_band_buffers_need_nothing(self):
        """A callback that keeps buffers in band signs an ordinary payload."""
        data = picklable.dumps(np.arange(10), key=KEY, buffer_callback=lambda b: True)
        assert np.array_equal(picklable.loads(data, key=KEY), np.arange(10))


class TestFiles:
    def test_dump_and_load_several(self):
        """Signed payloads in one stream load one after the other."""
        stream = io.BytesIO()
        for i in range(3):
            picklable.dump(api.make_closure(i), stream, key=KEY)
        stream.seek(0)
        assert [picklable.load(stream, key=KEY)(10) for _ in range(3)] == [10, 11, 12]

    def test_truncated_file(self):
        """A stream that ends inside the payload is refused as truncated."""
        stream = io.BytesIO()
        picklable.dump([1, 2, 3], stream, key=KEY)
        with pytest.raises(picklable.UnpicklingError, match="truncated"):
            picklable.load(io.BytesIO(stream.getvalue()[:-2]), key=KEY)

    def test_signed_file_without_key(self):
        """load without a key recognises a signed stream."""
        stream = io.BytesIO()
        picklable.dump([1], stream, key=KEY)
        stream.seek(0)
        with pytest.raises(picklable.UnpicklingError, match="this payload is signed"):
            picklable.load(stream)


class _CountingStream(io.BytesIO):
    """A stream that records the size of every read."""

    def __init__(self, data=b""):
        super().__init__(data)
        self.reads = []

    def read(self, size=-1):
        self.reads.append(size)
        return super().read(size)


def forged_header(length, count=0):
    """A signed-payload header announcing ``length`` bytes, with a MAC nobody checked."""
    return struct.pack("<4sBQI", b"\x00PKS", 1, length, count) + bytes(32)


class TestStreamLimits:
    def test_huge_length_refused_before_reading(self):
        """A header announcing 2**64 - 1 bytes is refused; nothing after the header is read."""
        stream = _CountingStream(forged_header(2**64 - 1) + b"\x80\x05" * 1000)
        with pytest.raises(picklable.UnpicklingError) as info:
            picklable.load(stream, key=KEY)
        assert info.value.reason == "signed payload larger than max_size"
        assert "announces a 18,446,744,073,709,551,615-byte pickle, more than max_size" in str(
            info.value
        )
        assert "another version" not in str(info.value)
        assert stream.tell() == 49 and sum(stream.reads) == 49

    def test_default_maximum_is_documented(self):
        """The default limit is _signing.MAX_STREAM_SIZE (1 GiB); max_size= changes it."""
        assert _signing.MAX_STREAM_SIZE == 1 << 30
        stream = io.BytesIO(forged_header((1 << 30) + 1))
        with pytest.raises(picklable.UnpicklingError, match="max_size=1073741825"):
            picklable.load(stream, key=KEY)
        data = signed(list(range(1000)))
        with pytest.raises(picklable.UnpicklingError, match="more than max_size"):
            picklable.load(io.BytesIO(data), key=KEY, max_size=100)
        assert picklable.load(io.BytesIO(data), key=KEY, max_size=len(data)) == list(range(1000))

    def test_read_in_bounded_chunks(self):
        """A large payload is read 4 MiB at a time, each chunk fed to the MAC as it comes."""
        blob = bytes(range(256)) * (10 * 4096)  # 10 MiB
        stream = _CountingStream(signed(blob))
        assert picklable.load(stream, key=KEY) == blob
        assert max(stream.reads) <= 4 << 20 and len(stream.reads) >= 4

    def test_forged_length_costs_only_what_arrives(self):
        """A header announcing 1 GiB followed by 10 bytes: truncated, after reading 10 bytes."""
        stream = _CountingStream(forged_header(1 << 30) + b"x" * 10)
        with pytest.raises(picklable.UnpicklingError) as info:
            picklable.load(stream, key=KEY)
        assert info.value.reason == "truncated payload"
        assert "announces a 1,073,741,824-byte pickle, 10 bytes arrived" in str(info.value)

    def test_tampered_stream_never_unpickled(self, monkeypatch):
        """A changed byte in a streamed payload: bad signature, the unpickler never runs."""
        calls = []
        monkeypatch.setattr("picklable._loading._loads", lambda *a, **k: calls.append(a))
        data = bytearray(signed(api.make_closure(2)))
        data[60] ^= 1
        with pytest.raises(picklable.UnpicklingError) as info:
            picklable.load(io.BytesIO(bytes(data)), key=KEY)
        assert info.value.reason == "bad signature" and calls == []

    def test_stream_with_buffers(self):
        """Out-of-band buffers of a streamed payload are covered too."""
        buffers = []
        array = np.arange(100)
        stream = io.BytesIO(picklable.dumps(array, key=KEY, buffer_callback=buffers.append))
        raw = [bytearray(b.raw()) for b in buffers]
        assert np.array_equal(picklable.load(stream, key=KEY, buffers=raw), array)
        stream.seek(0)
        with pytest.raises(picklable.UnpicklingError, match="1 out-of-band buffer"):
            picklable.load(stream, key=KEY)

    def test_unsigned_stream_with_key(self):
        """A stream of an unsigned pickle: refused as not signed."""
        with pytest.raises(picklable.UnpicklingError) as info:
            picklable.load(io.BytesIO(picklable.dumps([1])), key=KEY)
        assert info.value.reason == "payload not signed"
