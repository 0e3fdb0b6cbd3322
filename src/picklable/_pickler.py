"""The Pickler: CPython's C pickler plus one ``reducer_override`` hook.

The C pickler saves None, bools, ints, floats, str, bytes, bytearray, tuples,
lists, dicts, sets and PickleBuffers itself, before it would call the hook:
plain data never runs Python code here. Everything else goes through
``reducer_override``, which dispatches on ``type(obj)`` (never ``isinstance``
first: proxies lie about their class) to the rule:

1. importable by its own ``__module__`` + ``__qualname__``: by reference;
2. found by the locator under another importable path: by reference via it;
3. a known wrapper kind: taken apart and rebuilt;
4. otherwise by value, with all its metadata;
5. failing that, a :class:`~picklable.PicklingError` that names the path.
"""

from __future__ import annotations

import io
import pickle
import threading
from collections.abc import Callable
from typing import IO, Any

from ._reconstruct import _check_interpreter, _interpreter_record
from ._reducers import HANDLERS
from .exceptions import PicklingError

DEFAULT_PROTOCOL = 5


class _Guard:
    """Reduces to the interpreter check that precedes a payload's first code object."""

    __slots__ = ()

    def __reduce__(self) -> tuple[Any, ...]:
        return (_check_interpreter, (_RECORD,))


_RECORD = _interpreter_record()
_GUARD = _Guard()


class Pickler(pickle.Pickler):
    """A :class:`pickle.Pickler` that ships any callable correctly.

    Usable wherever a pickler class is expected; loky loads it by module name
    (``LOKY_PICKLER=picklable``).

    Parameters
    ----------
    file:
        A binary file-like object with a ``write`` method.
    protocol:
        Pickle protocol; defaults to 5 (out-of-band buffers).
    fix_imports:
        As for :class:`pickle.Pickler`.
    buffer_callback:
        As for :class:`pickle.Pickler`: called with each
        :class:`pickle.PickleBuffer`; when it returns a false value the buffer
        travels out of band.
    """

    def __init__(
        self,
        file: IO[bytes],
        protocol: int | None = None,
        *,
        fix_imports: bool = True,
        buffer_callback: Callable[[pickle.PickleBuffer], Any] | None = None,
    ) -> None:
        if protocol is None:
            protocol = DEFAULT_PROTOCOL
        elif protocol < 0:
            protocol = pickle.HIGHEST_PROTOCOL
        super().__init__(
            file,
            protocol,
            fix_imports=fix_imports,
            buffer_callback=buffer_callback,
        )
        self.protocol = protocol
        self._globals_map: dict[int, dict[str, Any]] = {}
        self._deferred_cells: set[int] = set()
        self._guarded = False

    def reducer_override(self, obj: Any) -> Any:
        handler = HANDLERS[type(obj)]
        if handler is None:
            return NotImplemented
        return handler(self, obj)

    # State shared by the reducers of one payload ------------------------------

    def _shipped_globals(self, home: dict[str, Any]) -> dict[str, Any]:
        """The one globals dict that by-value functions of ``home`` share here."""
        shipped = self._globals_map.get(id(home))
        if shipped is None:
            shipped = self._globals_map[id(home)] = {}
        return shipped

    def _interpreter_guard(self) -> _Guard | None:
        if self._guarded:
            return None
        self._guarded = True
        return _GUARD


class _Reusable(threading.local):
    """One idle Pickler per thread, so a small ``dumps`` costs no set-up."""

    buffer: io.BytesIO | None = None
    pickler: Pickler | None = None
    busy: bool = False


_reusable = _Reusable()


def dumps(
    obj: Any,
    protocol: int | None = None,
    *,
    buffer_callback: Callable[[pickle.PickleBuffer], Any] | None = None,
) -> bytes:
    """Serialize ``obj`` to bytes (see :class:`Pickler` for the rule).

    Raises
    ------
    picklable.PicklingError
        With ``.path``, ``.reason`` and ``.hint`` naming what cannot ship.
    """
    if buffer_callback is None and protocol is None and not _reusable.busy:
        return _dumps_reusing(obj)
    buffer = io.BytesIO()
    _dump(obj, Pickler(buffer, protocol, buffer_callback=buffer_callback))
    return buffer.getvalue()


def _dumps_reusing(obj: Any) -> bytes:
    local = _reusable
    pickler = local.pickler
    if pickler is None:
        local.buffer = io.BytesIO()
        pickler = local.pickler = Pickler(local.buffer)
    buffer = local.buffer
    assert buffer is not None
    local.busy = True  # a reducer may call dumps again (an envelope): no sharing
    try:
        _dump(obj, pickler)
        return buffer.getvalue()
    finally:
        buffer.seek(0)
        buffer.truncate()
        pickler.clear_memo()
        pickler._globals_map.clear()
        pickler._deferred_cells.clear()
        pickler._guarded = False
        local.busy = False


def dump(
    obj: Any,
    file: IO[bytes],
    protocol: int | None = None,
    *,
    buffer_callback: Callable[[pickle.PickleBuffer], Any] | None = None,
) -> None:
    """Serialize ``obj`` into the binary ``file``."""
    _dump(obj, Pickler(file, protocol, buffer_callback=buffer_callback))


def _dump(obj: Any, pickler: Pickler) -> None:
    try:
        pickler.dump(obj)
    except RecursionError as exc:
        raise PicklingError(
            f"Cannot pickle {type(obj).__module__}.{type(obj).__qualname__}: the object "
            "graph is nested deeper than the recursion limit "
            f"({__import__('sys').getrecursionlimit()}). Fix: flatten the structure, or "
            "raise the limit with sys.setrecursionlimit() on both sides.",
            type_name=f"{type(obj).__module__}.{type(obj).__qualname__}",
            reason="nested deeper than the recursion limit",
            hint="flatten the structure or raise sys.setrecursionlimit() on both sides",
        ) from exc
    except Exception as exc:
        from ._diagnose import pickling_error

        raise pickling_error(obj, exc) from exc
