"""Tests for `picklable.dask` in one process: what is packed, how envelopes pickle.

The cluster tests are in tests/integration/test_dask.py.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import traceback

import dask
import numpy as np
import pytest
import tblib.pickling_support
from dask.base import tokenize

import picklable
import picklable.dask as pdask
from picklable import _envelope, _transit
from picklable.dask import Result, ShippedException, ShippedFunction, _Arg, _pack, _ship_result
from picklable_testpkg import api
from picklable_testpkg.errors import FrozenError, KwOnlyError


class TestPack:
    """Client side: which arguments are left to Dask and which travel with picklable."""

    @pytest.mark.parametrize(
        "value",
        [None, True, 3, 2.5, 1j, "s", b"b", [1, 2, "x"], (1, (2.0, None)), {"k": [1, 2]}, {1, 2}],
    )
    def test_plain_data_is_left_to_dask(self, value):
        """Numbers, strings and containers of them are handed to Dask unchanged."""
        packed, deep = _pack(value)
        assert packed is value and deep is False

    def test_numpy_array_is_left_to_dask(self):
        """A numeric array stays itself (Dask ships its buffer out of band)."""
        array = np.arange(10)
        assert _pack(array)[0] is array

    def test_object_array_is_compared(self):
        """An object array holding a lambda travels with picklable."""
        array = np.array([lambda: 1, 2], dtype=object)
        assert type(_pack(array)[0]) is _Arg

    def test_importable_function_is_left_to_dask(self):
        """What stdlib pickle writes exactly as picklable does is left alone."""
        assert _pack(api.plain)[0] is api.plain

    def test_lambda_travels_shared(self):
        """A lambda becomes an argument envelope, loaded once per worker (callable)."""
        packed, deep = _pack(lambda x: x)
        assert type(packed) is _Arg and packed.shared and not deep

    def test_factory_method_travels(self):
        """A factory-made method (pickle fails, cloudpickle copies) travels with picklable."""
        packed = _pack(api.Frame.mean)[0]
        assert type(packed) is _Arg
        assert packed.open() is api.Frame.mean

    def test_container_with_lambda_travels_whole(self):
        """A dict holding a lambda travels as one envelope, loaded afresh per task."""
        packed, deep = _pack({"f": lambda: 1, "n": 2})
        assert type(packed) is _Arg and not packed.shared and not deep
        assert packed.open()["n"] == 2

    def test_container_with_delayed_is_packed_piecewise(self):
        """A Delayed inside a list stays visible: the list is rebuilt, its lambda packed."""
        node = dask.delayed(1)
        fn = lambda: 2  # noqa: E731
        packed, deep = _pack([node, fn, 3])
        assert deep is True
        assert packed[0] is node and type(packed[1]) is _Arg and packed[2] == 3

    def test_self_referencing_list(self):
        """A list that holds itself (pickle allows it) is checked without looping."""
        looped: list = [1]
        looped.append(looped)
        packed, deep = _pack(looped)
        assert packed is looped and deep is False

    def test_unpicklable_argument_fails_at_submit(self):
        """An argument nothing can ship fails here, with picklable's path."""
        import threading

        with pytest.raises(picklable.PicklingError) as info:
            _pack({"lock": threading.Lock()})
        assert "lock" in str(info.value)


class TestShippedFunction:
    """The task function Dask carries."""

    def test_pickles_as_itself_without_loading(self):
        """pickle round trip (the scheduler's) keeps the payload and loads nothing."""
        shipped = ShippedFunction.of(lambda x: x + 1)
        _envelope._cache.pop(shipped.digest, None)
        again = pickle.loads(pickle.dumps(shipped))
        assert type(again) is ShippedFunction and again.payload == shipped.payload
        assert shipped.digest not in _envelope._cache

    def test_name_for_task_keys(self):
        """__name__ is the function's (task keys and the dashboard show it)."""
        assert ShippedFunction.of(api.plain).__name__ == "plain"
        assert ShippedFunction.of(lambda: 0).__name__ == "lambda"
        assert dask.utils.funcname(ShippedFunction.of(api.plain)) == "plain"

    def test_tokenize_by_digest(self):
        """Equal payloads tokenize equal, so pure tasks deduplicate as in Dask."""
        assert tokenize(ShippedFunction.of(api.plain)) == tokenize(ShippedFunction.of(api.plain))
        assert tokenize(ShippedFunction.of(api.plain)) != tokenize(ShippedFunction.of(api.add))

    def test_call_in_this_process(self):
        """In the client's process it returns the result as is and opens argument envelopes."""
        shipped = ShippedFunction.of(lambda f, x: f(x))
        arg = _pack(api.Frame.mean)[0]
        assert shipped(arg, api.Frame([1])) == ("mean", [1], ())

    def test_raises_original_in_this_process(self):
        """Outside a worker, in its own process, the function's exception propagates as is."""
        with pytest.raises(KwOnlyError):
            ShippedFunction.of(_raise_kw_only)()

    def test_forked_child_is_not_home(self):
        """A forked process (a worker started by fork) gets its own origin."""
        code = (
            "import os, picklable.dask as p\n"
            "parent = p._ORIGIN\n"
            "read, write = os.pipe()\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    os.write(write, p._ORIGIN)\n"
            "    os._exit(0)\n"
            "os.waitpid(pid, 0)\n"
            "child = os.read(read, 8)\n"
            "assert len(child) == 8 and child != parent, (child, parent)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr

    def test_coroutine_function_refused(self):
        """A coroutine function is refused with the reason and the fix."""

        async def fetch():
            return 1

        with pytest.raises(TypeError, match="coroutine function"):
            pdask.delayed(fetch)

    def test_not_callable_refused(self):
        """delayed needs a function."""
        with pytest.raises(TypeError, match="must be callable"):
            pdask.delayed(3)


class TestResult:
    """Results boxed on workers."""

    def test_plain_results_not_boxed(self):
        """Data that Dask ships exactly stays plain."""
        for value in (1, "x", [1, 2], {"a": (1, 2)}, np.ones(3)):
            assert _ship_result(value) is value

    def test_box_loads_as_value_outside_workers(self):
        """A box pickled (by Dask) loads as the value itself in a client."""
        box = _ship_result(api.Frame.mean)
        assert type(box) is Result
        assert pickle.loads(pickle.dumps(box)) is api.Frame.mean

    def test_getitem_boxes_parts(self):
        """Indexing a boxed tuple (delayed nout) boxes what needs it."""
        box = _ship_result((api.Frame.mean, 2))
        assert type(box[0]) is Result and box[1] == 2


class TestShippedException:
    """The carrier of a task's exception, pickled the way Dask pickles errors."""

    def test_loads_as_original_through_tblib(self):
        """With tblib's reducer installed (as Dask does), the original comes back whole."""
        try:
            _raise_kw_only()
        except KwOnlyError as exc:
            original = exc
        carrier = _transit.carrier(original)
        try:
            raise carrier
        except ShippedException as raised:
            tblib.pickling_support.install(raised)
            data = pickle.dumps(raised, protocol=5)
        back = pickle.loads(data)
        assert type(back) is KwOnlyError and back.code == 5
        assert type(back.__cause__) is ZeroDivisionError
        assert "in _raise_kw_only" in "".join(traceback.format_exception(back))

    def test_frozen_exception(self):
        """An exception whose __setattr__ refuses is carried and comes back whole."""

        def freeze():
            raise FrozenError("frozen", field="f")

        try:
            freeze()  # this frame stands for the task's call, which the carrier drops
        except FrozenError as exc:
            carrier = _transit.carrier(exc)
        for install_tblib in (False, True):  # Dask installs it for the carrier's class
            if install_tblib:
                tblib.pickling_support.install(carrier)
            back = pickle.loads(pickle.dumps(carrier))
            assert type(back) is FrozenError and back.field == "f"
            assert "in freeze" in "".join(traceback.format_exception(back))

    def test_summary_is_short(self):
        """Its message (what the worker logs) names the type; long messages are cut."""
        carrier = _transit.carrier(ValueError("x" * 5000))
        assert str(carrier).startswith("ValueError: xxx") and len(str(carrier)) < 2100

    def test_without_payload_pickles_plainly(self):
        """Built by Dask's message truncation (no payload), it still pickles."""
        plain = ShippedException("Long error message", "text")
        assert pickle.loads(pickle.dumps(plain)).args == ("Long error message", "text")


class TestDelayedLocal:
    """picklable.dask.delayed on Dask's local schedulers (no cluster)."""

    def test_sync_scheduler(self):
        """A lambda computes on the synchronous scheduler; arguments are opened."""
        task = pdask.delayed(lambda f, x: f(x))
        assert dask.compute(task(api.Frame.mean, api.Frame([2])), scheduler="sync") == (
            ("mean", [2], ()),
        )

    def test_threaded_scheduler_raises_original(self):
        """The threaded scheduler re-raises the function's own exception."""
        with pytest.raises(KwOnlyError):
            pdask.delayed(_raise_kw_only)().compute(scheduler="threads")

    def test_decorator_forms(self):
        """@delayed and @delayed(pure=True) both work; pure keys are deterministic."""

        @pdask.delayed
        def inc(x):
            return x + 1

        @pdask.delayed(pure=True)
        def dec(x):
            return x - 1

        assert inc(1).compute(scheduler="sync") == 2
        assert dec(5).key == dec(5).key
        assert inc(1).key != inc(1).key


def _raise_kw_only() -> None:
    try:
        _ = 1 / 0
    except ZeroDivisionError as exc:
        raise KwOnlyError("failed", code=5) from exc
