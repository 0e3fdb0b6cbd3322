"""Starting worker processes, and watching them end.

``spawn`` starts a fresh interpreter with ``python -c`` and sends it, over its
socket, what ``multiprocessing``'s spawn sends its children
(``spawn.get_preparation_data``: ``sys.path``, working directory, authkey, the
main module to import as ``__mp_main__``), pickled as multiprocessing pickles it:
with its ForkingPickler, inside a spawning context (see :mod:`._inherit`), so
that queues, locks and the authkey travel, and the descriptors they need are
passed to the child. The worker applies it with ``multiprocessing.spawn.prepare``,
the stdlib's own code: the same guard semantics (``if __name__ == "__main__"``
blocks do not run), the same resource tracker. ``import_main=False`` leaves the
main module out. ``forkserver`` and ``fork`` go through :mod:`multiprocessing`
itself; a fork pool's later workers are forked by its template
(:mod:`._template`), never from the parent once the pool runs threads.

Each worker gets one end of a socket pair (duplex, its own: no lock shared
between workers), the read end of its ticket pipe (see :mod:`._protocol`) and
the read end of its *life line*, a pipe whose write end only the parent holds:
it closes when the parent dies, however it dies, and the worker ends then (see
:func:`picklable._pool._worker.watch_parent`). The parent has a *sentinel*, a
file descriptor that becomes readable when the process ends: a pidfd where
Linux has them (exact, even if the task forked children that kept the socket
open), else ``multiprocessing``'s sentinel or a pipe whose other end only the
worker holds.
"""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
import weakref
from typing import Any, Protocol

from . import _protocol as P
from ._inherit import Spawning, spawning
from ._worker import WorkerConfig

START_METHODS = ("spawn", "forkserver", "fork")

_BOOT = (
    "import sys;sys.path.append(sys.argv[2]);"
    "from picklable._pool._worker import spawned_main;"
    "spawned_main(int(sys.argv[1]),int(sys.argv[3]),int(sys.argv[4]))"
)
# Where ``picklable`` can be imported from, for a worker whose default sys.path
# lacks it (a test run from a source tree).
_HOME = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


class _Closable(Protocol):
    def close(self) -> None: ...


# The parent's ends of all worker sockets and pipes. A forked child (a
# fork-method worker, the fork template, or any fork the user makes) closes
# them at once: a worker that kept a copy of its own parent's end would never
# see the parent go away, and a life line's write end kept open elsewhere would
# keep the workers alive after the parent died.
PARENT_ENDS: weakref.WeakSet[_Closable] = weakref.WeakSet()


class Lines:
    """The parent's ends of a worker's ticket pipe and life line.

    Attributes
    ----------
    tickets_w:
        Where the parent writes tickets (blocking: at most ``MAX_INFLIGHT``
        tickets are ever unread, far below a pipe's capacity).
    tickets_r:
        The parent's own read end of the same pipe (non-blocking, as is the
        worker's, which shares its open file description): reading a ticket
        takes its task back.
    life_w:
        The write end of the worker's life line; nothing is ever written.
    """

    __slots__ = ("tickets_w", "tickets_r", "life_w", "__weakref__")

    def __init__(self, tickets_w: int, tickets_r: int, life_w: int) -> None:
        self.tickets_w = tickets_w
        self.tickets_r = tickets_r
        self.life_w = life_w
        PARENT_ENDS.add(self)

    def close(self) -> None:
        for name in ("tickets_w", "tickets_r", "life_w"):
            close_fd(getattr(self, name))
            setattr(self, name, -1)


class WorkerFds:
    """The worker's ends of its ticket pipe and life line, as they travel to it.

    Under ``fork`` the child inherits the descriptors as they are; under
    ``forkserver`` the process object is pickled in multiprocessing's spawning
    context, where :meth:`__reduce__` passes them along as multiprocessing
    passes a socket's.
    """

    __slots__ = ("tickets", "life")

    def __init__(self, tickets: int, life: int) -> None:
        self.tickets = tickets
        self.life = life

    def __reduce__(self) -> tuple[Any, ...]:
        from multiprocessing import reduction

        return (_rebuild_fds, (reduction.DupFd(self.tickets), reduction.DupFd(self.life)))


def _rebuild_fds(tickets: Any, life: Any) -> WorkerFds:
    return WorkerFds(tickets.detach(), life.detach())


def _make_lines() -> tuple[Lines, WorkerFds]:
    """A worker's ticket pipe and life line: the parent's ends, and the worker's."""
    made: list[int] = []
    try:
        tickets_r, tickets_w = os.pipe()
        made += (tickets_r, tickets_w)
        # Non-blocking for both readers: they share this open file description.
        os.set_blocking(tickets_r, False)
        worker_tickets = os.dup(tickets_r)
        made.append(worker_tickets)
        life_r, life_w = os.pipe()
    except BaseException:
        for fd in made:
            close_fd(fd)
        raise
    return Lines(tickets_w, tickets_r, life_w), WorkerFds(worker_tickets, life_r)


def _close_parent_ends() -> None:
    for sock in list(PARENT_ENDS):
        sock.close()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_parent_ends)


class Process(Protocol):
    """What the manager needs of a worker process."""

    pid: int
    sentinel: int

    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None) -> int | None: ...
    def terminate(self) -> None: ...
    def kill(self) -> None: ...
    def release(self) -> None: ...


class Forker(Protocol):
    """What forks a fork pool's later workers: its :class:`~._template.ForkTemplate`
    (which imports this module; this one names it only here, in words)."""

    def start(self, child_end: socket.socket, fds: WorkerFds, index: int, name: str) -> Process:
        """Fork worker ``index``, serving on ``child_end``, with its ``fds``."""
        ...


def pidfd(pid: int) -> int | None:
    """A pidfd of process ``pid`` (Linux 5.3+), or None where there are none."""
    if not _HAS_PIDFD:
        return None
    try:
        return int(os.pidfd_open(pid))
    except OSError:
        return None


def _probe_pidfd() -> bool:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return False
    try:
        os.close(opener(os.getpid()))
    except OSError:  # built with it, but the kernel is older than Linux 5.3
        return False
    return True


_HAS_PIDFD = _probe_pidfd()


class _Spawned:
    """A worker started by :func:`start` with the spawn method."""

    def __init__(self, popen: subprocess.Popen[bytes], sentinel: int) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.sentinel = sentinel

    def poll(self) -> int | None:
        return self.popen.poll()

    def wait(self, timeout: float | None) -> int | None:
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def terminate(self) -> None:
        if self.popen.returncode is None:
            try:
                self.popen.terminate()
            except OSError:
                pass

    def kill(self) -> None:
        if self.popen.returncode is None:
            try:
                self.popen.kill()
            except OSError:
                pass

    def release(self) -> None:
        close_fd(self.sentinel)
        self.sentinel = -1


class _MPProcess:
    """A worker started through a ``multiprocessing`` context (fork, forkserver)."""

    def __init__(self, process: Any, sentinel: int, owned: bool) -> None:
        self.process = process
        self.pid = process.pid
        self.sentinel = sentinel
        self._owned = owned  # a pidfd of ours, not multiprocessing's sentinel

    def poll(self) -> int | None:
        code: int | None = self.process.exitcode
        return code

    def wait(self, timeout: float | None) -> int | None:
        self.process.join(timeout)
        code: int | None = self.process.exitcode
        return code

    def terminate(self) -> None:
        if self.process.exitcode is None:
            try:
                self.process.terminate()
            except OSError:
                pass

    def kill(self) -> None:
        if self.process.exitcode is None:
            try:
                self.process.kill()
            except OSError:
                pass

    def release(self) -> None:
        if self._owned:
            close_fd(self.sentinel)
        self.sentinel = -1
        if self.process.exitcode is not None:
            self.process.close()


def close_fd(fd: int) -> None:
    """Close ``fd`` if it is one (>= 0); an error closing it is of no interest."""
    if fd >= 0:
        try:
            os.close(fd)
        except OSError:
            pass


def start(
    method: str,
    config: WorkerConfig,
    name: str,
    import_main: bool = True,
    make_process: Any = None,
    template: Forker | None = None,
) -> tuple[Process, socket.socket, bytes, Lines]:
    """Start one worker.

    Parameters
    ----------
    name:
        The worker's process name (``multiprocessing.current_process().name``).
    import_main:
        spawn: import the parent's main module in the worker as ``__mp_main__``.
    make_process:
        fork, forkserver: ``make_process(context, target=..., ...)`` makes the
        Process (``Pool.Process``); default ``context.Process``.
    template:
        fork: the pool's :class:`Forker` (its :class:`~._template.ForkTemplate`),
        which forks the worker instead of this process (once the pool runs threads).

    Returns
    -------
    The process handle, the parent's end of its socket (non-blocking), the
    bytes to send first on that socket (empty unless the worker waits for them),
    and the parent's ends of its ticket pipe and life line.
    """
    parent_end, child_end = socket.socketpair()
    PARENT_ENDS.add(parent_end)
    boot = b""
    try:
        lines, fds = _make_lines()
    except BaseException:
        parent_end.close()
        child_end.close()
        raise
    try:
        if method == "spawn":
            data, inherited = _spawn_data(config, name, import_main)
            process: Process = _start_spawn(child_end, fds, inherited)
            boot = P.LENGTH.pack(len(data)) + data
        elif template is not None:
            process = template.start(child_end, fds, config.index, name)
        else:
            process = _start_mp(method, child_end, fds, config, name, make_process)
    except BaseException:
        parent_end.close()
        lines.close()
        raise
    finally:
        child_end.close()
        # The worker has its own copies now (or never will).
        close_fd(fds.tickets)
        close_fd(fds.life)
    parent_end.setblocking(False)
    return process, parent_end, boot, lines


def _spawn_data(config: WorkerConfig, name: str, import_main: bool) -> tuple[bytes, list[int]]:
    """What a spawned worker gets first, and the descriptors it must inherit."""
    from multiprocessing import resource_tracker, spawn
    from multiprocessing.reduction import ForkingPickler

    # Raises multiprocessing's own RuntimeError in a worker that is still importing
    # the main module (a script that starts a pool without the __main__ guard).
    prep = spawn.get_preparation_data(name)
    if not import_main:
        prep.pop("init_main_from_path", None)
        prep.pop("init_main_from_name", None)
    tracker_fd = resource_tracker.getfd()
    with spawning(Spawning()) as popen:
        popen.fds.append(tracker_fd)
        prep_data = bytes(ForkingPickler.dumps(prep))
        config_data = bytes(ForkingPickler.dumps(config))
    data = pickle.dumps((prep_data, config_data, tracker_fd), protocol=pickle.HIGHEST_PROTOCOL)
    return data, popen.fds


def _start_spawn(child_end: socket.socket, fds: WorkerFds, inherited: list[int]) -> _Spawned:
    fd = child_end.fileno()
    sentinel_r = sentinel_w = -1
    pass_fds = [fd, fds.tickets, fds.life, *inherited]
    flags = subprocess._args_from_interpreter_flags()  # type: ignore[attr-defined]
    args = [sys.executable, *flags, "-c", _BOOT, str(fd), _HOME, str(fds.tickets), str(fds.life)]
    if not _HAS_PIDFD:
        sentinel_r, sentinel_w = os.pipe()
        pass_fds.append(sentinel_w)
    try:
        popen = subprocess.Popen(args, pass_fds=pass_fds, stdin=subprocess.DEVNULL, close_fds=True)
    finally:
        close_fd(sentinel_w)
    sentinel = pidfd(popen.pid) if sentinel_r < 0 else sentinel_r
    if sentinel is None:
        popen.kill()
        popen.wait()
        raise OSError(f"cannot watch worker process {popen.pid}: os.pidfd_open failed")
    return _Spawned(popen, sentinel)


def fork_process(
    child_end: socket.socket,
    fds: WorkerFds,
    config: WorkerConfig,
    name: str,
    make_process: Any,
    method: str = "fork",
) -> Any:
    """Start a worker through a ``multiprocessing`` context; return its Process."""
    import multiprocessing  # only fork and forkserver need it

    context = multiprocessing.get_context(method)
    # forkserver pickles the process object with ForkingPickler in its spawning
    # context, where the config's StartPayload encodes what it holds; fork
    # pickles nothing: the child has the parent's objects.
    if make_process is None:
        make_process = _context_process
    process = make_process(context, target=_mp_main, args=(child_end, fds, config), name=name)
    process.daemon = False  # a worker may start processes and pools of its own
    process.start()
    return process


def _start_mp(
    method: str,
    child_end: socket.socket,
    fds: WorkerFds,
    config: WorkerConfig,
    name: str,
    make_process: Any,
) -> _MPProcess:
    process = fork_process(child_end, fds, config, name, make_process, method)
    if method == "fork":
        fd = pidfd(process.pid)
        if fd is not None:
            return _MPProcess(process, fd, owned=True)
    return _MPProcess(process, process.sentinel, owned=False)


def _context_process(context: Any, **kwds: Any) -> Any:
    return context.Process(**kwds)


def _mp_main(sock: socket.socket, fds: WorkerFds, config: WorkerConfig) -> None:
    code = __import__("picklable._pool._worker", fromlist=["run"]).run(
        sock, config, fds.tickets, fds.life
    )
    if code:
        sys.exit(code)
