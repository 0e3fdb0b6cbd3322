"""Tests for `picklable._reconstruct` and load errors."""

from __future__ import annotations

import functools
import io
import pickle
import pickletools
import sys

import pytest

import picklable
from picklable import _code, _paths, _pickler, _reconstruct, _signing
from picklable_testpkg import api
from support import cross_version_probe as probe


def _signing_header() -> int:
    """Bytes of a signed payload before its pickle."""
    return len(_signing.sign(_signing.check_key(picklable.new_key()), b"", []))


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


HERE = _code.HERE
# Another interpreter's record, as long as this one's (a payload can be forged in place).
FORGED = "cpython 3." + "9" * (len(HERE) - len("cpython 3."))


def _forged(data: bytes) -> bytes:
    """``data`` as if made by the interpreter FORGED (every record replaced)."""
    assert len(FORGED) == len(HERE) and FORGED != HERE and HERE.encode() in data
    return data.replace(HERE.encode(), FORGED.encode())


def _streamed(obj) -> bytes:
    """``obj`` written by a Pickler straight into a stream (no check in front)."""
    stream = io.BytesIO()
    picklable.Pickler(stream).dump(obj)
    return stream.getvalue()


def _dumped(obj) -> bytes:
    stream = io.BytesIO()
    picklable.dump(obj, stream)
    return stream.getvalue()


def _out_of_band(obj) -> tuple[bytes, list[pickle.PickleBuffer]]:
    buffers: list[pickle.PickleBuffer] = []
    return picklable.dumps(obj, buffer_callback=buffers.append), buffers


def _annotated():
    def annotated(x: api.Record) -> None:
        """A copied function whose annotation is a class that is not built in."""

    annotated.__annotations__ = {"x": api.Record}  # not the string (future annotations)
    return annotated


# Each way the front door writes a payload: (how, make the payload, load it).
WAYS = {
    "dumps": (picklable.dumps, picklable.loads),
    "dump": (_dumped, lambda data: picklable.load(io.BytesIO(data))),
    "deterministic": (lambda obj: picklable.dumps(obj, deterministic=True), picklable.loads),
    "protocol 2": (lambda obj: picklable.dumps(obj, 2), picklable.loads),
    "protocol 0": (lambda obj: picklable.dumps(obj, 0), picklable.loads),
    "pickle.loads": (picklable.dumps, pickle.loads),
    "allow-list": (
        picklable.dumps,
        lambda data: picklable.loads(
            data,
            allowed=picklable.Policy(
                [
                    "picklable_testpkg",
                    "support.cross_version_probe",
                    "support.cross_version_probe.mark",  # a function, by its exact name
                    "test_reconstruct",
                ],
                by_value_code=True,
            ),
        ),
    ),
}


class TestInterpreterGuard:
    def test_other_interpreter_refused_before_marshal(self):
        """Code from another Python version is refused with both sides named, also
        without the check in front (a Pickler's stream)."""
        data = _forged(_streamed(api.make_closure(1)))
        with pytest.raises(picklable.UnpicklingError) as info:
            picklable.loads(data)
        assert f"compiled by {FORGED}; this interpreter is {HERE}." in str(info.value)

    @pytest.mark.parametrize("way", list(WAYS))
    def test_refused_before_anything_of_the_payload_runs(self, way):
        """A payload with code by value, made by another interpreter, is refused
        before the objects in front of its code are loaded."""
        make, load = WAYS[way]
        data = make((probe.Trace(way), api.make_closure(2)))
        assert load(data)[1](1) == 3
        assert probe.RAN.count(way) == 1
        with pytest.raises(picklable.UnpicklingError) as info:
            load(_forged(data))
        assert str(info.value) == (
            f"Cannot load: this payload was made by {FORGED} for that Python minor version "
            "alone (it carries code or classes by value, or objects that differ between "
            f"versions); this interpreter is {HERE}. Fix: run the same Python minor version "
            "on both sides."
        )
        assert probe.RAN.count(way) == 1  # the Trace in front was not loaded

    def test_out_of_band_and_signed_payloads_are_checked_first(self):
        """With buffers out of band, or signed, the check still comes first."""
        data, buffers = _out_of_band((probe.Trace("oob"), api.make_closure(2)))
        with pytest.raises(picklable.UnpicklingError, match=f"made by {FORGED} for that"):
            picklable.loads(_forged(data), buffers=buffers)
        key = picklable.new_key()
        signed = picklable.dumps((probe.Trace("signed"), api.make_closure(2)), key=key)
        assert signed.index(_pickler.INTERPRETER_CHECK) == _signing_header() + 2
        assert "oob" not in probe.RAN

    def test_classes_by_value_without_code_are_checked(self):
        """A class by value binds its payload to its interpreter, methods or not."""
        empty = type("Empty", (), {"__module__": "test_reconstruct", "__qualname__": "f.Empty"})
        data = picklable.dumps(empty)
        assert data.startswith(pickle.PROTO + b"\x05" + _pickler.INTERPRETER_CHECK)
        with pytest.raises(picklable.UnpicklingError, match=f"made by {FORGED} for that"):
            picklable.loads(_forged(data))

    def test_check_is_unframed_and_adds_no_memo(self):
        """The check sits after PROTO, outside frames, and memoizes nothing: the rest
        is what a Pickler writes into a stream, byte for byte."""
        obj = [probe.Trace("memo"), api.make_closure(1), api.make_closure(1), {"k": api.Frame}]
        data = picklable.dumps(obj)
        assert data == _pickler.with_interpreter_check(_streamed(obj))
        assert data[2:].startswith(_pickler.INTERPRETER_CHECK)
        pickletools.dis(data, io.StringIO())  # the memo and stack add up

    @pytest.mark.parametrize(
        "obj",
        [
            api.make_closure(1),
            lambda x: x + 1,
            api.make_closure(1).__code__,
            [api.make_closure(i) for i in range(3)],
            (api.make_closure(1), (2,), {"k": api.Frame}),
            {"task": api.make_closure(1), "args": (api.Record("r", 1),)},
        ],
        ids=["closure", "lambda", "code", "list", "function and arguments", "dict"],
    )
    def test_first_call_checks_the_record_itself(self, obj):
        """A payload whose first call is a by-value function's (or code's) rebuilder,
        with arguments of plain data, needs no check in front: that call checks
        the record before anything else runs (one global lookup less to load)."""
        data = picklable.dumps(obj)
        assert _pickler.INTERPRETER_CHECK not in data
        assert data == _streamed(obj)
        with pytest.raises(picklable.UnpicklingError) as info:
            picklable.loads(_forged(data))
        assert f"compiled by {FORGED}; this interpreter is {HERE}." in str(info.value)

    @pytest.mark.parametrize(
        "obj",
        [
            lambda: api,  # a module among its globals: _import runs first
            lambda: len(api.Record.__name__),
            (api.plain, lambda x: x),  # a reference first
            _annotated(),
            {api.Color.RED: lambda x: x},
        ],
        ids=["module global", "reference global", "reference first", "annotation", "key"],
    )
    def test_anything_before_the_first_check_puts_the_check_in_front(self, obj):
        """An import or a call before the first by-value rebuilder: the check goes in front."""
        assert picklable.dumps(obj).startswith(pickle.PROTO + b"\x05" + _pickler.INTERPRETER_CHECK)

    @pytest.mark.parametrize(
        "obj",
        [{"a": [1, 2.5, b"x"]}, api.plain, api.add, api.Record("r", 1), api.Color.RED, len],
        ids=["data", "function", "located", "instance", "enum member", "builtin"],
    )
    def test_nothing_by_value_nothing_in_front(self, obj):
        """Payloads without code or classes by value get no check: they load on
        every version (and plain references are stdlib pickle's bytes)."""
        for data in (picklable.dumps(obj), _dumped(obj), picklable.dumps(obj, 2)):
            assert b"_check_interpreter" not in data
        if obj is not api.add:
            assert picklable.dumps(obj) == pickle.dumps(obj, protocol=5)

    def test_check_rebuilder_accepts_this_interpreter(self):
        """_check_interpreter is quiet for this interpreter's record."""
        assert _reconstruct._check_interpreter(HERE) is None
        with pytest.raises(
            picklable.UnpicklingError, match="made by an unknown interpreter for that"
        ):
            _reconstruct._check_interpreter("nonsense")

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

    @pytest.mark.skipif(sys.version_info < (3, 12), reason="type aliases are new in Python 3.12")
    def test_type_alias_without_module(self):
        """An alias made where the globals had no ``__name__`` has no module:
        neither has its copy. Any other module that is not a string is refused."""
        box: list[object] = []
        alias = _reconstruct._make_type_alias("Bare", (), None, None, "test-bare", box)
        box[:] = [int]
        assert (alias.__name__, alias.__module__, alias.__value__) == ("Bare", None, int)
        for module in (1, b"mod", ["mod"]):
            with pytest.raises(picklable.UnpicklingError, match="damaged"):
                _reconstruct._make_type_alias("Bad", (), module, None, "test-bad-module", [])

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


class TestPartialmethod:
    """A partialmethod travels as its function, arguments and keywords, given back
    to its constructor: pickle's default (``object.__new__``, then the
    ``__dict__``) does not load on Python 3.14, whose ``__new__`` wants them."""

    def test_round_trip(self):
        method = functools.partialmethod(api.add, 1)
        method.note = "kept"  # type: ignore[attr-defined]
        back = picklable.loads(picklable.dumps(method))
        assert type(back) is functools.partialmethod and back is not method
        assert (back.func, back.args, back.keywords) == (api.add, (1,), {})
        assert back.note == "kept"  # type: ignore[attr-defined]

    @pytest.mark.skipif(
        not hasattr(functools, "Placeholder"), reason="functools.Placeholder is new in Python 3.14"
    )
    def test_placeholder(self):
        """An empty slot stays empty: the constructor counts it again."""
        placeholder = functools.Placeholder  # type: ignore[attr-defined]

        class Holder:
            def pair(self, a: int, b: int) -> tuple[int, int]:
                return (a, b)

            second = functools.partialmethod(pair, placeholder, 2)

        back = picklable.loads(picklable.dumps(vars(Holder)["second"]))
        assert back.args == (placeholder, 2)
        assert back.__get__(Holder(), Holder)(1) == (1, 2)

    @pytest.mark.parametrize("args", [([1], {}), ((1,), {1: 2}), ((1,), [("k", 2)])])
    def test_damaged(self, args):
        with pytest.raises(
            picklable.UnpicklingError, match=r"Cannot load a functools\.partialmethod: its"
        ):
            _reconstruct._make_partialmethod(api.add, *args)


class TestFunctionStateEffects:
    """``_first`` and ``_fill_cell``: what a copied function's state runs once the
    function is memoized (cells and globals that lead back to it). Payloads of
    0.1.0 named ``operator.itemgetter(0)`` and ``builtins.setattr`` instead:
    tests/old_payloads (``function_recursive.pkl``) keeps them loading."""

    def test_a_cell_that_leads_back_is_filled_by_fill_cell(self):
        def outer():
            def again(n):
                return n if n < 1 else again(n - 1)

            return again

        data = picklable.dumps(outer())
        names = {arg for op, arg, _ in pickletools.genops(data) if op.name == "SHORT_BINUNICODE"}
        assert {"_first", "_fill_cell"} <= names
        assert not {"itemgetter", "setattr"} & names
        copy = picklable.loads(data)
        assert (
            copy(3) == 0
            and copy.__qualname__
            == "TestFunctionStateEffects.test_a_cell_that_leads_back_is_filled_by_fill_cell.<locals>.outer.<locals>.again"
        )
        assert copy.__closure__[0].cell_contents is copy

    def test_fill_cell_writes_cells_only(self):
        holder = type("Holder", (), {})()
        with pytest.raises(picklable.UnpicklingError, match="not a closure cell"):
            _reconstruct._fill_cell(holder, 1)
        assert not hasattr(holder, "cell_contents")

    def test_first_passes_on_names_only(self):
        assert _reconstruct._first("f.<locals>.g", None, None) == "f.<locals>.g"
        with pytest.raises(picklable.UnpicklingError, match="not a qualified name"):
            _reconstruct._first({"mode": "x"})


class _Both:
    """Slots and a ``__dict__``: a slot's value never belongs in the dict."""

    __slots__ = ("a", "__secret", "__dict__")

    def __init__(self) -> None:
        self.a = 1
        self.__secret = "s"
        self.b = 2


class _Items(dict):  # type: ignore[type-arg]
    def __call__(self) -> None:
        pass


class _Steps(list):  # type: ignore[type-arg]
    pass


class TestOwnOrCopyLayout:
    """The receiver's side of state kept in slots and in a list's or dict's items
    (``_layout``): its own object where it holds the shipped state, else a copy
    that holds it, the original never changed."""

    def test_slot_names_are_mangled_as_python_mangles_them(self) -> None:
        from picklable._layout import slot_names, slot_values

        assert slot_names(_Both) == ["a", "_Both__secret"]
        assert slot_values(_Both()) == {"a": 1, "_Both__secret": "s"}

    def test_a_slot_is_set_as_a_slot_on_the_copy(self) -> None:
        own = _Both()
        assert _reconstruct._own_or_copy(own, {"a": 1, "b": 2}) is own
        made = _reconstruct._own_or_copy(own, {"a": 5, "b": 6})
        assert made is not own and (made.a, made.b) == (5, 6)
        assert "a" not in made.__dict__  # the slot's descriptor would hide it there
        assert made._Both__secret == "s"  # copied from the receiver's own
        assert (own.a, own.b) == (1, 2)

    def test_a_dicts_items(self) -> None:
        from picklable._layout import ITEMS

        own = _Items(x=1)
        assert _reconstruct._own_or_copy(own, {ITEMS: {"x": 1}}) is own
        made = _reconstruct._own_or_copy(own, {ITEMS: {"x": 1, "y": 2}})
        assert type(made) is _Items and dict(made) == {"x": 1, "y": 2}
        assert dict(own) == {"x": 1}

    def test_a_lists_items_and_attributes(self) -> None:
        from picklable._layout import ITEMS

        own = _Steps([1])
        own.label = "import"  # type: ignore[attr-defined]
        made = _reconstruct._own_or_copy(own, {ITEMS: [1, 2], "label": "sender"})
        assert type(made) is _Steps and list(made) == [1, 2] and made.label == "sender"
        assert list(own) == [1] and own.label == "import"  # type: ignore[attr-defined]

    def test_items_that_lead_back_to_the_object(self) -> None:
        """A registry holding itself: its state is set on the copy afterwards,
        its items included (``_set_instance_state``)."""
        from picklable_testpkg import held

        held.REGISTRY["me"] = held.REGISTRY
        try:
            data = picklable.dumps(held.REGISTRY)
        finally:
            del held.REGISTRY["me"]
        made = picklable.loads(data)
        assert made is not held.REGISTRY and made["me"] is made
        assert sorted(made) == ["me", "neg"] and sorted(held.REGISTRY) == ["neg"]
