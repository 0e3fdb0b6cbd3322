"""Tests for `picklable._reconstruct` and load errors."""

from __future__ import annotations

import pickle

import pytest

import picklable
from picklable import _reconstruct
from picklable_testpkg import api


class TestResolve:
    def test_missing_module(self):
        """A payload naming a module absent here says so and how to fix it."""
        payload = pickle.dumps(
            _Reduce(_reconstruct._resolve, ("no_such_module_abc", ("f",))), protocol=5
        )
        with pytest.raises(picklable.UnpicklingError) as info:
            picklable.loads(payload)
        assert str(info.value).startswith(
            "Cannot load: module 'no_such_module_abc' is not importable here"
        )

    def test_renamed_attribute(self):
        """A located path that no longer exists names the path."""
        payload = pickle.dumps(
            _Reduce(_reconstruct._resolve, ("picklable_testpkg.api", ("Frame", "gone"))), 5
        )
        with pytest.raises(picklable.UnpicklingError) as info:
            picklable.loads(payload)
        assert "Cannot load picklable_testpkg.api:Frame.gone" in str(info.value)

    def test_format_path(self):
        """Paths render as module:attr[index]['key']."""
        path = ("add", "__closure__", 0, "cell_contents", ("k",))
        assert _reconstruct.format_path("m", path) == "m:add.__closure__[0].cell_contents['k']"


class TestInterpreterGuard:
    def test_other_interpreter_refused_before_marshal(self):
        """Code from another Python version is refused with both sides named."""
        data = picklable.dumps(api.make_closure(1))
        here = _reconstruct._HERE
        forged = here.replace(here.split(" ")[1], "3.99").replace(here.split(" ")[2], "9999")
        assert len(forged) == len(here)
        with pytest.raises(picklable.UnpicklingError) as info:
            picklable.loads(data.replace(here.encode(), forged.encode()))
        message = str(info.value)
        assert "compiled by cpython 3.99 (bytecode magic 9999" in message
        assert f"this interpreter is cpython {here.split(' ')[1]}" in message

    def test_damaged_payload(self):
        """Truncated bytes give a clean UnpicklingError."""
        data = picklable.dumps(api.make_closure(1))
        with pytest.raises(picklable.UnpicklingError, match="damaged or not a pickle"):
            picklable.loads(data[: len(data) // 2])


class _Reduce:
    """Pickles as an arbitrary call (to craft payloads)."""

    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)
