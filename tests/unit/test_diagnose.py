"""Tests for `picklable._diagnostics` (`culprit`, `errors`, `hints`, `loading`, `explain`,
`inspect`), `_reduce.refusals` and `unpickling_error`:
every failure says what, where, why and how to fix it."""

from __future__ import annotations

import asyncio
import collections
import ctypes
import functools
import io
import json
import multiprocessing
import os
import pickle
import socket
import sqlite3
import sys
import textwrap
import threading
import types
import weakref

import numpy as np
import pytest

import picklable
from picklable import _code
from picklable._cli import main
from picklable._diagnostics import hints as _hints
from picklable._diagnostics.culprit import children, find_culprit, shipping
from picklable._diagnostics.explain import explain, human_size
from picklable._diagnostics.inspect import inspect_payload
from picklable._reduce.table import refusal
from picklable_testpkg import api, fakedb
from picklable_testpkg.unshippable import make_ten
from support.child import run_script

LOCK_FIX = "create it inside the worker (e.g. in the pool initializer)"


def error_of(obj):
    """The PicklingError that picklable.dumps raises for ``obj``."""
    with pytest.raises(picklable.PicklingError) as info:
        picklable.dumps(obj)
    return info.value


def message_of(obj):
    return str(error_of(obj))


def sync_message(kind, path="obj"):
    return (
        f"Cannot pickle threading.{kind} - at {path}: a threading.{kind} holds a lock, which only "
        "works inside this process. Fix: create it inside the worker (e.g. in the pool "
        "initializer), "
        f"or share a multiprocessing.Manager().{kind}() between processes."
    )


FILE_FIX = "pass the path {0!r} and open it inside the worker"
READ_FIX = FILE_FIX + ", or ship its content (f.read())"
WRITE_FIX = FILE_FIX + ", or send the data back and write it here"


class ReadsAGoneName:
    """Its __setstate__ reads a module attribute that does not exist."""

    def __setstate__(self, state):
        self.__dict__.update(state)
        return os.no_such_name_here  # type: ignore[attr-defined]


class Refuses:
    """A class whose __reduce__ raises on purpose."""

    def __reduce__(self):
        raise NotImplementedError("Refuses objects stay in their process")


class StateRefuses:
    def __getstate__(self):
        raise RuntimeError("no state for you")


class StampedItems(dict):
    """Its __setitem__ reads an attribute: pickle gives it its items first."""

    def __init__(self, stamp):
        super().__init__()
        self.stamp = stamp

    def __setitem__(self, key, value):
        super().__setitem__(key, (value, self.stamp))


class BoundedList(list):
    """Its extend reads an attribute, as its append would."""

    def __init__(self, limit):
        super().__init__()
        self.limit = limit

    def extend(self, items):
        super().extend(list(items)[: self.limit])


class KindedBase:
    """A base whose __init_subclass__ needs the class statement's keyword."""

    def __init_subclass__(cls, *, kind, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.kind = kind


class Worker:
    def __init__(self):
        self._lock = threading.Lock()


class TestLocksAndThreads:
    def test_lock(self):
        """A bare lock: its type, the root path, the reason and the fix."""
        assert message_of(threading.Lock()) == (
            f"Cannot pickle _thread.lock - at obj: locks hold OS state. Fix: {LOCK_FIX}."
        )

    def test_rlock(self):
        """An RLock has the same reason and fix."""
        assert message_of(threading.RLock()) == (
            f"Cannot pickle _thread.RLock - at obj: locks hold OS state. Fix: {LOCK_FIX}."
        )

    @pytest.mark.parametrize(
        ("kind", "make"),
        [
            ("Condition", threading.Condition),
            ("Event", threading.Event),
            ("Semaphore", threading.Semaphore),
            ("BoundedSemaphore", threading.BoundedSemaphore),
            ("Barrier", lambda: threading.Barrier(2)),
        ],
    )
    def test_synchronization_objects_are_the_culprit_not_their_inner_lock(self, kind, make):
        """Condition/Event/Semaphore/Barrier are named themselves, not their `_cond._lock`."""
        err = error_of({"sync": make()})
        assert str(err) == sync_message(kind, "obj['sync']")
        assert err.path == "obj['sync']"
        assert err.type_name == f"threading.{kind}"

    def test_thread(self):
        """A Thread object: pass its target, start the thread in the worker."""
        assert message_of(threading.Thread(target=print)) == (
            "Cannot pickle threading.Thread - at obj: a Thread runs in (or is made for) this "
            "process "
            "only. Fix: pass its target and arguments, and start the thread inside the worker."
        )

    def test_process(self):
        """A Process object, not the AuthenticationString deep inside it."""
        process = multiprocessing.Process(target=print)
        assert message_of([process]) == (
            "Cannot pickle multiprocessing.context.Process - at obj[0]: a Process object belongs "
            "to "
            "the process that made it (OS handles, authkey) (TypeError: Pickling an "
            "AuthenticationString object is disallowed for security reasons). Fix: pass its "
            "target and arguments, and start processes where they are needed."
        )

    def test_multiprocessing_queue(self):
        """A multiprocessing Queue reaches workers at start, not by pickling."""
        queue = multiprocessing.Queue()
        try:
            assert message_of({"q": queue}) == (
                "Cannot pickle multiprocessing.queues.Queue - at obj['q']: a multiprocessing Queue "
                "reaches other processes when they start, not by pickling (RuntimeError: Queue "
                "objects should only be shared between processes through inheritance). Fix: give "
                "it to the pool's initializer (initargs) or to Process(args=...), or use "
                "multiprocessing.Manager().Queue()."
            )
        finally:
            queue.close()
            queue.join_thread()


class TestOSResources:
    def test_unconnected_socket(self):
        """A socket: pass the address, connect in the worker."""
        with socket.socket() as sock:
            assert message_of(sock) == (
                "Cannot pickle socket.socket - at obj: a socket holds an OS connection. Fix: pass "
                "the "
                "address and connect inside the worker."
            )

    def test_connected_socket_names_the_peer(self):
        """A connected socket's fix names the address it is connected to."""
        with (
            socket.create_server(("127.0.0.1", 0)) as server,
            socket.create_connection(server.getsockname()) as client,
        ):
            peer = client.getpeername()
            assert message_of({"conn": client}) == (
                "Cannot pickle socket.socket - at obj['conn']: a socket holds an OS connection. "
                f"Fix: pass the address {peer!r} and connect inside the worker."
            )
            server.accept()[0].close()

    @pytest.mark.parametrize(
        ("mode", "buffering", "type_name"),
        [
            ("r", -1, "_io.TextIOWrapper"),
            ("rb", -1, "_io.BufferedReader"),
            ("rb", 0, "_io.FileIO"),
        ],
    )
    def test_files_open_for_reading(self, tmp_path, mode, buffering, type_name):
        """Text, buffered and raw files open for reading: the fix names the path."""
        path = tmp_path / "data.csv"
        path.write_text("a,b\n")
        with open(path, mode, buffering=buffering) as handle:
            assert message_of({"log": handle}) == (
                f"Cannot pickle {type_name} - at obj['log']: open file {str(path)!r} holds an OS "
                "file descriptor; a copy of its content would not follow the file. "
                f"Fix: {READ_FIX.format(str(path))}."
            )

    @pytest.mark.parametrize(
        ("mode", "type_name"),
        [("wb", "_io.BufferedWriter"), ("r+b", "_io.BufferedRandom"), ("a", "_io.TextIOWrapper")],
    )
    def test_files_open_for_writing(self, tmp_path, mode, type_name):
        """A file open for writing: a copy would not write to the file."""
        path = tmp_path / "data.csv"
        path.write_text("a,b\n")
        with open(path, mode) as handle:
            assert message_of({"log": handle}) == (
                f"Cannot pickle {type_name} - at obj['log']: open file {str(path)!r} is open for "
                f"writing: a copy would not write to the file. Fix: {WRITE_FIX.format(str(path))}."
            )

    def test_closed_file(self, tmp_path):
        """A closed file: it is closed, whatever it held before."""
        path = tmp_path / "data.csv"
        with open(path, "w") as handle:
            handle.write("a,b\n")
        assert message_of([handle]) == (
            f"Cannot pickle _io.TextIOWrapper - at obj[0]: file {str(path)!r} is closed: it has "
            "nothing left to read or write. Fix: pass the path and open the file inside the worker."
        )

    def test_standard_input(self):
        """sys.stdin is this process's own stream: use the worker's."""
        assert message_of([sys.__stdin__]) == (
            "Cannot pickle _io.TextIOWrapper - at obj[0]: it is this process's sys.stdin. Fix: "
            "use sys.stdin inside the worker (each process has its own)."
        )

    def test_standard_output_ships_as_the_receivers(self):
        """sys.stdout and sys.stderr load as the receiver's own (a reference)."""
        assert shipping(sys.__stderr__).how == "reference"
        assert shipping(sys.__stderr__).via == "sys:__stderr__"
        assert picklable.loads(picklable.dumps([sys.stdout]))[0] is sys.stdout

    def test_released_memoryview(self):
        """A released memoryview views nothing: it cannot ship."""
        view = memoryview(b"abc")
        view.release()
        assert message_of([view]) == (
            "Cannot pickle memoryview - at obj[0]: the memoryview is released: it views nothing "
            "any more. Fix: ship the object it viewed, or bytes(view) before releasing it."
        )

    def test_memoryview_of_a_struct_format(self):
        """A view whose format memoryview.cast cannot make again is refused, not bent."""
        record = np.zeros(3, dtype=[("a", "<i4"), ("b", "<f8")])
        sliced = memoryview(record)[1:]
        assert message_of([sliced]) == (
            f"Cannot pickle memoryview - at obj[0]: a memoryview of format {sliced.format!r} "
            "cannot be rebuilt exactly (memoryview.cast knows single native formats only). "
            "Fix: ship the object it views (view.obj), or bytes(view)."
        )
        assert picklable.loads(picklable.dumps(memoryview(record))).obj.tolist() == record.tolist()


class TestRunningCode:
    def test_generator(self):
        """A generator names its function."""

        def rows():
            yield 1

        gen = rows()
        assert message_of({"rows": gen}) == (
            "Cannot pickle generator - at obj['rows']: generator "
            "TestRunningCode.test_generator.<locals>.rows() holds a running frame. Fix: pass a "
            "list of "
            "its items, or the generator function and its arguments."
        )

    def test_coroutine(self):
        """A coroutine: ship the coroutine function and its arguments."""

        async def fetch():
            return 1

        coro = fetch()
        try:
            assert message_of([coro]) == (
                "Cannot pickle coroutine - at obj[0]: coroutine "
                "TestRunningCode.test_coroutine.<locals>."
                "fetch() holds a running frame. Fix: pass the coroutine function and its "
                "arguments, and "
                "await it in the worker."
            )
        finally:
            coro.close()

    def test_async_generator(self):
        """An async generator: ship the function that makes it."""

        async def ticks():
            yield 1

        agen = ticks()
        assert message_of(agen) == (
            "Cannot pickle async_generator - at obj: async generator "
            "TestRunningCode.test_async_generator"
            ".<locals>.ticks() holds a running frame. Fix: pass the function that makes it and its "
            "arguments."
        )

    def test_frame(self):
        """A frame names its function, file and line."""

        def captured():
            return sys._getframe()  # a finished frame: its line no longer moves

        frame = captured()
        assert message_of({"frame": frame}) == (
            "Cannot pickle frame - at obj['frame']: frame of captured() "
            f"({__file__}:{frame.f_lineno}) "
            "belongs to the running interpreter. Fix: pass the values you need from it (e.g. "
            "dict(frame.f_locals)), or the exception itself: picklable ships tracebacks."
        )

    def test_frame_of_a_traceback(self):
        """A traceback's frame kept apart from the traceback (tb.tb_frame) is a frame."""

        def fail():
            raise ValueError("x")

        try:
            fail()
        except ValueError as exc:
            tb = exc.__traceback__
        assert picklable.loads(picklable.dumps(tb)) is not None  # the traceback itself ships
        frame = tb.tb_next.tb_frame  # fail()'s: finished, its line stays
        err = error_of({"where": frame})
        assert err.path == "obj['where']"
        assert (
            err.reason
            == f"frame of fail() ({__file__}:{frame.f_lineno}) belongs to the running interpreter"
        )

    def test_frame_info_from_inspect_stack(self):
        """inspect.stack() records: the path names the namedtuple's `frame` field."""
        import inspect

        err = error_of(inspect.stack()[:1])
        assert err.path == "obj[0].frame"
        assert err.type_name == "frame"

    def test_event_loop(self):
        """An asyncio event loop, not the weakref deep inside it."""
        loop = asyncio.new_event_loop()
        try:
            assert message_of({"loop": loop}) == (
                f"Cannot pickle {_hints.type_name(loop)} - at obj['loop']: an event loop runs in a "
                "thread "
                "of this process. Fix: call asyncio.run() inside the worker."
            )
        finally:
            loop.close()


CONNECTION_MESSAGE = (
    "Cannot pickle {0} - at {1}: a database connection holds an open connection to the database. "
    "Fix: pass the database path or URL and connect inside the worker (once per worker, in the "
    "pool "
    "initializer)."
)
CURSOR_MESSAGE = (
    "Cannot pickle {0} - at {1}: a database cursor holds an open database connection. Fix: pass "
    "the "
    "query and the database path or URL, and run it inside the worker."
)


class TestDatabases:
    def test_sqlite3_connection_and_cursor(self):
        """sqlite3 connections and cursors."""
        conn = sqlite3.connect(":memory:")
        try:
            assert message_of(conn) == CONNECTION_MESSAGE.format("sqlite3.Connection", "obj")
            assert message_of({"cur": conn.cursor()}) == CURSOR_MESSAGE.format(
                "sqlite3.Cursor", "obj['cur']"
            )
        finally:
            conn.close()

    def test_other_db_api_driver(self):
        """A DB-API driver that is not sqlite3 is recognised by what its objects do."""
        conn = fakedb.connect("fake://db")
        try:
            assert message_of({"db": conn}) == CONNECTION_MESSAGE.format(
                "picklable_testpkg.fakedb.Connection", "obj['db']"
            )
            assert message_of([conn.cursor()]) == CURSOR_MESSAGE.format(
                "picklable_testpkg.fakedb.Cursor", "obj[0]"
            )
        finally:
            conn.close()

    def test_connection_in_a_function_global(self):
        """A function that reads a module-level connection: the path goes through __globals__."""
        conn = sqlite3.connect(":memory:")
        namespace = {"conn": conn, "__name__": "__main__"}
        exec("def query():\n    return conn.execute('select 1')\n", namespace)
        try:
            assert message_of(namespace["query"]) == CONNECTION_MESSAGE.format(
                "sqlite3.Connection", "query.__globals__['conn']"
            )
        finally:
            conn.close()


class TestCtypes:
    def test_pointer(self):
        """A ctypes pointer: ship what it points to."""
        pointer = ctypes.pointer(ctypes.c_int(3))
        assert message_of({"ptr": pointer}) == (
            f"Cannot pickle {_hints.type_name(pointer)} - at obj['ptr']: a ctypes pointer holds a "
            "raw "
            "address in this process's memory. Fix: ship the value it points to (ptr.contents) and "
            "make "
            "the pointer inside the worker."
        )

    def test_function_pointer(self):
        """A ctypes function pointer: ship the library path and the function name."""
        callback = ctypes.CFUNCTYPE(None)(lambda: None)
        assert message_of(callback) == (
            f"Cannot pickle {_hints.type_name(callback)} - at obj: a ctypes function pointer is an "
            "address in this process. Fix: ship the library path and the function name, and look "
            "it "
            "up with ctypes.CDLL inside the worker."
        )

    def test_structure_with_a_pointer(self):
        """Other ctypes objects that contain pointers."""

        class Node(ctypes.Structure):
            _fields_ = [("value", ctypes.c_int), ("next", ctypes.c_void_p)]

        node = Node(1, None)
        assert message_of([node]) == (
            f"Cannot pickle {_hints.type_name(node)} - at obj[0]: a ctypes Node that contains "
            "pointers "
            "holds raw addresses of this process. Fix: ship plain values (the fields, or "
            "bytes(obj) "
            "without pointers) and rebuild it inside the worker."
        )

    def test_loaded_library(self):
        """A CDLL handle: ship the library path."""
        lib = ctypes.CDLL(None)
        assert message_of({"lib": lib}) == (
            "Cannot pickle ctypes.CDLL - at obj['lib']: a loaded library handle is valid in this "
            "process "
            "only. Fix: ship the library path (None) and load it with ctypes.CDLL inside the "
            "worker."
        )
        [problem] = explain({"lib": lib}).problems
        assert (problem.path, problem.why) == (
            "obj['lib']",
            "a loaded library handle is valid in this process only",
        )


class TestReduceRaises:
    def test_says_which_class_reduce_raised_and_what(self):
        """The class whose __reduce__ raised, the exception and its message."""
        assert message_of({"handle": Refuses()}) == (
            f"Cannot pickle {__name__}.Refuses - at obj['handle']: Refuses.__reduce__ raised "
            "NotImplementedError: Refuses objects stay in their process. Fix: ship what it is made "
            "from "
            "and rebuild it inside the worker, or change Refuses.__reduce__."
        )

    def test_getstate_raising(self):
        """__getstate__ raising is named the same way."""
        err = error_of([StateRefuses()])
        assert err.reason == "StateRefuses.__getstate__ raised RuntimeError: no state for you"
        assert err.hint == (
            "ship what it is made from and rebuild it inside the worker, or change "
            "StateRefuses.__getstate__"
        )

    def test_c_type_without_pickle_support(self):
        """A C type that pickle cannot take: register a reducer or rebuild it."""
        import _queue

        assert message_of({"q": _queue.SimpleQueue()}) == (
            "Cannot pickle _queue.SimpleQueue - at obj['q']: _queue.SimpleQueue is a C type "
            "without pickle "
            "support. Fix: ship what it is made from and rebuild it inside the worker, or register "
            "a "
            "reducer with copyreg.pickle()."
        )


WEAK_FIX = (
    "make the object that holds it importable (it then ships by reference), or leave it out in "
    "__getstate__ and rebuild it empty (a cache) on load"
)


class TestWeakReferences:
    def test_weakref(self):
        """A weak reference, with the fix from DESIGN.md (by reference, or rebuilt empty)."""
        target = Worker()
        assert message_of({"parent": weakref.ref(target)}) == (
            "Cannot pickle weakref.ReferenceType - at obj['parent']: a weak reference points into "
            "this "
            f"process without owning its target. Fix: {WEAK_FIX}."
        )

    @pytest.mark.parametrize(
        "kind", [weakref.WeakValueDictionary, weakref.WeakKeyDictionary, weakref.WeakSet]
    )
    def test_weak_container_subclasses_are_the_culprit(self, kind):
        """A subclass of a weak container is named itself, not `_remove.__defaults__[0]`
        (the containers themselves ship over their members)."""
        subclass = type(f"My{kind.__name__}", (kind,), {})
        assert message_of({"cache": subclass()}) == (
            f"Cannot pickle {_hints.type_name(subclass())} - at obj['cache']: a "
            f"{subclass.__name__} holds weak references into this process. Fix: {WEAK_FIX}."
        )


class TestPaths:
    def test_closure_then_attribute(self):
        """job.__closure__[0].cell_contents._lock"""
        worker = Worker()

        def job():
            return worker

        err = error_of(job)
        assert str(err) == (
            "Cannot pickle _thread.lock - at job.__closure__[0].cell_contents._lock: locks hold OS "
            "state. "
            f"Fix: {LOCK_FIX}."
        )
        assert (err.path, err.type_name, err.reason, err.hint) == (
            "job.__closure__[0].cell_contents._lock",
            "_thread.lock",
            "locks hold OS state",
            LOCK_FIX,
        )

    def test_wrapped_function_reads_a_global(self):
        """A functools.wraps wrapper is entered through __wrapped__, not its closure cell."""
        conn = sqlite3.connect(":memory:")
        namespace = {"conn": conn, "__name__": "__main__", "functools": functools}
        exec(
            textwrap.dedent(
                """
                def logged(func):
                    @functools.wraps(func)
                    def wrapper(*args):
                        return func(*args)
                    return wrapper

                @logged
                def query():
                    return conn.execute("select 1")
                """
            ),
            namespace,
        )

        class Experiment:
            def __init__(self):
                self.captured_functions = [len, print, namespace["query"]]

        try:
            err = error_of(Experiment())
            assert err.path == "obj.captured_functions[2].__wrapped__.__globals__['conn']"
        finally:
            conn.close()

    def test_items_attributes_and_indices(self):
        """obj['key'].attr[3]"""
        holder = types.SimpleNamespace(attr=[0, 1, 2, threading.Lock()])
        assert error_of({"key": holder}).path == "obj['key'].attr[3]"

    def test_exception_cause(self):
        """A lock hidden in an exception's __cause__ gets a real path: the link
        stays behind (a RemoteError stands in for it), and explain says where."""
        cause = ValueError("inner")
        cause.lock = threading.Lock()
        try:
            try:
                raise cause
            except ValueError as inner:
                raise RuntimeError("outer") from inner
        except RuntimeError as outer:
            report = picklable.explain({"error": outer})
            loaded = picklable.loads(picklable.dumps({"error": outer}))["error"]
        node = report.find("obj['error'].__cause__.lock")
        assert report.ships and node is not None and node.how == "behind"
        assert "STAYS BEHIND" in str(report) and "locks hold OS state" in str(report)
        assert type(loaded) is RuntimeError and type(loaded.__cause__) is picklable.RemoteError
        assert loaded.__cause__.type_name == "builtins.ValueError"

    def test_partial_keywords_namedtuple_fields_defaultdict(self):
        """partial arguments, namedtuple fields and defaultdict factories read as attributes."""
        Pair = collections.namedtuple("Pair", "left right")  # noqa: PYI024 - the stdlib kind on purpose
        assert (
            error_of(functools.partial(print, sep=threading.Lock())).path == "obj.keywords['sep']"
        )
        assert error_of(functools.partial(print, 1, threading.Lock())).path == "obj.args[1]"
        assert error_of(Pair(1, threading.Lock())).path == "obj.right"
        method = functools.partialmethod(print, 1, threading.Lock())
        assert error_of(method).path == "obj.args[1]"
        method = functools.partialmethod(print, sep=" ")
        method.guard = threading.Lock()  # type: ignore[attr-defined]
        assert error_of(method).path == "obj.guard"
        lock = threading.Lock()
        assert error_of(collections.defaultdict(lambda: lock)).path == (
            "obj.default_factory.__closure__[0].cell_contents"
        )

    def test_bound_method_and_class_attribute(self):
        """Through a bound method's __self__, and a class shipped by value."""

        class Local:
            shared = threading.Lock()

        assert error_of(Worker().__init__).path == "obj.__self__._lock"
        assert error_of([Local()]).path == "obj[0].__class__.shared"

    def test_error_round_trips_with_its_fields(self):
        """The error itself ships (a pool sends it back) with path, reason and hint."""
        err = error_of({"lock": threading.Lock()})
        back = picklable.loads(picklable.dumps(err))
        assert (back.path, back.type_name, back.reason, back.hint, str(back)) == (
            err.path,
            err.type_name,
            err.reason,
            err.hint,
            str(err),
        )


class TestHintsAndWalk:
    def test_ordinary_objects_are_not_unshippable(self):
        """The kind table says nothing about objects that ship."""
        for obj in (
            1,
            "s",
            [1],
            {"a": 1},
            Worker.__init__,
            api.plain,
            io.BytesIO(b"x"),
            ctypes.c_int(1),
        ):
            if not isinstance(obj, ctypes.c_int):
                assert refusal(obj) is None, obj

    def test_failure_of_something_inside_is_not_blamed_on_the_holder(self):
        """'cannot pickle X' about another type says the object holds an X (with the
        kind's reason and fix when X is a known kind)."""
        reason, hint = _hints.explain_failure(
            Worker(), TypeError("cannot pickle '_thread.lock' object")
        )
        assert reason == "it holds a _thread.lock: locks hold OS state"
        assert hint == "create it inside the worker (e.g. in the pool initializer)"
        reason, _ = _hints.explain_failure(
            Worker(), TypeError("cannot pickle '_queue.SimpleQueue' object")
        )
        assert reason == "it holds a _queue.SimpleQueue, which cannot be pickled"

    def test_find_culprit_returns_path_object_and_error(self):
        """find_culprit: the path, the culprit itself and its own error."""
        lock = threading.Lock()
        path, culprit, error = find_culprit({"a": [1, {"b": lock}]}, name="payload")
        assert (path, culprit) == ("payload['a'][1]['b']", lock)
        assert isinstance(error, TypeError)

    def test_children_of_a_by_reference_function_are_none(self):
        """An importable function ships by name: nothing inside it is shipped."""
        assert list(children(api.plain)) == []


class TestShipping:
    def test_reference_by_own_name_and_located(self):
        """By reference: by its own name, or via the locator's path."""
        assert shipping(api.plain).how == "reference"
        assert shipping(api.plain).via == "picklable_testpkg.api:plain"
        assert shipping(api.add).via == "picklable_testpkg.api:add"  # a wrapper took its name
        assert shipping(api.Frame.mean).via == "picklable_testpkg.api:Frame.mean"

    def test_why_by_value(self, monkeypatch):
        """Why not importable: <locals>, a lambda, __main__, a name taken by another object."""

        def local():
            return 1

        assert shipping(local).why == (
            "defined inside TestShipping.test_why_by_value() (<locals> in its qualname), and no "
            "importable "
            "path leads to it"
        )
        assert (
            shipping(lambda: 1).why
            == "a lambda has no importable name, and no importable path leads to it"
        )
        main_function = types.FunctionType(local.__code__, {"__name__": "__main__"}, "job")
        main_function.__module__ = "__main__"
        main_function.__qualname__ = "job"
        assert (
            shipping(main_function).why
            == "defined in __main__, and the receiving process has its own __main__"
        )
        ghost = types.ModuleType("diagnose_ghost")
        exec("def f():\n    return 1\n", ghost.__dict__)
        original = ghost.f
        ghost.f = len
        monkeypatch.setitem(sys.modules, "diagnose_ghost", ghost)
        assert shipping(original).why == (
            "diagnose_ghost.f is another object (a wrapper that took its name?), and no importable "
            "path "
            "leads to this one"
        )

    def test_registered_by_value(self):
        """A module registered with register_by_value says so."""
        picklable.register_by_value(api)
        try:
            how = shipping(api.plain)
            assert (how.how, how.why) == (
                "value",
                "module 'picklable_testpkg.api' is registered with picklable.register_by_value()",
            )
        finally:
            picklable.unregister_by_value(api)

    def test_wrappers(self):
        """partial, bound methods and properties are taken apart."""
        assert shipping(functools.partial(print, 1)).how == "wrapper"
        assert shipping(Worker().__init__).how == "wrapper"
        assert shipping(property(lambda self: 1)).how == "wrapper"


class TestExplain:
    def test_big_capture_is_first_with_its_size(self):
        """A closure that captured a large object: that part first, with its bytes."""
        blob = b"x" * 3_000_000
        small = list(range(10))

        def job(i):
            return small[i], blob[i]

        report = explain(job)
        assert report.ships
        assert report.size == len(picklable.dumps(job))
        first = report.root.children[0]
        assert first.path == "job.__closure__[0].cell_contents"
        assert first.type == "bytes"
        assert 3_000_000 <= first.size <= 3_000_020
        assert report.root.how == "value"

    def test_large_array_measured_without_copy(self):
        """A 64 MiB numpy array is counted from its buffer (out of band), not serialized."""
        np = pytest.importorskip("numpy")
        array = np.zeros(8 * 1024 * 1024)
        holder = {"weights": array, "name": "model"}
        report = explain(holder, name="model")
        expected = len(picklable.dumps(holder))
        assert abs(report.size - expected) < 64  # estimated: too big for an exact second dump
        assert report.root.children[0].path == "model['weights']"

    def test_each_part_is_pickled_once(self):
        """Deep parts are replaced in their parents: a big object is not pickled once per level."""
        calls = []

        class Counted:
            def __reduce__(self):
                calls.append(1)
                return (bytes, (b"x" * 2000,))

        payload = {"a": [[{"b": [Counted()]}]]}
        explain(payload)
        # children() reduces it once, its own measure once, the exact total dump once.
        assert len(calls) <= 3

    def test_problem_path_reason_fix(self):
        """Parts that cannot ship: path, why and fix, and the error dumps raises."""
        payload = {"job": api.plain, "sync": {"done": threading.Event()}}
        report = explain(payload, name="payload")
        assert not report.ships and report.size is None
        [problem] = report.problems
        assert (problem.path, problem.type, problem.how) == (
            "payload['sync']['done']",
            "threading.Event",
            "fails",
        )
        assert problem.why == "a threading.Event holds a lock, which only works inside this process"
        assert report.error == sync_message("Event", "payload['sync']['done']")

    def test_reference_value_wrapper_and_state_left_behind(self):
        """By reference (via which path, with the state that stays), by value (why), taken apart."""

        def local(x):
            return x

        payload = {
            "add": api.add,
            "counted": api.counted_square,
            "local": local,
            "p": functools.partial(api.plain, 1),
        }
        report = explain(payload, name="payload")
        add = report.find("payload['add']")
        assert (add.how, add.via) == ("reference", "picklable_testpkg.api:add")
        counted = report.find("payload['counted']")
        assert (counted.how, counted.via, counted.state_left_behind) == (
            "reference",
            "picklable_testpkg.api:counted_square",
            (),
        )
        assert counted.why == (
            "with the state the program set on it (calls, func): the receiver's own "
            "where it has that state, else a copy that has it"
        )
        local_node = report.find("payload['local']")
        assert local_node.how == "value" and "<locals>" in local_node.why
        partial = report.find("payload['p']")
        assert (partial.how, partial.why) == ("wrapper", "a partial: its function and arguments")
        assert report.find("payload['p'].func").via == "picklable_testpkg.api:plain"

    def test_shared_part_is_told_once(self):
        """A function met twice is measured once; the second place points at the first."""

        def local():
            return 1

        report = explain([local, local], name="jobs")
        second = report.find("jobs[1]")
        assert (second.how, second.via, second.size) == ("shared", "jobs[0]", 0)

    def test_part_reached_twice_is_blamed_once(self):
        """A lock reached through a wrapt proxy's forwarded state and the wrapped function
        is one problem: the function holding it is not blamed as well."""
        import wrapt

        @wrapt.decorator
        def passthrough(wrapped, instance, args, kwargs):
            return wrapped(*args, **kwargs)

        @passthrough
        def step(x):
            return x

        step.lock = threading.Lock()
        report = explain(step)
        assert [(p.path, p.type) for p in report.problems] == [("step.lock", "_thread.lock")]
        assert report.find("step.__wrapped__").how == "value"

    def test_render_whole_tree(self):
        """str(report): a header, then the tree, failures first, then largest first."""
        payload = {"plain": api.plain, "lock": threading.Lock()}
        report = explain(payload, name="payload")
        plain = report.find("payload['plain']")
        assert str(report) == (
            "payload: cannot ship (1 problem)\n"
            f"payload  dict  {human_size(report.root.size)}\n"
            "├── ['lock']  _thread.lock  CANNOT SHIP\n"
            "│       at:  payload['lock']\n"
            "│       why: locks hold OS state\n"
            f"│       fix: {LOCK_FIX}\n"
            "└── ['plain']  function picklable_testpkg.api.plain  by reference -> "
            f"picklable_testpkg.api:plain  {human_size(plain.size)}\n"
        )

    def test_to_dict_and_json(self):
        """Programs read the same facts: JSON with the problems and the tree."""
        report = explain({"lock": threading.Lock()}, name="payload")
        data = json.loads(report.to_json())
        assert data["ships"] is False and data["size"] is None
        assert data["problems"] == [
            {
                "path": "payload['lock']",
                "type": "_thread.lock",
                "why": "locks hold OS state",
                "fix": LOCK_FIX,
            }
        ]
        assert data["root"]["children"][0]["path"] == "payload['lock']"

    def test_html_for_notebooks(self):
        """_repr_html_ is a tree of escaped text; _repr_pretty_ prints the text tree."""
        report = explain({"lock": threading.Lock()}, name="payload")
        page = report._repr_html_()
        assert "<details" in page and "payload[&#x27;lock&#x27;]" in page and "CANNOT SHIP" in page

        class Printer:
            def __init__(self):
                self.out = []

            def text(self, value):
                self.out.append(value)

        printer = Printer()
        report._repr_pretty_(printer, False)
        assert printer.out == [report.render().rstrip("\n")]

    def test_reduce_raising_and_exception_cause(self):
        """The class whose __reduce__ raised; a lock inside an exception's cause."""
        cause = KeyError("k")
        cause.lock = threading.Lock()
        error = RuntimeError("outer")
        error.__cause__ = cause
        report = explain({"handle": Refuses(), "error": error}, name="payload")
        paths = {p.path: p.why for p in report.problems}
        assert paths == {
            "payload['handle']": (
                "Refuses.__reduce__ raised NotImplementedError: "
                "Refuses objects stay in their process"
            ),
            "payload['error'].__cause__.lock": "locks hold OS state",
        }

    def test_huge_graph_stays_bounded(self):
        """max_nodes bounds the parts told; the size stays exact."""
        rows = [{"id": i, "tags": [str(i)]} for i in range(5000)]
        report = explain(rows, max_nodes=50)
        assert len(list(report.nodes())) <= 50
        assert report.size == len(picklable.dumps(rows))

    def test_too_deep_is_a_problem_not_a_crash(self):
        """A graph nested past the recursion limit is reported, not raised."""
        nested: list = []
        for _ in range(50_000):
            nested = [nested]
        report = explain(nested)
        [problem] = report.problems
        if sys.version_info >= (3, 12):  # C code's recursion has a limit of its own
            assert problem.why.startswith("nested deeper than the interpreter's C recursion limit")
        else:
            assert problem.why.startswith("nested deeper than the recursion limit")


class TestTenUnshippable:
    """The ten objects of docs/diagnostics.md: the exact path and a fix for each."""

    def test_exact_path_and_fix_for_each(self):
        """dumps names the exact path and a fix; explain names the same part."""
        cases, close = make_ten()
        try:
            for case in cases:
                err = error_of(case.obj)
                assert err.path == case.path, case.label
                assert err.hint and err.reason, case.label
                report = explain(case.obj, name=case.name)
                expected = case.name + case.path[len(case.path.split(".")[0].split("[")[0]) :]
                assert [p.path for p in report.problems] == [expected], case.label
                assert report.problems[0].fix, case.label
        finally:
            close()


# ------------------------------------------------------------------- loads

V1 = """
__version__ = "1.0"


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y


def old_name():
    return 1
"""

V2 = """
__version__ = "2.0"


class Point:
    def __init__(self, x, y):
        self.x, self.y, self.version = x, y, 2

    def __setstate__(self, state):
        if "version" not in state:
            raise ValueError("Point state without 'version' (made by diag_versioned 1.x?)")
        self.__dict__.update(state)


def new_name():
    return 1
"""

SENDER = """
import sys
sys.path.insert(0, {v1!r})
import picklable
import diag_versioned
import diag_sender_only


def job(x):
    return x + OFFSET


OFFSET = 1
payloads = {{
    "point": diag_versioned.Point(1, 2),
    "renamed": diag_versioned.old_name,
    "missing": diag_sender_only.f,
    "job": job,
}}
for name, obj in payloads.items():
    with open(name + ".pkl", "wb") as out:
        out.write(picklable.dumps(obj))
"""


@pytest.fixture(scope="module")
def sent(tmp_path_factory):
    """Payloads made in a fresh interpreter that has version 1 of a module (and one more
    module), and this process set up with version 2."""
    root = tmp_path_factory.mktemp("versions")
    (root / "v1" / "diag_versioned").mkdir(parents=True)
    (root / "v1" / "diag_versioned" / "__init__.py").write_text(V1)
    (root / "v1" / "diag_sender_only.py").write_text("def f():\n    return 1\n")
    (root / "v2" / "diag_versioned").mkdir(parents=True)
    (root / "v2" / "diag_versioned" / "__init__.py").write_text(V2)
    out = root / "out"
    out.mkdir()
    run_script(SENDER.format(v1=str(root / "v1")), out)
    sys.path.insert(0, str(root / "v2"))
    try:
        yield {p.stem: p for p in out.glob("*.pkl")} | {"script": out / "script.py"}
    finally:
        sys.path.remove(str(root / "v2"))
        sys.modules.pop("diag_versioned", None)


def load_error(data):
    with pytest.raises(picklable.UnpicklingError) as info:
        picklable.loads(data)
    return info.value


class TestLoadErrors:
    def test_module_missing_here(self, sent):
        """A module the sender had and this environment lacks."""
        err = load_error(sent["missing"].read_bytes())
        assert str(err) == (
            "Cannot load: module 'diag_sender_only' is not importable here. Fix: install it in the "
            "receiving environment, or ship the sender's module by value with "
            "picklable.register_by_value()."
        )
        assert (err.reason, err.hint) == (
            "module 'diag_sender_only' not importable",
            "install it in the receiving environment",
        )

    def test_attribute_renamed_in_another_version(self, sent):
        """The sender's version has a name this version renamed: both versions are told."""
        err = load_error(sent["renamed"].read_bytes())
        assert str(err) == (
            "Cannot load diag_versioned.old_name: module 'diag_versioned' here (diag_versioned "
            "2.0) has no "
            "'old_name' (renamed or removed, or the sender has another version). Fix: install the "
            "sender's "
            "version of 'diag_versioned' here, or keep the old name as an alias."
        )

    def test_setstate_raises_on_the_old_state(self, sent):
        """A class whose __setstate__ refuses what the sender's version stored."""
        err = load_error(sent["point"].read_bytes())
        assert str(err) == (
            "Cannot load: diag_versioned.Point.__setstate__ raised ValueError: Point state without "
            "'version' "
            "(made by diag_versioned 1.x?). The payload holds an object this environment cannot "
            "rebuild "
            "(here: diag_versioned 2.0; the sender may have another version). Fix: install the "
            "sender's "
            "version of 'diag_versioned' here."
        )
        assert err.hint == "install the sender's version of 'diag_versioned'"

    def test_submodule_missing_from_an_installed_package(self):
        """A submodule of a package installed here in another version (crafted bytes)."""
        import numpy as np

        err = load_error(b"cnumpy.no_such_submodule\nf\n.")
        assert str(err) == (
            "Cannot load: module 'numpy.no_such_submodule' is not importable here, but 'numpy' is "
            f"(numpy {np.__version__}): the sender has another version. Fix: install the sender's "
            "version of 'numpy' here."
        )

    def test_dotted_name_missing_crafted(self):
        """A dotted name its module lacks (protocol 4): the same as a plain one, in every
        version's words (3.14: "Can't resolve path")."""
        err = load_error(b"\x80\x04\x8c\tpicklable\x8c\x0bnope.deeper\x93.")
        assert err.reason.startswith("picklable.nope.deeper not found here (picklable")
        assert err.hint == "install the sender's version of 'picklable'"

    def test_standard_library_name_of_another_python(self):
        """A standard library name this Python lacks (functools.Placeholder loaded on
        3.13, builtins.frozendict before 3.15): no package to install; the sender ran
        another Python, and this one is named."""
        here = f"Python {sys.version_info.major}.{sys.version_info.minor}"
        err = load_error(b"\x80\x04\x8c\tfunctools\x8c\x0bNotYetAdded\x93.")
        assert str(err) == (
            f"Cannot load functools.NotYetAdded: {here} here has no functools.NotYetAdded, "
            "and 'functools' is part of Python's standard library: the payload was made by "
            "another Python version (one that added it, or that has not removed it yet). Fix: "
            f"load it with the sender's Python version, or send what {here} has."
        )
        assert err.hint == "load it with the sender's Python version"

    def test_setstate_missing_a_module_attribute_is_not_a_missing_name(self):
        """An AttributeError about a module, raised by code the payload runs, names that
        code (3.14 raises find_class's with the same words)."""
        obj = ReadsAGoneName()
        obj.x = 1
        err = load_error(picklable.dumps(obj))
        assert err.reason == (
            f"{__name__}.ReadsAGoneName.__setstate__ raised AttributeError: module 'os' has no "
            "attribute 'no_such_name_here'"
        )

    @pytest.mark.parametrize(
        ("make", "method", "attribute"),
        [(StampedItems, "__setitem__", "stamp"), (BoundedList, "extend", "limit")],
    )
    def test_item_setter_reading_an_attribute_set_later(self, make, method, attribute):
        """pickle's protocol gives a dict or list subclass its items before its
        attributes: an item setter reading one fails whatever made the payload.
        Said so, with the fix, not blamed on another version of the package."""
        obj = make(3)
        if method == "extend":
            obj.extend([1, 2])
        else:
            obj["a"] = 1
        owner = make.__qualname__
        for data in (pickle.dumps(obj), picklable.dumps(obj)):
            err = load_error(data)
            assert str(err) == (
                f"Cannot load: {__name__}.{owner}.{method} raised AttributeError: "
                f"'{owner}' object has no attribute '{attribute}'. pickle's protocol gives a "
                f"{'dict' if method == '__setitem__' else 'list'} subclass its items (through "
                f"{method}) before its attributes, and {owner}.{method} reads .{attribute}, "
                f"which is set only after: a {owner} with items loads from no payload here, "
                "whether pickle, cloudpickle or picklable made it. Fix: ship what holds the "
                f"{owner} by reference (define it in a module both sides import), or give "
                f"{owner} a __reduce__ that sets its attributes first."
            )
            assert err.hint == (
                f"ship what holds the {owner} by reference, or give {owner} a __reduce__"
            )

    def test_class_keywords_a_copy_cannot_give_again(self):
        """A class copied by value whose base's __init_subclass__ needs a keyword
        of the class statement: Python keeps it nowhere, so the error says so."""
        from picklable import _tracker

        class Fast(KindedBase, kind="fast"):
            pass

        data = picklable.dumps(Fast)
        # Forget it was made here, as a receiver would not know it.
        _tracker._class_by_id.pop(_tracker._id_by_class.pop(Fast), None)
        err = load_error(data)
        assert str(err).startswith(
            f"Cannot load: {KindedBase.__qualname__}.__init_subclass__() raised TypeError: "
        )
        assert "Python keeps them nowhere" in str(err)
        assert err.hint == "define the class in a module both sides import"

    def test_module_missing_crafted(self):
        """A crafted payload naming a module that exists nowhere."""
        assert (
            load_error(b"cno_such_module_anywhere\nf\n.").reason
            == "module 'no_such_module_anywhere' not importable"
        )

    @pytest.mark.parametrize(
        ("data", "said"),
        [
            (
                b"\x80\x05garbage",
                (
                    "no newline found when trying to read stringnl; "
                    "UnpicklingError: pickle data was truncated"
                ),
            ),
            (b"", "pickle exhausted before seeing STOP; EOFError: Ran out of input"),
            (b"\x80\x04\x8c\x02\xff\xfe.", "'utf-8' codec can't decode byte 0xff"),
            (b"\x80\x04N0h\x07.", "BINGET at byte 4 reads memo entry 7, never written"),
            (b"\x80\x04Nu.", "SETITEMS at byte 3 needs a MARK that was never set"),
        ],
    )
    def test_damaged(self, data, said):
        """Bytes whose opcodes do not parse: damaged, whatever the unpickler raised."""
        error = load_error(data)
        assert str(error).startswith("Cannot load: the payload is damaged or not a pickle (")
        assert said in str(error)
        assert str(error).endswith(
            "Fix: check that the bytes arrive unchanged (and whole); sign payloads with key= "
            "to have any change refused before loading."
        )
        assert error.reason == "damaged or truncated payload"

    def test_newer_protocol(self):
        """A protocol a few versions past this Python's: made by a newer Python."""
        assert str(load_error(b"\x80\x06.")) == (
            "Cannot load: unsupported pickle protocol: 6 (made by a newer Python). Fix: load it "
            "with the "
            "sender's Python version, or dump with a protocol this Python knows (protocol=5)."
        )

    def test_implausible_protocol_is_damage(self):
        """Protocol 117 is no newer Python's: a damaged first byte."""
        error = load_error(b"\x80\x75N.")
        assert "damaged or not a pickle (PROTO at byte 0 announces protocol 117" in str(error)

    def test_constructor_raises_in_c(self):
        """A call that fails in C code (no frame to name): the generic rebuild message."""
        err = load_error(b"cbuiltins\nint\n(S'x'\ntR.")
        assert str(err) == (
            "Cannot load: rebuilding an object raised ValueError: invalid literal for int() with "
            "base 10: 'x'. The payload's opcodes are intact, so a value inside the payload was "
            "damaged on the way, or the class here differs from the sender's (another version "
            "of its package?). Fix: check that the bytes arrive unchanged (sign them with key=), "
            "and install the same versions on both sides."
        )

    def test_load_from_a_file_says_the_same(self, sent):
        """picklable.load translates the same way."""
        with (
            open(sent["missing"], "rb") as handle,
            pytest.raises(picklable.UnpicklingError) as info,
        ):
            picklable.load(handle)
        assert info.value.reason == "module 'diag_sender_only' not importable"


# ----------------------------------------------------------------- inspect


class TestInspect:
    def test_by_value_code_from_a_script(self, sent):
        """A __main__ function: its name, file, line and globals, decoded without running."""
        report = inspect_payload(sent["job"].read_bytes())
        [function] = report.functions
        assert (
            function.qualname,
            function.module,
            function.line,
            function.reads,
            function.decoded,
        ) == (
            "job",
            "__main__",
            9,
            ("OFFSET",),
            True,
        )
        assert function.filename == str(sent["script"])
        # A script function: its copy, marked with where it lives in the script.
        assert report.calls == {"picklable._reconstruct._make_function": 1}
        assert function.script_copy
        assert report.references == [f"__main__:job (the sender's script {sent['script']})"]
        assert report.flags[0].startswith("by-value code: 1 function(s), 0 class(es)")

    def test_no_code_and_other_interpreter(self, sent):
        """--no-code, or code from another interpreter: only the name, never marshal."""
        data = sent["job"].read_bytes()
        assert inspect_payload(data, decode_code=False).functions[0].decoded is False
        ours = _code.HERE.encode()
        theirs = b"cpython 9." + b"9" * (len(ours) - len(b"cpython 9."))
        [function] = inspect_payload(data.replace(ours, theirs)).functions
        assert (function.name, function.decoded, function.filename) == ("job", False, "")

    def test_references_classes_and_modules(self):
        """Located paths, classes by value and imported modules, from a real payload."""

        class Local:
            pass

        report = inspect_payload(picklable.dumps([api.add, api.plain, Local, os.path.join]))
        assert report.references == ["picklable_testpkg.api:add"]
        assert "picklable_testpkg.api.plain" in report.names
        assert report.classes == [
            f"{__name__}.TestInspect.test_references_classes_and_modules.<locals>.Local"
        ]
        assert "posixpath" in report.modules or "ntpath" in report.modules

    def test_dangerous_call_is_flagged_and_never_run(self, tmp_path):
        """os.system in a payload is reported, and nothing runs."""
        marker = tmp_path / "ran"

        class Evil:
            def __reduce__(self):
                return (os.system, (f"touch {marker}",))

        data = pickle.dumps(Evil(), protocol=2)
        report = inspect_payload(data)
        assert not marker.exists()
        system = f"{os.system.__module__}.system"
        assert report.render("evil.pkl") == (
            f"evil.pkl: 1 pickle, {len(data):,} bytes, protocol 2\n"
            "\n"
            "Modules imported when loaded (their top-level code runs):\n"
            f"  {os.system.__module__}\n"
            "\n"
            "Called when loaded:\n"
            f"     1 x  {system}\n"
            "\n"
            "Flags:\n"
            f"  ! {system} is called at load: it can run code or touch the system\n"
        )

    def test_several_pickles_and_damage(self):
        """Pickles one after the other are all read; damage is reported with what came before."""
        data = pickle.dumps(1) + pickle.dumps([print]) + b"\x80\x05\x95garbage"
        report = inspect_payload(data)
        assert report.pickles == 2
        assert report.names == {"builtins.print": 1}
        assert report.error.startswith(
            f"not a valid pickle after byte {len(pickle.dumps(1) + pickle.dumps([print]))}"
        )

    def test_to_json(self):
        """The report as JSON for programs."""
        data = json.loads(inspect_payload(pickle.dumps([print])).to_json())
        assert data["names"] == {"builtins.print": 1} and data["flags"] == []


# --------------------------------------------------------------------- CLI


class TestCommandLine:
    def test_explain_a_target_that_cannot_ship(self, capsys):
        """`picklable explain module:attr` prints the tree; exit status 1 when it cannot ship."""
        assert main(["explain", "picklable_testpkg.unshippable:locked_settings"]) == 1
        from picklable_testpkg.unshippable import locked_settings

        size = explain(locked_settings, name="locked_settings").root.size
        assert capsys.readouterr().out == (
            "locked_settings: cannot ship (1 problem)\n"
            f"locked_settings  picklable_testpkg.unshippable.Settings  {human_size(size)}\n"
            "└── .lock  _thread.lock  CANNOT SHIP\n"
            "        at:  locked_settings.lock\n"
            "        why: locks hold OS state\n"
            f"        fix: {LOCK_FIX}\n"
        )

    def test_explain_json_and_exit_zero(self, capsys):
        """--json prints the report for programs; exit status 0 when it ships."""
        assert main(["explain", "picklable_testpkg.api.add", "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["ships"] is True
        assert data["root"]["via"] == "picklable_testpkg.api:add"

    def test_explain_unknown_target(self, capsys):
        """A target that does not exist is an error (status 2) that says what is missing."""
        with pytest.raises(SystemExit) as info:
            main(["explain", "picklable_testpkg.api:no_such_thing"])
        assert info.value.code == 2
        assert capsys.readouterr().err.startswith(
            "picklable: error: picklable_testpkg.api:no_such_thing: module "
            "'picklable_testpkg.api' has no 'no_such_thing' (it has: Color, Counted, Frame, "
            "Record, Tools, add, beat_interval_option, "
        )

    def test_inspect_file(self, sent, capsys):
        """`picklable inspect FILE`: by-value code flagged (status 1), JSON on request."""
        assert main(["inspect", str(sent["job"])]) == 1
        out = capsys.readouterr().out
        assert "By-value code (bytecode from the sender; runs in this process when called):" in out
        assert f"  function __main__.job  ({sent['script']}:9)  reads globals: OFFSET" in out
        assert main(["inspect", str(sent["renamed"]), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["names"] == {"diag_versioned.old_name": 1}

    def test_inspect_missing_file(self, tmp_path, capsys):
        """An unreadable file is an error (status 2)."""
        with pytest.raises(SystemExit) as info:
            main(["inspect", str(tmp_path / "nope.pkl")])
        assert info.value.code == 2
        assert "cannot read" in capsys.readouterr().err
