"""Instances of plain classes: picklable answers pickle's default reduction itself
(`picklable._reduce.objects`), so the bytes must be pickle's, and every customisation
pickle would honour must still be honoured."""

from __future__ import annotations

import copyreg
import dataclasses
import io
import pickle
from typing import Any

import pytest

import picklable
from picklable._pickler import Pickler
from picklable._reduce import objects as _objects
from picklable._reduce import table as _table


@dataclasses.dataclass
class Point:
    x: int
    y: float
    label: str


class Plain:
    def __init__(self, **attrs: Any) -> None:
        self.__dict__.update(attrs)


class Child(Plain):
    pass


class WithSlots:
    __slots__ = ("a",)

    def __init__(self) -> None:
        self.a = 1


class SlotsAndDict(Plain):
    __slots__ = ("b",)


class WithGetstate(Plain):
    def __getstate__(self) -> dict[str, Any]:
        return {"from": "getstate"}


class WithReduce(Plain):
    def __reduce__(self) -> Any:
        return (Plain, ())


class WithReduceEx(Plain):
    def __reduce_ex__(self, protocol: Any) -> Any:
        return (Plain, ())


class WithNewargs(Plain):
    def __new__(cls, *args: Any) -> Any:
        return super().__new__(cls)

    def __getnewargs__(self) -> tuple[Any, ...]:
        return (1, 2)


class WithGetattr(Plain):
    def __getattr__(self, name: str) -> Any:
        raise AttributeError(name)


class SlotsWithGetattr:
    __slots__ = ("values", "__weakref__")

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(name)


class IntWithGetattr(int):
    def __getattr__(self, name: str) -> Any:
        raise AttributeError(name)


class GetattrAndSetstate(WithGetattr):
    def __setstate__(self, state: Any) -> None:
        self.__dict__.update(state)


class WithGetattribute(Plain):
    def __getattribute__(self, name: str) -> Any:
        return object.__getattribute__(self, name)


class DictAttribute:
    __dict__ = {"shadowed": True}  # type: ignore[assignment]


class ListChild(list):  # type: ignore[type-arg]
    pass


class Failure(Exception):
    pass


def stdlib(obj: Any, protocol: int = 5) -> bytes:
    return pickle.dumps(obj, protocol=protocol)


class TestClassification:
    @pytest.mark.parametrize("cls", [Point, Plain, Child])
    def test_plain(self, cls):
        """Classes that customise nothing about pickling get the direct reduction."""
        assert _objects.is_plain(cls)
        assert _table.handler_for(cls) is _objects.reduce_plain_instance

    @pytest.mark.parametrize(
        "cls",
        [
            WithSlots,
            SlotsAndDict,
            WithGetstate,
            WithReduce,
            WithReduceEx,
            WithNewargs,
            WithGetattr,
            WithGetattribute,
            DictAttribute,
            ListChild,
            Failure,
            int,
            object,
        ],
    )
    def test_not_plain(self, cls):
        """Anything pickle would treat differently is left to pickle."""
        assert not _objects.is_plain(cls)

    @pytest.mark.parametrize("cls", [WithGetattr, SlotsWithGetattr])
    def test_answers_getattr(self, cls):
        """Plain but for a __getattr__ of its own (slots or not): its state is set
        past __getattr__."""
        assert _objects.answers_getattr(cls)
        assert _table.handler_for(cls) is _objects.reduce_getattr_instance

    @pytest.mark.parametrize(
        "cls", [Plain, WithSlots, IntWithGetattr, GetattrAndSetstate, WithGetattribute]
    )
    def test_does_not_answer_getattr(self, cls):
        """No __getattr__, state kept by a C type, or a __setstate__ that reads it back."""
        assert not _objects.answers_getattr(cls)


class TestSameBytesAsPickle:
    @pytest.mark.parametrize(
        "obj",
        [
            pytest.param(Point(1, 2.5, "p"), id="dataclass"),
            pytest.param([Point(i, i / 2, "p") for i in range(100)], id="100-dataclasses"),
            # empty __dict__: state None, as pickle writes it
            pytest.param(Plain(), id="empty"),
            pytest.param(Plain(a=1, nested=Child(b=[1, 2])), id="nested"),
            pytest.param(WithSlots(), id="slots"),
            pytest.param(WithGetstate(a=1), id="getstate"),
            pytest.param(WithReduce(a=1), id="reduce"),
            pytest.param(WithNewargs(), id="getnewargs"),
        ],
    )
    @pytest.mark.parametrize("protocol", [0, 1, 2, 4, 5])
    def test_bytes(self, obj, protocol):
        """Importable classes: byte for byte what stdlib pickle writes, every protocol
        (or a refusal where pickle refuses: slots below protocol 2)."""
        try:
            expected = stdlib(obj, protocol)
        except TypeError:
            with pytest.raises(picklable.PicklingError, match="__slots__"):
                picklable.dumps(obj, protocol=protocol)
        else:
            assert picklable.dumps(obj, protocol=protocol) == expected

    def test_state_dict_memoized_as_pickle_does(self):
        """The state is the instance's own __dict__, memoized as pickle memoizes it:
        a second reference to it is a memo lookup in both."""
        one = Plain(a=1)
        holder = [one, one.__dict__]
        assert picklable.dumps(holder) == stdlib(holder)
        assert picklable.loads(picklable.dumps(holder))[1] == {"a": 1}


class TestGetattrClasses:
    def test_state_set_without_lookups(self):
        """A class with __getattr__: the same object back, its state set past any
        lookup on the empty instance (pickle's BUILD asks it for __setstate__)."""
        loaded = picklable.loads(picklable.dumps(WithGetattr(a=1)))
        assert type(loaded) is WithGetattr and loaded.__dict__ == {"a": 1}

    @pytest.mark.parametrize("protocol", [0, 1])
    def test_old_protocols_are_pickles(self, protocol):
        """Below protocol 2 the bytes are still pickle's."""
        obj = WithGetattr(a=1)
        assert picklable.dumps(obj, protocol=protocol) == stdlib(obj, protocol)


class _RaisingLookups:
    """A callable whose ``__getattr__`` raises another error than
    ``AttributeError`` for every name it lacks (a context-bound proxy used
    outside its context). Without state: pickle's BUILD would look up its
    ``__setstate__`` there, and fail."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"working outside of a context ({name})")

    def __call__(self) -> str:
        return "called"


class TestLookupsThatRaise:
    def test_a_callable_whose_lookups_raise_ships_as_pickle_ships_it(self):
        """pickle looks nothing up on the instance but ``__reduce_ex__``: no lookup
        picklable makes to find it may fail the dump either."""
        obj = _RaisingLookups()
        assert pickle.loads(pickle.dumps(obj))() == "called"
        loaded = picklable.loads(picklable.dumps(obj))
        assert type(loaded) is _RaisingLookups and loaded() == "called"


class TestCustomisationsStillHonoured:
    def test_instance_level_reduce_ex(self):
        """pickle looks __reduce_ex__ up on the instance: an instance attribute wins."""
        obj = Plain(a=1)
        obj.__reduce_ex__ = lambda protocol: (dict, ((("instance", True),),))
        assert picklable.loads(picklable.dumps(obj)) == {"instance": True}

    def test_instance_level_getstate(self):
        """So is __getstate__."""
        obj = Plain(a=1)
        obj.__getstate__ = lambda: {"b": 2}
        assert picklable.loads(picklable.dumps(obj)).__dict__ == {"b": 2}

    def test_copyreg_registration_after_first_dump(self):
        """A copyreg reducer registered after the class was classified still applies."""

        assert picklable.loads(picklable.dumps(Child(a=1))).__dict__ == {"a": 1}
        copyreg.pickle(Child, lambda obj: (Plain, (), {"via": "copyreg"}))
        try:
            loaded = picklable.loads(picklable.dumps(Child(a=1)))
        finally:
            del copyreg.dispatch_table[Child]
        assert type(loaded) is Plain and loaded.__dict__ == {"via": "copyreg"}

    def test_pickler_instance_dispatch_table(self):
        """A table set on a pickler instance applies, as with pickle.Pickler."""
        buffer = io.BytesIO()
        pickler = Pickler(buffer)
        with pytest.raises(AttributeError):
            pickler.dispatch_table  # noqa: B018 - unset, as on pickle.Pickler
        pickler.dispatch_table = {Point: lambda obj: (Plain, (), {"table": "instance"})}
        pickler.dump(Point(1, 2.0, "p"))
        assert picklable.loads(buffer.getvalue()).__dict__ == {"table": "instance"}

    def test_subclass_class_level_dispatch_table(self):
        """A subclass's class-level table applies (cloudpickle 1.6 style)."""

        class TablePickler(Pickler):
            dispatch_table = {Point: lambda obj: (Plain, (), {"table": "class"})}  # noqa: RUF012

        buffer = io.BytesIO()
        TablePickler(buffer).dump([Point(1, 2.0, "p")])
        assert picklable.loads(buffer.getvalue())[0].__dict__ == {"table": "class"}

    def test_member_descriptor_assignment(self):
        """loky sets the C pickler's own dispatch_table field, then the attribute."""

        class LokyStyle(Pickler):
            def __init__(self, file: Any) -> None:
                super().__init__(file)
                table = dict(copyreg.dispatch_table)
                table[Point] = lambda obj: (Plain, (), {"table": "loky"})
                vars(pickle.Pickler)["dispatch_table"].__set__(self, table)
                self.dispatch_table = table

        buffer = io.BytesIO()
        LokyStyle(buffer).dump(Point(1, 2.0, "p"))
        assert picklable.loads(buffer.getvalue()).__dict__ == {"table": "loky"}

    def test_deterministic_pickler(self):
        """The deterministic pickler shares the reducer and gives pickle's bytes too."""
        obj = [Point(1, 2.0, "p"), Plain()]
        assert picklable.dumps(obj, deterministic=True) == stdlib(obj)
