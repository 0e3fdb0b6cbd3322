"""What a pool tells its user when something fails: the words, in one place.

The manager (:mod:`._core`) and the front ends (:mod:`._submit`,
:mod:`._futures`) decide *that* a task or the pool failed; this module says
*what*, *where*, *why* and the fix, as every picklable error does, and builds
the error users catch:

* arguments, items or a result that cannot ship, named in the user's terms
  (``item 1 of map(work)['c']``, not a path into the payload): the one place
  where a pool asks the diagnostics (:func:`arguments_error`) to locate what
  fails, by encoding each argument again on its own;
* a task or a result that did not load on the other side (:class:`TaskLoadError`);
* a pool that cannot go on (:class:`BrokenPoolError`): a failing initializer or
  main module, workers that cannot start, the manager thread's own failure, a
  shutdown or a termination before a task ran.

Only the errors are built here; the pool's state is left to its callers.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from .._compat import chained
from ..exceptions import PicklingError
from . import _protocol as P

if TYPE_CHECKING:
    from ._broken import BrokenPoolError

# The errors themselves (_broken) import concurrent.futures.process, slow to
# import: each builder below imports them when called. A worker imports the
# pool's modules with the user's script (``from picklable import Pool``) and
# never builds these; a pool's parent imports them when the pool starts
# (see Core.__init__).

__all__ = [
    "arguments_error",
    "call_arguments_error",
    "exit_after_shutdown",
    "first_line",
    "forcefully_shut_down",
    "items_error",
    "load_error",
    "main_description",
    "manager_failed",
    "replace_failed",
    "result_error",
    "shut_down",
    "start_failed",
    "terminated",
    "undelivered",
    "workers_cannot_start",
]


def first_line(exc: BaseException) -> str:
    """The first paragraph of ``str(exc)`` on one line (multiprocessing's are indented)."""
    paragraph = P.safe_str(exc).strip().split("\n\n")[0]
    text = " ".join(paragraph.split())
    return text if len(text) <= 300 else text[:297] + "..."


def main_description() -> str:
    """The parent's main module as a worker imports it: its file, or its name (``-m``)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    name = getattr(spec, "name", None)
    if isinstance(name, str) and name:
        return name
    return str(getattr(main, "__file__", None) or "__main__")


# ------------------------------------------------------- what cannot ship


def arguments_error(codec: P.Codec, exc: Exception, pieces: list[tuple[str, Any]]) -> BaseException:
    """The error for arguments that cannot ship, naming the one that fails.

    ``pieces`` are (name in the user's terms, object): the first that fails
    alone is diagnosed again under its name, e.g. ``item 1 of map(work)['c']``
    rather than a path into the payload (``obj[0][1]['c']``).
    """
    # The diagnostics load on the first failure only, as dumps's do.
    from .._diagnostics.errors import dump_error

    for name, piece in pieces:
        try:
            codec.encode(piece)
        except Exception as piece_exc:
            # What the pickler raised: the cause, or the context dumps kept unprinted.
            cause = piece_exc.__cause__ or piece_exc.__context__
            if not isinstance(piece_exc, PicklingError) or not isinstance(cause, Exception):
                cause = piece_exc
            error = dump_error(piece, cause, name)  # of the type users catch, as dumps's
            # One traceback, as dumps prints (PICKLABLE_TRACEBACK=full: the chain).
            return chained(error, cause)
    return exc


def call_arguments_error(
    codec: P.Codec, exc: Exception, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> BaseException:
    """The arguments of one call ``name`` did not ship: which one, and why."""
    pieces = [(f"argument {i} of {name}", arg) for i, arg in enumerate(args)]
    pieces += [(f"keyword argument {k!r} of {name}", v) for k, v in kwargs.items()]
    return arguments_error(codec, exc, pieces)


def items_error(
    codec: P.Codec, exc: Exception, name: str, start: int, chunk: list[Any]
) -> BaseException:
    """A chunk of map ``name``'s items, from item ``start``, did not ship: which item, and why."""
    pieces = [(f"item {start + i} of {name}", item) for i, item in enumerate(chunk)]
    return arguments_error(codec, exc, pieces)


def result_error(task: str, error: BaseException) -> BaseException:
    """A result that could not be pickled in the worker, said as the result of ``task``."""
    from .._diagnostics.errors import relocated_error, rerooted

    if not isinstance(error, PicklingError) or not error.path:
        return error
    where = rerooted(error.path, f"the result of {task}")
    hint = (
        "return what the parent needs as data that pickles (results travel back to the "
        "parent), or give the result's class a __reduce__ that rebuilds it there"
    )
    # Of the type users catch, as the worker's error was.
    rebuilt = relocated_error(error, where, hint, first_line(error))
    rebuilt.__cause__ = error.__cause__
    return rebuilt


# ---------------------------------------------------- what did not load

_LOADING = {P.LOADING_FUNCTION: "its function", P.LOADING_ARGUMENTS: "its arguments"}


def load_error(
    task: str, exc: BaseException, where: str, what: int = P.LOADING_ARGUMENTS
) -> BaseException:
    """``task`` could not be loaded in its worker (``where="worker"``), or its
    result in the parent (``"parent"``)."""
    from ._broken import TaskLoadError

    said = f"{type(exc).__name__}: {first_line(exc)}"
    if where == "worker":
        message = (
            f"Task {task} could not start: {_LOADING[what]} failed to load in the worker: {said}"
        )
    else:
        message = f"The result of task {task} could not be loaded in the parent: {said}"
    error = TaskLoadError(
        message, task=task, where=where, reason=getattr(exc, "reason", "") or said
    )
    error.__cause__ = exc
    return error


def undelivered(task: str, exc: BaseException) -> BrokenPoolError:
    """The outcome of ``task`` came back but could not be handed to its caller."""
    from ._broken import BrokenPoolError

    error = BrokenPoolError(
        f"the result of task {task} could not be delivered: {type(exc).__name__}: {exc}",
        reason="result could not be delivered",
    )
    error.__cause__ = exc
    return error


# --------------------------------------------------- a pool that broke


def start_failed(index: int, stage: int, cause: BaseException) -> BrokenPoolError:
    """Worker ``index`` could not import the main module, or its initializer raised
    (``stage``: :data:`~._protocol.STAGE_MAIN` or :data:`~._protocol.STAGE_INITIALIZER`)."""
    from ._broken import BrokenPoolError

    said = f"{type(cause).__name__}: {first_line(cause)}"
    if stage == P.STAGE_MAIN:
        error = BrokenPoolError(
            f"worker {index} could not import the main module "
            f"{main_description()} as __mp_main__ (workers import it the way "
            f"multiprocessing's spawn workers do, so that its functions and module-level "
            f"setup are there): {said}. No task can run. Fix: put the code that starts "
            'the pool under `if __name__ == "__main__":`, or pass import_main=False '
            "(the main module's error is this error's __cause__).",
            reason="main module failed to import",
        )
    else:
        error = BrokenPoolError(
            f"the pool's initializer raised in worker {index}: {said}. "
            "No task can run. Fix the initializer (its exception is this "
            "error's __cause__).",
            reason="initializer failed",
        )
    error.__cause__ = cause
    return error


def workers_cannot_start(count: int, exitcode: int | None) -> BrokenPoolError:
    """``count`` workers in a row ended before they were ready, the last with ``exitcode``."""
    from ._broken import BrokenPoolError, describe_exit

    return BrokenPoolError(
        f"{count} workers in a row ended before they were ready "
        f"(the last one: {describe_exit(exitcode)}). Fix: check that picklable and "
        "the initializer work in a fresh interpreter (see the workers' stderr).",
        reason="workers cannot start",
    )


def replace_failed(index: int, exc: BaseException) -> BrokenPoolError:
    """No new worker could be started in place of worker ``index``."""
    from ._broken import BrokenPoolError

    error = BrokenPoolError(
        f"cannot start a new worker to replace worker {index}: "
        f"{type(exc).__name__}: {exc}. "
        "Fix: check the resources of the machine (processes, open files, memory).",
        reason="cannot start workers",
    )
    error.__cause__ = exc
    return error


def manager_failed(exc: BaseException) -> BrokenPoolError:
    """The manager thread itself raised (a bug): every task left fails with this."""
    from ._broken import BrokenPoolError

    error = BrokenPoolError(
        f"the pool's manager thread failed: {type(exc).__name__}: {exc}",
        reason="manager thread failed",
    )
    error.__cause__ = exc
    return error


def shut_down() -> BrokenPoolError:
    """A task submitted while the pool was shutting down, which nobody will run."""
    from ._broken import BrokenPoolError

    return BrokenPoolError("the pool was shut down before this task ran", reason="shut down")


def terminated() -> BrokenPoolError:
    """A task not finished when the pool was terminated."""
    from ._broken import BrokenPoolError

    return BrokenPoolError("the pool was terminated before this task finished", reason="terminated")


def exit_after_shutdown() -> BrokenPoolError:
    """A task still running at the interpreter's exit after ``shutdown(wait=False)``."""
    from ._broken import BrokenPoolError

    return BrokenPoolError(
        "the interpreter exited after shutdown(wait=False) before this task "
        "finished: its worker was killed. Fix: call shutdown(wait=True) (or "
        "wait for the futures) before the end of the program to let it finish.",
        reason="interpreter exit after shutdown(wait=False)",
    )


def forcefully_shut_down(operation: str) -> BrokenPoolError:
    """A task running when the executor's ``operation`` (``kill_workers``...) stopped it."""
    from ._broken import BrokenPoolError

    return BrokenPoolError(
        f"the executor was forcefully shut down ({operation}()): its workers were "
        "stopped before this task finished",
        reason="forcefully shut down",
    )
