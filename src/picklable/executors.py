"""Process pools that ship anything with picklable and survive worker death.

Two drop-ins:

* :class:`Pool`, with the API of :class:`multiprocessing.pool.Pool` (``map``,
  ``imap``, ``imap_unordered``, ``starmap``, ``apply``, ``apply_async``, the
  ``*_async`` forms, ``close``, ``join``, ``terminate``, context manager,
  ``initializer``/``initargs``, ``maxtasksperchild``, ``chunksize``);
* :class:`ProcessPoolExecutor`, with the API of
  :class:`concurrent.futures.ProcessPoolExecutor` (``submit``, ``map`` with
  ``chunksize`` and ``timeout``, ``shutdown``, context manager).

What they add:

* Functions, arguments, results and exceptions travel with picklable: lambdas,
  closures, decorated and ``__main__`` functions ship. The function of a map
  travels once per worker (cached by the digest of its payload).
* An exception raised in a task comes back with its type and attributes, and
  with the worker's traceback text as ``__cause__`` (:class:`RemoteTraceback`).
  One that cannot travel as itself comes back as a :class:`RemoteError` that
  says why; it never hangs or breaks the pool.
* A worker that dies (``os._exit``, a signal, the OOM killer) fails only the
  task it was running, with a :class:`WorkerDiedError` naming the task and the
  exit code or signal; the worker is replaced and every other task completes.
  ``retries=N`` runs such a task again, for idempotent tasks. Every task ends
  in a result or an error.
* A task that hangs holds its own worker only: the tasks queued behind it are
  taken back and run by the others. ``task_timeout=`` ends a task that runs too
  long: its worker is killed and replaced, and it fails with
  :class:`TaskTimeoutError` naming it. Workers end when the parent dies, busy or
  not, and after ``ProcessPoolExecutor.shutdown(wait=False)`` the interpreter's
  exit does not wait for running tasks.
* :func:`worker_index` tells the initializer (and tasks) which worker it is.
* ``progress=True`` on the map family draws a progress bar on stderr.
* Start methods ``'spawn'`` (the default everywhere), ``'forkserver'``,
  ``'fork'``. Workers import the main script as ``__mp_main__``, as
  multiprocessing's spawn workers do (``import_main=False`` skips it), and get
  multiprocessing's queues, locks and shared values through ``initargs``.
* A task or a result that cannot be loaded on the other side fails that task
  with :class:`TaskLoadError` (a ``BrokenProcessPool``, what the stdlib
  executor raises then for every pending task).

Workers talk to the parent over one socket each (POSIX only: spawn,
forkserver and fork are the start methods of Linux and macOS).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._pool._broken import BrokenPoolError, TaskLoadError, TaskTimeoutError, WorkerDiedError
    from ._pool._futures import ProcessPoolExecutor
    from ._pool._jobs import AsyncResult, IMapIterator, IMapUnorderedIterator, MapResult
    from ._pool._mp import Pool
    from ._pool._worker import worker_index
    from ._remote import RemoteError, RemoteTraceback

__all__ = [
    "AsyncResult",
    "BrokenPoolError",
    "IMapIterator",
    "IMapUnorderedIterator",
    "MapResult",
    "Pool",
    "ProcessPoolExecutor",
    "RemoteError",
    "RemoteTraceback",
    "TaskLoadError",
    "TaskTimeoutError",
    "WorkerDiedError",
    "worker_index",
]

# Each name loads its own module on first use: a program that only uses Pool
# does not import concurrent.futures, and BrokenProcessPool's module (slow to
# import) waits until an error needs it.
_WHERE = {
    "AsyncResult": "._pool._jobs",
    "BrokenPoolError": "._pool._broken",
    "IMapIterator": "._pool._jobs",
    "IMapUnorderedIterator": "._pool._jobs",
    "MapResult": "._pool._jobs",
    "Pool": "._pool._mp",
    "ProcessPoolExecutor": "._pool._futures",
    "RemoteError": "._remote",
    "RemoteTraceback": "._remote",
    "TaskLoadError": "._pool._broken",
    "TaskTimeoutError": "._pool._broken",
    "WorkerDiedError": "._pool._broken",
    "worker_index": "._pool._worker",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'picklable.executors' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, "picklable"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(__all__) | set(globals()))
