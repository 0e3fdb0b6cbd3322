"""A sixth held-out set: a fourteenth security review's routes through ``allowed=``.

1. A constructor that returns the receiver's own singleton (pandas' ``NAType()``
   returns ``pd.NA``), then a BUILD: the class's own ``__setstate__`` (pandas'
   code, an allowed module's) wrote the payload's dict into ``pd.NA``, so that
   every later pickle of data holding NA failed, or the receiver's own repr of
   a Series read memory at an address the payload chose. A state set on an
   object something else holds is refused now unless it is the state the object
   already has (numpy's cached dtypes, which every array's payload sets again).
2. An object the payload makes (``SimpleNamespace``) given
   ``__array_interface__`` in its state: ``np.array(result)`` then follows the
   payload's address (a crash, or memory read and written). Refused in every
   state, and in the namespace of a class built without code.
3. pandas' ``_new_DatetimeIndex(cls, d)`` (and its siblings) handed
   ``numpy.memmap``: they run ``cls.__new__(cls, **d)``, which created or
   truncated a file the payload named. A rebuild function that constructs the
   class it is handed gets one of the kind it rebuilds.

Each is refused with an UnpicklingError; the controls load.
``test_the_attacks_are_real`` loads the payloads with plain ``pickle.loads``.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

import picklable
from support.guarded import refused
from support.opcodes import (
    build,
    call,
    dict_,
    integer,
    payload,
    payload_class,
    stack_global,
    text,
    tuple_,
)

np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")

_NA_TYPE = stack_global(type(pd.NA).__module__, type(pd.NA).__name__)


def na_with_state(**state: bytes) -> bytes:
    """``NAType()``, then BUILD with ``(state,)``: Cython's ``__setstate__``
    updates the object's ``__dict__`` with ``state``."""
    return payload(build(call(_NA_TYPE), tuple_(dict_(**state))))


def test_the_receiver_s_singleton_keeps_its_state() -> None:
    before = dict(vars(pd.NA))
    assert refused(na_with_state(__module__=text("numpy")), ["pandas"])
    assert vars(pd.NA) == before
    pickle.dumps(pd.Series(["x", None], dtype="string[python]"))  # NA still pickles


def test_control_the_singleton_alone_and_arrays_with_their_dtypes_load() -> None:
    assert picklable.loads(payload(call(_NA_TYPE)), allowed=["pandas"]) is pd.NA
    for obj in (
        np.arange(4.0),
        np.array(["a"], dtype="U3"),
        np.array([1], dtype="M8[ns]"),
        np.zeros(2, dtype=[("a", "f8"), ("b", "i4")]),
        pd.Series([1, None], dtype="Int64"),
    ):
        for protocol in (2, 5):
            loaded = picklable.loads(pickle.dumps(obj, protocol), allowed=["numpy", "pandas"])
            assert type(loaded) is type(obj)
            assert loaded.dtype == obj.dtype


def _array_interface() -> bytes:
    return dict_(
        data=tuple_(integer(16), b"\x89"),
        shape=tuple_(integer(64)),
        typestr=text("|u1"),
        version=integer(3),
    )


def namespace_describing_memory() -> bytes:
    namespace = call(stack_global("types", "SimpleNamespace"))
    return payload(build(namespace, dict_(__array_interface__=_array_interface())))


def class_describing_memory() -> bytes:
    namespace = dict_(__module__=text("payload"), __array_interface__=_array_interface())
    return payload(
        payload_class(text("Raw"), tuple_(stack_global("builtins", "object")), namespace)
    )


def test_no_object_describes_memory_to_numpy() -> None:
    assert refused(namespace_describing_memory(), [])


def test_no_class_without_code_describes_memory_to_numpy() -> None:
    """Under a list that admits the module the class claims: refused for its
    namespace, not for its module."""
    with pytest.raises(picklable.UnpicklingError, match="__array_interface__"):
        picklable.loads(class_describing_memory(), allowed=["payload"])


def test_control_a_namespace_with_plain_state_loads() -> None:
    namespace = call(stack_global("types", "SimpleNamespace"))
    loaded = picklable.loads(payload(build(namespace, dict_(x=integer(1)))), allowed=[])
    assert loaded.x == 1


def test_control_a_class_without_code_loads() -> None:
    namespace = dict_(__module__=text("payload"), x=integer(1))
    data = payload(
        payload_class(text("Plain"), tuple_(stack_global("builtins", "object")), namespace)
    )
    assert picklable.loads(data, allowed=["payload"]).x == 1


def index_of_memmap(function: tuple[str, str], path: Path) -> bytes:
    state = dict_(filename=text(str(path)), mode=text("w+"), shape=tuple_(integer(8)))
    return payload(call(stack_global(*function), stack_global("numpy", "memmap"), state))


_CONSTRUCTING = [
    ("pandas.core.indexes.datetimes", "_new_DatetimeIndex"),
    ("pandas.core.indexes.timedeltas", "_new_TimedeltaIndex"),
    ("pandas.core.indexes.base", "_new_Index"),
]


@pytest.mark.parametrize("function", _CONSTRUCTING, ids=[f for _, f in _CONSTRUCTING])
def test_an_index_rebuilder_constructs_only_indexes(function, tmp_path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("the receiver's data")
    assert refused(index_of_memmap(function, victim), ["pandas", "numpy"])
    assert victim.read_text() == "the receiver's data"
    assert refused(index_of_memmap(function, tmp_path / "made"), ["pandas", "numpy"])
    assert not (tmp_path / "made").exists()


def test_control_indexes_load_through_their_rebuilders() -> None:
    for index in (
        pd.date_range("2020", periods=3),
        pd.timedelta_range("1 day", periods=2),
        pd.interval_range(0, 3),
        pd.Index([1, 2]),
    ):
        loaded = picklable.loads(pickle.dumps(index), allowed=["pandas", "numpy"])
        assert loaded.equals(index)
    masked = np.ma.masked_array([1, 2], mask=[0, 1])
    loaded = picklable.loads(pickle.dumps(masked), allowed=["numpy"])
    assert loaded.mask.tolist() == [False, True]


def test_a_masked_array_rebuilder_is_handed_a_masked_array_class() -> None:
    data = payload(
        call(
            stack_global("numpy.ma.core", "_mareconstruct"),
            stack_global("numpy", "memmap"),
            stack_global("numpy", "ndarray"),
            tuple_(integer(0)),
            text("b"),
        )
    )
    assert refused(data, ["numpy"])


def test_the_attacks_are_real(tmp_path) -> None:
    """Plain pickle reaches each goal from the same bytes (run in this process:
    the singleton's state is put back, the file is the test's own)."""
    before = dict(vars(pd.NA))
    try:
        pickle.loads(na_with_state(note=text("set by the payload")))
        assert vars(pd.NA)["note"] == "set by the payload"
    finally:
        vars(pd.NA).clear()
        vars(pd.NA).update(before)
    assert "__array_interface__" in vars(pickle.loads(namespace_describing_memory()))
    victim = tmp_path / "victim.txt"
    victim.write_text("the receiver's data")
    pickle.loads(index_of_memmap(_CONSTRUCTING[0], victim))
    assert victim.read_bytes() == b"\0" * 8
