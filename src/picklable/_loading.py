"""The front door's loading half: ``loads`` and ``load``.

Apart from :mod:`picklable._api` (``dumps``, ``dump``) so that a process that
only loads payloads, a pool worker until a result needs picklable's pickler,
imports neither the pickler nor its reducers (issue 29: a worker's start-up).
What it imports is the loading side alone: the C unpickler, the guarded one
for ``allowed=`` (on first use), signing (on first use) and the errors users
read: a failure to load says what is missing here, as an
:class:`~picklable.UnpicklingError` that is also of its cause's type
(``ModuleNotFoundError``, ``AttributeError``, ``EOFError``...), raised with
picklable's internal chain suppressed (see :mod:`picklable._api`).
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Iterable
from typing import IO, Any

from ._compat import chained
from ._unpickler import Unpickler, unpickling_error
from .exceptions import UnpicklingError

__all__ = ["load", "loads", "signing_module"]

_loads = pickle.loads

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


def loads(
    data: bytes | bytearray | memoryview,
    /,
    buffers: Iterable[Any] | None = None,
    key: bytes | None = None,
    allowed: Iterable[Any] | None = None,
    fix_imports: bool | None = None,
    encoding: str | None = None,
    errors: str | None = None,
) -> Any:
    # The options are not keyword-only on purpose: CPython fills each missing
    # keyword-only default with a dict lookup, positional ones from a tuple,
    # and this call is measured against pickle.loads. Pass them by keyword.
    # pickle's own three default to None here: one identity test each.
    """Load an object from ``data``.

    Without ``allowed=`` this is :func:`pickle.loads` (the C unpickler): the
    payload runs whatever code it names, and nothing bounds what it builds. A
    200,000-deep nested tuple used as a dict key overflows the C stack when it is
    hashed (a crash, not an exception), a memo index makes the unpickler allocate
    16 bytes per index at once, and the sizes it announces are allocated as
    announced. ``key=`` tells who made a payload; ``allowed=`` reads it with a
    guarded unpickler that refuses names, calls and writes outside the list, and
    nesting deeper than ``picklable._allow.MAX_DEPTH``.

    .. versionchanged:: 0.2.0
        ``fix_imports``, ``encoding`` and ``errors``; errors keep their cause's type.

    .. versionchanged:: 0.2.0
        Under ``allowed=``, a module admits its classes, data and rebuild
        functions; other functions must be named exactly, and names that can run
        code only with ``Policy([...], unsafe=True)``.

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
        Module names (each covers its submodules) and exact names of objects
        (``"numpy.fromfile"``), or a :class:`picklable.Policy`. A module admits
        its classes, its data and the rebuild functions its objects' reductions
        name; any other function or method must be named exactly; a name that
        can run code (``eval``, ``os``, ``subprocess``, ``numpy.load``...) is
        refused even when named, unless ``Policy([...], unsafe=True)``. Code
        shipped by value is refused unless the policy opts in
        (``Policy([...], by_value_code=True)``). The payload is then read by a
        guarded pure-Python unpickler (several times slower than the default);
        see docs/safety.md for exactly what it guarantees.
    fix_imports, encoding, errors:
        As for :func:`pickle.loads` (for pickles made by Python 2:
        ``encoding="latin1"`` or ``"bytes"``); default ``True``, ``"ASCII"``,
        ``"strict"``.

    Returns
    -------
    The object.

    Raises
    ------
    picklable.UnpicklingError
        Naming what could not be imported or built in this interpreter, or why
        the payload was refused; also of its cause's type when loading failed
        with another exception (``ModuleNotFoundError``, ``AttributeError``,
        ``EOFError``, ...), so that what catches ``pickle.loads``'s errors
        catches it.
    """
    if key is None and allowed is None and encoding is None and errors is None:
        try:
            if buffers is None and fix_imports is None:
                return _loads(data)  # positional: the cheapest call into C
            return _loads(data, buffers=buffers, fix_imports=fix_imports is not False)
        except UnpicklingError:
            raise
        except Exception as exc:
            error = _load_error(exc, data)
        # Outside the handler: one traceback (see the module doc)
        raise error
    options = _unpickler_options(fix_imports, encoding, errors)
    return _loads_checked(data, buffers, key, allowed, options)


def _unpickler_options(
    fix_imports: bool | None, encoding: str | None, errors: str | None
) -> dict[str, Any]:
    """pickle's own loading options, with their defaults filled in."""
    return {
        "fix_imports": fix_imports is not False,
        "encoding": "ASCII" if encoding is None else encoding,
        "errors": "strict" if errors is None else errors,
    }


def _loads_checked(
    data: Any,
    buffers: Iterable[Any] | None,
    key: Any,
    allowed: Iterable[Any] | None,
    options: dict[str, Any],
) -> Any:
    """loads with a key, an allow-list or pickle's options (bad options raise
    TypeError/ValueError)."""
    policy = None
    if allowed is not None:
        from ._allow import Policy

        policy = allowed if isinstance(allowed, Policy) else Policy(allowed)
    if key is not None:
        signing = signing_module()
        data, buffers = signing.verify(signing.check_key(key), data, buffers)
    try:
        if policy is not None:
            return Unpickler(io.BytesIO(data), buffers=buffers, allowed=policy, **options).load()
        return _loads(data, buffers=buffers, **options)
    except UnpicklingError:
        raise
    except Exception as exc:
        error = chained(unpickling_error(exc, data), exc)
    raise error


def _load_error(exc: Exception, data: Any) -> BaseException:
    if isinstance(exc, pickle.UnpicklingError):
        signing = signing_module()
        if signing.is_signed(data):
            error: UnpicklingError = signing.signed_without_key()
            return chained(error, exc)
    return chained(unpickling_error(exc, data), exc)


def load(
    file: IO[bytes],
    *,
    buffers: Iterable[Any] | None = None,
    key: bytes | None = None,
    allowed: Iterable[Any] | None = None,
    fix_imports: bool = True,
    encoding: str = "ASCII",
    errors: str = "strict",
    max_size: int | None = None,
) -> Any:
    """Load an object from the binary ``file`` (one payload; the file stays open).

    .. versionchanged:: 0.2.0
        ``fix_imports``, ``encoding`` and ``errors``.

    Parameters are as for :func:`loads`. With ``key``, the signed payload is
    read and checked before loading: its header says how long it is, and the
    pickle is read in bounded chunks and fed to the signature as it arrives.

    .. versionchanged:: 0.2.0
       ``max_size``; signed payloads are read in bounded chunks.

    Parameters
    ----------
    max_size:
        With ``key``: the largest signed pickle to read, in bytes (default
        :data:`picklable._signing.MAX_STREAM_SIZE`, 1 GiB). A header announcing
        more is refused before anything else is read: the header's length
        cannot be checked before the pickle it covers has arrived.

    Raises
    ------
    picklable.UnpicklingError
        As for :func:`loads` (at the end of the file: also an ``EOFError``, as
        :func:`pickle.load` raises); with ``key``, also a payload larger than
        ``max_size``.
    OSError
        Reading ``file`` failed.
    """
    options: dict[str, Any] = {"fix_imports": fix_imports, "encoding": encoding, "errors": errors}
    if key is not None:
        signing = signing_module()
        checked = signing.check_key(key)
        limit = signing.MAX_STREAM_SIZE if max_size is None else max_size
        data, buffers = signing.read_verified(file, checked, buffers, limit)
        return _loads_checked(data, buffers, None, allowed, options)
    unpickler = Unpickler(file, buffers=buffers, allowed=allowed, **options)
    try:
        return unpickler.load()
    except UnpicklingError:
        raise
    except Exception as exc:
        if isinstance(exc, pickle.UnpicklingError) and str(exc) == "invalid load key, '\\x00'.":
            error = chained(signing_module().signed_without_key(), exc)
        else:
            error = chained(unpickling_error(exc), exc)
    raise error
