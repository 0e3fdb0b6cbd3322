"""Tests for `picklable.ray` in one process: results' boxes, the task body, refusals.

The tests on a real Ray are in tests/integration/test_ray.py.
"""

from __future__ import annotations

import pickle

import cloudpickle
import numpy as np
import pytest

from support.engines import require

require("ray")  # skips this module where Ray has no wheel (Python 3.15)

import picklable
import picklable.ray as pray
from picklable._transit import ShippedException
from picklable_testpkg import api
from picklable_testpkg.errors import KwOnlyError
from picklable_testpkg.wrapped import tagged


class TestShipResult:
    """What a task hands Ray: plain values as they are, the rest boxed."""

    @pytest.mark.parametrize("value", [None, 3, "s", [1, 2], {"k": (1, 2.0)}])
    def test_plain_values_stay(self, value):
        """Values stdlib pickle writes as picklable does are left to Ray."""
        assert pray.ship_result(value) is value

    def test_numpy_array_stays(self):
        """A numeric array stays itself (Ray ships its buffer zero-copy)."""
        array = np.arange(4)
        assert pray.ship_result(array) is array

    def test_factory_method_is_boxed_and_loads_as_itself(self):
        """A factory-made method is boxed; the box unpickles as the very object."""
        box = pray.ship_result(api.Frame.mean)
        assert type(box) is pray.Result
        assert cloudpickle.loads(cloudpickle.dumps(box)) is api.Frame.mean
        assert repr(box).startswith("<picklable.ray.Result of ")

    def test_tuple_box_splits_by_index(self):
        """Ray splits a result for num_returns=N by len() and indexing: each part ships."""

        @tagged
        def inc(x):
            return x + 1

        box = pray.ship_result((inc, 2))
        assert len(box) == 2 and box[1] == 2
        assert pickle.loads(pickle.dumps(box[0]))(1) == ("tagged", 2)


class TestTaskBody:
    """_run: what the worker does with a shipped function."""

    def test_calls_and_boxes(self):
        """The function is loaded, called with opened arguments, its result boxed."""
        shipped = pray._Shipped.of(lambda: api.Frame.mean)
        assert type(pray._run(shipped, (), {}, False)) is pray.Result

    def test_exception_becomes_a_carrier_of_the_original(self):
        """The task raises a carrier whose pickle is the original exception."""

        def fail():
            raise KwOnlyError("no", code=5)

        with pytest.raises(ShippedException) as info:
            pray._run(pray._Shipped.of(fail), (), {}, False)
        # Without the worker's frames: another test's tblib.install may have taken
        # over this class's pickling, and it needs tblib's traceback reducer for them.
        original = pickle.loads(pickle.dumps(info.value.with_traceback(None)))
        assert type(original) is KwOnlyError and original.code == 5

    def test_task_function_is_named_like_the_function(self):
        """Ray names tasks after the function it is given: the user's."""
        task = pray._task_function(pray._Shipped.of(api.plain), api.plain, False)
        assert (task.__name__, task.__module__) == (api.plain.__name__, api.plain.__module__)


class TestRefusals:
    """What remote() refuses, before Ray is involved."""

    def test_not_callable(self):
        """A non-callable is refused, naming its type."""
        with pytest.raises(TypeError, match="got int"):
            pray.remote(3)

    def test_async_actor_method(self):
        """An async method is refused, pointing at ray.remote for async actors."""

        class Async:
            async def run(self):
                return 1

        with pytest.raises(TypeError, match="run is an async method"):
            pray.remote(Async)

    def test_envelope_of_a_class(self):
        """An envelope of a class is refused: give the class itself."""
        with pytest.raises(TypeError, match="give the class itself"):
            pray.remote(picklable.ship(api.Frame))
        with pytest.raises(TypeError, match="give the class itself"):
            pray.remote(picklable.with_state(api.Frame))
