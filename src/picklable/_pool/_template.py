"""The fork template: where a ``'fork'`` pool forks the workers that replace others.

A pool replaces a worker that died or retired (``maxtasksperchild``) from its
manager thread. Forking there would fork a process that runs threads (the
manager, the caller's): a lock another thread held at that moment stays locked
forever in the child, and Python 3.12+ warns about it (3.15 raises the warning
where warnings are errors). :mod:`multiprocessing`'s Pool forks its
replacements that way; picklable does not.

Instead a fork pool forks one more process when it is made, from the caller's
thread, before its manager thread starts: the template. It does nothing but
wait on its socket; asked for a worker, it forks one (it runs no thread, so
that fork is as safe as the first workers' were), sends back its pid, and later
its exit code. Every worker of the pool thus starts from the same state: the
parent's when the pool was made, which is also what the first workers had.

The parent watches a worker forked there as its own: through a pidfd where
Linux has them (and signals it through it, exact even once the template has
reaped it), else through the pipe ``multiprocessing`` gives each forked child,
passed over the socket. The parent opens the pidfd before the template can
reap the worker: the template waits for a worker only when the parent asks for
its exit code, after the worker has ended, or when it starts another.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

from . import _launch
from ._worker import WorkerConfig

__all__ = ["ForkTemplate"]

_SIZE = struct.Struct("!I")
_CLOSE_TIMEOUT = 5.0  # seconds the parent waits for the template to exit


class TemplateError(OSError):
    """The template could not start a worker, or is gone."""


def _send(sock: socket.socket, message: Any, fds: list[int] | None = None) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    frame = _SIZE.pack(len(data)) + data
    sent = socket.send_fds(sock, [frame], fds or [])
    if sent < len(frame):
        sock.sendall(frame[sent:])


def _recv(sock: socket.socket) -> tuple[Any, list[int]]:
    """One message and the descriptors that came with it; EOFError at end of file."""
    data, fds, _, _ = socket.recv_fds(sock, 65536, 4)
    if not data:
        for fd in fds:
            os.close(fd)
        raise EOFError
    buf = bytearray(data)
    while len(buf) < _SIZE.size or len(buf) < _SIZE.size + _SIZE.unpack_from(buf)[0]:
        chunk = sock.recv(65536)
        if not chunk:
            for fd in fds:
                os.close(fd)
            raise EOFError
        buf += chunk
    return pickle.loads(buf[_SIZE.size :]), fds


class ForkTemplate:
    """The parent's handle on a pool's template process."""

    def __init__(
        self,
        make_config: Callable[[int], WorkerConfig],
        name: str,
        make_process: Any,
    ) -> None:
        import multiprocessing

        parent_end, child_end = socket.socketpair()
        # Processes forked from the parent later (another fork pool's workers)
        # must not keep this end open: the template ends when it closes.
        _launch.PARENT_ENDS.add(parent_end)
        context = multiprocessing.get_context("fork")
        process = context.Process(
            target=_template_main,
            args=(child_end, make_config, make_process),
            name=name,
        )
        try:
            process.start()
        except BaseException:
            parent_end.close()
            raise
        finally:
            child_end.close()
        self._process = process
        self._sock = parent_end
        self._lock = threading.Lock()

    def _ask(self, message: Any, fds: list[int] | None = None) -> tuple[Any, list[int]]:
        # Under self._lock: one request at a time.
        if self._sock.fileno() < 0:
            raise TemplateError("the pool's fork template was closed")
        try:
            _send(self._sock, message, fds)
            return _recv(self._sock)
        except (OSError, EOFError, pickle.UnpicklingError) as exc:
            raise TemplateError(
                f"the pool's fork template (pid {self._process.pid}) is gone: "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    def start(
        self, child_end: socket.socket, fds: _launch.WorkerFds, index: int, name: str
    ) -> _Templated:
        """Fork worker ``index`` in the template, serving on ``child_end``, with
        the worker's ends of its ticket pipe and life line (``fds``).

        Raises
        ------
        TemplateError
            If the template is gone or could not start the worker.
        """
        with self._lock:
            (ok, value), got = self._ask(
                ("start", index, name), [child_end.fileno(), fds.tickets, fds.life]
            )
            # Before the next request, the only time the template may reap it.
            pidfd = _launch.pidfd(value) if ok else None
        if not ok:
            for fd in got:
                os.close(fd)
            raise TemplateError(f"the pool's fork template could not start a worker: {value}")
        if pidfd is not None:
            for fd in got:
                os.close(fd)
            return _Templated(self, value, pidfd, True)
        return _Templated(self, value, got[0], False)

    def exitcode(self, pid: int) -> int | None:
        """The exit code of a worker that has ended (multiprocessing's: -N for signal N),
        or None if the template cannot tell any more."""
        try:
            with self._lock:
                (ok, value), _ = self._ask(("exitcode", pid))
        except TemplateError:
            return None
        return value if ok else None

    def close(self) -> None:
        """End the template (it exits once the workers it forked have ended)."""
        with self._lock:
            self._sock.close()
        process = self._process
        process.join(_CLOSE_TIMEOUT)
        if process.exitcode is None:
            process.kill()
            process.join()
        process.close()


class _Templated:
    """A worker forked in the template: a :class:`._launch.Process` to the manager."""

    def __init__(self, template: ForkTemplate, pid: int, sentinel: int, pidfd: bool) -> None:
        self.template = template
        self.pid = pid
        self.sentinel = sentinel
        self._pidfd = pidfd
        self._exitcode: int | None = None
        self._ended = False

    def poll(self) -> int | None:
        return self.wait(0)

    def wait(self, timeout: float | None) -> int | None:
        if not self._ended:
            if self.sentinel < 0 or not _wait_readable(self.sentinel, timeout):
                return None
            self._ended = True
            self._exitcode = self.template.exitcode(self.pid)
        return self._exitcode

    def _signal(self, signum: int) -> None:
        if self._ended:
            return
        try:
            if self._pidfd:
                signal.pidfd_send_signal(self.sentinel, signum)
            else:
                os.kill(self.pid, signum)
        except OSError:
            pass

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def release(self) -> None:
        _launch.close_fd(self.sentinel)
        self.sentinel = -1


def _wait_readable(fd: int, timeout: float | None) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(None if timeout is None else int(timeout * 1000)))


# ------------------------------------------------------------ in the template


def _template_main(
    sock: socket.socket, make_config: Callable[[int], WorkerConfig], make_process: Any
) -> None:
    # Ctrl-C reaches the whole process group; the parent decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The workers forked here close it at once (the at-fork hook of _launch).
    _launch.PARENT_ENDS.add(sock)
    workers: dict[int, Any] = {}  # pid -> multiprocessing Process
    while True:
        try:
            message, fds = _recv(sock)
            reply, passed = _answer(message, fds, workers, make_config, make_process)
            _send(sock, reply, passed)
        except (OSError, EOFError):
            return  # the parent closed the pool, or went away


def _answer(
    message: Any,
    fds: list[int],
    workers: dict[int, Any],
    make_config: Callable[[int], WorkerConfig],
    make_process: Any,
) -> tuple[Any, list[int]]:
    """The reply to one request of the parent, and the descriptors to pass with it."""
    if message[0] == "start":
        _, index, name = message
        child_end = socket.socket(fileno=fds[0])
        try:
            process = _launch.fork_process(
                child_end, _launch.WorkerFds(fds[1], fds[2]), make_config(index), name, make_process
            )
        except Exception as exc:
            return (False, f"{type(exc).__name__}: {exc}"), []
        finally:
            child_end.close()
            for fd in fds[1:]:
                os.close(fd)
        workers[process.pid] = process
        return (True, process.pid), [process.sentinel]
    # "exitcode": asked once the worker has ended; the template forgets it then.
    process = workers.pop(message[1], None)
    if process is None:
        return (False, None), []
    process.join()
    code = process.exitcode
    process.close()
    return (True, code), []
