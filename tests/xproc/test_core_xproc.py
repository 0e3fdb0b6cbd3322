"""The rule, checked in a fresh interpreter: identity where importable, exact copies
elsewhere (issue 2, "must hold" 1-5)."""

from __future__ import annotations

import dataclasses
import pickle
import types

import numpy as np
import pytest

import picklable
from picklable_testpkg import api
from picklable_testpkg.decorators import no_wraps
from support import checks

MOD = "picklable_testpkg.api"


class TestIdentityInReceiver:
    """Objects reachable by some importable path load as that very object."""

    @pytest.mark.parametrize(
        "path",
        [
            "plain",
            "add",  # no functools.wraps: the name holds the wrapper
            "tagged_double",  # decorator factory without wraps
            "counted_square",  # class-based decorator: an object holds the function
            "counted_square.func",  # the function hidden behind that object
            "beat_interval_option",  # CLI-option-style object
            "beat_interval_option.apply_function",  # ...and the function inside it
            "add.__closure__.0.cell_contents",  # the function inside a no-wraps wrapper
            "Frame.total",  # factory-made, __name__ fixed, qualname has <locals>
            "Frame.mean",  # factory-made, nothing fixed
            "Frame.Inner.count",  # nested class
            "Tools.scaled.__func__",  # classmethod over a no-wraps decorator
            "Tools.static_add",  # staticmethod over a no-wraps decorator
            "Tools.method",
            "Color",
            "Record",
            "square_lambda",  # a module-level lambda
        ],
    )
    def test_loads_as_the_importable_object(self, child, path):
        """loads(dumps(obj)) in the child `is` the child's own object."""
        obj = checks.walk(MOD, path)
        assert child.run(checks.is_importable_object, picklable.dumps(obj), MOD, path)

    def test_class_whose_module_is_a_property(self, child):
        """A class whose __module__ is a property (wrapt's pure-Python proxies) is
        found where its body ran: by reference, not a copy."""
        from picklable_testpkg import lying

        assert not isinstance(lying.ReportsWrapped.__module__, str)
        payload = picklable.dumps(lying.ReportsWrapped)
        assert child.run(checks.is_importable_object, payload, lying.__name__, "ReportsWrapped")

    def test_stdlib_pickle_fails_where_picklable_locates(self):
        """The reported failures: stdlib pickle cannot ship these at all."""
        for obj in (api.add, api.beat_interval_option.apply_function, api.Frame.mean):
            with pytest.raises((pickle.PicklingError, AttributeError)):
                pickle.dumps(obj)

    def test_inner_function_of_no_wraps_wrapper(self, child):
        """The function inside a no-wraps closure is reached through the closure."""
        inner = api.add.__closure__[0].cell_contents
        payload = picklable.dumps(inner)
        path = "add.__closure__.0.cell_contents"
        assert child.run(checks.is_importable_object, payload, "picklable_testpkg.api", path)
        assert child.run(checks.call, payload, 2, 3) == 5
        assert child.run(checks.metadata, payload)["__qualname__"] == "add"


class TestCallsInReceiver:
    """Located objects behave right when called on the other side."""

    def test_factory_method_bound_and_unbound(self, child):
        """A factory-made method works bound and unbound after shipping."""
        frame = api.Frame([1, 2])
        assert child.run(checks.call, picklable.dumps(frame.total)) == ("total", [1, 2], ())
        assert child.run(checks.call, picklable.dumps(api.Frame.mean), frame, 7) == (
            "mean",
            [1, 2],
            (7,),
        )

    def test_stacked_classmethod_staticmethod(self, child):
        """classmethod/staticmethod over a no-wraps decorator, and their bound methods."""
        assert child.run(checks.call, picklable.dumps(api.Tools.scaled), 2) == 6
        assert child.run(checks.call, picklable.dumps(api.Tools().scaled), 2) == 6
        assert child.run(checks.call, picklable.dumps(api.Tools.static_add), 2, 3) == 5
        assert child.run(checks.call, picklable.dumps(api.Tools().method), 9) == ("method", 9)

    def test_class_based_decorator_keeps_working(self, child):
        """The wrapper object and the function behind it both run."""
        assert child.run(checks.call, picklable.dumps(api.counted_square), 4) == 16
        assert child.run(
            checks.call, picklable.dumps(api.beat_interval_option.apply_function), "x"
        ) == ("beat", "x")

    def test_spawn_pool_runs_decorated_tasks(self, child):
        """Tasks shipped with picklable through a stdlib spawn Pool give right results."""
        payloads = [picklable.dumps((api.add, (i, 10))) for i in range(4)]
        payloads.append(picklable.dumps((api.beat_interval_option.apply_function, ("b",))))
        payloads.append(picklable.dumps((api.Frame([3]).total, ())))
        assert child.run(checks.run_pool_with_payloads, payloads) == [
            10,
            11,
            12,
            13,
            ("beat", "b"),
            ("total", [3], ()),
        ]


class TestExactCopies:
    """Objects no module exports travel by value with all their metadata."""

    def test_closure(self, child):
        """A closure from a factory: value of the cell and metadata kept."""
        add5 = api.make_closure(5)
        payload = picklable.dumps(add5)
        assert child.run(checks.call, payload, 1) == 6
        assert child.run(checks.metadata, payload) == checks.describe(add5)

    def test_recursive_closure(self, child):
        """A closure that calls itself through its own cell."""
        assert child.run(checks.call, picklable.dumps(api.make_recursive()), 5) == 120

    def test_closures_sharing_state(self, child):
        """Two closures over one cell still share it after loading."""
        assert child.run(checks.counter_pair, picklable.dumps(api.make_counter())) == (2, 3)

    def test_closures_sharing_a_cell_of_plain_data(self, child):
        """Two closures over one cell holding an int, rebound through ``nonlocal``
        by one: the other still reads it after loading."""
        payload = picklable.dumps(api.make_nonlocal_counter())
        assert child.run(checks.counter_pair, payload) == (2, 3)

    @pytest.mark.parametrize(
        "case", ["cell after", "cell before", "tuple shared", "counter tuple shared", "alone"]
    )
    def test_cells_held_twice_stay_one_object(self, child, case):
        """A cell of plain data that something else of the payload holds too
        (the cell itself, before or after its function; a second function made
        on the same closure tuple) is one cell after loading, as before."""
        add = api.make_closure(5)
        increment, _ = api.make_nonlocal_counter()
        twin = types.FunctionType(add.__code__, add.__globals__, "twin", None, add.__closure__)
        counter_twin = types.FunctionType(
            increment.__code__, increment.__globals__, "again", None, increment.__closure__
        )
        items = {
            "cell after": [add, add.__closure__[0]],
            "cell before": [add.__closure__[0], add],
            "tuple shared": [add, twin],
            "counter tuple shared": [increment, counter_twin],
            "alone": [add, api.make_closure(5)],
        }[case]
        expected = checks.cell_numbers(items)
        assert child.run(checks.loaded_cell_numbers, picklable.dumps(items)) == expected
        if case == "counter tuple shared":
            # Two incrementers of one count: 1, 2, then 3 and 4 (apart: 1 and 3).
            assert child.run(checks.counter_pair, picklable.dumps(items)) == (3, 4)

    def test_a_cell_an_object_hands_out_later_stays_one_object(self, child):
        """A closure whose cells went as their contents, then an object of the same
        payload whose reduction hands out that closure (a new function over it):
        its cells are the loaded function's own (``_closure_cell``), one cell."""
        increment, _ = api.make_nonlocal_counter()
        items = [increment, checks.SameClosure(increment)]
        assert child.run(checks.loaded_cell_numbers, picklable.dumps(items)) == [[0], [0]]
        # One count: 1, 2 through the first, 3 through the second.
        assert child.run(checks.counter_pair, picklable.dumps(items)) == (3, 4)

    def test_a_global_that_hands_the_closure_out_first(self, child):
        """The same, where the object is a global the function reads: saved with
        the function's globals, before its closure, it meets the cell first; the
        function and the object's function share the one cell, and the function
        is built once."""
        namespace: dict = {"__name__": "scratch"}
        exec(
            "def make():\n    n = 0\n    def inc():\n        nonlocal n\n"
            "        n += 1\n        HOLDER\n        return n\n    return inc\n",
            namespace,
        )
        increment = namespace["make"]()
        namespace["HOLDER"] = checks.SameClosure(increment)
        items = [increment, namespace["HOLDER"]]
        assert child.run(checks.loaded_cell_numbers, picklable.dumps(items)) == [[0], [0]]
        assert child.run(checks.counter_pair, picklable.dumps(items)) == (3, 4)

    def test_metadata_is_kept(self, child):
        """name, qualname, module, doc, defaults, kwdefaults, annotations, __dict__."""

        def local(a: int, b: str = "x", *, c: float = 1.5) -> str:
            """Local doc."""
            return f"{a}{b}{c}"

        local.extra = {"k": 1}
        local.__wrapped__ = api.plain
        payload = picklable.dumps(local)
        facts = child.run(checks.metadata, payload)
        assert facts == checks.describe(local)
        assert facts["__qualname__"].endswith("<locals>.local")
        assert child.run(checks.call, payload, 1, "y") == "1y1.5"

    def test_local_class_with_slots(self, child):
        """A class defined in a function keeps __slots__ and methods."""
        local_cls = api.make_class()
        facts = child.run(checks.class_facts, picklable.dumps(local_cls))
        assert facts["qualname"] == local_cls.__qualname__
        assert facts["slots"] == ("a", "b")
        assert child.run(checks.call_method, picklable.dumps(local_cls(2, 3)), "total") == 5

    def test_local_dataclass(self, child):
        """A local frozen dataclass: fields, defaults and factories work after loading."""
        point_cls = api.make_dataclass()
        assert child.run(checks.call_method, picklable.dumps(point_cls(-2, 3)), "norm1") == 5
        remote = child.run(checks.echo, picklable.dumps(point_cls))
        back = picklable.loads(remote)
        assert back is point_cls  # it came home: the original class
        made = child.run(checks.call, picklable.dumps(point_cls), 4)
        assert made == point_cls(4) and dataclasses.fields(made)[2].name == "tags"

    def test_class_body_defining_name(self, child):
        """A class body that defines __name__ (a property for its instances) keeps
        it, and the class keeps its own name."""

        class Named:
            __name__ = property(lambda self: "instance name")  # type: ignore[assignment]

        facts = child.run(checks.class_facts, picklable.dumps(Named))
        assert facts["name"] == "Named" and facts["qualname"] == Named.__qualname__
        assert child.run(checks.attribute, picklable.dumps(Named()), "__name__") == "instance name"

    def test_local_enum(self, child):
        """A local enum keeps members, aliases and methods."""
        mode = api.make_enum()
        assert child.run(checks.call_method, picklable.dumps(mode.SLOW), "describe") == "mode SLOW"
        assert child.run(checks.call, picklable.dumps(mode), 1) is mode.FAST


class TestPayloads:
    """Payloads interoperate with stdlib pickle and carry buffers out of band."""

    def test_stdlib_pickle_loads_picklable_payloads(self, child):
        """pickle.loads suffices in the receiver when picklable is importable."""
        assert (
            child.run(checks.call_with_stdlib_pickle, picklable.dumps(api.make_closure(2)), 1) == 3
        )
        assert child.run(checks.call_with_stdlib_pickle, picklable.dumps(api.add), 1, 1) == 2

    def test_numpy_out_of_band(self):
        """With protocol 5 and buffer_callback, array data stays out of the stream."""
        array = np.arange(1_000_000, dtype=np.float64)
        buffers: list[pickle.PickleBuffer] = []
        data = picklable.dumps(array, protocol=5, buffer_callback=buffers.append)
        assert len(data) < 1_000 and len(buffers) == 1
        back = picklable.loads(data, buffers=buffers)
        assert np.array_equal(back, array)

    def test_no_wraps_decorator_from_module(self, child):
        """A no-wraps decorator applied at run time to a local function: by value."""
        wrapped = no_wraps(lambda x: x * 3)
        assert child.run(checks.call, picklable.dumps(wrapped), 3) == 9
