"""Tests for `picklable._reconstruct` and load errors."""

from __future__ import annotations

import pickle
import sys

import pytest

import picklable
from picklable import _code, _paths, _reconstruct
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
        assert _paths.format_path("m", path) == "m:add.__closure__[0].cell_contents['k']"


class TestInterpreterGuard:
    def test_other_interpreter_refused_before_marshal(self):
        """Code from another Python version is refused with both sides named."""
        data = picklable.dumps(api.make_closure(1))
        here = _code.HERE
        forged = "cpython 3." + "9" * (len(here) - len("cpython 3."))
        assert len(forged) == len(here) and forged != here
        with pytest.raises(picklable.UnpicklingError) as info:
            picklable.loads(data.replace(here.encode(), forged.encode()))
        message = str(info.value)
        assert f"compiled by {forged}; this interpreter is {here}." in message

    def test_record_is_implementation_and_minor_version(self):
        """The record says what users can act on: "cpython 3.11"."""
        major, minor = sys.version_info[:2]
        assert f"{sys.implementation.name} {major}.{minor}" == _code.HERE

    @pytest.mark.parametrize("record", ["", "cpython", "cpython 3.x", "x" * 50 + " 3.11", "a b c"])
    def test_malformed_record_is_not_quoted(self, record):
        """A record that does not read like one is called unknown, not echoed."""
        with pytest.raises(picklable.UnpicklingError) as info:
            _code.check_interpreter(record)
        assert "compiled by an unknown interpreter;" in str(info.value)

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
