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
  object there and then, with :class:`InheritingPickler` (picklable's Pickler with
  ``ForkingPickler``'s reducers) and the pool's signing key. Under fork it is not
  pickled at all: the child has the very objects.
* :class:`Spawning` stands in for multiprocessing's ``Popen`` object during a
  spawn start: it collects the file descriptors the reducers hand to the child,
  which :mod:`._launch` passes on (``pass_fds`` keeps their numbers).

The worker side needs none of multiprocessing's parent machinery: it decodes the
payload with the pool's codec (which checks the signature first).
"""

from __future__ import annotations

import collections
import contextlib
import copyreg
import io
from collections.abc import Iterator
from typing import Any

from .._pickler import Pickler
from .._signing import sign

__all__ = ["InheritedFd", "InheritingPickler", "Spawning", "StartPayload", "spawning"]


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


def _table() -> Any:
    from multiprocessing.reduction import ForkingPickler

    # Live views: reducers registered later (sharedctypes registers one per ctypes
    # type it makes) are seen too; ForkingPickler's own come first, as there.
    return collections.ChainMap(ForkingPickler._extra_reducers, copyreg.dispatch_table)  # type: ignore[attr-defined]


class InheritingPickler(Pickler):
    """picklable's Pickler with ``multiprocessing.reduction.ForkingPickler``'s reducers.

    Objects that multiprocessing ships by inheritance (Connection, socket, the
    Arena of a shared value) reduce as multiprocessing does; everything else
    follows picklable's rule (lambdas, closures and ``__main__`` objects ship).
    """

    def __init__(self, file: Any) -> None:
        super().__init__(file)
        self.dispatch_table = _table()


def dump_inheriting(obj: Any, key: bytes) -> bytes:
    """Pickle ``obj`` with :class:`InheritingPickler` and sign it with ``key``.

    Call it inside :func:`spawning`: multiprocessing's objects refuse to pickle
    anywhere else. The pool's :meth:`~._protocol.Codec.encode_inherited`.

    Raises
    ------
    Exception
        What the pickler raised.
    """
    buffer = io.BytesIO()
    InheritingPickler(buffer).dump(obj)
    return sign(key, buffer.getvalue())


def start_error(initializer: Any, initargs: tuple[Any, ...], exc: Exception) -> Exception:
    """The error for an initializer or initargs that cannot reach a worker.

    Each piece is tried alone, so the error names the argument that fails
    (the diagnosis walk pickles the way ``dumps`` does, where a multiprocessing
    queue elsewhere in the arguments would be blamed instead).
    """
    from .._diagnostics.errors import located_error, pickling_error

    pieces = [("the pool's initializer", initializer)]
    pieces += [(f"initargs[{i}]", arg) for i, arg in enumerate(initargs)]
    for name, piece in pieces:
        try:
            InheritingPickler(io.BytesIO()).dump(piece)
        except Exception as piece_exc:
            if "created in a fork context" in str(piece_exc):
                reason = (
                    "it was made by multiprocessing's fork context, and the pool starts its "
                    "workers with another start method"
                )
                hint = (
                    "make it with the pool's start method, e.g. "
                    "multiprocessing.get_context('spawn').Queue(), or start the pool with "
                    "context='fork'"
                )
                what = f"{type(piece).__module__}.{type(piece).__qualname__}"
                return located_error(what, name, reason, hint)
            return pickling_error(piece, piece_exc, name=name)
    return pickling_error((initializer, initargs), exc, name="(initializer, initargs)")


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
            initializer, initargs = self.value
            raise start_error(initializer, initargs, exc) from exc

    def __reduce__(self) -> tuple[Any, ...]:
        return (StartPayload, (None, self.data if self.data is not None else self._dump()))
