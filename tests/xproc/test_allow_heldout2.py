"""A second held-out set against ``allowed=``, written after issue 28's rework.

Each payload is new (none repeats ``test_allow_attacks.py``, ``test_allow_heldout.py``
or ``test_allow_capabilities.py``) and aims at a harmless marker: a file in the
case's own directory, the process's standard output, ``decimal``'s default
context, ``json``'s encoder, the time zone cache. The routes: constructors with
side effects reached through classes an allowed module admits (``numpy.memmap``
through every opcode and ``copyreg`` route; ``logging.FileHandler``,
``gzip.GzipFile``, ``zipfile.ZipFile``, ``sqlite3.Connection``,
``_io.TextIOWrapper``), and through the callers that call a class later
(``map``, ``sorted``'s key, ``itertools.starmap``, a ``defaultdict``'s factory,
``GenericAlias``, ``MethodType``, ``staticmethod``, ``functools.reduce``, a
partial's state, the functional Enum API's ``type=``); ``operator.methodcaller``
over admitted objects; classmethods of always-admitted classes; ``BUILD`` on
module-level singletons; extension codes, persistent ids, out-of-band buffers,
memo indexes; huge allocations; text compiled for later (``re``, ``typing``).

Each case runs in a fresh interpreter that records what the load did (files
opened or made in its directory, the fingerprints above) in a report file (a
payload may close standard output). Every case must end with 0 side effects and 0
crashes; a case with ``refused`` set must be refused with a
``picklable.UnpicklingError`` whose message says that text (the refused object), a
case with ``refused=None`` may load (its result is benign) or fail cleanly.
``TestTheRoutesAreReal`` loads the ``real`` cases with plain ``pickle.loads``: each
reaches its marker.
"""

from __future__ import annotations

import collections
import copyreg
import dataclasses
import enum
import functools
import gzip
import itertools
import json
import logging
import operator
import pathlib
import pickle
import sqlite3
import subprocess
import sys
import types
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support.child import child_env
from support.opcodes import (
    BINPERSID,
    EMPTY_DICT,
    MARK,
    NEWOBJ,
    NONE,
    build,
    call,
    dict_,
    ext,
    getattr_,
    inst,
    integer,
    newobj_ex,
    pairs,
    payload,
    put,
    stack_global,
    text,
    tuple_,
)

np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")
import pandas.core.indexes.base as pandas_index  # noqa: E402

EXTENSION_CODE = 0x7E5  # registered by the receiver before it loads (see CHILD)


class R:
    """An object that pickles as ``func(*args)`` (a call in the payload); callable,
    so that pickle accepts another R as the function."""

    def __init__(self, func: Any, *args: Any) -> None:
        self.func, self.args = func, args

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.func, self.args)

    def __call__(self, *args: Any) -> None:  # pragma: no cover - never called
        raise AssertionError


def keyword_partial(func: Any, *args: Any, **kwargs: Any) -> functools.partial[Any]:
    """A real partial (keywords travel in its state)."""
    return functools.partial(func, *args, **kwargs)


@dataclasses.dataclass(frozen=True)
class Case:
    """A payload (made in the case's directory), the list it loads under, the text
    its refusal must say (None: it may load, harmlessly), and whether plain
    ``pickle.loads`` reaches its marker."""

    name: str
    make: Callable[[Path], bytes]
    allowed: tuple[str, ...]
    refused: str | tuple[str, ...] | None  # a tuple: any one of these names
    real: bool = True


def dumps(build_: Callable[[Path], Any]) -> Callable[[Path], bytes]:
    return lambda directory: pickle.dumps(build_(directory), protocol=4)


def marker(directory: Path) -> str:
    return str(directory / "marker")


def memmap_args(directory: Path) -> tuple[Any, ...]:
    return (marker(directory), np.uint8, "w+", 0, (1,))


def _memmap_opcodes(directory: Path) -> bytes:
    """The arguments of ``numpy.memmap(path, uint8, "w+", 0, (1,))`` as opcodes."""
    return (
        text(marker(directory))
        + stack_global("numpy", "uint8")
        + text("w+")
        + integer(0)
        + tuple_(integer(1))
    )


def _stdout_buffer() -> bytes:
    return getattr_(stack_global("sys", "stdout"), "buffer")


CASES = [
    # -- numpy.memmap: numpy's class, whose __new__ creates the file it maps.
    Case(
        "memmap called by REDUCE",
        dumps(lambda d: R(np.memmap, *memmap_args(d))),
        ("numpy",),
        "numpy.memmap",
    ),
    Case(
        "memmap by NEWOBJ",
        lambda d: payload(stack_global("numpy", "memmap"), MARK, _memmap_opcodes(d), b"t", NEWOBJ),
        ("numpy",),
        "numpy.memmap",
    ),
    Case(
        "memmap by NEWOBJ_EX with keywords",
        lambda d: payload(
            newobj_ex(
                stack_global("numpy", "memmap"),
                tuple_(text(marker(d))),
                dict_(mode=text("w+"), shape=tuple_(integer(1))),
            )
        ),
        ("numpy",),
        "numpy.memmap",
    ),
    Case(
        "memmap through copyreg.__newobj_ex__",
        dumps(
            lambda d: R(
                copyreg.__newobj_ex__,  # type: ignore[attr-defined]
                np.memmap,
                (marker(d),),
                {"mode": "w+", "shape": (1,)},
            )
        ),
        ("numpy",),
        "numpy.memmap",
    ),
    Case(
        "memmap.__new__ by name",
        lambda d: payload(
            call(
                stack_global("numpy", "memmap.__new__"),
                stack_global("numpy", "memmap"),
                _memmap_opcodes(d),
            )
        ),
        ("numpy",),
        "numpy.memmap",
    ),
    Case(
        "memmap by INST",
        lambda d: payload(inst("numpy", "memmap", _memmap_opcodes(d))),
        ("numpy",),
        "numpy.memmap",
    ),
    Case(
        "memmap in a partial with keywords",
        dumps(lambda d: R(keyword_partial(np.memmap, marker(d), mode="w+", shape=(1,)))),
        ("numpy",),
        "numpy.memmap",
    ),
    Case(
        "memmap called by a lazy map, consumed by list",
        dumps(lambda d: R(list, R(map, np.memmap, *([a] for a in memmap_args(d))))),
        ("numpy",),
        "numpy.memmap",
    ),
    Case(
        "memmap as sorted's key, through a partial",
        dumps(
            lambda d: R(
                keyword_partial(sorted, key=keyword_partial(np.memmap, mode="w+", shape=(1,))),
                [marker(d)],
            )
        ),
        ("numpy",),
        "numpy.memmap",
    ),
    Case(
        "the functional Enum API with type=memmap",
        dumps(
            lambda d: R(
                keyword_partial(enum.Enum, type=np.memmap),
                "Mapped",
                [("A", memmap_args(d))],
            )
        ),
        ("enum", "numpy"),
        "numpy.memmap",
    ),
    Case(
        "pandas' _new_Index handed memmap",
        dumps(
            lambda d: R(
                pandas_index._new_Index,
                np.memmap,
                {"filename": marker(d), "mode": "w+", "shape": (1,)},
            )
        ),
        ("pandas", "numpy"),
        None,  # a rebuild function with hostile arguments: fails cleanly here
        real=False,
    ),
    # -- logging.FileHandler (no reduction: never called with arguments) via callers.
    Case(
        "FileHandler called by a lazy map, consumed by list",
        dumps(lambda d: R(list, R(map, logging.FileHandler, [marker(d)]))),
        ("logging",),
        "logging.FileHandler",
    ),
    Case(
        "FileHandler bound by a partial, a defaultdict's factory",
        dumps(
            lambda d: R(
                operator.getitem,
                R(collections.defaultdict, R(functools.partial, logging.FileHandler, marker(d))),
                "key",
            )
        ),
        ("collections", "logging"),
        "logging.FileHandler",
    ),
    Case(
        "FileHandler behind types.GenericAlias, called",
        dumps(lambda d: R(R(types.GenericAlias, logging.FileHandler, (int,)), marker(d))),
        ("logging",),
        "logging.FileHandler",
    ),
    Case(
        "FileHandler bound by types.MethodType, called",
        lambda d: payload(
            call(
                call(
                    stack_global("types", "MethodType"),
                    stack_global("logging", "FileHandler"),
                    text(marker(d)),
                )
            )
        ),
        ("logging",),
        "logging.FileHandler",
    ),
    Case(
        "FileHandler in a staticmethod, called",
        dumps(lambda d: R(R(staticmethod, logging.FileHandler), marker(d))),
        ("logging",),
        "logging.FileHandler",
    ),
    Case(
        "FileHandler called by itertools.starmap, consumed by list",
        dumps(lambda d: R(list, R(itertools.starmap, logging.FileHandler, [(marker(d),)]))),
        ("itertools", "logging"),
        # Since Python 3.14 itertools' iterators declare no reduction: starmap itself
        # is the class the payload may not call.
        ("logging.FileHandler", "itertools.starmap"),
    ),
    Case(
        "FileHandler called by functools.reduce (named exactly)",
        lambda d: payload(
            call(
                stack_global("functools", "reduce"),
                stack_global("logging", "FileHandler"),
                b"(" + text(marker(d)) + text("w") + b"l",
            )
        ),
        ("functools.reduce", "logging"),
        "logging.FileHandler",
    ),
    Case(
        "a partial's state set to FileHandler and a path by BUILD, then called",
        lambda d: payload(
            call(
                build(
                    call(stack_global("functools", "partial"), stack_global("builtins", "int")),
                    tuple_(
                        stack_global("logging", "FileHandler"),
                        tuple_(text(marker(d))),
                        EMPTY_DICT,
                        NONE,
                    ),
                )
            )
        ),
        ("logging",),
        "logging.FileHandler",
    ),
    # -- Other classes whose constructors write files or close streams.
    Case(
        "gzip.GzipFile(path, 'wb')",
        dumps(lambda d: R(gzip.GzipFile, marker(d), "wb")),
        ("gzip",),
        "gzip.GzipFile",
    ),
    Case(
        "zipfile.ZipFile(path, 'w')",
        dumps(lambda d: R(zipfile.ZipFile, marker(d), "w")),
        ("zipfile",),
        "zipfile.ZipFile",
    ),
    Case(
        "sqlite3.Connection(path)",
        dumps(lambda d: R(sqlite3.Connection, marker(d))),
        ("sqlite3",),
        "sqlite3.Connection",
    ),
    Case(
        "_io.TextIOWrapper around the receiver's stdout (closed when collected)",
        lambda d: payload(call(stack_global("_io", "TextIOWrapper"), _stdout_buffer())),
        ("_io", "sys"),
        "_io.TextIOWrapper",
    ),
    Case(
        "_io.TextIOWrapper around stdout through copyreg._reconstructor",
        lambda d: payload(
            call(
                stack_global("copyreg", "_reconstructor"),
                stack_global("_io", "TextIOWrapper"),
                stack_global("_io", "TextIOWrapper"),
                _stdout_buffer(),
            )
        ),
        ("_io", "sys"),
        "_io.TextIOWrapper",
    ),
    # -- operator.methodcaller: any method of an admitted object, by name.
    Case(
        "methodcaller('write_text') on a pathlib.Path",
        dumps(lambda d: R(R(operator.methodcaller, "write_text", "x"), pathlib.Path(marker(d)))),
        ("operator", "pathlib"),
        "operator.methodcaller",
    ),
    Case(
        "methodcaller('tofile') on an array (methodcaller named exactly)",
        dumps(lambda d: R(R(operator.methodcaller, "tofile", marker(d)), np.arange(3))),
        ("numpy", "operator.methodcaller"),
        "operator.methodcaller",
    ),
    Case(
        "methodcaller('clear_traps') on decimal.DefaultContext",
        lambda d: payload(
            call(
                call(stack_global("operator", "methodcaller"), text("clear_traps")),
                stack_global("decimal", "DefaultContext"),
            )
        ),
        ("decimal", "operator"),
        "operator.methodcaller",
    ),
    # -- Methods of always-admitted classes, and module-level singletons.
    Case(
        "ZoneInfo.clear_cache through getattr, with nothing listed",
        lambda d: payload(call(getattr_(stack_global("zoneinfo", "ZoneInfo"), "clear_cache"))),
        (),
        "clear_cache",
    ),
    Case(
        "ZoneInfo.clear_cache named exactly",
        lambda d: payload(call(stack_global("zoneinfo", "ZoneInfo.clear_cache"))),
        ("zoneinfo.ZoneInfo.clear_cache",),
        "zoneinfo.ZoneInfo.clear_cache",
    ),
    Case(
        "BUILD on json's default encoder (indent for every json.dumps)",
        lambda d: payload(
            build(stack_global("json", "_default_encoder"), dict_(indent=integer(4)))
        ),
        ("json",),
        "JSONEncoder",
    ),
    Case(
        "BUILD slot state on decimal.DefaultContext (prec)",
        lambda d: payload(
            build(stack_global("decimal", "DefaultContext"), tuple_(NONE, dict_(prec=integer(3))))
        ),
        ("decimal",),
        "Context",
    ),
    Case(
        "getattr(Path, 'touch') of a payload's path, called",
        lambda d: payload(
            call(getattr_(call(stack_global("pathlib", "Path"), text(marker(d))), "touch"))
        ),
        ("pathlib",),
        "touch",
    ),
    Case(
        "datetime.datetime.now through getattr (reads the clock)",
        lambda d: payload(call(getattr_(stack_global("datetime", "datetime"), "now"))),
        (),
        None,
        real=False,
    ),
    # -- Registries, ids, buffers, memo.
    Case(
        "an extension code the receiver registered for os.mkdir",
        lambda d: payload(call(ext(EXTENSION_CODE), text(marker(d)))),
        (),
        "os.mkdir",
    ),
    Case(
        "a persistent id, no persistent_load",
        lambda d: payload(text(marker(d)) + BINPERSID),
        ("numpy",),
        "persistent id",
        real=False,
    ),
    Case(
        "an out-of-band buffer (PEP 574) without buffers",
        lambda d: payload(b"\x97", protocol=5),
        (),
        None,
        real=False,
    ),
    Case(
        "memo index 2**32 - 1",
        lambda d: payload(integer(1), put(2**32 - 1)),
        (),
        None,
        real=False,
    ),
    # -- Huge allocations: refused as failures, cleanly.
    Case(
        "bytearray(2**62)",
        dumps(lambda d: R(bytearray, 2**62)),
        (),
        None,
        real=False,
    ),
    Case(
        "numpy.ndarray of shape (2**62,)",
        dumps(lambda d: R(np.ndarray, (2**62,))),
        ("numpy",),
        None,
        real=False,
    ),
    Case(
        "numpy.ndarray over a 1-byte buffer with 100 elements",
        dumps(lambda d: R(np.ndarray, (100,), "u1", b"x", 0, (1,))),
        ("numpy",),
        None,
        real=False,
    ),
    # -- Text for later, and classes a call makes.
    Case(
        "re._compile of a catastrophic pattern (compiled, never matched)",
        dumps(lambda d: R(__import__("re")._compile, "(a+)+$" * 50, 0)),
        ("re",),
        None,
        real=False,
    ),
    Case(
        "typing.ForwardRef of code (compiled, never evaluated)",
        lambda d: payload(
            call(
                stack_global("typing", "ForwardRef"),
                text(f"__import__('os').mkdir({marker(d)!r})"),
            )
        ),
        ("typing",),
        None,
        real=False,
    ),
    Case(
        "collections.namedtuple (named exactly) claiming collections",
        dumps(
            lambda d: R(
                keyword_partial(collections.namedtuple, module="collections"),  # noqa: PYI024
                "OrderedDict",
                "a b",
            )
        ),
        ("collections.namedtuple",),
        "namedtuple",
        real=False,
    ),
    Case(
        "type() making a logging.Handler subclass that claims logging",
        lambda d: payload(
            call(
                stack_global("builtins", "type"),
                text("Handler"),
                tuple_(stack_global("logging", "Handler")),
                pairs((text("__module__"), text("logging"))),
            )
        ),
        ("logging",),
        "logging",
        real=False,
    ),
]

CHILD = r"""
import copyreg, gc, hashlib, json as _json, os, pickle, sys
case = _json.loads(sys.argv[1])
watched = case["directory"]
report_path = os.path.join(watched, "report.json")
copyreg.add_extension("os", "mkdir", case["extension"])
for name in case["imports"]:
    __import__(name)
import decimal, json, logging, zoneinfo, picklable

UTC = zoneinfo.ZoneInfo("UTC")

def fingerprint():
    context = decimal.DefaultContext
    found = {
        "json": sorted((k, id(v)) for k, v in vars(json).items()),
        "json.dumps": json.dumps([1]),
        "decimal": [context.prec, sorted(str(t) for t, on in context.traps.items() if on)],
        "zoneinfo cache": zoneinfo.ZoneInfo("UTC") is UTC,
        "handlers": len(logging.getLogger().handlers),
        "stdout": not sys.stdout.closed and not sys.stdout.buffer.closed,
        "modules": sorted(n for n in sys.modules if n.startswith(("os.", "subprocess"))),
    }
    if "numpy" in sys.modules:
        state = sys.modules["numpy"].random.get_state()
        found["numpy random"] = hashlib.sha256(state[1].tobytes()).hexdigest() + str(state[2])
    return found

events = []
recording = [False]

def hook(event, args):
    if not recording[0]:
        return
    if event == "open" and args and isinstance(args[0], str) and args[0].startswith(watched):
        if not args[0].endswith(("payload.pkl", "report.json")):
            events.append(f"open {os.path.basename(args[0])}")
    elif event in ("os.mkdir", "subprocess.Popen", "os.system", "ctypes.dlopen"):
        events.append(event)

sys.addaudithook(hook)
data = open(case["payload"], "rb").read()
before = fingerprint()
outcome, message, result = "loaded", "", None
recording[0] = True
try:
    if case["guarded"]:
        result = picklable.loads(data, allowed=case["allowed"])
    else:
        result = pickle.loads(data)
    summary = repr(result)[:200]
except picklable.UnpicklingError as exc:
    outcome, message = "refused", str(exc)
except BaseException as exc:
    outcome, message = "other", f"{type(exc).__name__}: {exc}"
result = None
gc.collect()
recording[0] = False
after = fingerprint()
changed = sorted(k for k in before if before[k] != after[k])
with open(report_path, "w") as report:
    _json.dump({"outcome": outcome, "message": message, "events": events,
                "changed": changed}, report)
"""


def _imports(case: Case) -> list[str]:
    """What the receiver has imported before it loads: its allowed modules."""
    tops = {name.split(".")[0] for name in case.allowed} - {"builtins"}
    return sorted(tops)


def run(case: Case, directory: Path, *, guarded: bool) -> dict[str, Any]:
    """Load the case's payload in a fresh interpreter: what it did, or how it died."""
    directory.mkdir()
    data = directory / "payload.pkl"
    data.write_bytes(case.make(directory))
    spec = {
        "directory": str(directory),
        "payload": str(data),
        "allowed": list(case.allowed),
        "imports": _imports(case),
        "guarded": guarded,
        "extension": EXTENSION_CODE,
    }
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=60,
            env=child_env(),
            cwd=directory,
        )
    except subprocess.TimeoutExpired:
        return {"hung": True}
    written = sorted(
        p.name for p in directory.iterdir() if p.name not in ("payload.pkl", "report.json")
    )
    report_file = directory / "report.json"
    if done.returncode != 0 or not report_file.exists():
        return {"crashed": done.returncode, "stderr": done.stderr[-2000:], "written": written}
    report: dict[str, Any] = json.loads(report_file.read_text())
    report["written"] = written
    return report


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_held_out_without_effect(case, tmp_path):
    """0 side effects, 0 crashes, 0 hangs; refused naming the object where required,
    else loaded harmlessly or failed with a clean UnpicklingError."""
    report = run(case, tmp_path / "case", guarded=True)
    assert "hung" not in report, report
    assert "crashed" not in report, report
    assert report["events"] == [], report
    assert report["changed"] == [], report
    assert report["written"] == [], report
    if case.refused is None:
        assert report["outcome"] in ("loaded", "refused"), report
    else:
        assert report["outcome"] == "refused", report
        names = (case.refused,) if isinstance(case.refused, str) else case.refused
        assert any(name in report["message"] for name in names), report["message"]


def test_the_set_is_large_enough():
    assert len(CASES) >= 30
    assert len({c.name for c in CASES}) == len(CASES)


class TestTheRoutesAreReal:
    """Without the allow-list the ``real`` payloads reach their marker."""

    @pytest.mark.parametrize(
        "case", [c for c in CASES if c.real], ids=[c.name for c in CASES if c.real]
    )
    def test_reaches_its_goal_unguarded(self, case, tmp_path):
        report = run(case, tmp_path / "case", guarded=False)
        reached = (
            "crashed" in report
            or report.get("events")
            or report.get("changed")
            or report.get("written")
        )
        assert reached, report
