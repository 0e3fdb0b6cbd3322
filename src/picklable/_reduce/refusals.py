"""The kinds of objects that never ship, and why: the one list.

A lock, an open file, a running generator, a database connection, a socket...
Each recogniser below answers (reason, fix) for its kind, or None. The table
of kinds (:func:`picklable._reduce.table.refusal`) gives that answer as its
verdict, and every diagnostic reads it there: the error walk stops at such an
object instead of descending to the lock deep inside it (a
``threading.Event`` is the culprit, not its ``_cond._lock``), ``explain``
marks it as failing, and the fix it gives is this one.

The dump path never asks: pickle refuses these objects on its own (their C
types have no pickle support, or their ``__reduce__`` raises). Types that only
picklable refuses (pickle would copy them into something meaningless) are in
:data:`REFUSED`, whose reducer raises with the same words.

Kinds are recognised by type, never by ``isinstance`` against modules that are
not imported yet: an object of a kind from ``sqlite3`` or ``ctypes`` cannot
exist before that module is imported, so only ``sys.modules`` is consulted.
"""

from __future__ import annotations

import io
import sys
import types
from collections.abc import Callable
from typing import Any

from .._compat import class_module
from .._diagnostics.wording import type_name

__all__ = ["LOCK", "REFUSED", "Hint", "refusal"]

Hint = tuple[str, str]  # (reason, fix)

LOCK = (
    "locks hold OS state",
    "create it inside the worker (e.g. in the pool initializer)",
)
# sys.stdout and sys.stderr ship as the receiver's own (picklable._reduce.builtins).
_FILE_STREAMS = ("stdin",)
_SHIPPED_STREAMS = ("stdout", "stderr", "__stdout__", "__stderr__")
# Words that mark a class as a database API object when its methods agree.
_DB_CONNECTION_WORDS = ("connection", "conn", "database", "client")
_DB_CURSOR_WORDS = ("cursor",)
# Modules of database drivers whose connections follow PEP 249 (DB-API 2.0).
_DB_MODULES = (
    "sqlite3",
    "psycopg",
    "psycopg2",
    "pymysql",
    "MySQLdb",
    "mysql",
    "mariadb",
    "cx_Oracle",
    "oracledb",
    "pyodbc",
    "pymssql",
    "duckdb",
    "snowflake",
    "ibm_db",
    "asyncpg",
    "aiosqlite",
    "pg8000",
    "teradatasql",
    "clickhouse_driver",
    "pymongo",
    "redis",
)


def _module(name: str) -> Any:
    return sys.modules.get(name)


def _instance_of(obj: Any, module: str, *names: str) -> bool:
    """``isinstance(obj, module.name)`` for any of ``names``, without importing."""
    found = _module(module)
    if found is None:
        return False
    classes = tuple(c for c in (getattr(found, n, None) for n in names) if isinstance(c, type))
    return bool(classes) and isinstance(obj, classes)


# ------------------------------------------------------------------ the kinds


def _sync(obj: Any) -> Hint | None:
    t = type(obj)
    name = type_name(obj)
    if name in ("_thread.lock", "_thread.RLock", "threading._RLock"):
        return LOCK
    threading = _module("threading")
    if threading is not None:
        for kind in ("Condition", "Event", "Semaphore", "BoundedSemaphore", "Barrier"):
            klass = getattr(threading, kind)
            if isinstance(klass, type) and issubclass(t, klass):
                # BoundedSemaphore subclasses Semaphore: report the most precise name.
                precise = "BoundedSemaphore" if issubclass(t, threading.BoundedSemaphore) else kind
                return (
                    f"a threading.{precise} holds a lock, which only works inside this process",
                    (
                        "create it inside the worker (e.g. in the pool initializer), or share a "
                        f"multiprocessing.Manager().{precise}() between processes"
                    ),
                )
        if issubclass(t, threading.Thread):
            return (
                "a Thread runs in (or is made for) this process only",
                "pass its target and arguments, and start the thread inside the worker",
            )
    queue = _module("queue")
    if queue is not None and issubclass(t, queue.Queue):
        return (
            "a queue.Queue only connects threads of this process",
            (
                "share a multiprocessing.Manager().Queue() between processes, or create it inside "
                "the "
                "worker"
            ),
        )
    return None


def _multiprocessing(obj: Any) -> Hint | None:
    if _instance_of(obj, "multiprocessing.process", "BaseProcess"):
        return (
            "a Process object belongs to the process that made it (OS handles, authkey)",
            "pass its target and arguments, and start processes where they are needed",
        )
    shared = _instance_of(
        obj, "multiprocessing.synchronize", "SemLock", "Condition", "Event", "Barrier"
    ) or (_instance_of(obj, "multiprocessing.queues", "Queue", "SimpleQueue"))
    if shared:
        kind = type(obj).__name__
        managed = "Queue" if kind == "SimpleQueue" else kind
        return (
            f"a multiprocessing {kind} reaches other processes when they start, not by pickling",
            (
                "give it to the pool's initializer (initargs) or to Process(args=...), or use "
                f"multiprocessing.Manager().{managed}()"
            ),
        )
    if _instance_of(obj, "concurrent.futures", "Executor"):
        return (
            "an executor owns threads or processes of this process",
            "create the executor inside the worker",
        )
    if _instance_of(obj, "concurrent.futures", "Future"):
        return (
            "a Future belongs to the executor of this process",
            "ship future.result(), or the function and arguments to submit in the worker",
        )
    if _instance_of(obj, "subprocess", "Popen"):
        return (
            "a Popen is a child process of this process",
            "pass the command and run it inside the worker",
        )
    return None


def _os_resources(obj: Any) -> Hint | None:
    if _instance_of(obj, "socket", "socket"):
        try:
            address = obj.getpeername()
        except Exception:
            address = None
        where = f"the address {address!r}" if address else "the address"
        return (
            "a socket holds an OS connection",
            f"pass {where} and connect inside the worker",
        )
    if isinstance(obj, io.IOBase) and not isinstance(obj, (io.BytesIO, io.StringIO)):
        for stream in _FILE_STREAMS:
            if obj is getattr(sys, stream, None) or obj is getattr(sys, f"__{stream}__", None):
                return (
                    f"it is this process's sys.{stream}",
                    f"use sys.{stream} inside the worker (each process has its own)",
                )
        if any(obj is getattr(sys, name, None) for name in _SHIPPED_STREAMS):
            return None
        return _file(obj)
    if _instance_of(obj, "mmap", "mmap"):
        return (
            "a memory map holds an OS mapping of this process",
            "pass the file path and map it inside the worker",
        )
    if _instance_of(obj, "select", "epoll", "poll", "kqueue", "devpoll") or _instance_of(
        obj, "selectors", "BaseSelector"
    ):
        return (
            "a selector holds an OS handle of this process",
            "create it inside the worker",
        )
    if _instance_of(obj, "logging", "Handler"):
        return (
            "a logging handler holds a lock and a stream of this process",
            "configure logging inside the worker (e.g. in the pool initializer)",
        )
    return None


def _file(obj: Any) -> Hint:
    """Why a file object does not ship, by its state and mode.

    cloudpickle ships a file open for reading as an ``io.StringIO`` of its
    whole content: a snapshot that no longer follows the file, and the whole
    file in the payload. picklable refuses, and says what to pass instead
    (docs/cloudpickle.md shows how to get the snapshot on purpose).
    """
    name = getattr(obj, "name", None)
    try:
        closed = bool(obj.closed)
    except Exception:
        closed = False
    if closed:
        what = f"file {name!r}" if isinstance(name, (str, int)) else "the file"
        return (
            f"{what} is closed: it has nothing left to read or write",
            "pass the path and open the file inside the worker",
        )
    if isinstance(name, int):
        return (
            f"open file descriptor {name} belongs to this process",
            "pass the path (or the data) and open it inside the worker",
        )
    mode = getattr(obj, "mode", "")
    mode = mode if isinstance(mode, str) else ""
    path = f"the path {name!r}" if isinstance(name, str) else "the path"
    if any(flag in mode for flag in "wax+"):
        return (
            (
                f"open file {name!r} is open for writing: a copy would not write to the file"
                if isinstance(name, str)
                else "an open file is open for writing: a copy would not write to the file"
            ),
            f"pass {path} and open it inside the worker, or send the data back and write it here",
        )
    if isinstance(name, str):
        return (
            (
                f"open file {name!r} holds an OS file descriptor; a copy of its content would "
                "not follow the file"
            ),
            f"pass {path} and open it inside the worker, or ship its content (f.read())",
        )
    return (
        "open files hold an OS file descriptor",
        "pass the path and open the file inside the worker",
    )


def _running_code(obj: Any) -> Hint | None:
    t = type(obj)
    if t is types.GeneratorType:
        return (
            f"generator {obj.__qualname__}() holds a running frame",
            "pass a list of its items, or the generator function and its arguments",
        )
    if t is types.CoroutineType:
        return (
            f"coroutine {obj.__qualname__}() holds a running frame",
            "pass the coroutine function and its arguments, and await it in the worker",
        )
    if t is types.AsyncGeneratorType:
        return (
            f"async generator {obj.__qualname__}() holds a running frame",
            "pass the function that makes it and its arguments",
        )
    if t is types.FrameType:
        code = obj.f_code
        return (
            (
                f"frame of {code.co_name}() ({code.co_filename}:{obj.f_lineno}) belongs to the "
                "running "
                "interpreter"
            ),
            (
                "pass the values you need from it (e.g. dict(frame.f_locals)), or the exception "
                "itself: picklable ships tracebacks"
            ),
        )
    asyncio = _module("asyncio")
    if asyncio is not None:
        if isinstance(obj, asyncio.AbstractEventLoop):
            return (
                "an event loop runs in a thread of this process",
                "call asyncio.run() inside the worker",
            )
        if isinstance(obj, asyncio.Future):
            return (
                "an asyncio Future or Task belongs to an event loop of this process",
                "pass the coroutine function and its arguments, and await it in the worker",
            )
    return None


def _database(obj: Any) -> Hint | None:
    t = type(obj)
    module = class_module(t) or ""
    top = module.partition(".")[0]
    lowered = t.__name__.lower()
    known_driver = top in _DB_MODULES or top.lstrip("_") in _DB_MODULES

    def has(*names: str) -> bool:
        return all(callable(getattr(t, n, None)) for n in names)

    if top == "sqlalchemy" and has("connect", "dispose") and hasattr(obj, "url"):
        return (
            "a SQLAlchemy Engine holds a pool of open database connections",
            (
                "pass the URL (engine.url) and call create_engine() inside the worker (pool "
                "initializer)"
            ),
        )
    if top == "sqlalchemy" and has("execute", "commit", "rollback"):
        return (
            f"a SQLAlchemy {t.__name__} holds an open database connection",
            "pass the URL and open a session inside the worker",
        )
    cursor_like = has("execute", "fetchone", "close") and (
        known_driver or any(w in lowered for w in _DB_CURSOR_WORDS)
    )
    if cursor_like:
        return (
            "a database cursor holds an open database connection",
            "pass the query and the database path or URL, and run it inside the worker",
        )
    connection_like = has("cursor", "commit", "rollback", "close") or (
        known_driver and has("close") and any(w in lowered for w in _DB_CONNECTION_WORDS)
    )
    if connection_like:
        return (
            "a database connection holds an open connection to the database",
            (
                "pass the database path or URL and connect inside the worker (once per worker, in "
                "the "
                "pool initializer)"
            ),
        )
    return None


def _ctypes(obj: Any) -> Hint | None:
    ctypes = _module("ctypes")
    if ctypes is None:
        return None
    if isinstance(obj, ctypes._Pointer):
        return (
            "a ctypes pointer holds a raw address in this process's memory",
            "ship the value it points to (ptr.contents) and make the pointer inside the worker",
        )
    if isinstance(obj, ctypes._CFuncPtr):
        return (
            "a ctypes function pointer is an address in this process",
            (
                "ship the library path and the function name, and look it up with ctypes.CDLL "
                "inside "
                "the worker"
            ),
        )
    if isinstance(obj, ctypes.CDLL):
        return (
            "a loaded library handle is valid in this process only",
            f"ship the library path ({obj._name!r}) and load it with ctypes.CDLL inside the worker",
        )
    if isinstance(obj, ctypes._SimpleCData.__mro__[1]):  # _CData: any ctypes instance
        return (
            (
                f"a ctypes {type(obj).__name__} that contains pointers holds raw addresses of this "
                "process"
            ),
            (
                "ship plain values (the fields, or bytes(obj) without pointers) and rebuild it "
                "inside "
                "the worker"
            ),
        )
    return None


_WEAK_FIX = (
    "make the object that holds it importable (it then ships by reference), or leave it out in "
    "__getstate__ and rebuild it empty (a cache) on load"
)


def _weak(obj: Any) -> Hint | None:
    t = type(obj)
    weakref = _module("weakref")
    if weakref is None:
        return None
    if issubclass(t, (weakref.ref, weakref.ProxyType, weakref.CallableProxyType)):
        return ("a weak reference points into this process without owning its target", _WEAK_FIX)
    collections = (weakref.WeakValueDictionary, weakref.WeakKeyDictionary, weakref.WeakSet)
    # The collections themselves ship (over the members the payload carries);
    # a subclass may keep more than its members.
    if issubclass(t, collections) and t not in collections:
        return (f"a {t.__name__} holds weak references into this process", _WEAK_FIX)
    return None


# What a sacred Run that has started holds (sacred.run.Run), for the reason.
_SACRED_RUN_PARTS = (
    ("_heartbeat", "heartbeat thread"),
    ("_stop_heartbeat_event", "stop event"),
    ("_metrics", "metrics queue"),
    ("_output_file", "captured output"),
)


def _sacred_run(obj: Any) -> Hint | None:
    if not _instance_of(obj, "sacred.run", "Run"):
        return None
    held = [what for attribute, what in _SACRED_RUN_PARTS if getattr(obj, attribute, None)]
    listed = ", ".join(held[:-1]) + (" and " if len(held) > 1 else "") + held[-1] if held else ""
    parts = f": its {listed}" if held else ""
    # docs/state-policy.md, "When state cannot travel": the same reset.
    return (
        f"a sacred Run belongs to a run of this process{parts}",
        (
            "ship the Experiment before running it here, or reset the finished run first: "
            "ex.current_run = None, and f.run = None for each f in ex.captured_functions"
        ),
    )


def _other(obj: Any) -> Hint | None:
    t = type(obj)
    if isinstance(obj, (io.StringIO, io.BytesIO)) and obj.closed:
        return (
            f"a closed {t.__name__} has no contents left to ship",
            "ship its contents (getvalue() before it is closed), or leave it out",
        )
    if _instance_of(obj, "contextvars", "ContextVar", "Context", "Token"):
        return (
            f"a {t.__name__} belongs to the contexts of this process",
            "define context variables at module level and pass their values",
        )
    return None


# Order matters where kinds overlap: a socket is checked before files, a
# database object before the generic ctypes test (drivers wrap C handles).
_KINDS: tuple[Callable[[Any], Hint | None], ...] = (
    _sacred_run,  # before _sync: the Run is the culprit, not its heartbeat thread
    _sync,
    _multiprocessing,
    _running_code,
    _os_resources,
    _database,
    _ctypes,
    _weak,
    _other,
)


# Types pickle would copy into something meaningless elsewhere: picklable's
# reducer refuses them (``objects.refuse``), with these words.
REFUSED: dict[str, tuple[str, str]] = {
    "multiprocessing.connection.Connection": (
        (
            "a Connection holds this process's file descriptor; a copy would hold a number that "
            "means nothing elsewhere"
        ),
        (
            "pass it as an argument of multiprocessing.Process (which duplicates the descriptor), "
            "or use a Queue or a Manager"
        ),
    ),
    "multiprocessing.connection.PipeConnection": (
        (
            "a PipeConnection holds this process's pipe handle; a copy would hold a number that "
            "means nothing elsewhere"
        ),
        "pass it as an argument of multiprocessing.Process, or use a Queue or a Manager",
    ),
}


def refusal(obj: Any) -> Hint | None:
    """(reason, fix) when ``obj`` is of a kind that never ships, else None.

    Read through :func:`picklable._reduce.table.refusal`, the table's verdict.

    Parameters
    ----------
    obj:
        Any object; only its type and a few attributes are looked at.

    Returns
    -------
    tuple of str, or None
        The reason and the fix, or None when the kind is not known to fail.
    """
    try:
        t = type(obj)
        refused = REFUSED.get(f"{t.__module__}.{t.__qualname__}")
    except Exception:  # a diagnostic must never raise on odd objects
        refused = None
    if refused is not None:
        return refused
    for kind in _KINDS:
        try:
            found = kind(obj)
        except Exception:  # a diagnostic must never raise on odd objects
            found = None
        if found is not None:
            return found
    return None
