"""picklable's pools in place of the stdlib's, in every process of a stdlib test run.

Used by ``scripts/stdlib-suites`` only: it copies this file into the
site-packages of a throw-away virtual environment whose ``.pth`` file calls
:func:`install` at the start of every interpreter that environment runs. The
test process itself, the interpreters the tests start with
``script_helper.assert_python_ok`` (``-I``: no environment variables, but
``.pth`` files still run), multiprocessing's children and the pools' workers
all get the same swap, since they all run ``sys.executable``.

It imports as little as it can: it runs at the start of each of those
interpreters. The tests run with ``scripts/stdlib_runner.py``.
"""

from __future__ import annotations

import site
import sys

_installed = False


def install(project_site: str, test_home: str) -> None:
    """Make the project importable and swap picklable's pools in.

    The pools are swapped in lazily (module ``__getattr__``, PEP 562): most of
    the interpreters of a run are workers that never look them up, and each
    should start as fast as the project's own.

    Parameters
    ----------
    project_site:
        The project's own site-packages (picklable installed in develop mode, and
        what it needs).
    test_home:
        A directory holding a ``test`` package to use instead of the
        interpreter's own (empty: keep the interpreter's).
    """
    global _installed
    if _installed:
        return
    _installed = True
    site.addsitedir(project_site)
    if test_home:
        sys.path.insert(0, test_home)
    import concurrent.futures
    import multiprocessing

    # Up to 3.14 the package gives ProcessPoolExecutor through its module __getattr__;
    # 3.15 binds it with a lazy import (PEP 810) instead, and has no __getattr__. Either
    # way, the name leaves the module's dict and this lookup answers it.
    futures_getattr = concurrent.futures.__dict__.get("__getattr__")
    concurrent.futures.__dict__.pop("ProcessPoolExecutor", None)

    def futures_lookup(name: str) -> object:
        if name == "ProcessPoolExecutor":
            import picklable

            concurrent.futures.ProcessPoolExecutor = picklable.ProcessPoolExecutor  # type: ignore[misc]
            return picklable.ProcessPoolExecutor
        if futures_getattr is None:
            raise AttributeError(f"module 'concurrent.futures' has no attribute {name!r}")
        return futures_getattr(name)

    def multiprocessing_lookup(name: str) -> object:
        if name == "Pool":
            import picklable

            multiprocessing.Pool = picklable.Pool  # type: ignore[assignment]
            return picklable.Pool
        raise AttributeError(f"module 'multiprocessing' has no attribute {name!r}")

    concurrent.futures.__getattr__ = futures_lookup  # type: ignore[method-assign]
    del multiprocessing.Pool  # type: ignore[attr-defined]
    multiprocessing.__getattr__ = multiprocessing_lookup  # type: ignore[attr-defined]


def swap_remote_traceback() -> None:
    """In the test process: the classes the tests compare a task error's cause with.

    The tests check ``type(exc.__cause__)`` against the stdlib's own
    (``multiprocessing.pool.RemoteTraceback``,
    ``concurrent.futures.process._RemoteTraceback``); picklable's pools attach
    ``picklable.RemoteTraceback``, with the same ``.tb``.
    """
    import concurrent.futures.process
    import multiprocessing.pool

    import picklable

    multiprocessing.pool.RemoteTraceback = picklable.RemoteTraceback  # type: ignore[misc]
    concurrent.futures.process._RemoteTraceback = picklable.RemoteTraceback  # type: ignore[attr-defined]
