"""The loop that runs in each worker process.

A worker reads frames from its own socket (no lock shared with other workers),
runs them in order, and answers each task as soon as it is done. Functions
arrive once, keyed by digest, and stay loaded until the parent says to forget
them. Tasks never kill the loop: every exception, including ``SystemExit`` and
``KeyboardInterrupt`` raised in a task, is sent back as that task's error (what
``concurrent.futures`` does). The loop ends on a stop frame, or when the parent
goes away (end of file on the socket).

A task runs only once the worker has read its ticket (see :mod:`._protocol`):
the parent may take back the tasks queued here while one runs too long. And
the worker ends when its parent dies, even in the middle of a task that never
returns: see :func:`watch_parent`.
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

__all__ = ["WorkerConfig", "run", "spawned_main", "watch_parent", "worker_index"]

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
    """What a worker needs at start (pickled by multiprocessing's ForkingPickler).

    Attributes
    ----------
    index:
        The worker's slot, returned by :func:`worker_index`.
    codec:
        The pool's :class:`~._protocol.Codec`.
    start:
        The :class:`~._inherit.StartPayload` of ``(initializer, initargs)``, or None.
    log_initializer_errors:
        Log an initializer's exception to the ``concurrent.futures`` logger, as
        that module's workers do (the executor); the pool's error carries it anyway.
    """

    __slots__ = ("index", "codec", "start", "log_initializer_errors")

    def __init__(
        self,
        index: int,
        codec: P.Codec,
        start: Any = None,
        log_initializer_errors: bool = False,
    ) -> None:
        self.index = index
        self.codec = codec
        self.start = start
        self.log_initializer_errors = log_initializer_errors

    def __reduce__(self) -> tuple[Any, ...]:
        return (WorkerConfig, (self.index, self.codec, self.start, self.log_initializer_errors))


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


def spawned_main(fd: int, tickets: int, life: int) -> None:
    """Entry point of a worker started with ``python -c`` (the spawn method).

    The first frame on the socket carries what ``multiprocessing``'s spawn
    sends its children (``spawn.get_preparation_data``: ``sys.path``, the
    authkey, the main module, ...), the resource tracker's descriptor and the
    :class:`WorkerConfig`. ``tickets`` and ``life`` are the worker's ends of
    its ticket pipe and life line.
    """
    watch_parent(life)
    channel = _Channel(fd)
    header = _recv_exactly(channel, 8)
    if header is None:
        return
    body = _recv_exactly(channel, P.LENGTH.unpack(header)[0])
    if body is None:
        return
    prep_data, config_data, tracker_fd = pickle.loads(body)
    prep = pickle.loads(prep_data)
    # The config may name classes (a custom codec) found only on that path.
    sys.path[:] = prep["sys_path"]
    sys.exit(serve(channel, pickle.loads(config_data), tickets, prep, tracker_fd))


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


def run(sock: Any, config: WorkerConfig, tickets: int, life: int) -> int:
    """Serve tasks on ``sock`` (a :class:`socket.socket`) until told to stop.

    Returns
    -------
    The exit code for the worker process.
    """
    watch_parent(life)
    sock.setblocking(True)
    return serve(_Channel(sock.detach()), config, tickets)


def watch_parent(life: int) -> None:
    """End this process as soon as the parent dies, even in a task that never returns.

    ``life`` is the read end of a pipe whose write end only the parent holds;
    nothing is ever written to it, and the kernel closes it when the parent
    exits or is killed (SIGKILL included). On Linux the kernel is asked to
    send this process SIGKILL then (``O_ASYNC`` with ``F_SETSIG``): no thread,
    and it works while the main thread is busy in a task, holds the GIL in C
    code, or is stopped. Elsewhere a daemon thread waits on the pipe and calls
    ``os._exit``. A parent that died before this was set up is seen at once.
    """
    # Programs that the tasks start do not get it (a spawned worker inherited it).
    os.set_inheritable(life, False)
    try:
        import fcntl

        setsig = fcntl.F_SETSIG  # Linux only: AttributeError elsewhere
        fcntl.fcntl(life, setsig, _signal.SIGKILL)
        fcntl.fcntl(life, fcntl.F_SETOWN, os.getpid())
        fcntl.fcntl(life, fcntl.F_SETFL, fcntl.fcntl(life, fcntl.F_GETFL) | os.O_ASYNC)
    except (ImportError, AttributeError, OSError):
        import threading

        threading.Thread(target=_wait_for_parent, args=(life,), daemon=True).start()
        return
    import select

    if select.select([life], [], [], 0)[0]:  # end of file: the parent is gone already
        os._exit(1)


def _wait_for_parent(life: int) -> None:
    try:
        while os.read(life, 1):
            pass
    except OSError:
        pass
    os._exit(1)


def serve(
    sock: _Channel,
    config: WorkerConfig,
    tickets: int,
    prep: dict[str, Any] | None = None,
    tracker_fd: Any = None,
) -> int:
    """Serve tasks on the channel until told to stop; return the exit code.

    ``prep`` (spawn only) is applied first, as ``multiprocessing.spawn`` does
    before it loads anything: the main script is imported as ``__mp_main__``
    there, so tasks and the initializer that refer to it find it.
    """
    os.set_inheritable(tickets, False)
    global _index
    _index = config.index
    # Ctrl-C reaches the whole process group; the parent decides what stops.
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    codec = config.codec
    try:
        if prep is not None:
            try:
                _prepare(prep, tracker_fd)
            except BaseException as exc:
                _send_init_error(sock, codec, P.STAGE_MAIN, exc)
                return 1
        if config.start is not None:
            try:
                initializer, initargs = config.start.load(codec)
                initializer(*initargs)
            except BaseException as exc:
                if config.log_initializer_errors:
                    import logging

                    logging.getLogger("concurrent.futures").critical(
                        "Exception in initializer:", exc_info=True
                    )
                _send_init_error(sock, codec, P.STAGE_INITIALIZER, exc)
                return 1
        sock.sendall(P.READY.pack(9, P.READY_KIND, os.getpid()))
        _serve(sock, codec, tickets)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the parent went away: nobody is left to answer
    return 0


def _prepare(prep: dict[str, Any], tracker_fd: Any) -> None:
    """What ``multiprocessing.spawn`` does in a child before it unpickles anything.

    Its own ``prepare`` (process name, authkey, ``sys.path``, working directory,
    start method, and the main module imported as ``__mp_main__``), marked as
    bootstrapping the way ``spawn._main`` marks it, so that a script that starts
    processes or pools at import time gets multiprocessing's own error here.
    """
    from multiprocessing import process, resource_tracker, spawn

    if tracker_fd is not None:
        # As spawn.spawn_main: the parent's tracker keeps what this worker registers.
        resource_tracker._resource_tracker._fd = tracker_fd  # type: ignore[attr-defined]
    current = process.current_process()
    current._inheriting = True  # type: ignore[attr-defined]
    try:
        spawn.prepare(prep)
    finally:
        del current._inheriting  # type: ignore[attr-defined]


def _send_init_error(sock: _Channel, codec: P.Codec, stage: int, exc: BaseException) -> None:
    info = codec.encode((stage, P.error_info(exc, codec, skip_frames=1)))
    _send(sock, P.LENGTH.pack(1 + len(info)) + P.INIT_ERROR, info)


def _serve(sock: _Channel, codec: P.Codec, tickets: int) -> None:
    functions: dict[bytes, Any] = {}
    # A function that failed to load: the error each of its tasks gets.
    broken: dict[bytes, P.ErrorInfo] = {}
    sendall = sock.sendall
    clock = time.perf_counter
    head = P.RESULT_HEAD.pack
    task_head = P.TASK_BODY.unpack_from
    func_head = P.FUNC_BODY.unpack_from
    FUNC, FORGET, STOP = P.FUNC[0], P.FORGET[0], P.STOP[0]
    VALUE = P.VALUE
    big = 1 << 16
    read = os.read
    ticket_of = P.TICKET.unpack
    # A ticket read for a later task (the tasks before it were taken back).
    held = 0

    for frame in _frames(sock):
        kind = frame[0]
        if kind in (FUNC, FORGET):
            digest = func_head(frame)[1]
            if kind == FORGET:
                functions.pop(digest, None)
                broken.pop(digest, None)
                continue
            try:
                functions[digest] = codec.decode(frame[17:])
            except BaseException as exc:
                broken[digest] = P.error_info(exc, codec)
            continue
        if kind == STOP:
            return
        _, unit_id, digest = task_head(frame)
        if held != unit_id:
            if not held:
                try:
                    ticket = read(tickets, 8)
                except BlockingIOError:
                    ticket = b""
                if len(ticket) == 8:
                    (held,) = ticket_of(ticket)
            if held != unit_id:
                # Its ticket was written before the frame, and is gone: the
                # parent took this task back, and another worker runs it.
                continue
        held = 0
        started = clock()
        fn = functions.get(digest)
        if fn is None:
            info = broken.get(digest) or P.error_info(
                RuntimeError("protocol error: task for a function this worker never received"),
                codec,
            )
            _send_load_error(sock, codec, unit_id, P.LOADING_FUNCTION, info)
            continue
        # The task runs in its own frame, so that its arguments and results are
        # released before the answer goes out (as the stdlib's workers do).
        answer = _run(codec, kind, fn, frame[25:], unit_id, started)
        if type(answer) is bytes:
            if len(answer) < big:
                sendall(head(17 + len(answer), VALUE, unit_id, clock() - started) + answer)
            else:
                sendall(head(17 + len(answer), VALUE, unit_id, clock() - started))
                sendall(answer)
        else:
            answer(sock)
        del answer


def _run(
    codec: P.Codec, kind: int, fn: Any, payload_view: memoryview, unit_id: int, started: float
) -> Any:
    """Run one task: its value's payload (bytes), or a callable that sends its errors."""
    try:
        payload = codec.decode(payload_view)
    except BaseException as exc:
        info = P.error_info(exc, codec)
        return lambda sock: _send_load_error(sock, codec, unit_id, P.LOADING_ARGUMENTS, info)
    if kind == P.CALL[0]:
        args, kwargs = payload
        del payload
        try:
            value = fn(*args, **kwargs)
        except BaseException as exc:
            failed = [_Failed(P.error_info(exc, codec, 1))]
            elapsed = time.perf_counter() - started
            return lambda sock: _send_outcomes(sock, codec, unit_id, elapsed, failed)
        del args, kwargs
        items: list[Any] | None = None
    else:
        items = []
        append = items.append
        failed_any = False
        star = kind == P.STARMAP[0]
        for item in payload:
            try:
                append(fn(*item) if star else fn(item))
            except BaseException as exc:
                append(_Failed(P.error_info(exc, codec, 1)))
                failed_any = True
        del payload
        if failed_any:
            elapsed = time.perf_counter() - started
            encoded = _outcomes(codec, items)
            return lambda sock: _send_encoded_outcomes(sock, unit_id, elapsed, encoded)
        value = items
    try:
        return codec.encode(value)
    except BaseException:
        elapsed = time.perf_counter() - started
        encoded = _outcomes(codec, [value] if items is None else items)
        return lambda sock: _send_encoded_outcomes(sock, unit_id, elapsed, encoded)


class _Failed:
    __slots__ = ("info",)

    def __init__(self, info: P.ErrorInfo) -> None:
        self.info = info


def _outcomes(codec: P.Codec, items: list[Any]) -> bytes:
    """The outcome of each item, each encoded on its own: one unpicklable result
    fails its item only (and says it was the result that could not travel)."""
    outcomes: list[tuple[int, Any]] = []
    for item in items:
        if isinstance(item, _Failed):
            outcomes.append((P.OUTCOME_RAISED, item.info))
            continue
        try:
            outcomes.append((P.OUTCOME_VALUE, codec.encode(item)))
        except BaseException as exc:
            outcomes.append((P.OUTCOME_RESULT_UNSHIPPABLE, P.error_info(exc, codec)))
    return codec.encode(outcomes)


def _send_outcomes(
    sock: _Channel, codec: P.Codec, unit_id: int, elapsed: float, items: list[Any]
) -> None:
    """Answer a task whose items did not all succeed, or whose result cannot travel."""
    _send_encoded_outcomes(sock, unit_id, elapsed, _outcomes(codec, items))


def _send_encoded_outcomes(sock: _Channel, unit_id: int, elapsed: float, data: bytes) -> None:
    _send(sock, P.RESULT_HEAD.pack(17 + len(data), P.ERRORS, unit_id, elapsed), data)


def _send_load_error(
    sock: _Channel, codec: P.Codec, unit_id: int, what: int, info: P.ErrorInfo
) -> None:
    """Fail a task that could not start: its function or its arguments did not load.

    The item count is unknown without the payload: the parent applies the one
    error to every item of the task.
    """
    data = codec.encode((what, info))
    _send(sock, P.RESULT_HEAD.pack(17 + len(data), P.LOAD_FAILED, unit_id, 0.0), data)


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
