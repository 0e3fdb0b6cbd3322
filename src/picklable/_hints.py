"""Why an object cannot ship, and what to do instead: one table, used by the
errors of ``dumps``, by ``explain`` and by the audit."""

from __future__ import annotations

from typing import Any

# type name -> (reason, fix)
_BY_TYPE_NAME: dict[str, tuple[str, str]] = {
    "_thread.lock": (
        "locks hold OS state",
        "create it inside the worker (e.g. in the pool initializer)",
    ),
    "_thread.RLock": (
        "locks hold OS state",
        "create it inside the worker (e.g. in the pool initializer)",
    ),
    "_io.TextIOWrapper": (
        "open files hold an OS file descriptor",
        "pass the path and open the file inside the worker",
    ),
    "_io.BufferedReader": (
        "open files hold an OS file descriptor",
        "pass the path and open the file inside the worker",
    ),
    "_io.BufferedWriter": (
        "open files hold an OS file descriptor",
        "pass the path and open the file inside the worker",
    ),
    "_io.FileIO": (
        "open files hold an OS file descriptor",
        "pass the path and open the file inside the worker",
    ),
    "socket.socket": (
        "sockets hold an OS connection",
        "pass the address and connect inside the worker",
    ),
    "generator": (
        "generators hold a running frame",
        "pass the data (a list) or the function that makes the generator",
    ),
    "coroutine": (
        "coroutines hold a running frame",
        "pass the coroutine function and its arguments, and await it in the worker",
    ),
    "async_generator": (
        "async generators hold a running frame",
        "pass the function that makes it and its arguments",
    ),
    "frame": (
        "frames belong to the running interpreter",
        "pass the values you need from it",
    ),
    "sqlite3.Connection": (
        "database connections hold an OS connection",
        "pass the database path or URL and connect inside the worker (pool initializer)",
    ),
    "sqlite3.Cursor": (
        "database cursors hold an OS connection",
        "pass the query and the database path, and run it inside the worker",
    ),
}


def explain_failure(culprit: Any, cause: BaseException) -> tuple[str, str]:
    """(reason, hint) for ``culprit`` that failed with ``cause``."""
    t = type(culprit)
    name = t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    known = _BY_TYPE_NAME.get(name)
    if known is not None:
        return known
    first_line = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
    return (
        f"{type(cause).__name__}: {first_line}",
        "ship what it is made from and rebuild it in the worker, or give its class "
        "__reduce__ / __getstate__",
    )
