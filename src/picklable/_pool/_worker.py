"""The loop that runs in each worker process.

A worker reads frames from its own socket (no lock shared with other workers),
runs them in order, and answers each task as soon as it is done. Functions
arrive once, keyed by digest, and stay loaded until the parent says to forget
them. Tasks never kill the loop: every exception, including ``SystemExit`` and
``KeyboardInterrupt`` raised in a task, is sent back as that task's error (what
``concurrent.futures`` does). The loop ends on a stop frame, or when the parent
goes away (end of file on the socket).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # signal without the enum wrappers
import os
import pickle
import sys
import time
from collections.abc import Iterator
from typing import Any

from . import _protocol as P

__all__ = ["WorkerConfig", "run", "spawned_main", "worker_index"]

_index: int | None = None


def worker_index() -> int | None:
    """The index of the pool worker this code runs in, or None outside a worker.

    Indexes go from 0 to ``processes - 1``. A worker that replaces a dead or
    retired one takes over its index, so per-worker resources (one port, one
    GPU, one scratch directory per worker) can be chosen from it, also in the
    pool's ``initializer``, which runs after the index is set.

    Returns
    -------
    int or None

    Examples
    --------
    >>> def setup():
    ...     global port
    ...     port = 8000 + picklable.worker_index()
    >>> pool = picklable.Pool(4, initializer=setup)
    """
    return _index


class WorkerConfig:
    """What a worker needs at start (shipped with plain pickle).

    Attributes
    ----------
    index:
        The worker's slot, returned by :func:`worker_index`.
    codec:
        The pool's :class:`~._protocol.Codec`.
    initializer:
        Codec payload of ``(initializer, initargs)``, or None.
    """

    __slots__ = ("index", "codec", "initializer")

    def __init__(self, index: int, codec: P.Codec, initializer: bytes | None) -> None:
        self.index = index
        self.codec = codec
        self.initializer = initializer

    def __reduce__(self) -> tuple[Any, ...]:
        return (WorkerConfig, (self.index, self.codec, self.initializer))


class _Channel:
    """The worker's end of its socket, used through its file descriptor.

    Plain ``os.read``/``os.write`` on a blocking socket: a spawned worker does
    not need to import :mod:`socket` (and :mod:`selectors`) to start.
    """

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def recv(self, size: int) -> bytes:
        return os.read(self.fd, size)

    def recv_into(self, view: memoryview) -> int:
        return os.readv(self.fd, [view])

    def sendall(self, data: bytes | memoryview) -> None:
        sent = os.write(self.fd, data)
        if sent == len(data):
            return
        view = memoryview(data)[sent:]
        while view:
            view = view[os.write(self.fd, view) :]


def spawned_main(fd: int) -> None:
    """Entry point of a worker started with ``python -c`` (the spawn method).

    The first frame on the socket carries the parent's ``sys.path`` and the
    :class:`WorkerConfig`; the parent's ``__main__`` is not re-imported (objects
    of ``__main__`` travel by value).
    """
    channel = _Channel(fd)
    header = _recv_exactly(channel, 8)
    if header is None:
        return
    body = _recv_exactly(channel, P.LENGTH.unpack(header)[0])
    if body is None:
        return
    path, config = pickle.loads(body)
    sys.path[:] = path
    # The config may name classes (a custom codec) found only on that path.
    sys.exit(serve(channel, pickle.loads(config)))


def _recv_exactly(channel: _Channel, size: int) -> bytes | None:
    chunks = []
    while size:
        try:
            chunk = channel.recv(size)
        except OSError:  # the parent went away while this worker started
            return None
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def run(sock: Any, config: WorkerConfig) -> int:
    """Serve tasks on ``sock`` (a :class:`socket.socket`) until told to stop.

    Returns
    -------
    The exit code for the worker process.
    """
    sock.setblocking(True)
    return serve(_Channel(sock.detach()), config)


def serve(sock: _Channel, config: WorkerConfig) -> int:
    """Serve tasks on the channel until told to stop; return the exit code."""
    global _index
    _index = config.index
    # Ctrl-C reaches the whole process group; the parent decides what stops.
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    codec = config.codec
    try:
        if config.initializer is not None:
            try:
                initializer, initargs = codec.decode(config.initializer)
                initializer(*initargs)
            except BaseException as exc:
                info = codec.encode(P.error_info(exc, codec, skip_frames=1))
                _send(sock, P.LENGTH.pack(1 + len(info)) + P.INIT_ERROR, info)
                return 1
        sock.sendall(P.READY.pack(9, P.READY_KIND, os.getpid()))
        _serve(sock, codec)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the parent went away: nobody is left to answer
    return 0


def _serve(sock: _Channel, codec: P.Codec) -> None:
    functions: dict[bytes, Any] = {}
    # A function that failed to load: the error each of its tasks gets.
    broken: dict[bytes, P.ErrorInfo] = {}
    decode = codec.decode
    encode = codec.encode
    sendall = sock.sendall
    clock = time.perf_counter
    head = P.RESULT_HEAD.pack
    task_head = P.TASK_BODY.unpack_from
    func_head = P.FUNC_BODY.unpack_from
    CALL, STARMAP = P.CALL[0], P.STARMAP[0]
    FUNC, FORGET, STOP = P.FUNC[0], P.FORGET[0], P.STOP[0]
    VALUE = P.VALUE
    big = 1 << 16

    for frame in _frames(sock):
        kind = frame[0]
        if kind in (FUNC, FORGET):
            digest = func_head(frame)[1]
            if kind == FORGET:
                functions.pop(digest, None)
                broken.pop(digest, None)
                continue
            try:
                functions[digest] = decode(frame[17:])
            except BaseException as exc:
                broken[digest] = P.error_info(exc, codec)
            continue
        if kind == STOP:
            return
        _, unit_id, digest = task_head(frame)
        started = clock()
        fn = functions.get(digest)
        if fn is None:
            info = broken.get(digest) or P.error_info(
                RuntimeError("protocol error: task for a function this worker never received"),
                codec,
            )
            _send_errors(sock, encode, unit_id, info)
            continue
        try:
            payload = decode(frame[25:])
        except BaseException as exc:
            _send_errors(sock, encode, unit_id, P.error_info(exc, codec))
            continue
        if kind == CALL:
            args, kwargs = payload
            try:
                value = fn(*args, **kwargs)
            except BaseException as exc:
                elapsed = clock() - started
                _send_outcomes(
                    sock, codec, unit_id, elapsed, [_Failed(P.error_info(exc, codec, 1))]
                )
                continue
        else:
            value = []
            append = value.append
            failed = False
            star = kind == STARMAP
            for item in payload:
                try:
                    append(fn(*item) if star else fn(item))
                except BaseException as exc:
                    append(_Failed(P.error_info(exc, codec, 1)))
                    failed = True
            if failed:
                _send_outcomes(sock, codec, unit_id, clock() - started, value)
                continue
        elapsed = clock() - started
        try:
            data = encode(value)
        except BaseException:
            items = [value] if kind == CALL else value
            _send_outcomes(sock, codec, unit_id, elapsed, items)
            continue
        if len(data) < big:
            sendall(head(17 + len(data), VALUE, unit_id, elapsed) + data)
        else:
            sendall(head(17 + len(data), VALUE, unit_id, elapsed))
            sendall(data)


class _Failed:
    __slots__ = ("info",)

    def __init__(self, info: P.ErrorInfo) -> None:
        self.info = info


def _send_outcomes(
    sock: _Channel, codec: P.Codec, unit_id: int, elapsed: float, items: list[Any]
) -> None:
    """Answer a task whose items did not all succeed, or whose result cannot travel.

    Each item travels on its own, so one unpicklable result fails that item only.
    """
    outcomes: list[tuple[bool, Any]] = []
    for item in items:
        if isinstance(item, _Failed):
            outcomes.append((False, item.info))
            continue
        try:
            outcomes.append((True, codec.encode(item)))
        except BaseException as exc:
            outcomes.append((False, P.error_info(exc, codec)))
    data = codec.encode(outcomes)
    _send(sock, P.RESULT_HEAD.pack(17 + len(data), P.ERRORS, unit_id, elapsed), data)


def _send_errors(sock: _Channel, encode: Any, unit_id: int, info: P.ErrorInfo) -> None:
    """Fail a task that could not start (its function or payload did not load).

    The item count is unknown without the payload: the parent applies the one
    outcome to every item of the task.
    """
    data = encode([(False, info)])
    _send(sock, P.RESULT_HEAD.pack(17 + len(data), P.ERRORS, unit_id, 0.0), data)


def _send(sock: _Channel, head: bytes, data: bytes) -> None:
    if len(data) < 1 << 16:
        sock.sendall(head + data)
    else:
        sock.sendall(head)
        sock.sendall(data)


def _frames(sock: _Channel) -> Iterator[memoryview]:
    """The frames arriving on ``sock``, as views; ends when the parent goes away."""
    recv = sock.recv
    recv_into = sock.recv_into
    unpack = P.LENGTH.unpack_from
    buf = b""
    while True:
        try:
            chunk = recv(1 << 18)
        except InterruptedError:
            continue
        except OSError:
            return
        if not chunk:
            return
        buf = buf + chunk if buf else chunk
        view = memoryview(buf)
        pos = 0
        end = len(buf)
        while end - pos >= 8:
            (size,) = unpack(buf, pos)
            stop = pos + 8 + size
            if stop > end:
                if size > 1 << 20:
                    # A large frame: read the rest straight into place.
                    body = bytearray(size)
                    have = end - pos - 8
                    body[:have] = view[pos + 8 : end]
                    target = memoryview(body)
                    while have < size:
                        n = recv_into(target[have:])
                        if not n:
                            return
                        have += n
                    yield memoryview(body)
                    pos = end
                break
            yield view[pos + 8 : stop]
            pos = stop
        buf = buf[pos:] if pos < end else b""
