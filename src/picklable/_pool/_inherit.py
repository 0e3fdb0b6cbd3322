"""What reaches workers when they start: the initializer, its arguments, and objects
that only travel by inheritance (multiprocessing queues, locks, events, semaphores,
shared values and arrays, pipes).

``multiprocessing`` lets such objects reach a child only while it is being started
(``assert_spawning``): it pickles the child's ``Process`` object with its
``ForkingPickler`` inside a *spawning* context, where their reducers duplicate file
descriptors for the child and name their semaphores. This module does the same for
a pool's workers:

* :class:`StartPayload` wraps ``(initializer, initargs)``. Pickled while a worker
  is being started (spawn: by :mod:`._launch` inside :func:`spawning`; forkserver:
  by multiprocessing itself, which pickles the worker's Process), it encodes its
  object there and then, with :class:`~._forking.InheritingPickler` (picklable's
  Pickler with ``ForkingPickler``'s reducers) and the pool's signing key. Under
  fork it is not pickled at all: the child has the very objects.
* :class:`Spawning` stands in for multiprocessing's ``Popen`` object during a
  spawn start: it collects the file descriptors the reducers hand to the child,
  which :mod:`._launch` passes on (``pass_fds`` keeps their numbers).

The worker side needs none of multiprocessing's parent machinery, nor the pickler
(:mod:`._forking` holds what pickles; a worker imports this module at its start):
it decodes the payload with the pool's codec (which checks the signature first).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

__all__ = ["InheritedFd", "Spawning", "StartPayload", "spawning"]


class InheritedFd:
    """A file descriptor passed to a spawned worker under the same number."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def detach(self) -> int:
        return self.fd

    def __reduce__(self) -> tuple[Any, ...]:
        return (InheritedFd, (self.fd,))


class Spawning:
    """What ``multiprocessing``'s reducers ask of the process being started.

    Attributes
    ----------
    fds:
        The descriptors to pass to the child, in the order they were asked for.
    """

    DupFd = InheritedFd

    def __init__(self) -> None:
        self.fds: list[int] = []

    def duplicate_for_child(self, fd: int) -> int:
        self.fds.append(fd)
        return fd


@contextlib.contextmanager
def spawning(popen: Any) -> Iterator[Any]:
    """Pickle inside multiprocessing's spawning context, as ``popen`` being started."""
    from multiprocessing import context

    context.set_spawning_popen(popen)
    try:
        yield popen
    finally:
        context.set_spawning_popen(None)


class StartPayload:
    """``(initializer, initargs)`` on their way to a worker (see the module doc).

    In the parent it holds the objects; pickled, it becomes the signed bytes of
    them; in a forked worker it is the parent's object itself.
    """

    __slots__ = ("value", "data", "codec")

    def __init__(self, value: Any = None, data: bytes | None = None, codec: Any = None) -> None:
        self.value = value
        self.data = data
        self.codec = codec  # the pool's (parent side only)

    def check(self) -> None:
        """Raise now what pickling at a worker's start would raise.

        Raises
        ------
        picklable.PicklingError
            The initializer or one of its arguments cannot reach a worker.
        """
        with spawning(Spawning()):
            self._dump()

    def load(self, codec: Any) -> Any:
        """The ``(initializer, initargs)`` pair, in the worker."""
        if self.data is None:
            return self.value  # forked: the parent's own objects
        return codec.decode(self.data)

    def _dump(self) -> bytes:
        # A codec of another kind (duck-typed: encode and decode only) encodes it
        # as it encodes everything else.
        encode = getattr(self.codec, "encode_inherited", self.codec.encode)
        try:
            data: bytes = encode(self.value)
            return data
        except Exception as exc:
            from ._forking import start_error

            initializer, initargs = self.value
            raise start_error(initializer, initargs, exc) from exc

    def __reduce__(self) -> tuple[Any, ...]:
        return (StartPayload, (None, self.data if self.data is not None else self._dump()))
