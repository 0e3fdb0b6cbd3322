"""A fifth held-out set: a twelfth security review's routes through ``allowed=``.

1. A chain of closure cells, each filled with the previous one through the
   guarded ``setattr`` (the one ``setattr`` admitted: a cell's
   ``cell_contents``): no depth was recorded for it, and freeing a long chain
   recurses in C (a crash after the load, from about a million cells; refused
   now past the depth limit, as cells nested by calls are).
2. A class built by value (no code) that claims the module and name of a class
   an allowed module has (``pandas._libs.tslibs.offsets.Day``): equal in name,
   it hashed and compared equal to the real one, and a constructor the list
   admits cached it in a registry of the receiver (``PeriodDtype("D")`` became
   monthly for the rest of the process). Here the same claim on
   ``collections.OrderedDict``, and the pandas route itself where pandas is
   installed.

And a thirteenth's, past those fixes:

3. the same claim with a ``__qualname__`` that is a ``str`` subclass
   (``numpy.str_``), which the check of the place skipped;
4. a class made at a free place, then renamed into the taken one by its state
   (``_class_setstate`` setting ``__module__`` and ``__qualname__``).

Each is refused with an UnpicklingError; the controls load. ``test_the_attacks_are_real``
loads the payloads with plain ``pickle.loads``.
"""

from __future__ import annotations

import pickle
import types
from typing import Any

import pytest

import picklable
from support.guarded import refused
from support.opcodes import (
    NONE,
    call,
    dict_,
    get,
    payload,
    payload_class,
    put,
    rebuilder,
    stack_global,
    text,
    tuple_,
)

CELLS_PAST_THE_LIMIT = 10_050


def cell_chain(links: int) -> bytes:
    """``links`` cells, each filled with the one before through ``setattr``
    (memo 0: the newest cell, 1: the head of the chain)."""
    make = call(stack_global("types", "CellType"))
    step = (
        put(0)
        + b"0"  # POP the new cell; it stays in the memo
        + call(stack_global("builtins", "setattr"), get(0), text("cell_contents"), get(1))
        + b"0"
        + get(0)
        + put(1)
        + b"0"
    )
    return payload(make + put(1) + b"0" + (make + step) * links + get(1))


def test_a_chain_of_cells_past_the_depth_limit_is_refused() -> None:
    assert refused(cell_chain(CELLS_PAST_THE_LIMIT), [])


def test_control_a_short_chain_of_cells_loads() -> None:
    head = picklable.loads(cell_chain(10), allowed=[])
    depth = 0
    while type(head) is types.CellType:
        try:
            head = head.cell_contents
        except ValueError:  # the first cell: empty
            break
        depth += 1
    assert depth == 10


def made_class(module: str, qualname: bytes, base: bytes) -> bytes:
    """_make_class: a class by value (no code) at ``module`` + ``qualname``."""
    namespace = dict_(__module__=text(module), __qualname__=qualname)
    return payload_class(text("Impostor"), tuple_(base), namespace)


def impostor(module: str, qualname: str, base: bytes) -> bytes:
    """A class by value (no code) claiming ``module.qualname``."""
    return payload(made_class(module, text(qualname), base))


def str_subclass_impostor() -> bytes:
    """The claim with a ``__qualname__`` of a ``str`` subclass (``collections.UserString``
    is no str; a payload's own subclass of str is made by ``_make_class``)."""
    subclass = made_class("collections", text("NotTaken"), stack_global("builtins", "str"))
    name = call(subclass, text("OrderedDict"))
    return payload(made_class("collections", name, stack_global("builtins", "dict")))


def renamed_impostor() -> bytes:
    """A class made at a free place, renamed into a taken one by its state."""
    free = made_class("collections", text("Free"), stack_global("builtins", "dict"))
    state = tuple_(dict_(__qualname__=text("OrderedDict")), tuple_())
    return payload(call(rebuilder("_class_setstate"), free, state))


def test_a_class_by_value_cannot_take_an_existing_class_s_place() -> None:
    data = impostor("collections", "OrderedDict", stack_global("builtins", "dict"))
    assert refused(data, ["collections"])


@pytest.mark.parametrize(
    "make", [str_subclass_impostor, renamed_impostor], ids=["str subclass", "renamed"]
)
def test_no_way_around_the_taken_place(make: Any) -> None:
    assert refused(make(), ["collections"])


def test_control_a_class_by_value_in_a_free_place_loads() -> None:
    data = impostor("collections", "NotThere", stack_global("builtins", "dict"))
    cls = picklable.loads(data, allowed=["collections"])
    assert cls.__qualname__ == "NotThere" and cls.__module__ == "collections"


def test_the_pandas_period_registry_is_not_poisoned() -> None:
    pd = pytest.importorskip("pandas")
    offsets = "pandas._libs.tslibs.offsets"
    day = impostor(offsets, "Day", stack_global(offsets, "Tick"))
    assert refused(day, ["pandas", "numpy"])
    assert str(pd.PeriodDtype("D")) == "period[D]"


def test_the_attacks_are_real() -> None:
    """Plain pickle builds the chain and the impostor (a class that is not
    collections' own, under its name)."""
    head = pickle.loads(cell_chain(50))
    assert hasattr(head, "cell_contents")
    cls = pickle.loads(impostor("collections", "OrderedDict", stack_global("builtins", "dict")))
    import collections

    assert cls.__qualname__ == "OrderedDict" and cls is not collections.OrderedDict


def test_a_closure_cell_is_never_handed_out_under_a_list() -> None:
    """``_closure_cell`` (a payload's object handed a closure out) gives a part of
    whatever function it is given: refused under any list, before it runs."""
    data = payload(call(rebuilder("_closure_cell"), stack_global("builtins", "len"), NONE))
    with pytest.raises(picklable.UnpicklingError, match="never under an allow-list"):
        picklable.loads(data, allowed=["builtins"])
