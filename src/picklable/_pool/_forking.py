"""What pickles the objects a worker gets at its start (see :mod:`._inherit`):
picklable's Pickler with ``multiprocessing.reduction.ForkingPickler``'s reducers,
and the error that names the initializer argument that cannot go.

A module of its own so that :mod:`._inherit`, which a worker imports at its
start, does not import the pickler (issue 29: a worker's start-up).
"""

from __future__ import annotations

import collections
import copyreg
import io
from typing import Any

from .._pickler import Pickler
from .._signing import sign

__all__ = ["InheritingPickler", "dump_inheriting", "start_error"]


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

    Call it inside :func:`._inherit.spawning`: multiprocessing's objects refuse to pickle
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
