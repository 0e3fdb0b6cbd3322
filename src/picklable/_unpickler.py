"""The Unpickler: stdlib's C unpickler, with errors that say what is missing here.

Payloads only name importable callables (``types.FunctionType``,
``marshal.loads``, ``picklable._reconstruct._resolve``, ...), so plain
``pickle.loads`` loads them too wherever picklable is importable. With
``allowed=`` the unpickler only admits objects of the listed modules
(:mod:`picklable._allow`: defence in depth, not a sandbox); without it, it is
the C unpickler unchanged. ``loads`` and ``load`` live in :mod:`picklable._api`.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from typing import IO, Any

from .exceptions import UnpicklingError, make_combined

__all__ = ["Unpickler", "unpickling_error"]


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
        (``.reason`` and ``.hint`` too); also of ``exc``'s type when that is
        not a pickle error (``ModuleNotFoundError``, ``EOFError``, a
        ``__setstate__``'s ``ValueError``: see
        :func:`picklable.exceptions.combined`). Chain it to ``exc``.
    """
    from ._hints import load_failure

    message, reason, hint = load_failure(exc)
    error = None
    if isinstance(exc, Exception) and not isinstance(exc, pickle.UnpicklingError):
        error = make_combined(UnpicklingError, type(exc), message, reason=reason, hint=hint)
    if error is None:
        return UnpicklingError(message, reason=reason, hint=hint)
    if isinstance(exc, ImportError):
        error.name = exc.name  # type: ignore[attr-defined]  # an ImportError too
    return error
