"""Instances of Python classes over C types keep their ``__dict__`` (issue 27).

numpy's ``ndarray.__reduce_ex__`` ships the array (class, shape, dtype, bytes)
and nothing of an instance dictionary a subclass adds: pickle, cloudpickle and
dill's default lose ``arr.unit``. picklable ships the C type's reduction and,
where it leaves the ``__dict__`` out, the ``__dict__`` too, set after the C
type's own state.
"""

from __future__ import annotations

import textwrap

import pytest

import picklable
from support import checks
from support.child import run_script

np = pytest.importorskip("numpy")

SCRIPT = textwrap.dedent(
    """
    import json, pickle
    import numpy as np
    import picklable
    from support import checks
    from support.child import Child


    class Tagged(np.ndarray):
        pass


    if __name__ == "__main__":
        arr = np.arange(3.0).view(Tagged)
        arr.unit = "m"
        arr.scale = {"k": 1000}
        child = Child()
        try:
            shown = child.run(checks.call_method, picklable.dumps(arr), "__repr__")
            unit = child.run(checks.attribute, picklable.dumps(arr), "unit")
            scale = child.run(checks.attribute, picklable.dumps(arr), "scale")
            values = child.run(checks.call_method, picklable.dumps(arr), "tolist")
        finally:
            child.close()
        kept = getattr(pickle.loads(pickle.dumps(arr)), "unit", None)
        print(json.dumps([shown, unit, scale, values, kept]))
    """
)


def test_a_scripts_ndarray_subclass_keeps_its_attributes(tmp_path):
    """A script's ndarray subclass, loaded in an interpreter that does not run
    the script: its class copied, its values and its attributes kept (pickle,
    here in the script itself, loses them)."""
    out = run_script(SCRIPT, tmp_path)
    assert out.strip().splitlines()[-1] == (
        '["Tagged([0., 1., 2.])", "m", {"k": 1000}, [0.0, 1.0, 2.0], null]'
    )


def test_an_importable_subclass_keeps_its_attributes(child):
    """By reference for the class, the array and its attributes by value."""
    from picklable_testpkg.arrays import Marked

    arr = np.arange(4).view(Marked)
    arr.label = "x"
    payload = picklable.dumps(arr)
    assert child.run(checks.attribute, payload, "label") == "x"
    assert child.run(checks.call_method, payload, "tolist") == [0, 1, 2, 3]
    again = picklable.loads(payload)
    assert type(again) is Marked and again.label == "x" and again.tolist() == [0, 1, 2, 3]


def test_a_reduction_that_ships_the_dict_is_left_alone():
    """A C type whose reduction carries the __dict__ itself (OrderedDict's)
    goes as pickle ships it: nothing added."""
    import collections

    class Ordered(collections.OrderedDict):
        pass

    value = Ordered(a=1)
    value.note = "n"
    payload = picklable.dumps(value)
    assert b"_set_state_and_dict" not in payload
    assert picklable.loads(payload).note == "n"
