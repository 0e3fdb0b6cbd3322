"""picklable.spark on a real Spark: ``local-cluster[2,1,1024]``, two executors.

One Spark for the run (the session's ``spark_driver`` fixture, tests/conftest.py):
a long-lived PySpark driver that runs each test's script as ``__main__``, as
``python script.py`` would, so that the functions, classes and sacred
Experiment of the script are objects of a real ``__main__`` (what PySpark's
cloudpickle ships by value). One script runs every case and prints a JSON
report; the tests read their part of it. Each case shows what PySpark does as it
is, then with ``picklable.spark.enable()``.
"""

from __future__ import annotations

import json
import stat
import sys
import sysconfig
import textwrap
from pathlib import Path
from typing import Any

import pytest

from support.engines import require

require("pyspark")  # skips this module where PySpark does not support this Python

from support import sacred_runs
from support.child import run_script

TASKS = sacred_runs.TASKS
EXPECTED = sacred_runs.EXPECTED

MAIN_SCRIPT = (
    textwrap.dedent(
        """
        import json, os, sys, traceback
        from typing import Iterator
        import pandas as pd
        import wrapt
        from pyspark.sql import SparkSession
        from pyspark.sql import functions as F
        from sacred import Experiment
        from sacred.observers import FileStorageObserver
        import picklable.spark
        from picklable_testpkg import wrapped

        ex = Experiment("spark_main_experiment", save_git_info=False)
        """
    )
    + sacred_runs.EXPERIMENT_BODY
    + textwrap.dedent(
        """
        def run_config(task):
            updates, named = task
            run = ex.run(config_updates=updates, named_configs=named,
                         options={"--loglevel": "ERROR", "--capture": "sys"})
            return {"result": run.result, "run_id": run._id, "pid": os.getpid(),
                    "experiment": ex.path}

        @wrapt.decorator
        def plus_100(wrapped, instance, args, kwargs):
            return wrapped(*args, **kwargs) + 100

        @plus_100
        def double(x):
            return 2 * x

        @plus_100
        def double_series(s: pd.Series) -> pd.Series:
            return 2 * s

        class Offset:
            def __init__(self, func, offset):
                self.func, self.offset = func, offset
            def __call__(self, *args):
                return self.func(*args) + self.offset

        def offset(by):
            return lambda func: Offset(func, by)

        @offset(10)
        def triple(x):
            return 3 * x

        @offset(10)
        def triple_series(s: pd.Series) -> pd.Series:
            return 3 * s

        class KwOnlyError(Exception):
            def __init__(self, message, *, code):
                super().__init__(message)
                self.code = code

        def explode(x):
            try:
                int("not a number")
            except ValueError as exc:
                raise KwOnlyError(f"row {x} failed", code=x) from exc

        def explode_series(s: pd.Series) -> pd.Series:
            explode(int(s.iloc[0]))

        def explode_batches(batches):
            # not a generator function: the generator it returns raises while
            # Spark consumes it, after this function has returned
            return (explode_series(b["x"]) for b in batches)

        def explode_iterator(series: Iterator[pd.Series]) -> Iterator[pd.Series]:
            for s in series:
                yield explode_series(s)

        def error_report(error):
            found = picklable.spark.original(error)
            return {"spark": type(error).__name__, "class": type(found).__qualname__,
                    "module": type(found).__module__, "own_class": type(found) is KwOnlyError,
                    "code": found.code, "args": list(found.args),
                    "cause": type(found.__cause__).__name__,
                    "text": "".join(traceback.format_exception(found))}

        def three_ways(spark, fn, series_fn):
            sc = spark.sparkContext
            df = spark.createDataFrame([(1,), (2,), (3,)], ["x"]).coalesce(1)
            return {
                "rdd.map": sc.parallelize([1, 2, 3], 2).map(fn).collect(),
                "udf": [r[0] for r in df.select(F.udf(fn, "long")("x")).collect()],
                "pandas_udf": [r[0] for r in df.select(F.pandas_udf(series_fn, "long")("x")).collect()],
            }

        if __name__ == "__main__":
            runs = sys.argv[1]
            spark = SparkSession.builder.getOrCreate()
            sc = spark.sparkContext
            report = {"hooked_before": picklable.spark.hooked()}
            report["plain"] = three_ways(spark, double, double_series)

            picklable.spark.enable()
            report["hooked"] = picklable.spark.hooked()
            report["enabled"] = three_ways(spark, double, double_series)
            report["class_based"] = three_ways(spark, triple, triple_series)

            errors = {}
            df = spark.createDataFrame([(7,)], ["x"])
            for api, job in [
                ("rdd.map", lambda: sc.parallelize([7], 1).map(explode).collect()),
                ("udf", lambda: df.select(F.udf(explode, "long")("x")).collect()),
                ("pandas_udf", lambda: df.select(F.pandas_udf(explode_series, "long")("x")).collect()),
                ("udf(useArrow=True)",
                 lambda: df.select(F.udf(explode, "long", useArrow=True)("x")).collect()),
                ("mapInPandas", lambda: df.mapInPandas(explode_batches, "x long").collect()),
                ("pandas_udf(Iterator)",
                 lambda: df.select(F.pandas_udf(explode_iterator, "long")("x")).collect()),
            ]:
                try:
                    job()
                except Exception as error:
                    errors[api] = error_report(error)
            report["errors"] = errors
            # Which wrapper each kind of command got: a row UDF's and an RDD's
            # (whose serializer marks instead) take the value as it is; the others
            # follow an iterator result.
            commands = []
            made = picklable.spark._command

            def recorded(obj, as_is=False):
                command = made(obj, as_is=as_is)
                task = command[0] if type(command) is tuple else command
                stream = command[3] if type(command) is tuple and len(command) == 4 else None
                commands.append([task.as_is, type(stream).__name__])
                return command

            picklable.spark._command = recorded
            try:
                sc.parallelize([1], 1).map(double).collect()
                df.select(F.udf(double, "long")("x")).collect()
                df.select(F.udf(double, "long", useArrow=True)("x")).collect()
                df.select(F.pandas_udf(double_series, "long")("x")).collect()
                df.mapInPandas(lambda it: it, "x long").collect()
            finally:
                picklable.spark._command = made
            report["row_tasks"] = commands
            try:
                with picklable.spark.original_errors():
                    sc.parallelize([8], 1).map(explode).collect()
            except KwOnlyError as exc:  # the __main__ class itself
                report["original_errors"] = {"code": exc.code,
                                             "context": type(exc.__context__).__name__}

            # Importable objects: the workers' own, by identity.
            is_own = lambda _: (wrapped.double(1), wrapped.counted_add(1, 2),
                                wrapped.double is sys.modules["picklable_testpkg.wrapped"].double)
            report["imported"] = {
                "wrapt": sc.parallelize([1, 2], 2).map(wrapped.double).collect(),
                "class_based": sc.parallelize([(1, 2)], 1).map(lambda p: wrapped.counted_add(*p)).collect(),
                "identity": sc.parallelize([0], 1).map(is_own).collect(),
            }

            ex.observers.append(FileStorageObserver(runs))
            report["sacred"] = sc.parallelize(json.loads(sys.argv[2]), 4).map(run_config).collect()

            picklable.spark.disable()
            report["hooked_after"] = picklable.spark.hooked()
            report["disabled"] = sc.parallelize([1, 2, 3], 2).map(double).collect()
            print(json.dumps(report))
        """
    )
)


@pytest.fixture(scope="module")
def report(spark_driver: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What MAIN_SCRIPT found, run once as __main__ in the run's Spark driver."""
    directory = tmp_path_factory.mktemp("spark_main")
    runs = directory / "runs"
    done = spark_driver.run_script(MAIN_SCRIPT, directory, args=(str(runs), json.dumps(TASKS)))
    found: dict[str, Any] = json.loads(done["stdout"].strip().splitlines()[-1])
    found["runs_dir"] = str(runs)
    return found


APIS = ("rdd.map", "udf", "pandas_udf")
SITES = ["pyspark.core.rdd", *(f"pyspark.sql.connect.{m}" for m in ("expressions", "plan"))]


class TestFunctions:
    """Functions of the driver's script, on rdd.map, udf and pandas_udf."""

    def test_wrapt_function_keeps_its_wrapper(self, report):
        """PySpark's cloudpickle drops the wrapt wrapper ([2, 4, 6]); picklable keeps it."""
        assert report["plain"] == {api: [2, 4, 6] for api in APIS}
        assert report["enabled"] == {api: [102, 104, 106] for api in APIS}

    def test_class_based_decorator(self, report):
        """A class-based decorator instance with its closure runs as it is on all three."""
        assert report["class_based"] == {api: [13, 16, 19] for api in APIS}

    def test_importable_objects_by_identity(self, report):
        """A wrapt function and a class-based decorator of an imported module: the workers' own."""
        imported = report["imported"]
        assert imported["wrapt"] == [["tagged", 2], ["tagged", 4]]
        assert imported["class_based"] == [["counted", 3]]
        assert imported["identity"] == [[["tagged", 2], ["counted", 3], True]]

    def test_enable_and_disable(self, report):
        """enable() hooks classic PySpark and Spark Connect; disable() puts PySpark's own back."""
        for site in SITES:
            assert report["hooked_before"][site].startswith("PySpark")  # maybe not imported yet
            assert report["hooked"][site] == "picklable"
            assert report["hooked_after"][site] == "PySpark"
        assert report["disabled"] == [2, 4, 6]


class TestExceptions:
    """A task's exception with a keyword-only __init__, back as itself on the driver."""

    @pytest.mark.parametrize(
        "api",
        [
            "rdd.map",
            "udf",
            "pandas_udf",
            "udf(useArrow=True)",
            "mapInPandas",
            "pandas_udf(Iterator)",
        ],
    )
    def test_original(self, report, api):
        """original(error): the script's own class, attributes, cause and remote traceback."""
        error = report["errors"][api]
        assert error["spark"] in ("PythonException", "Py4JJavaError")
        assert (error["class"], error["module"], error["own_class"]) == (
            "KwOnlyError",
            "__main__",
            True,
        )
        assert (error["code"], error["args"]) == (7, ["row 7 failed"])
        assert error["cause"] == "ValueError"
        text = error["text"]
        assert "in explode" in text and 'raise KwOnlyError(f"row {x} failed", code=x)' in text
        assert "invalid literal for int()" in text

    def test_row_udfs_and_rdds_take_their_value_as_it_is(self, report):
        """Row UDFs' and RDDs' tasks skip the look at a result; pandas UDFs' and
        maps' keep it.

        Spark consumes an iterator that an RDD's, a pandas iterator UDF's or a
        mapInPandas function returns after the function returned (the rdd.map,
        mapInPandas and Iterator cases above raise there). An RDD's command
        carries the serializer that consumes it: that serializer marks what is
        raised (no step per element); a row UDF's value is taken as it is.
        Commands in order: rdd.map, udf, udf(useArrow=True), pandas_udf,
        mapInPandas.
        """
        assert report["row_tasks"] == [
            [True, "_Stream"],
            [True, "NoneType"],
            [True, "NoneType"],
            [False, "NoneType"],
            [False, "NoneType"],
        ]

    def test_original_errors(self, report):
        """Inside original_errors(), except KwOnlyError catches the task's exception."""
        assert report["original_errors"] == {"code": 8, "context": "PythonException"}


class TestSacred:
    """The seeds' case: a __main__ Experiment run once per config in rdd.map."""

    def test_four_configs_recorded(self, report):
        """4 runs on the executors' workers, each with its config, each recorded."""
        results = report["sacred"]
        assert [r["result"] for r in results] == EXPECTED
        assert {r["experiment"] for r in results} == {"spark_main_experiment"}
        runs = Path(report["runs_dir"])
        run_dirs = sorted(p.name for p in runs.iterdir() if p.name.isdigit())
        assert run_dirs == ["1", "2", "3", "4"]
        for result in results:
            run_dir = runs / str(result["run_id"])
            updates, _ = TASKS[EXPECTED.index(result["result"])]
            config = json.loads((run_dir / "config.json").read_text())
            assert {k: config[k] for k in updates} == updates
            info = json.loads((run_dir / "run.json").read_text())
            assert (info["status"], info["result"]) == ("COMPLETED", result["result"])


CHECK_SCRIPT = textwrap.dedent(
    """
    import sys
    from pyspark.sql import SparkSession
    import picklable.spark

    spark = SparkSession.builder.getOrCreate()
    sc = spark.sparkContext
    picklable.spark.enable()
    sc.pythonExec = sys.argv[1]  # the executors' Python workers: no picklable there
    try:
        sc.parallelize([1, 2, 3], 2).map(lambda x: x + 1).collect()
    except picklable.spark.IncompatibleExecutorsError as error:
        print(error)
        print(sorted(error.executors))
    else:
        print("no error")
    """
)


class TestExecutorCheck:
    """An executor whose Python workers cannot import picklable is named before the job."""

    def test_worker_python_without_picklable(self, spark_driver, tmp_path):
        """A worker Python without picklable's .pth file: both executors named, the fix said."""
        # -S skips site-packages' .pth files (picklable's editable install is one);
        # PYTHONPATH gives back the packages themselves, PySpark included, and not
        # the directories that PYTHONPATH held (picklable's source, in a checkout).
        python = tmp_path / "python-without-picklable"
        purelib = sysconfig.get_paths()["purelib"]
        python.write_text(f'#!/bin/sh\nPYTHONPATH={purelib} exec {sys.executable} -S "$@"\n')
        python.chmod(python.stat().st_mode | stat.S_IXUSR)
        done = spark_driver.run_script(CHECK_SCRIPT, tmp_path, args=(str(python),))
        out = done["stdout"]
        assert "picklable.spark: 2 of 2 executors cannot load picklable payloads" in out
        assert (
            "cannot import picklable.spark (ModuleNotFoundError: No module named 'picklable')"
            in out
        )
        assert f"their Python: {python}" in out
        assert "spark.submit.pyFiles" in out and "The job was not submitted." in out
        assert "['executor 0 on " in out and "', 'executor 1 on " in out


CONNECT_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import pandas as pd
    import wrapt
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    import picklable.spark

    @wrapt.decorator
    def plus_100(wrapped, instance, args, kwargs):
        return wrapped(*args, **kwargs) + 100

    @plus_100
    def double(x):
        return 2 * x

    @plus_100
    def double_series(s: pd.Series) -> pd.Series:
        return 2 * s

    class KwOnlyError(Exception):
        def __init__(self, message, *, code):
            super().__init__(message)
            self.code = code

    def explode(x):
        raise KwOnlyError(f"row {x} failed", code=x)

    spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
    df = spark.createDataFrame([(1,), (2,), (3,)], ["x"])

    def both():
        return {
            "udf": sorted(r[0] for r in df.select(F.udf(double, "long")("x")).collect()),
            "pandas_udf": sorted(
                r[0] for r in df.select(F.pandas_udf(double_series, "long")("x")).collect()
            ),
        }

    report = {"plain": both()}
    picklable.spark.enable()
    report["enabled"] = both()
    try:
        spark.createDataFrame([(7,)], ["x"]).select(F.udf(explode, "long")("x")).collect()
    except Exception as error:
        found = picklable.spark.original(error)
        report["error"] = [type(error).__name__, type(found) is KwOnlyError, found.code]
    picklable.spark.disable()
    spark.stop()
    print(json.dumps(report))
    """
)


class TestSparkConnect:
    """A Spark Connect client (its own process, no JVM) against the run's Spark."""

    def test_udfs_and_exception(self, spark_driver, tmp_path):
        """UDFs and pandas UDFs keep the wrapper; the task's exception comes back."""
        out = run_script(CONNECT_SCRIPT, tmp_path, args=(spark_driver.connect_url,), timeout=240)
        report = json.loads(out.strip().splitlines()[-1])
        assert report["plain"] == {"udf": [2, 4, 6], "pandas_udf": [2, 4, 6]}
        assert report["enabled"] == {"udf": [102, 104, 106], "pandas_udf": [102, 104, 106]}
        assert report["error"][0] == "PythonException"
        assert report["error"][1:] == [True, 7]
