"""The allow-list admits data, not capabilities: every route of issue 28, each in a
fresh interpreter.

Each case is a payload aimed at one capability of an allowed module (a file read
or written, a library loaded, code run, the process's state or a module changed,
the interpreter crashed), loaded by a new interpreter (``python -c``) under the
allow-list a user would write. The child watches what the load does with an audit
hook (files opened under the case's directory, libraries loaded, processes
started, code evaluated) and with fingerprints of the state the payload aims at
(numpy's global random state, ``json``'s namespace, ``sys.modules``, logging's
handlers); the parent checks the marker files the payload would write.

Under the allow-list every case must be refused with a ``picklable.UnpicklingError``
that names the refused object, with no effect and no crash. Without it
(``TestTheRoutesAreReal``, plain ``pickle.loads`` in the same kind of child), each
case's effect is seen, or the child crashes: the payloads are real.
"""

from __future__ import annotations

import collections
import copyreg
import dataclasses
import enum
import functools
import json
import logging.config
import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from picklable import _reconstruct
from support.child import child_env
from support.opcodes import (
    APPEND,
    EMPTY_DICT,
    EMPTY_LIST,
    NONE,
    POP,
    SETITEM,
    call,
    get,
    integer,
    payload,
    put,
    stack_global,
    text,
)

np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")
from numpy import ctypeslib  # noqa: E402
from numpy.lib import stride_tricks  # noqa: E402

TUPLE1 = b"\x85"
# A shared library that exists wherever numpy does (numpy's own extension).
_NUMPY_CORE = str(Path(np._core._multiarray_umath.__file__).parent)


class R:
    """An object that pickles as ``func(*args)``: a payload's call, by pickle's own rules."""

    def __init__(self, func: Any, *args: Any) -> None:
        self.func, self.args = func, args

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.func, self.args)


def module(name: str) -> R:
    """The module ``name``, as picklable's import rebuilder names it."""
    return R(_reconstruct._import, name)


@dataclasses.dataclass(frozen=True)
class Case:
    """One route: the payload (made in a directory), the list it is loaded under,
    the name its refusal must say, and whether the route is real unguarded."""

    name: str
    make: Callable[[Path], bytes]
    allowed: tuple[str, ...]
    refused: str  # in the refusal's message
    real: bool = True  # plain pickle.loads reaches the goal (or crashes)
    consume: bool = False  # the goal is reached when the result is iterated


def _evil_pickle(directory: Path) -> bytes:
    """A pickle that, when loaded without a guard, creates the marker file."""
    return pickle.dumps(R(open, str(directory / "marker"), "w"), protocol=2)


def _evil_file(directory: Path) -> str:
    path = directory / "evil.pkl"
    path.write_bytes(_evil_pickle(directory))
    return str(path)


def _secret(directory: Path) -> str:
    path = directory / "secret.csv"
    path.write_text("a,b\n1,2\n")
    return str(path)


def _dumps(obj: Any) -> Callable[[Path], bytes]:
    return lambda directory: pickle.dumps(obj(directory), protocol=4)


def _array_tofile(directory: Path) -> Any:
    array = np.frombuffer(_evil_pickle(directory), dtype=np.uint8)
    return R(array.tofile, str(directory / "written.pkl"))


def _deep_tuple_key(directory: Path) -> bytes:
    """{((((...200,000 deep...),),): 1}: hashing the key overflows the C stack."""
    return payload(EMPTY_DICT, NONE, TUPLE1 * 200_000, integer(1), SETITEM)


def _map_filled_later(directory: Path) -> bytes:
    """map(update_wrapper, first, second), the module put into ``first`` afterwards:
    iterating the map writes into the module."""
    return payload(
        EMPTY_LIST,
        put(0),
        POP,
        EMPTY_LIST,
        put(1),
        POP,
        call(
            stack_global("builtins", "map"),
            stack_global("functools", "update_wrapper"),
            get(0),
            get(1),
        ),
        put(2),
        POP,
        get(0),
        call(stack_global("picklable._reconstruct", "_import"), text("json")),
        APPEND,
        get(1),
        stack_global("json", "JSONDecoder"),
        APPEND,
        POP,
        get(1),
        POP,
        get(2),
    )


WRAPPER = ("functools", "functools.update_wrapper", "json")
CASES = [
    Case("numpy ndarray.tofile, bound", _dumps(_array_tofile), ("numpy",), "tofile"),
    Case(
        "numpy ndarray.tofile, from the class",
        _dumps(
            lambda d: R(
                np.ndarray.tofile,
                np.frombuffer(_evil_pickle(d), dtype=np.uint8),
                str(d / "written.pkl"),
            )
        ),
        ("numpy",),
        "numpy.ndarray.tofile",
    ),
    Case(
        "numpy.load(allow_pickle=True)",
        _dumps(lambda d: R(functools.partial(np.load, allow_pickle=True), _evil_file(d))),
        ("numpy",),
        "numpy.load",
    ),
    Case(
        "numpy.load, named exactly",
        _dumps(lambda d: R(functools.partial(np.load, allow_pickle=True), _evil_file(d))),
        ("numpy", "numpy.load"),
        "numpy.load can run code",
    ),
    Case(
        "numpy.fromfile", _dumps(lambda d: R(np.fromfile, _secret(d))), ("numpy",), "numpy.fromfile"
    ),
    Case(
        "numpy.ctypeslib.load_library",
        _dumps(lambda d: R(ctypeslib.load_library, "_multiarray_umath", _NUMPY_CORE)),
        ("numpy",),
        "numpy.ctypeslib",
    ),
    Case(
        "numpy.random.seed",
        lambda d: payload(call(stack_global("numpy.random", "seed"), integer(1234))),
        ("numpy",),
        "numpy.random.seed",
    ),
    Case(
        "numpy.lib.stride_tricks.as_strided",
        _dumps(lambda d: R(repr, R(stride_tricks.as_strided, np.zeros(1), (1 << 22,), (1 << 24,)))),
        ("numpy",),
        "as_strided",
    ),
    Case(
        "numpy.f2py.__main__",
        lambda d: payload(call(stack_global("numpy.f2py.__main__", "main"))),
        ("numpy",),
        "numpy.f2py.__main__",
    ),
    Case(
        "pandas.read_csv",
        _dumps(lambda d: R(pd.read_csv, _secret(d))),
        ("pandas", "numpy"),
        "pandas.read_csv",
    ),
    Case(
        "pandas DataFrame.to_csv, keywords through a partial",
        _dumps(
            lambda d: R(
                functools.partial(pd.DataFrame.to_csv, path_or_buf=str(d / "written.csv")),
                pd.DataFrame({"a": [1]}),
            )
        ),
        ("pandas", "numpy"),
        "to_csv",
    ),
    Case(
        "pandas.read_pickle through a partial",
        _dumps(lambda d: R(functools.partial(pd.read_pickle, compression=None), _evil_file(d))),
        ("pandas", "numpy"),
        "read_pickle",
    ),
    Case(
        "pandas.read_pickle, named exactly",
        _dumps(lambda d: R(functools.partial(pd.read_pickle, compression=None), _evil_file(d))),
        ("pandas", "numpy", "pandas.read_pickle"),
        "read_pickle can run code",
    ),
    Case(
        "logging.config.dictConfig with a factory",
        _dumps(
            lambda d: R(
                logging.config.dictConfig,
                {
                    "version": 1,
                    "handlers": {
                        "h": {"()": "builtins.open", "file": str(d / "marker"), "mode": "w"}
                    },
                },
            )
        ),
        ("logging",),
        "logging.config",
    ),
    Case(
        "logging.config.dictConfig, named exactly",
        _dumps(
            lambda d: R(
                logging.config.dictConfig,
                {
                    "version": 1,
                    "handlers": {
                        "h": {"()": "builtins.open", "file": str(d / "marker"), "mode": "w"}
                    },
                },
            )
        ),
        ("logging", "logging.config.dictConfig"),
        "logging.config",
    ),
    Case(
        "a module object handed to update_wrapper",
        _dumps(lambda d: R(functools.update_wrapper, module("json"), json.JSONDecoder)),
        WRAPPER,
        "the module 'json'",
    ),
    Case(
        "update_wrapper not named",
        _dumps(lambda d: R(functools.update_wrapper, module("json"), json.JSONDecoder)),
        ("functools", "json"),
        "functools.update_wrapper",
    ),
    Case(
        "a module object handed to UserDict.__init__",
        _dumps(lambda d: R(collections.UserDict.__init__, module("json"), {"x": 1})),
        ("collections", "collections.UserDict.__init__", "json"),
        "the module 'json'",
    ),
    Case(
        "builtins.eval",
        lambda d: payload(
            call(stack_global("builtins", "eval"), text(f"open({str(d / 'marker')!r}, 'w')"))
        ),
        ("builtins",),
        "eval",
    ),
    Case(
        "builtins.eval, named exactly",
        lambda d: payload(
            call(stack_global("builtins", "eval"), text(f"open({str(d / 'marker')!r}, 'w')"))
        ),
        ("builtins", "builtins.eval"),
        "builtins.eval can run code",
    ),
    Case(
        "logging.FileHandler(path): a constructor with the payload's arguments",
        _dumps(lambda d: R(logging.FileHandler, str(d / "marker"))),
        ("logging",),
        "logging.FileHandler is called with arguments",
    ),
    Case(
        "logging.FileHandler through copyreg._reconstructor",
        _dumps(
            lambda d: R(
                copyreg._reconstructor, logging.FileHandler, logging.FileHandler, str(d / "marker")
            )
        ),
        ("logging",),
        "logging.FileHandler is called with arguments",
    ),
    Case("a 200,000-deep tuple as a dict key", _deep_tuple_key, (), "nested more than 10,000 deep"),
    Case(
        "a module claimed by the functional Enum API",
        _dumps(lambda d: R(functools.partial(enum.Enum, module="json"), "Evil", "A B")),
        ("json",),
        "claims module 'json'",
        real=False,  # the harm is the claim (a class of json's no json made), not an effect
    ),
    Case(
        "an old exceptions module name (protocol 4)",
        lambda d: payload(call(stack_global("exceptions", "OSError"), text("x"))),
        (),
        "exceptions.OSError",
        real=False,  # pickle.loads cannot import it: the guard used to read it as builtins'
    ),
    Case(
        "a lazy map over a module",
        _dumps(lambda d: R(map, functools.update_wrapper, [module("json")], [json.JSONDecoder])),
        WRAPPER,
        "the module 'json'",
        consume=True,
    ),
    Case(
        "a lazy map, the module added to its list afterwards",
        _map_filled_later,
        WRAPPER,
        "the module 'json'",
        consume=True,
    ),
    Case(
        "a lazy map over numpy.fromfile",
        _dumps(lambda d: R(map, np.fromfile, [_secret(d)])),
        ("numpy",),
        "numpy.fromfile",
        consume=True,
    ),
]

CHILD = r"""
import hashlib, json as _json, os, pickle, sys
case = _json.loads(sys.argv[1])
watched = case["directory"]
for name in case["imports"]:
    __import__(name)
import json, logging, picklable

def fingerprint():
    found = {
        "json": sorted((k, id(v)) for k, v in vars(json).items()),
        "f2py main": "numpy.f2py.__main__" in sys.modules,
        "handlers": len(logging.getLogger().handlers),
    }
    if "numpy" in sys.modules:
        state = sys.modules["numpy"].random.get_state()
        found["numpy random"] = hashlib.sha256(state[1].tobytes()).hexdigest() + str(state[2])
    return found

events = []
recording = [False]
# (Code a payload runs writes the marker file: imports run exec themselves.)
WATCH = ("ctypes.dlopen", "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn",
         "os.spawn")

def hook(event, args):
    if not recording[0]:
        return
    if event == "open" and args and isinstance(args[0], str) and args[0].startswith(watched):
        events.append(f"open {os.path.basename(args[0])}")
    elif event in WATCH:
        events.append(event)

sys.addaudithook(hook)
data = open(case["payload"], "rb").read()
before = fingerprint()
outcome, message = "loaded", ""
recording[0] = True
try:
    if case["guarded"]:
        result = picklable.loads(data, allowed=case["allowed"])
    else:
        result = pickle.loads(data)
    if case["consume"]:
        list(result)
except picklable.UnpicklingError as exc:
    outcome, message = "refused", str(exc)
except BaseException as exc:
    outcome, message = "other", f"{type(exc).__name__}: {exc}"
recording[0] = False
after = fingerprint()
changed = sorted(k for k in before if before[k] != after[k])
print(_json.dumps({"outcome": outcome, "message": message, "events": events, "changed": changed}))
"""


def _imports(case: Case) -> list[str]:
    """What the receiver has imported before it loads: its allowed modules."""
    tops = {name.split(".")[0] for name in case.allowed} - {"builtins"}
    return sorted(tops | {"json", "logging"})


def run(case: Case, directory: Path, *, guarded: bool) -> dict[str, Any]:
    """Load the case's payload in a fresh interpreter; what it did, or how it died."""
    directory.mkdir()
    data = directory / "payload.pkl"
    data.write_bytes(case.make(directory))
    spec = {
        "directory": str(directory),
        "payload": str(data),
        "allowed": list(case.allowed),
        "imports": _imports(case),
        "guarded": guarded,
        "consume": case.consume,
    }
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(),
        cwd=directory,
    )
    written = sorted(
        p.name for p in directory.iterdir() if p.name in ("marker", "written.pkl", "written.csv")
    )
    if done.returncode != 0:
        return {"crashed": done.returncode, "stderr": done.stderr[-2000:], "written": written}
    report = json.loads(done.stdout.strip().splitlines()[-1])
    report["written"] = written
    return report


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_refused_cleanly_without_effect(case, tmp_path):
    """Refused with an UnpicklingError naming the refused object; nothing happened."""
    report = run(case, tmp_path / "case", guarded=True)
    assert "crashed" not in report, report
    assert report["outcome"] == "refused", report
    assert case.refused in report["message"], report["message"]
    assert report["events"] == [], report
    assert report["changed"] == [], report
    assert report["written"] == [], report


class TestTheRoutesAreReal:
    """Without the allow-list the same payloads reach their goal (or crash the child)."""

    @pytest.mark.parametrize(
        "case", [c for c in CASES if c.real], ids=[c.name for c in CASES if c.real]
    )
    def test_reaches_its_goal_unguarded(self, case, tmp_path):
        report = run(case, tmp_path / "case", guarded=False)
        reached = (
            "crashed" in report
            or report["events"]
            or report["changed"]
            or report["written"]
            or "SystemExit" in report["message"]
            or "RecursionError" in report["message"]
        )
        assert reached, report
