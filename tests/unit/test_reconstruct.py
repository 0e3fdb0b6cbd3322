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


def _version() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


class TestNewerPythonsKinds:
    """Rebuilders of kinds a Python may lack (type aliases: 3.12; lazy imports: 3.15)."""

    def test_type_alias(self):
        """A type statement's alias, or the version that has them named."""
        if sys.version_info < (3, 12):
            with pytest.raises(picklable.UnpicklingError) as info:
                _reconstruct._make_type_alias("Pair", (), __name__, None, "test-alias", [])
            assert str(info.value).startswith(
                "Cannot load a type alias (a type statement): it is new in Python 3.12, "
                f"and this is Python {_version()}."
            )
            return
        box: list[object] = []
        alias = _reconstruct._make_type_alias("Pair", (), __name__, None, "test-alias", box)
        box[:] = [tuple[int, int]]
        assert (alias.__name__, alias.__module__, alias.__value__) == (
            "Pair",
            __name__,
            tuple[int, int],
        )
        again = _reconstruct._make_type_alias("Pair", (), __name__, None, "test-alias", [])
        assert again is alias  # one per tracker id

    def test_type_parameter_default(self):
        """A default of a type parameter needs 3.13: said so before."""
        params = (("TypeVar", "T", 0, True, "test-default-T"),)
        if sys.version_info < (3, 13):
            with pytest.raises(picklable.UnpicklingError) as info:
                _reconstruct._make_type_alias("Defaulted", params, __name__, None, "test-d", [])
            wanted = (
                "Cannot load a type alias (a type statement): it is new in Python 3.12"
                if sys.version_info < (3, 12)
                else "Cannot load a type parameter with a default: it is new in Python 3.13"
            )
            assert str(info.value).startswith(f"{wanted}, and this is Python {_version()}.")
            return
        box: list[object] = []
        alias = _reconstruct._make_type_alias("Defaulted", params, __name__, None, "test-d", box)
        box[:] = [list[int], str]
        (variable,) = alias.__type_params__
        assert (variable.__name__, variable.__default__, alias.__value__) == ("T", str, list[int])

    def test_lazy_import(self):
        """A lazy import of the module, not imported yet; or the version that has them named."""
        module = "picklable_testpkg.lazypkg.stats"
        if sys.version_info < (3, 15):
            with pytest.raises(picklable.UnpicklingError) as info:
                _reconstruct._make_lazy_import(module, None, module)
            assert str(info.value).startswith(
                f"Cannot load a lazy import of {module!r}: it is new in Python 3.15, and this "
                f"is Python {_version()}."
            )
            return
        lazy = _reconstruct._make_lazy_import(module, None, module)
        assert type(lazy).__name__ == "lazy_import"
        assert lazy.resolve() is sys.modules[module]

    @pytest.mark.parametrize(
        ("args", "what"),
        [
            (("os.path; import os", None, None), "a lazy import"),
            (("json", ("dumps",), "loads"), "a lazy import"),
            (("json", None, "dumps"), "a lazy import"),
        ],
    )
    def test_damaged_lazy_import(self, args, what):
        """Names that no import statement takes are refused on every Python."""
        with pytest.raises(picklable.UnpicklingError, match=f"Cannot load {what}: the payload"):
            _reconstruct._make_lazy_import(*args)
