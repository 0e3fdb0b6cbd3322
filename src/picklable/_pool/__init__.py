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

Data flow
---------
One task, from the caller's thread to a worker and back (frames and tickets:
:mod:`._protocol`; dispatch, retries and deaths: :mod:`._core`)::

    caller's thread                   manager thread (_core.Core)      worker process (_worker)
    ---------------                   ---------------------------      ------------------------
    Pool.apply_async / map            pending units, in order
    Executor.submit / map   --unit--> dispatch to an idle worker,
     (_mp, _futures: the Codec          or queue behind a short task
      encodes fn and args       ticket(id) --> ticket pipe ------>     reads the ticket, then
      here, in the caller's     F fn (once per digest) --socket-->     loads fn (kept by digest)
      thread)                   C/M/S id, digest, args --socket-->     runs it
                                                                       V value / E items /
                              <-- V/E/L frame ---------------------    L did not load
    AsyncResult, MapResult,       decodes the result (Codec.decode)
     IMapIterator, Future  <----- and settles the unit's job (_jobs),
     (_jobs): what the caller      which wakes the caller, runs its
     holds and waits on            callback
                                worker died or timed out: the unit
                                 fails alone (WorkerDiedError,
                                 TaskTimeoutError), a new worker
                                 starts (_launch; fork: _template),
                                 queued units are taken back by
                                 their tickets and sent elsewhere
"""
