"""Ten objects that cannot ship, made the way real code makes them.

Shared by ``tests/unit/test_diagnose.py`` and ``docs/diagnostics_side_by_side.py``
(picklable beside ``dill.detect`` and Ray's ``inspect_serializability``). Imports
nothing but the standard library, so the comparison runs in any environment.
"""

from __future__ import annotations

import ctypes
import functools
import os
import socket
import sqlite3
import threading
import weakref
from typing import Any, NamedTuple

conn: sqlite3.Connection | None = None  # set by make_ten(): a module-level connection


class Case(NamedTuple):
    label: str
    name: str  # what the object is called in the example
    obj: Any
    path: str  # the path picklable.dumps must name


class Worker:
    def __init__(self) -> None:
        self._lock = threading.Lock()


class Experiment:
    """Like sacred's Experiment: keeps the functions it captured."""

    def __init__(self) -> None:
        self.captured_functions: list[Any] = []

    def capture(self, func: Any) -> Any:
        self.captured_functions.append(func)
        return func


class Settings:
    def __init__(self, **kwargs: Any) -> None:
        self.__dict__.update(kwargs)


class Client:
    def __init__(self, sock: socket.socket) -> None:
        self.host = "db.example"
        self._sock = sock


class Backend:
    """A handle whose class refuses pickling on purpose."""

    def __reduce__(self) -> Any:
        raise TypeError("Backend handles cannot be pickled; reconnect in the worker")


class Model:
    def __init__(self) -> None:
        self.weights = [0.5] * 8
        self.backend = Backend()


class TreeNode:
    def __init__(self, parent: TreeNode | None = None) -> None:
        self.parent = weakref.ref(parent) if parent is not None else None
        self.children: list[TreeNode] = []


def sum_rows(rows: Any) -> int:
    return sum(rows)


def _logged(func: Any) -> Any:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return wrapper


def _make_job(worker: Worker) -> Any:
    def job() -> Any:
        return worker

    return job


def _make_experiment() -> Experiment:
    ex = Experiment()

    @ex.capture
    def load() -> int:
        return 1

    @ex.capture
    def train(steps: int = 10) -> int:
        return steps

    @ex.capture
    @_logged
    def query() -> Any:
        assert conn is not None
        return conn.execute("select 1").fetchall()

    return ex


def make_ten() -> tuple[list[Case], Any]:
    """The ten cases, and a function that closes what they opened."""
    global conn
    conn = sqlite3.connect(":memory:")
    log = open(os.devnull, "w")  # noqa: SIM115 - closed by close()
    sock = socket.socket()
    rows = (x for x in range(3))
    root = TreeNode()
    child = TreeNode(root)
    root.children.append(child)
    cases = [
        Case(
            "closure over an object that holds a lock",
            "job",
            _make_job(Worker()),
            "job.__closure__[0].cell_contents._lock",
        ),
        Case(
            "experiment whose captured function reads a global connection",
            "ex",
            _make_experiment(),
            "obj.captured_functions[2].__wrapped__.__globals__['conn']",
        ),
        Case(
            "an Event deep in containers",
            "payload",
            {"key": Settings(attr=[0, 1, 2, threading.Event()])},
            "obj['key'].attr[3]",
        ),
        Case(
            "settings holding an open log file",
            "settings",
            Settings(level="INFO", log=log),
            "obj.log",
        ),
        Case(
            "a task whose argument is a generator",
            "task",
            functools.partial(sum_rows, rows=rows),
            "obj.keywords['rows']",
        ),
        Case("a client holding a socket", "client", Client(sock), "obj._sock"),
        Case(
            "pool state holding a Thread",
            "state",
            {"threads": [threading.Thread(target=print)]},
            "obj['threads'][0]",
        ),
        Case(
            "settings holding a ctypes pointer",
            "buffer",
            Settings(ptr=ctypes.pointer(ctypes.c_int(7))),
            "obj.ptr",
        ),
        Case("a model whose backend's __reduce__ raises", "model", Model(), "obj.backend"),
        Case("a tree node with a weak reference to its parent", "node", child, "obj.parent"),
    ]

    def close() -> None:
        global conn
        root.children.clear()  # close() keeps the parent alive until then: its weakref stays live
        log.close()
        sock.close()
        rows.close()
        if conn is not None:
            conn.close()
            conn = None

    return cases, close


# For ``picklable explain picklable_testpkg.unshippable:locked_settings``.
locked_settings = Settings(name="nightly", lock=threading.Lock())
