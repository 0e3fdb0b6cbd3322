"""Tests for `picklable.spark` in one process: the hook, the task wrapper, the notes.

No JVM here: commands are pickled and loaded as the worker does (plain
``pickle.loads``). The tests on a real Spark are in tests/integration/test_spark.py.
"""

from __future__ import annotations

import base64
import inspect
import io
import pickle
import traceback

import pytest

from support.engines import require

require("pyspark")  # skips this module where PySpark does not support this Python

import pyspark.core.rdd
from pyspark.serializers import BatchedSerializer, CloudPickleSerializer, CPickleSerializer

import picklable
import picklable.spark as pspark
from picklable_testpkg.errors import KwOnlyError
from picklable_testpkg.wrapped import tagged


@pytest.fixture
def enabled():
    """enable() for one test, disable() after it."""
    pspark.enable()
    yield
    pspark.disable()


def raise_kw_only(x):
    raise KwOnlyError(f"row {x}", code=x)


def caught(fn, *args):
    """What a worker's task raises when it runs ``fn`` (loaded from a command)."""
    task = pickle.loads(pspark.Serializer().dumps(fn))
    with pytest.raises(KwOnlyError) as info:
        task(*args)
    return info.value


def as_spark_reports_it(exc):
    """An error holding the worker's traceback as text, as PySpark raises it."""
    return RuntimeError("".join(traceback.format_exception(exc)))


class TestHook:
    """enable() and disable() bind CloudPickleSerializer in PySpark's modules."""

    def test_enable_disable(self, enabled):
        """enable() binds picklable's Serializer; disable() puts PySpark's own back."""
        assert pspark.is_enabled()
        assert pyspark.core.rdd.CloudPickleSerializer is pspark.Serializer
        assert pspark.hooked()["pyspark.core.rdd"] == "picklable"
        pspark.enable()  # again: nothing changes
        pspark.disable()
        assert pyspark.core.rdd.CloudPickleSerializer is CloudPickleSerializer
        assert not pspark.is_enabled()
        assert pspark.hooked()["pyspark.core.rdd"] == "PySpark"
        pspark.disable()  # again: nothing to undo


class TestTask:
    """A command's function, loaded with plain pickle as a worker does."""

    def test_wrapt_function_keeps_its_wrapper(self):
        """A local wrapt function runs its wrapper; PySpark's own pickling drops it."""

        @tagged
        def double(x):
            return 2 * x

        command = (double, "long")
        task, kind = pickle.loads(pspark.Serializer().dumps(command))
        assert (task(3), kind) == (("tagged", 6), "long")
        assert task.__name__ == "double"
        plain, _ = pickle.loads(CloudPickleSerializer().dumps(command))
        assert plain(3) == 6

    def test_signature_kept_for_getfullargspec(self):
        """PySpark's worker counts a grouped-map function's parameters."""

        def grouped(key, frame, *rest, scale=1):
            return frame

        task = pickle.loads(pspark.Serializer().dumps(grouped))
        assert inspect.getfullargspec(task) == inspect.getfullargspec(grouped)

    def test_iterator_results_marked(self):
        """An exception raised while the worker consumes an iterator result is marked."""

        def pipeline(split, iterator):
            return map(raise_kw_only, iterator)

        task = pickle.loads(pspark.Serializer().dumps(pipeline))
        with pytest.raises(KwOnlyError) as info:
            list(task(0, iter([5])))
        assert pspark.original(as_spark_reports_it(info.value)).code == 5

    def test_rdd_command_marks_in_its_serializer(self):
        """An RDD's command (function, profiler, deserializer, serializer): the
        function's result passes on as it is, with no step per element; its
        serializer, which consumes the result in the worker, marks what is
        raised meanwhile, and is PySpark's own for everything else."""

        def pipeline(split, iterator):
            return map(raise_kw_only, iterator)

        def doubled(split, iterator):
            return (2 * x for x in iterator)

        serializer = BatchedSerializer(CPickleSerializer(), 10)
        task, profiler, deserializer, out = pickle.loads(
            pspark.Serializer().dumps((pipeline, None, serializer, serializer))
        )
        assert profiler is None and type(deserializer) is BatchedSerializer
        assert "_picklable_items" not in task.__code__.co_names
        result = task(0, iter([9]))
        assert type(result) is map
        with pytest.raises(KwOnlyError) as info:
            out.dump_stream(result, io.BytesIO())
        assert pspark.original(as_spark_reports_it(info.value)).code == 9

        task, _, deserializer, out = pickle.loads(
            pspark.Serializer().dumps((doubled, None, serializer, serializer))
        )
        written = io.BytesIO()
        out.dump_stream(task(0, iter(range(25))), written)
        written.seek(0)
        assert list(deserializer.load_stream(written)) == [2 * x for x in range(25)]
        out._flush_per_batch = True  # what PySpark's pipelined worker sets
        assert out._flush_per_batch is True and out.batchSize == 10

    def test_rdd_command_call_itself_marked(self):
        """An exception of the call that makes the RDD's result is marked too."""

        def pipeline(split, iterator):
            raise_kw_only(split)

        serializer = BatchedSerializer(CPickleSerializer(), 10)
        task = pickle.loads(pspark.Serializer().dumps((pipeline, None, serializer, serializer)))[0]
        with pytest.raises(KwOnlyError) as info:
            task(4, iter([]))
        assert pspark.original(as_spark_reports_it(info.value)).code == 4

    def test_row_function_gets_a_wrapper_of_its_own_parameters(self):
        """A plain function's wrapper takes its parameters (no *args, **kwargs to
        pack on every row), by position or by name, and still marks exceptions."""

        def scale(x, y, /, z):
            if x < 0:
                raise_kw_only(x)
            return x * y + z

        task = pickle.loads(pspark.Serializer().dumps((scale, "long")))[0]
        code = task.__code__
        assert code.co_varnames[: code.co_argcount] == ("x", "y", "z")
        assert code.co_posonlyargcount == 2
        assert not code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
        assert task(2, 3, 4) == task(2, 3, z=4) == 10
        with pytest.raises(TypeError):
            task(x=2, y=3, z=4)  # positional-only, as scale itself
        with pytest.raises(KwOnlyError) as info:
            task(-1, 0, 0)
        assert pspark.original(as_spark_reports_it(info.value)).code == -1
        assert inspect.getfullargspec(task) == inspect.getfullargspec(scale)

    @pytest.mark.parametrize(
        "source",
        [
            "def f(x, y=1):\n    return x + y",
            "def f(x, *, y):\n    return x + y",
            "def f(_picklable_fn, y):\n    return _picklable_fn + y",
        ],
    )
    def test_other_parameters_get_the_general_wrapper(self, source):
        """Defaults, keyword-only parameters and names that would shadow the
        wrapper's own: the general wrapper, which passes every call through."""
        namespace: dict[str, object] = {}
        exec(source, namespace)
        fn = namespace["f"]
        task = pickle.loads(pspark.Serializer().dumps(fn))
        assert task.__code__.co_flags & inspect.CO_VARARGS
        assert task(1, y=2) == 3

    def test_generator_function_results_marked(self):
        """A generator function's wrapper is the exact one; its items are marked."""

        def rows(iterator):
            for x in iterator:
                yield raise_kw_only(x)

        task = pickle.loads(pspark.Serializer().dumps(rows))
        assert not task.__code__.co_flags & inspect.CO_VARARGS
        with pytest.raises(KwOnlyError) as info:
            list(task(iter([7])))
        assert pspark.original(as_spark_reports_it(info.value)).code == 7

    @pytest.mark.parametrize(
        "source", ["def f(x):\n    return g(x)", "def f(*a):\n    return g(*a)"]
    )
    def test_row_udf_value_taken_as_it_is(self, source):
        """A row UDF's task returns its function's value as it is, even an
        iterator (a row's value is never consumed later), and marks exceptions."""
        namespace = {"g": lambda x: raise_kw_only(x) if x < 0 else iter([x])}
        exec(source, namespace)
        task = pspark._task(namespace["f"], pspark._KEY, True)
        assert "_picklable_items" not in task.__code__.co_names
        result = task(3)
        assert type(result).__name__ == "list_iterator" and list(result) == [3]
        with pytest.raises(KwOnlyError) as info:
            task(-2)
        assert pspark.original(as_spark_reports_it(info.value)).code == -2

    def test_commands_outside_a_row_udf_follow_iterators(self):
        """What is not pickled for a row UDF (here: no UDF at all) gets the
        wrapper that follows an iterator result."""

        def fn(x):
            return x

        task = pickle.loads(pspark.Serializer().dumps((fn, "long")))[0]
        assert "_picklable_items" in task.__code__.co_names

    def test_classes_untouched(self):
        """A UDTF's class ships as it is."""

        class Udtf:
            def eval(self, x):
                yield (x,)

        loaded = pickle.loads(pspark.Serializer().dumps((Udtf, "x: int")))
        assert isinstance(loaded[0], type) and loaded[1] == "x: int"


class TestOriginal:
    """original(error): the task's exception, from the text Spark reports."""

    def test_round_trip(self):
        """The class, attributes and traceback come back from the text alone."""
        exc = caught(raise_kw_only, 4)
        found = pspark.original(as_spark_reports_it(exc))
        assert type(found) is KwOnlyError and found.code == 4 and found.args == ("row 4",)
        assert "in raise_kw_only" in "".join(traceback.format_exception(found))

    def test_original_errors(self):
        """Inside original_errors(), the task's exception replaces Spark's."""
        exc = caught(raise_kw_only, 6)
        with pytest.raises(KwOnlyError) as info, pspark.original_errors():
            raise as_spark_reports_it(exc)
        assert type(info.value.__context__) is RuntimeError
        with pytest.raises(ValueError, match="other"), pspark.original_errors():
            raise ValueError("other")

    def test_unsigned_payload_refused(self):
        """Text that only looks like a note (not signed with this driver's key) is ignored."""
        forged = base64.b64encode(picklable.dumps(KwOnlyError("x", code=1))).decode()
        assert pspark.original(RuntimeError(f"picklable.spark exception:{forged}")) is None
        assert pspark.original(RuntimeError("no note")) is None


class TestCheck:
    """check_executors without a session."""

    def test_no_session(self):
        """Without an active session it says so."""
        with pytest.raises(RuntimeError, match="no active Spark session"):
            pspark.check_executors()
