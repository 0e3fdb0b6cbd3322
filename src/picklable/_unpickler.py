"""Loading: stdlib's C unpickler, with errors that say what is missing here.

Payloads only name importable callables (``types.FunctionType``,
``marshal.loads``, ``picklable._reconstruct._resolve``, ...), so plain
``pickle.loads`` loads them too wherever picklable is importable.

Two options make loading stricter, both on their own slower branch (the default
call is one positional ``pickle.loads``):

``key=``
    The payload must be signed with that key (:mod:`picklable._signing`: a
    49-byte header with an HMAC-SHA256), checked before any opcode runs.
``allowed=``
    The payload may only name objects of these modules
    (:mod:`picklable._allow`): defence in depth, not a sandbox.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Iterable
from typing import IO, Any

from .exceptions import UnpicklingError

__all__ = ["Unpickler", "load", "loads"]

_loads = pickle.loads


class Unpickler(pickle.Unpickler):
    """:class:`pickle.Unpickler` (C), with ``allowed=`` as for :func:`loads`.

    Parameters
    ----------
    file:
        A binary file to read payloads from.
    fix_imports, encoding, errors, buffers:
        As for :class:`pickle.Unpickler`.
    allowed:
        Module names whose objects the payloads may name (each covers its
        submodules); see :func:`loads`. Without it, this is the C unpickler
        unchanged.
    """

    def __init__(
        self,
        file: IO[bytes],
        *,
        fix_imports: bool = True,
        encoding: str = "ASCII",
        errors: str = "strict",
        buffers: Iterable[Any] | None = None,
        allowed: Iterable[Any] | None = None,
    ) -> None:
        super().__init__(
            file, fix_imports=fix_imports, encoding=encoding, errors=errors, buffers=buffers
        )
        if allowed is not None:
            from ._allow import Policy

            policy = allowed if isinstance(allowed, Policy) else Policy(allowed)
            # The C unpickler looks find_class up on the instance for every
            # global: only an allow-listed unpickler pays for a Python one. The
            # policy also does the Python 2 name translation fix_imports asks for.
            self.find_class = policy.find_class  # type: ignore[method-assign]


def loads(
    data: bytes | bytearray | memoryview,
    /,
    buffers: Iterable[Any] | None = None,
    key: bytes | None = None,
    allowed: Iterable[Any] | None = None,
) -> Any:
    # The options are not keyword-only on purpose: CPython fills each missing
    # keyword-only default with a dict lookup, positional ones from a tuple,
    # and this call is measured against pickle.loads. Pass them by keyword.
    """Load an object from ``data``.

    Parameters
    ----------
    data:
        A payload made by :func:`picklable.dumps` (or any pickle).
    buffers:
        The out-of-band buffers, when the payload was made with a ``buffer_callback``.
    key:
        Require a payload signed with this key (``dumps(obj, key=key)``): an
        unsigned, truncated, altered or otherwise signed payload is refused
        before anything is unpickled.
    allowed:
        Module names whose objects the payload may name (each covers its
        submodules). Code shipped by value counts as its module's (``"__main__"``
        for a script's functions). Defence in depth, not a sandbox: see
        :mod:`picklable._allow`.

    Returns
    -------
    The object.

    Raises
    ------
    picklable.UnpicklingError
        Naming what could not be imported or built in this interpreter, or why
        the payload was refused.
    """
    if key is None and allowed is None:
        try:
            if buffers is None:
                return _loads(data)  # positional: the cheapest call into C
            return _loads(data, buffers=buffers)
        except UnpicklingError:
            raise
        except Exception as exc:
            raise _load_error(exc, data) from exc
    return _loads_checked(data, buffers, key, allowed)


_signing_module: Any = None


def signing_module() -> Any:
    """picklable._signing, imported on first use (dumps and loads call this).

    Kept in a global once an import statement has finished: a function-level
    import costs a microsecond per call (pools sign every frame), and
    ``sys.modules`` may hold the module half-initialised while another thread
    is still importing it.
    """
    global _signing_module
    module = _signing_module
    if module is None:
        from . import _signing as module

        _signing_module = module
    return module


def _loads_checked(
    data: Any, buffers: Iterable[Any] | None, key: Any, allowed: Iterable[Any] | None
) -> Any:
    """loads with a key and/or an allow-list (bad options raise TypeError/ValueError)."""
    policy = None
    if allowed is not None:
        from ._allow import Policy

        policy = allowed if isinstance(allowed, Policy) else Policy(allowed)
    if key is not None:
        signing = signing_module()
        data, buffers = signing.verify(signing.check_key(key), data, buffers)
    try:
        if policy is not None:
            return Unpickler(io.BytesIO(data), buffers=buffers, allowed=policy).load()
        if buffers is None:
            return _loads(data)
        return _loads(data, buffers=buffers)
    except UnpicklingError:
        raise
    except Exception as exc:
        raise unpickling_error(exc) from exc


def _load_error(exc: Exception, data: Any) -> UnpicklingError:
    if isinstance(exc, pickle.UnpicklingError):
        from ._signing import is_signed, signed_without_key

        if is_signed(data):
            return signed_without_key()
    return unpickling_error(exc)


def load(
    file: IO[bytes],
    *,
    buffers: Iterable[Any] | None = None,
    key: bytes | None = None,
    allowed: Iterable[Any] | None = None,
) -> Any:
    """Load an object from the binary ``file`` (one payload; the file stays open).

    Parameters are as for :func:`loads`. With ``key``, the signed payload is
    read whole (its header says how long it is) and checked before loading.

    Raises
    ------
    picklable.UnpicklingError
        As for :func:`loads`.
    """
    if key is not None:
        from ._signing import check_key, read_signed

        check_key(key)
        try:
            data = read_signed(file)
        except Exception as exc:
            raise unpickling_error(exc) from exc
        return _loads_checked(data, buffers, key, allowed)
    unpickler = Unpickler(file, buffers=buffers, allowed=allowed)
    try:
        return unpickler.load()
    except UnpicklingError:
        raise
    except Exception as exc:
        if isinstance(exc, pickle.UnpicklingError) and str(exc) == "invalid load key, '\\x00'.":
            from ._signing import signed_without_key

            raise signed_without_key() from exc
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
