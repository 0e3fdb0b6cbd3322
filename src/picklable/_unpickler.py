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
    """Translate a load failure into what is missing and how to fix it."""
    if isinstance(exc, ModuleNotFoundError):
        return UnpicklingError(
            f"Cannot load: module {exc.name!r} is not importable here. Fix: install it "
            "in the receiving environment, or ship the sender's module by value with "
            "picklable.register_by_value().",
            reason=f"module {exc.name!r} not importable",
            hint="install it in the receiving environment",
        )
    if isinstance(exc, AttributeError) and "Can't get attribute" in str(exc):
        return UnpicklingError(
            f"Cannot load: {exc}. The sender had this attribute; this environment does "
            "not (renamed, or another version of the package). Fix: install the same "
            "version on both sides.",
            reason=str(exc),
            hint="install the same version on both sides",
        )
    if isinstance(exc, (pickle.UnpicklingError, EOFError)):
        kind = type(exc).__name__
        return UnpicklingError(
            f"Cannot load: the payload is damaged or not a pickle ({kind}: {exc}).",
            reason="damaged or truncated payload",
            hint="check that the bytes arrive unchanged",
        )
    kind = f"{type(exc).__module__}.{type(exc).__qualname__}".removeprefix("builtins.")
    return UnpicklingError(
        f"Cannot load: rebuilding an object raised {kind}: {exc}",
        reason=f"{kind} while rebuilding",
        hint="see the chained exception",
    )
