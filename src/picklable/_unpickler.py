"""Loading: stdlib's C unpickler, with errors that say what is missing here.

Payloads only name importable callables (``types.FunctionType``,
``marshal.loads``, ``picklable._reconstruct._resolve``, ...), so plain
``pickle.loads`` loads them too wherever picklable is importable.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from typing import IO, Any

from .exceptions import UnpicklingError

__all__ = ["Unpickler", "load", "loads"]

_loads = pickle.loads


class Unpickler(pickle.Unpickler):
    """:class:`pickle.Unpickler` (C), exported for symmetry with :class:`Pickler`."""


def loads(data: bytes | bytearray | memoryview, /, *, buffers: Iterable[Any] | None = None) -> Any:
    """Load an object from ``data``.

    Raises
    ------
    picklable.UnpicklingError
        Naming what could not be imported or built in this interpreter.
    """
    try:
        if buffers is None:
            return _loads(data)  # positional: the cheapest call into C
        return _loads(data, buffers=buffers)
    except UnpicklingError:
        raise
    except Exception as exc:
        raise unpickling_error(exc) from exc


def load(file: IO[bytes], *, buffers: Iterable[Any] | None = None) -> Any:
    """Load an object from the binary ``file``."""
    try:
        return Unpickler(file, buffers=buffers).load()
    except UnpicklingError:
        raise
    except Exception as exc:
        raise unpickling_error(exc) from exc


def unpickling_error(exc: BaseException) -> UnpicklingError:
    """Translate a load failure into what is missing here and how to fix it.

    Parameters
    ----------
    exc:
        What the unpickler raised (its traceback names the code that failed).

    Returns
    -------
    UnpicklingError
        Saying which module, attribute or rebuild failed here, with the fix
        (``.reason`` and ``.hint`` too); chain it to ``exc``.
    """
    from ._hints import load_failure

    message, reason, hint = load_failure(exc)
    return UnpicklingError(message, reason=reason, hint=hint)
