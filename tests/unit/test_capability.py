"""Tests for `picklable._capability`: rebuild functions and names that can run code.

The declared rebuild functions are checked against the objects they rebuild:
reducing real numpy, pandas and stdlib values under every protocol names exactly
those functions (none missing, none stale), and those values load under their
natural allow-lists.
"""

from __future__ import annotations

import _compat_pickle
import array
import importlib
import logging
import pickle
import pickletools
import re
import zoneinfo
from collections.abc import Iterator
from typing import Any

import pytest

import picklable
from picklable import _capability

np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")

DTYPES = [
    *"?bhilqBHILQefdgFDG",
    "S3",
    "U3",
    "V4",
    "O",
    "M8[ns]",
    "M8[D]",
    "m8[s]",
    [("a", "i4"), ("b", "f8", (2,))],
]


def numpy_values() -> list[Any]:
    """Arrays of every dtype (C and Fortran order), their scalars and dtypes, masked
    arrays and the random generators."""
    values: list[Any] = []
    for dtype in DTYPES:
        values += [
            np.zeros(3, dtype=dtype),
            np.zeros(3, dtype=dtype)[0],
            np.dtype(dtype),
            np.asfortranarray(np.zeros((2, 2), dtype=dtype)),
        ]
    values += [
        np.ma.masked_array([1, 2], mask=[0, 1]),
        np.random.default_rng(1),
        np.random.RandomState(1),
        np.random.SeedSequence(1),
        np.random.MT19937(1),
        np.random.Philox(1),
    ]
    return values


def pandas_values() -> list[Any]:
    """DataFrames of many column dtypes and index kinds, and pandas' scalars."""
    frame = pd.DataFrame(
        {
            "i": [1, 2],
            "f": [1.0, 2.0],
            "s": ["a", "b"],
            "o": pd.array(["a", None], dtype=object),
            "c": pd.Categorical(["x", "y"]),
            "utc": pd.to_datetime(["2020", "2021"]).tz_localize("UTC"),
            "berlin": pd.to_datetime(["2020", "2021"]).tz_localize("Europe/Berlin"),
            "b": [True, False],
            "td": pd.to_timedelta([1, 2], unit="s"),
            "I": pd.array([1, None], dtype="Int64"),
            "B": pd.array([True, None], dtype="boolean"),
            "p": pd.period_range("2020", periods=2, freq="M"),
            "iv": pd.interval_range(0, 2),
        }
    )
    return [
        frame,
        *(frame.set_index(column) for column in ("s", "utc", "td", "c", "p", "iv")),
        frame.set_index(["i", "f"]),
        frame["i"],
        pd.date_range("2020", periods=3, tz="Europe/Berlin"),
        pd.Timestamp("2020", tz="UTC"),
        pd.Timedelta(1),
        pd.Period("2020"),
        pd.Interval(0, 1),
        pd.RangeIndex(3),
        pd.NaT,
        pd.offsets.MonthEnd(2),
        pd.arrays.SparseArray([0, 1, 0]),
        pd.CategoricalDtype(["a"], ordered=True),
    ]


def stdlib_values() -> list[Any]:
    return [
        array.array("d", [1.0]),
        re.compile("a+"),
        logging.getLogger("picklable.test"),
        zoneinfo.ZoneInfo("Europe/Berlin"),
    ]


def _globals(data: bytes) -> Iterator[tuple[str, str]]:
    """The (module, name) of every GLOBAL and STACK_GLOBAL of a pickle."""
    memo: dict[int, Any] = {}
    pushed: list[Any] = []
    for opcode, arg, _ in pickletools.genops(data):
        if opcode.name == "GLOBAL":
            module, _, name = arg.partition(" ")
            yield module, name
        elif opcode.name == "STACK_GLOBAL":
            yield pushed[-2], pushed[-1]
        elif opcode.name == "MEMOIZE":
            memo[len(memo)] = pushed[-1] if pushed else None
        elif opcode.name in ("PUT", "BINPUT", "LONG_BINPUT"):
            memo[arg] = pushed[-1] if pushed else None
        elif opcode.name in ("GET", "BINGET", "LONG_BINGET"):
            pushed.append(memo.get(arg))
        elif "UNICODE" in opcode.name or "STRING" in opcode.name:
            pushed.append(arg)


def emitted(values: list[Any]) -> set[tuple[str, str]]:
    """The functions (not classes) that pickling ``values`` names, under every protocol."""
    found: set[tuple[str, str]] = set()
    for value in values:
        payloads = [pickle.dumps(value, p) for p in range(2, pickle.HIGHEST_PROTOCOL + 1)]
        payloads.append(pickle.dumps(value, 5, buffer_callback=lambda _: None))
        for data in payloads:
            for written in _globals(data):
                # Protocol 2 writes Python 2 names for builtins and copyreg.
                module, name = _compat_pickle.NAME_MAPPING.get(written, written)
                obj: Any = importlib.import_module(
                    _compat_pickle.IMPORT_MAPPING.get(module, module)
                )
                for step in name.split("."):
                    obj = getattr(obj, step)
                if callable(obj) and not isinstance(obj, type):
                    found.add((obj.__module__, getattr(obj, "__qualname__", name)))
    return found


# Emitted, and admitted otherwise: always-admitted objects, a Cython rebuilder by
# construction, and a bound classmethod whose name pickle writes as getattr's.
_OTHERWISE = {("builtins", "getattr"), ("_codecs", "encode")}


class TestRebuildFunctions:
    def test_every_emitted_function_is_declared(self):
        """What the reductions of real values name is a rebuild function, or always admitted."""
        values = [*numpy_values(), *pandas_values(), *stdlib_values()]
        missing = {
            (module, name)
            for module, name in emitted(values) - _OTHERWISE
            if (module, name) not in _capability.REBUILD_FUNCTIONS
            and not name.startswith("__pyx_unpickle_")
        }
        assert not missing, missing

    def test_every_declared_function_is_emitted(self):
        """No stale entry: each is named by some value's reduction (pickle writes
        ZoneInfo._unpickle as getattr(ZoneInfo, '_unpickle'))."""
        seen = emitted([*numpy_values(), *pandas_values(), *stdlib_values()])
        declared = set(_capability.REBUILD_FUNCTIONS) - {("zoneinfo", "ZoneInfo._unpickle")}
        installed = {(m, n) for m, n in declared if _importable(m)}
        assert installed <= seen, installed - seen

    def test_cython_rebuilder_beside_its_class(self):
        from numpy.random import bit_generator

        rebuilder = getattr(bit_generator, "__pyx_unpickle_SeedSequence")
        assert _capability.is_rebuild_function(rebuilder)
        assert not _capability.is_rebuild_function(np.fromfile)
        assert not _capability.is_rebuild_function(pd.read_csv)

    def test_no_rebuild_function_runs_code(self):
        for module, name in _capability.REBUILD_FUNCTIONS:
            assert not _capability.runs_code(f"{module}.{name}"), (module, name)


def _importable(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


class TestRunsCode:
    @pytest.mark.parametrize(
        "name",
        [
            "builtins.eval",
            "os.system",
            "os.path.exists",
            "subprocess.Popen",
            "ctypes.CDLL",
            "importlib.import_module",
            "logging.config.dictConfig",
            "numpy.load",
            "numpy.f2py",
            "numpy.f2py.__main__",
            "pandas.read_pickle",
            "pandas.io.pickle.read_pickle",
            "pickle.loads",
            "sys.settrace",
            "json.tool.__main__",
        ],
    )
    def test_refused_names(self, name):
        assert _capability.runs_code(name)

    @pytest.mark.parametrize(
        "name", ["builtins.len", "numpy", "numpy.loadtxt", "logging.getLogger", "sys.stdout"]
    )
    def test_other_names(self, name):
        assert not _capability.runs_code(name)

    def test_refused_even_when_named_unless_unsafe(self):
        data = pickle.dumps(np.load)
        with pytest.raises(picklable.UnpicklingError, match=r"numpy\.load can run code"):
            picklable.loads(data, allowed=["numpy", "numpy.load"])
        policy = picklable.Policy(["numpy.load"], unsafe=True)
        assert picklable.loads(data, allowed=policy) is np.load
        with pytest.raises(TypeError, match="unsafe must be True or False"):
            picklable.Policy([], unsafe="yes")  # type: ignore[arg-type]


class TestNaturalLists:
    """Real payloads load under the allow-list a user would write."""

    @pytest.mark.parametrize("protocol", [2, 4, 5])
    def test_numpy_values(self, protocol):
        for value in numpy_values():
            for data in (pickle.dumps(value, protocol), picklable.dumps(value, protocol)):
                back = picklable.loads(data, allowed=["numpy"])
                assert type(back) is type(pickle.loads(data))  # numpy's longlong is int64
                if isinstance(value, np.ndarray):
                    assert back.dtype == value.dtype and back.tobytes() == value.tobytes()

    @pytest.mark.parametrize("protocol", [2, 4, 5])
    def test_pandas_values(self, protocol):
        for value in pandas_values():
            for data in (pickle.dumps(value, protocol), picklable.dumps(value, protocol)):
                back = picklable.loads(data, allowed=["pandas", "numpy"])
                assert type(back) is type(value)
                if isinstance(value, (pd.DataFrame, pd.Series)):
                    assert back.equals(value)

    def test_arrow_strings_admit_no_other_pyarrow_name(self):
        """pandas' objects emit three pyarrow rebuild functions: nothing else of pyarrow."""
        import pyarrow as pa

        assert {m for m, _ in _capability.EMITTED_BY} == {"pyarrow.lib"}
        for other in (pa.memory_map, pa.lib.Buffer.to_pybytes, pa.array):
            with pytest.raises(picklable.UnpicklingError, match="pyarrow"):
                picklable.loads(pickle.dumps(other), allowed=["pandas", "numpy"])
