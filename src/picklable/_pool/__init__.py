"""Process pools that ship anything with picklable and survive worker death.

Public names live in :mod:`picklable.executors`. This package stays empty on
import on purpose: a worker process imports :mod:`._worker`, :mod:`._protocol`
and :mod:`._inherit` only, never the parent's machinery (threads, jobs, pools)
nor, until a result needs it, picklable's pickler (:mod:`._forking` pickles
what reaches a worker at its start; ``Codec.encode`` imports ``dumps``).

Layers
------
Leaves first; a module imports only from its own layer or the ones above it
here, and the front ends reach the manager only through :mod:`._submit`, never
through each other (checked by ``tests/tooling/test_layers.py``)::

    what crosses processes   _protocol  frames, tickets, the Codec (the one place where
                                        the pool turns objects into payload bytes and back;
                                        signing hooks in here), an error as it travels
                             _inherit   what reaches a worker at its start: initializer and
                                        initargs, with the objects multiprocessing shares
                                        by inheritance (queues, locks)
                             _forking   the pickler for them (picklable's, with
                                        multiprocessing's reducers): the parent's alone
    who runs it: a worker    _worker    the loop in each worker process
                 starting    _launch    starting worker processes (spawn, forkserver,
                                        fork), prepared as multiprocessing's children
                             _template  the process that forks a fork pool's later workers
                                        (never the parent while the pool's thread runs)
    what callers hold,       _jobs      jobs and units; AsyncResult, MapResult,
    and what failed                     IMapIterator, futures' jobs
                             _broken    WorkerDiedError, BrokenPoolError, TaskLoadError,
                                        TaskTimeoutError; how a process ended
                             _failures  the words users read when something fails (the
                                        pool's one call into the diagnostics)
    who runs it: the manager _link      the manager's end of one worker (socket, pipes)
                             _dispatch  which worker gets which unit, when; map feeds
                             _core      the manager thread (Core): results, deaths,
                                        timeouts, shutdown
    submission               _submit    what both front ends hand the manager
    the two front ends       _mp        ``Pool`` (the API of ``multiprocessing.Pool``)
                             _futures   ``ProcessPoolExecutor`` (``concurrent.futures``)

``RemoteError`` and ``RemoteTraceback`` (a task's exception from another process)
live below this package, in :mod:`picklable._remote`, where the engines' carriers
(:mod:`picklable._envelope`, :mod:`picklable._transit`) import them too.

Data flow
---------
One task, from the caller's thread to a worker and back::

    caller's thread               manager thread (_core.Core)        worker process (_worker)
    ---------------               ---------------------------        ------------------------
    Pool.apply_async, map...      pending units, map feeds
    Executor.submit, map...       (_dispatch: cut into chunks
         |                         as workers need them)
         v                              |
    _submit: the Codec encodes          v
     the function (once per        dispatch to an idle worker, or
     digest) and a call's          queue behind a short task -----+
     arguments, in this thread;                                   |
     what cannot ship fails        ticket(id) --> ticket pipe ----+-->  reads the ticket, then
     here (_failures)              F fn (once per digest) -socket-+-->  loads fn (kept by digest)
         |                         C/M/S id, digest, args -socket-+-->  runs it
         +--- unit / feed -------->                                     V value, E items,
                                 <------------------------------------- L did not load
    AsyncResult, MapResult,        decodes the result (Codec.decode;
     IMapIterator, Future  <------ _failures words what did not load)
     (_jobs): what the caller      and settles the unit's job, which
     holds and waits on            wakes the caller, runs its callback

                                   worker died or timed out: its unit
                                    fails alone (WorkerDiedError,
                                    TaskTimeoutError), a new worker
                                    starts (_launch; fork: _template),
                                    the units queued behind it are
                                    taken back by their tickets and
                                    sent elsewhere (_dispatch)
"""
