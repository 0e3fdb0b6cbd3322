"""picklable's own rebuilders given garbage (as damaged or forged payloads would):
a clean picklable.UnpicklingError, never a crash or a stray exception type."""

from __future__ import annotations

import marshal
import types

import pytest

import picklable
from picklable import _code, _reconstruct
from picklable_testpkg import api
from support import robust_checks

HERE = _code.HERE
GOOD = _code.seal(marshal.dumps(api.make_closure(1).__code__))


class _Reduce:
    """Pickles as an arbitrary call (to craft payloads)."""

    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


def load_error(fn, *args) -> picklable.UnpicklingError:
    payload = picklable.dumps(_Reduce(fn, args))
    with pytest.raises(picklable.UnpicklingError) as info:
        picklable.loads(payload)
    return info.value


def load_or_refuse(fn, *args) -> None:
    """Loading either works or raises picklable.UnpicklingError (nothing else escapes)."""
    try:
        picklable.loads(picklable.dumps(_Reduce(fn, args)))
    except picklable.UnpicklingError:
        pass


class TestCodeBytes:
    @pytest.mark.parametrize(
        ("data", "reason"),
        [
            (b"garbage", "damaged payload: code checksum"),
            (b"", "damaged payload: code checksum"),
            (GOOD[:-1] + bytes([GOOD[-1] ^ 1]), "damaged payload: code checksum"),
            (GOOD[:10] + bytes([GOOD[10] ^ 4]) + GOOD[11:], "damaged payload: code checksum"),
            (_code.seal(b"\xff\x00garbage"), "damaged payload: bad code bytes"),
            (_code.seal(marshal.dumps((1, 2))), "damaged payload: not code"),
            (bytearray(GOOD), "damaged payload: code is not bytes"),
            ("text", "damaged payload: code is not bytes"),
        ],
    )
    def test_load_code(self, data, reason):
        """_load_code refuses bad bytes before marshal builds anything it cannot trust."""
        _code.CODES.clear()
        assert load_error(_reconstruct._load_code, data, HERE).reason == reason

    def test_make_function_checks_the_same(self):
        """_make_function goes through the same checks."""
        _code.CODES.clear()
        error = load_error(_reconstruct._make_function, b"garbage", HERE, {}, "f", None, None)
        assert error.reason == "damaged payload: code checksum"

    def test_every_single_bit_flip_is_caught(self):
        """Every single-bit flip of a function's code bytes fails the checksum."""
        for i in range(len(GOOD)):
            for bit in (0, 3, 7):
                damaged = bytearray(GOOD)
                damaged[i] ^= 1 << bit
                _code.CODES.clear()
                error = load_error(_reconstruct._load_code, bytes(damaged), HERE)
                assert error.reason.startswith("damaged payload")


class TestRecords:
    @pytest.mark.parametrize("record", [42, None, b"cpython 3.11", ["cpython"]])
    def test_record_not_a_string(self, record):
        """A record of another type is a damaged payload, not an AttributeError."""
        assert load_error(
            _reconstruct._make_function, GOOD, record, {}, "f", None, None
        ).reason == ("damaged payload: no interpreter record")

    def test_record_of_other_shape(self):
        """A record with other fields is refused as another interpreter, fields unknown."""
        error = load_error(_reconstruct._load_code, GOOD, "nonsense")
        assert "compiled by an unknown interpreter;" in str(error)


class TestArguments:
    @pytest.mark.parametrize(
        "args",
        [
            (GOOD, HERE, "not a dict", "f", None, None),
            (GOOD, HERE, {}, 42, None, None),
            (GOOD, HERE, {}, "f", "not a tuple", None),
            (GOOD, HERE, {}, "f", None, (1, 2, 3)),
            (GOOD, HERE, {}, "f", None, None, "extra"),
            ([1, 2], HERE, {}, "f", None, None),
        ],
    )
    def test_make_function_garbage(self, args):
        """Wrong types for globals, name, defaults or closure: UnpicklingError."""
        load_error(_reconstruct._make_function, *args)

    @pytest.mark.parametrize(
        ("fn", "args"),
        [
            (_reconstruct._make_cell, (1, 2)),
            (_reconstruct._make_class, (type, 42, (object,), {}, "id", None)),
            (_reconstruct._make_class, (42, "X", (), {}, "id-2", None)),
            (_reconstruct._make_enum, (42, "X", (), {}, {"A": 1}, "id-4", None)),
            (_reconstruct._resolve, (42, ("x",))),
            (_reconstruct._resolve, ("picklable_testpkg.api", (("a", "b"),))),
            (_reconstruct._import, (42,)),
            (_reconstruct._make_traceback, ("garbage",)),
            (
                _reconstruct._make_traceback,
                ((("f", "n", None, None, "5", None, None, None, None),),),
            ),
            (_reconstruct._exception_setstate, (ValueError(), "garbage")),
            (_reconstruct._with_state, (types.SimpleNamespace(), "garbage")),
            (_reconstruct._make_module, (42, {})),
            (_reconstruct._make_property, (int, None, None, None, None)),
        ],
    )
    def test_other_rebuilders(self, fn, args):
        """Every rebuilder named in payloads fails cleanly on garbage."""
        load_error(fn, *args)

    @pytest.mark.parametrize(
        ("fn", "args"),
        [
            (
                _reconstruct._make_class,
                (type, "X", (object,), {}, "id-5", ("__main__", 42, "/no/file")),
            ),
            (_reconstruct._make_enum, (type, "X", (), {}, {"A": 1}, "id-6", None)),
            (_reconstruct._class_setstate, (type("Fresh", (), {}), ({"x": 1}, ["garbage"]))),
            (_reconstruct._make_traceback, ((("f", "n", None, None, -5, 2**70, -1, None, "x"),),)),
        ],
    )
    def test_tolerated(self, fn, args):
        """Odd but harmless arguments load, or are refused cleanly."""
        load_or_refuse(fn, *args)


class TestTracebacks:
    @pytest.mark.timeout(60)
    def test_odd_positions_print_in_bounded_memory(self, child):
        """Frame records with odd or huge line numbers build tracebacks that print (2 GiB cap)."""
        built = child.run(robust_checks.format_odd_tracebacks, 0, 1000)
        assert built > 300
