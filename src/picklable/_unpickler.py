"""The Unpickler: stdlib's C unpickler, with errors that say what is missing here.

Payloads only name importable callables (``types.FunctionType``,
``marshal.loads``, ``picklable._reconstruct._resolve``, ...), so plain
``pickle.loads`` loads them too wherever picklable is importable. With
``allowed=`` every payload is read by :class:`picklable._allow.GuardedUnpickler`
(pickle's pure-Python unpickler, every opcode that reaches, calls or modifies
an object checked); without it, this is the C unpickler unchanged. ``loads``
and ``load`` live in :mod:`picklable._loading`.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from typing import IO, Any

from .exceptions import UnpicklingError, make_combined

__all__ = ["Unpickler", "unpickling_error"]


class Unpickler(pickle.Unpickler):
    """:class:`pickle.Unpickler` (C), with ``allowed=`` as for :func:`loads`.

    .. versionchanged:: 0.2.0
       With ``allowed=``, payloads are read by the guarded pure-Python unpickler.

    Parameters
    ----------
    file:
        A binary file to read payloads from.
    fix_imports, encoding, errors, buffers:
        As for :class:`pickle.Unpickler`.
    allowed:
        Module names whose objects the payloads may name (each covers its
        submodules), or a :class:`picklable.Policy`; see :func:`loads`. Without
        it, this is the C unpickler unchanged.
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
            from ._allow import GuardedUnpickler

            # The C unpickler cannot be checked opcode by opcode: an allow-listed
            # unpickler hands every load to the guarded one (an instance
            # attribute, so an unguarded unpickler pays nothing for it).
            guarded = GuardedUnpickler(
                file,
                allowed,
                fix_imports=fix_imports,
                encoding=encoding,
                errors=errors,
                buffers=buffers,
                persistent_load=getattr(self, "persistent_load", None),
            )
            self.load = guarded.load  # type: ignore[method-assign]
            self.find_class = guarded.find_class  # type: ignore[method-assign]


def unpickling_error(exc: BaseException, data: Any = None) -> UnpicklingError:
    """Translate a load failure into what is missing here and how to fix it.

    Parameters
    ----------
    exc:
        What the unpickler raised (its traceback names the code that failed).
    data:
        The payload, when it is at hand: a payload whose opcodes do not parse is
        called damaged, whatever the exception says.

    Returns
    -------
    UnpicklingError
        Saying which module, attribute or rebuild failed here, with the fix
        (``.reason`` and ``.hint`` too); also of ``exc``'s type when that is
        not a pickle error (``ModuleNotFoundError``, ``EOFError``, a
        ``__setstate__``'s ``ValueError``: see
        :func:`picklable.exceptions.combined`). Chain it to ``exc``.
    """
    from ._diagnostics.loading import load_failure

    message, reason, hint = load_failure(exc, data)
    error = None
    if isinstance(exc, Exception) and not isinstance(exc, pickle.UnpicklingError):
        error = make_combined(UnpicklingError, type(exc), message, reason=reason, hint=hint)
    if error is None:
        return UnpicklingError(message, reason=reason, hint=hint)
    if isinstance(exc, ImportError):
        error.name = exc.name  # type: ignore[attr-defined]  # an ImportError too
    return error
