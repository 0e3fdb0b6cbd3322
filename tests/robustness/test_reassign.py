"""Module attributes reassigned between dumps: a cached "by name" answer must never
ship a reference that loads another object."""

from __future__ import annotations

import io

import pytest

import picklable
from picklable_testpkg import reassign
from support import checks

MOD = "picklable_testpkg.reassign"
ORIGINAL = reassign.target


class _Unseekable(io.RawIOBase):
    """A write-only stream (a pipe, a socket): the retry cannot rewind it."""

    def __init__(self) -> None:
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:  # type: ignore[override]
        self.data += bytes(b)
        return len(b)


def _dumps_by(how: str, obj) -> bytes:
    if how == "dumps":
        return picklable.dumps(obj)
    if how == "dump":
        stream = io.BytesIO(b"prefix")
        stream.seek(6)
        picklable.dump(obj, stream)
        return stream.getvalue()[6:]
    stream = _Unseekable()
    picklable.dump(obj, stream)
    return bytes(stream.data)


HOW = ["dumps", "dump", "dump-unseekable"]


class TestReassigned:
    @pytest.mark.parametrize("how", HOW)
    def test_reassigned_to_another_function(self, how, monkeypatch, child):
        """The old function, dumped after its name was given away, goes by value."""
        assert picklable.loads(_dumps_by(how, ORIGINAL)) is ORIGINAL  # primes the by-name cache
        monkeypatch.setattr(reassign, "target", reassign.other)
        payload = _dumps_by(how, ORIGINAL)
        back = picklable.loads(payload)
        assert back is not reassign.target and back(1) == 2
        assert child.run(checks.call, payload, 1) == 2
        # the new holder of the name goes by its own name
        assert picklable.loads(_dumps_by(how, reassign.target)) is reassign.other

    @pytest.mark.parametrize("how", HOW)
    def test_reassigned_to_a_lambda(self, how, monkeypatch, child):
        """A lambda put under the name ships by value; the old function too."""
        picklable.dumps(ORIGINAL)
        monkeypatch.setattr(reassign, "target", lambda x: x - 1)
        assert child.run(checks.call, _dumps_by(how, reassign.target), 1) == 0
        assert child.run(checks.call, _dumps_by(how, ORIGINAL), 1) == 2

    def test_deleted_then_restored(self, monkeypatch):
        """Deleted: by value. Restored: by reference again, the very object."""
        picklable.dumps(ORIGINAL)
        monkeypatch.delattr(reassign, "target")
        back = picklable.loads(picklable.dumps(ORIGINAL))
        assert back is not ORIGINAL and back(1) == 2
        monkeypatch.undo()
        assert picklable.loads(picklable.dumps(ORIGINAL)) is ORIGINAL

    def test_many_switches(self, monkeypatch):
        """Switching the name back and forth between dumps never ships the wrong one."""
        replacement = lambda x: -x  # noqa: E731
        for i in range(50):
            current = ORIGINAL if i % 2 else replacement
            monkeypatch.setattr(reassign, "target", current)
            for fn in (ORIGINAL, replacement):
                back = picklable.loads(picklable.dumps([fn, fn]))
                assert back[0] is back[1] and back[0](3) == fn(3)
                assert (back[0] is ORIGINAL) == (fn is ORIGINAL and current is ORIGINAL)

    def test_class_attribute_reassigned(self, monkeypatch, child):
        """A method whose class attribute now holds something else ships by value."""
        method = reassign.Holder.method
        assert picklable.loads(picklable.dumps(method)) is method
        monkeypatch.setattr(reassign.Holder, "method", lambda self: "patched")
        payload = picklable.dumps(method)
        assert picklable.loads(payload) is not method
        assert child.run(checks.call, payload, None) == "original"

    def test_module_function_in_a_larger_payload(self, monkeypatch):
        """The retry after a stale answer also holds past the first 64 KiB frame of a stream."""
        data = [bytes(200_000), ORIGINAL]
        picklable.dumps(data)
        monkeypatch.setattr(reassign, "target", reassign.other)
        back = picklable.loads(_dumps_by("dump", data))
        assert back[1](1) == 2 and back[1] is not reassign.other
