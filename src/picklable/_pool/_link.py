"""The manager's end of one worker process, and the frames that cross it.

A :class:`Link` is what the manager (:mod:`._core`) keeps per worker: the
process handle and the parent's ends of its socket and pipes (made by
:mod:`._launch`), the frames waiting to be sent, an :class:`Inbox` that cuts
the bytes read into frames, and the units the worker holds, in order (which
:mod:`._dispatch` fills and the manager empties as results come back).
"""

from __future__ import annotations

import collections
import itertools
import select
import socket
from typing import Any

from . import _launch
from . import _protocol as P
from ._jobs import Unit

__all__ = ["IN", "OUT", "Inbox", "Link", "first", "readable"]

# poll() masks: a worker's socket has something to read (or closed), room to write.
IN = select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR
OUT = select.POLLOUT


class Link:
    """The manager's end of one worker: its process, socket, ticket pipe and life
    line, the frames queued out and the bytes read in, and the units it holds
    (the running one first)."""

    __slots__ = (
        "index",
        "process",
        "sock",
        "fd",
        "inflight",
        "held",
        "known",
        "out",
        "out_size",
        "inbox",
        "ready",
        "retiring",
        "stopped",
        "dispatched",
        "load",
        "eof",
        "eof_at",
        "lines",
        "tickets",
        "running_since",
        "overdue",
        "timed_out",
    )

    def __init__(
        self,
        index: int,
        process: _launch.Process,
        sock: socket.socket,
        boot: bytes,
        lines: _launch.Lines,
    ) -> None:
        self.index = index
        self.process = process
        self.sock = sock
        self.fd = sock.fileno()
        self.lines = lines  # the parent's ends of its ticket pipe and life line
        self.tickets: list[int] = []  # ids of units assigned, tickets not yet written
        # When the unit at the head of inflight could start (the previous one ended).
        self.running_since = 0.0
        self.overdue = False  # its running unit is late: its queue was taken back
        self.timed_out: Unit | None = None  # the unit it was killed for (task_timeout)
        self.inflight: collections.deque[Unit] = collections.deque()
        # Until it is ready: one unit kept for it, not sent (see Dispatcher._hand_out in _dispatch).
        self.held: Unit | None = None
        self.known: collections.OrderedDict[bytes, None] = collections.OrderedDict()
        self.out: collections.deque[bytes | bytearray | memoryview] = collections.deque()
        self.out_size = 0
        if boot:
            self.out.append(boot)
            self.out_size = len(boot)
        self.inbox = Inbox()
        self.ready = False
        self.retiring = False  # got its last unit (maxtasksperchild): a stop frame follows
        self.stopped = False  # a stop frame was queued
        self.dispatched = 0
        self.load = 0.0  # estimated seconds of its units, running one included
        self.eof = False
        self.eof_at = 0.0


class Inbox:
    """Splits the bytes read from a socket into frames (bodies after the length)."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def feed(self, chunk: bytes) -> list[Any]:
        unpack = P.LENGTH.unpack_from
        frames: list[Any] = []
        if not self.buf:
            # The usual case: parse the fresh chunk in place, no copies.
            view = memoryview(chunk)
            pos, end = 0, len(chunk)
            while end - pos >= 8:
                stop = pos + 8 + unpack(chunk, pos)[0]
                if stop > end:
                    break
                frames.append(view[pos + 8 : stop])
                pos = stop
            if pos < end:
                self.buf += view[pos:]
            return frames
        buf = self.buf
        buf += chunk
        pos, end = 0, len(buf)
        while end - pos >= 8:
            stop = pos + 8 + unpack(buf, pos)[0]
            if stop > end:
                break
            frames.append(bytes(buf[pos + 8 : stop]))
            pos = stop
        if pos:
            del buf[:pos]
        return frames


def first(out: collections.deque[Any], n: int) -> list[Any]:
    """The first ``n`` frames queued out, for one ``sendmsg``."""
    if len(out) <= n:
        return list(out)
    return list(itertools.islice(out, n))


def readable(fd: int) -> bool:
    """Whether ``fd`` is readable now (a sentinel: its process has ended)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))
