"""Tests for `picklable.exceptions` and the errors dumps and loads raise: the type
callers catch is kept, with the path, the reason and the fix (issue 17)."""

from __future__ import annotations

import io
import multiprocessing
import pickle
import sys
import threading

import pytest

import picklable
from picklable.exceptions import PicklingError, UnpicklingError, combined


class Refuses:
    def __reduce__(self):
        raise ValueError("Unpicklable object")


class NoState:
    def __getstate__(self):
        raise TypeError("nope")


class Recursing:
    def __getattribute__(self, name):
        return getattr(self, name)


class OddMeta(type):
    pass


class OddError(Exception, metaclass=OddMeta):
    """An exception type no other class can share a class with (metaclass conflict)."""


class RaisesOdd:
    def __reduce__(self):
        raise OddError("odd")


class RaisesOddWithNote:
    def __reduce__(self):
        error = OddError("odd")
        error.add_note("the object's own note")
        raise error


class TestCombined:
    def test_both_types_one_class_per_pair(self):
        """The class is a PicklingError and the cause's type, made once."""
        cls = combined(PicklingError, TypeError)
        assert cls is combined(PicklingError, TypeError)
        assert issubclass(cls, PicklingError) and issubclass(cls, TypeError)
        assert issubclass(cls, pickle.PicklingError)
        assert cls.__name__ == "PicklingError[TypeError]"
        assert combined(PicklingError, PicklingError) is None

    def test_pickles_as_the_pair(self):
        """A combined error (and its class) comes back as the receiver's own pair."""
        error = picklable.exceptions.make_combined(
            PicklingError, KeyError, "text", path="obj[0]", reason="why", hint="fix"
        )
        assert error is not None
        for dumps, loads in ((pickle.dumps, pickle.loads), (picklable.dumps, picklable.loads)):
            again = loads(dumps(error))
            assert type(again) is type(error)
            assert (str(again), again.path, again.reason, again.hint) == (
                "text",
                "obj[0]",
                "why",
                "fix",
            )
            assert loads(dumps(type(error))) is type(error)

    def test_types_that_cannot_combine(self):
        """Two metaclasses that do not agree: no combined class."""
        assert combined(PicklingError, OddError) is None


class TestDumpErrors:
    def test_c_pickler_type_error(self):
        """A lock: what pickle raises (TypeError), located."""
        with pytest.raises(TypeError) as info:
            picklable.dumps({"job": threading.Lock()})
        assert isinstance(info.value, picklable.PicklingError)
        assert info.value.path == "obj['job']"
        assert info.value.reason == "locks hold OS state"

    def test_object_raising_in_reduce(self):
        """An object's own ValueError: caught as ValueError, its words kept."""
        with pytest.raises(ValueError, match="Unpicklable object") as info:
            picklable.dumps([Refuses()])
        assert isinstance(info.value, pickle.PicklingError)
        assert str(info.value) == (
            "Cannot pickle test_exceptions.Refuses - at obj[0]: Refuses.__reduce__ raised "
            "ValueError: Unpicklable object. Fix: ship what it is made from and rebuild it "
            "inside the worker, or change Refuses.__reduce__."
        )

    def test_nested_getstate_type_error(self):
        """As Dask's protocol tests expect: a nested object's TypeError, matched by its text."""
        with pytest.raises(TypeError, match="nope"):
            picklable.dumps([NoState()])

    def test_multiprocessing_lock(self):
        """multiprocessing's RuntimeError and its own words, with picklable's reason and fix."""
        lock = multiprocessing.Lock()
        with pytest.raises(
            RuntimeError, match="only be shared between processes through inheritance"
        ) as info:
            picklable.dumps(lock)
        assert info.value.hint.startswith("give it to the pool's initializer")

    def test_infinite_recursion_is_named(self):
        """An infinitely recursive __getattribute__ is named, not called 'nested too deep'."""
        with pytest.raises(RecursionError, match="deep recursion") as info:
            picklable.dumps({"x": Recursing()})
        assert isinstance(info.value, pickle.PicklingError)
        assert info.value.path == "obj['x']"
        assert info.value.reason.startswith(
            "deep recursion: Recursing.__getattribute__ (test_exceptions.py:"
        )
        assert info.value.reason.endswith(") calls itself without end")
        assert info.value.hint == (
            "make Recursing.__getattribute__ look its own attributes up with "
            "object.__getattribute__(self, name), not getattr(self, name)"
        )

    def test_explain_names_the_recursion_too(self):
        """explain tells the same reason as dumps."""
        report = picklable.explain({"x": Recursing()})
        assert not report.ships
        assert report.problems[0].why.startswith(
            "deep recursion: Recursing.__getattribute__ (test_exceptions.py:"
        )

    def test_deep_nesting(self):
        """Data nested past the limit: nested too deep, and a RecursionError too."""
        nested: list = []
        # Past every version's limit: 3.14's C stack takes about 40,000 lists.
        for _ in range(200_000):
            nested = [nested]
        with pytest.raises(RecursionError) as info:
            picklable.dumps(nested)
        if sys.version_info >= (3, 12):  # the C pickler's depth has a limit of its own
            assert info.value.reason == (
                "nested deeper than the interpreter's C recursion limit, which "
                "sys.setrecursionlimit() does not raise (Python 3.12+)"
            )
            assert info.value.hint == "flatten the structure, or ship it in shallower parts"
        else:
            assert info.value.reason == (
                f"nested deeper than the recursion limit ({sys.getrecursionlimit()})"
            )
            assert info.value.hint == (
                "flatten the structure, or raise sys.setrecursionlimit() on both sides"
            )

    def test_deep_nesting_in_the_pure_python_pickler(self):
        """Python frames past the recursion limit (deterministic mode): that limit is named."""
        nested: list = []
        for _ in range(sys.getrecursionlimit()):
            nested = [nested]
        with pytest.raises(RecursionError) as info:
            picklable.dumps(nested, deterministic=True)
        assert info.value.reason == (
            f"nested deeper than the recursion limit ({sys.getrecursionlimit()})"
        )

    def test_uncombinable_cause_is_raised_with_notes(self):
        """When no class can be both, the object's own exception, with the located message."""
        with pytest.raises(OddError) as info:
            picklable.dumps([RaisesOdd()])
        assert info.value.path == "obj[0]"  # type: ignore[attr-defined]
        located = (
            "Cannot pickle test_exceptions.RaisesOdd - at obj[0]: RaisesOdd.__reduce__ raised "
            "OddError: odd. Fix: ship what it is made from and rebuild it inside the worker, "
            "or change RaisesOdd.__reduce__."
        )
        assert info.value.__notes__ == [located]

    def test_uncombinable_cause_keeps_its_own_notes(self):
        """Notes the object's code added stay, before the located message."""
        with pytest.raises(OddError) as info:
            picklable.dumps({"key": [RaisesOddWithNote()]})
        assert len(info.value.__notes__) == 2
        assert info.value.__notes__[0] == "the object's own note"
        assert info.value.__notes__[1].startswith(
            "Cannot pickle test_exceptions.RaisesOddWithNote - at obj['key'][0]: "
        )

    def test_chain_is_kept_but_not_printed(self):
        """The pickler's own exception is the context, its printing suppressed."""
        with pytest.raises(TypeError) as info:
            picklable.dumps(threading.Lock())
        assert info.value.__suppress_context__
        assert info.value.__cause__ is None
        assert str(info.value.__context__) == "cannot pickle '_thread.lock' object"

    def test_full_chain_on_request(self, monkeypatch):
        """PICKLABLE_TRACEBACK=full: the pickler's exception is the cause."""
        monkeypatch.setenv("PICKLABLE_TRACEBACK", "full")
        with pytest.raises(TypeError) as info:
            picklable.dumps(threading.Lock())
        assert str(info.value.__cause__) == "cannot pickle '_thread.lock' object"

    def test_refusals_of_picklable_stay_plain(self):
        """What picklable refuses itself (not a failure of code) is a plain PicklingError."""
        reader, writer = multiprocessing.Pipe(duplex=False)
        try:
            with pytest.raises(picklable.PicklingError) as info:
                picklable.dumps(reader)
            assert type(info.value) is picklable.PicklingError
        finally:
            reader.close()
            writer.close()


class TestLoadErrors:
    def test_missing_module(self):
        """A module the receiver lacks: ModuleNotFoundError and UnpicklingError, with its name."""
        payload = pickle.dumps(pickle.Pickler).replace(b"_pickle", b"_nosuch")
        with pytest.raises(ModuleNotFoundError) as info:
            picklable.loads(payload)
        assert isinstance(info.value, picklable.UnpicklingError)
        assert isinstance(info.value, pickle.UnpicklingError)
        assert info.value.name == "_nosuch"
        assert info.value.hint == "install it in the receiving environment"

    def test_missing_attribute(self):
        """An attribute the receiver's module lacks: AttributeError and UnpicklingError."""
        payload = pickle.dumps(pickle.Pickler).replace(b"Pickler", b"Nothing")
        with pytest.raises(AttributeError) as info:
            picklable.loads(payload)
        assert isinstance(info.value, UnpicklingError)

    def test_end_of_file(self):
        """load at the end of a file raises EOFError, as pickle.load does."""
        stream = io.BytesIO(picklable.dumps(1) + picklable.dumps(2))
        found = []
        while True:
            try:
                found.append(picklable.load(stream))
            except EOFError:
                break
        assert found == [1, 2]

    def test_damaged_payload(self):
        """Damage is a plain UnpicklingError (what pickle raises is one already)."""
        with pytest.raises(picklable.UnpicklingError) as info:
            picklable.loads(b"\x80\x05garbage")
        assert type(info.value) is picklable.UnpicklingError


# pickle.dumps({'name': 'd\xe9j\xe0', 'data': '\x00\xff'}, 2) under Python 2.7:
# str there is bytes, which Python 3 must be told how to decode.
PYTHON2_PAYLOAD = (
    b"\x80\x02}q\x00(U\x04dataq\x01U\x02\x00\xffq\x02U\x04nameq\x03U\x04d\xe9j\xe0q\x04u."
)


class TestPickleOptions:
    def test_python2_payload(self):
        """loads and load take pickle's encoding, errors and fix_imports."""
        with pytest.raises(UnicodeDecodeError):
            picklable.loads(PYTHON2_PAYLOAD)
        expected = {"name": "déjà", "data": "\x00\xff"}
        assert picklable.loads(PYTHON2_PAYLOAD, encoding="latin1") == expected
        assert picklable.loads(PYTHON2_PAYLOAD, encoding="bytes") == {
            b"name": b"d\xe9j\xe0",
            b"data": b"\x00\xff",
        }
        assert picklable.load(io.BytesIO(PYTHON2_PAYLOAD), encoding="latin1") == expected
        assert picklable.loads(
            PYTHON2_PAYLOAD, encoding="ascii", errors="replace", allowed=["builtins"]
        ) == {"name": "d\ufffdj\ufffd", "data": "\x00\ufffd"}

    def test_fix_imports(self):
        """Protocol 2 with fix_imports=False writes Python 3 module names."""
        assert b"cexceptions\nValueError" in picklable.dumps(ValueError, protocol=2)
        unfixed = picklable.dumps(ValueError, protocol=2, fix_imports=False)
        assert b"cbuiltins\nValueError" in unfixed
        assert picklable.loads(unfixed, fix_imports=False) is ValueError
