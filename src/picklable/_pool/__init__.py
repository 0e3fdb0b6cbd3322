"""Process pools that ship anything with picklable and survive worker death.

Public names live in :mod:`picklable.executors`. This package stays empty on
import on purpose: a worker process imports :mod:`._worker` and
:mod:`._protocol` only, never the parent's machinery (threads, jobs, pools).

Modules
-------
_protocol   frames on the wire and the :class:`Codec`, the one place where the
            pool turns objects into payload bytes and back (signing hooks in here)
_worker     the loop that runs in each worker process
_inherit    what reaches a worker at its start: the initializer and initargs, with
            the objects multiprocessing shares by inheritance (queues, locks)
_launch     starting worker processes (spawn, forkserver, fork), prepared as
            multiprocessing prepares its children (main module, authkey)
_template   the process that forks a fork pool's later workers (never the
            parent while the pool's thread runs)
_core       the manager thread: dispatch, results, worker death, shutdown
_jobs       what callers hold: AsyncResult, MapResult, IMapIterator, futures
_mp         ``Pool`` (the API of ``multiprocessing.Pool``)
_futures    ``ProcessPoolExecutor`` (the API of ``concurrent.futures``)
_errors     RemoteError, RemoteTraceback
_broken     WorkerDiedError, BrokenPoolError, TaskLoadError
"""
