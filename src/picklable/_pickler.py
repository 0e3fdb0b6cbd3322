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

import copyreg
import io
import pickle
import sys
from collections.abc import Callable
from typing import IO, Any

from . import _locator
from ._reducers import HANDLERS, handler_for, reduce_class, reduce_function
from ._unpickler import signing_module as _signing
from .exceptions import PicklingError

DEFAULT_PROTOCOL = 5


def resolve_protocol(protocol: int | None) -> int:
    """The protocol a pickler of ours uses: 5 by default, negative for the highest."""
    if protocol is None:
        return DEFAULT_PROTOCOL
    if protocol < 0:
        return pickle.HIGHEST_PROTOCOL
    return protocol


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

    # Slots, not a __dict__: dumps resets per-payload state after every call,
    # and a slot store costs a fraction of an instance-dict store on a
    # subclass of a C type. (Subclasses get a __dict__ as usual.)
    __slots__ = ("protocol", "_payload", "_table")

    def __init__(
        self,
        file: IO[bytes],
        protocol: int | None = None,
        *,
        fix_imports: bool = True,
        buffer_callback: Callable[[pickle.PickleBuffer], Any] | None = None,
    ) -> None:
        protocol = resolve_protocol(protocol)
        super().__init__(
            file,
            protocol,
            fix_imports=fix_imports,
            buffer_callback=buffer_callback,
        )
        self._start(protocol)

    def _start(self, protocol: int) -> None:
        """Set what the reducers read (shared with the deterministic pickler)."""
        self.protocol = protocol
        self._payload: PayloadState | None = None
        # The dispatch table pickle consults after the hook (the plain-instance
        # reducer defers to its entries): a subclass's class attribute, or
        # copyreg's. An instance's own table comes through the setter below.
        table = getattr(type(self), "dispatch_table", None)
        self._table: Any = _COPYREG_TABLE if table is None or table is _TABLE_PROPERTY else table

    @property
    def dispatch_table(self) -> Any:
        """Reducers by type for this pickler, as for :class:`pickle.Pickler`.

        Unset (``AttributeError``) until assigned: pickle then uses
        ``copyreg.dispatch_table``.
        """
        table = self._table
        if table is _COPYREG_TABLE:
            raise AttributeError("dispatch_table")
        return table

    @dispatch_table.setter
    def dispatch_table(self, table: Any) -> None:
        _C_TABLE.__set__(self, table)  # the field the C pickler reads
        self._table = table

    def reducer_override(
        self,
        obj: Any,
        _handlers: Any = HANDLERS,
        _type: Any = type,
        _classify: Any = handler_for,
        _by_name: Any = _locator.by_name.get,
        _id: Any = id,
        _function: Any = reduce_function,
        _class: Any = reduce_class,
    ) -> Any:
        # Called for every non-builtin object (each of 10,000 dataclass
        # instances, four times per numpy array): locals, dict hits, no
        # attribute lookups. A function or class already found importable by
        # its own name goes to pickle's save_global without a second frame.
        try:
            handler = _handlers[_type(obj)]
        except KeyError:
            handler = _classify(_type(obj))
        if handler is None or (
            (handler is _function or handler is _class) and _by_name(_id(obj)) is obj
        ):
            return NotImplemented
        return handler(self, obj)

    def _state(self) -> PayloadState:
        """The state the reducers of this payload share (made on first need)."""
        state = self._payload
        if state is None:
            state = self._payload = PayloadState()
        return state


# The C pickler's own dispatch_table field, the table it falls back on, and
# the property above that fronts both.
_C_TABLE: Any = vars(pickle.Pickler)["dispatch_table"]
_COPYREG_TABLE = copyreg.dispatch_table
_TABLE_PROPERTY = vars(Pickler)["dispatch_table"]


class PayloadState:
    """What the reducers of one payload share; a by-value function needs it,
    plain data never does (so a payload without functions never makes one)."""

    __slots__ = ("globals_map", "globals_values", "deferred_cells")

    def __init__(self) -> None:
        # id(module globals) -> the shipped globals dict of that namespace
        self.globals_map: dict[int, dict[str, Any]] = {}
        # id(module globals) -> names and values those shipped globals hold once loaded
        self.globals_values: dict[int, dict[str, Any]] = {}
        # ids of closure cells whose contents a function's state fills in
        self.deferred_cells: set[int] = set()

    def ship_globals(self, home: dict[str, Any], refs: dict[str, Any]) -> dict[str, Any]:
        """Make ``refs`` the shipped globals of ``home`` (pickled as they are now)."""
        self.globals_map[id(home)] = refs
        self.globals_values[id(home)] = dict(refs)
        return refs


class _Sink:
    """A write target that keeps the chunks: cheaper to reset than a BytesIO.

    A pooled pickler is made once, with :meth:`forward_buffer` as its buffer
    callback; each ``dumps`` sets the caller's callback here.
    """

    __slots__ = ("chunks", "write", "buffer_callback")

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.write = self.chunks.append
        self.buffer_callback: Callable[[pickle.PickleBuffer], Any] | None = None

    def forward_buffer(self, buffer: pickle.PickleBuffer) -> Any:
        callback = self.buffer_callback
        if callback is None:
            return True  # in band: the same bytes as with no callback at all
        return callback(buffer)


# Idle default-protocol picklers, each with its sink. dumps pops one (so threads
# and re-entrant calls never share) and puts it back clean.
_idle: list[tuple[Pickler, _Sink]] = []
_IDLE_LIMIT = 16
# The C pickler keeps an output buffer as large as its largest payload and
# reallocates it at every dump: a pickler that wrote more than this is dropped.
_REUSE_MAX_BYTES = 1 << 20


def dumps(
    obj: Any,
    protocol: int | None = None,
    buffer_callback: Callable[[pickle.PickleBuffer], Any] | None = None,
    key: bytes | None = None,
    deterministic: bool = False,
) -> bytes:
    # The options are not keyword-only on purpose: CPython fills each missing
    # keyword-only default with a dict lookup, positional ones from a tuple,
    # and this call is measured against pickle.dumps. Pass them by keyword.
    """Serialize ``obj`` to bytes (see :class:`Pickler` for the rule).

    Parameters
    ----------
    obj:
        What to ship.
    protocol:
        Pickle protocol; defaults to 5.
    buffer_callback:
        As for :func:`pickle.dumps`: out-of-band buffers.
    key:
        Sign the payload with this key (bytes, at least 16 of them; see
        :func:`picklable.new_key`): ``loads`` then needs the same key and
        refuses a payload that was altered. Adds 49 bytes (see
        :mod:`picklable._signing`).
    deterministic:
        Give the same bytes for the same object in every process and under
        every ``PYTHONHASHSEED`` (sorted sets, canonical code bytes,
        content-derived class ids; see :mod:`picklable._deterministic`).
        Several times slower: it runs the pure-Python pickler.

    Returns
    -------
    bytes
        The payload.

    Raises
    ------
    picklable.PicklingError
        With ``.path``, ``.reason`` and ``.hint`` naming what cannot ship.
    TypeError, ValueError
        ``key`` is not bytes, or shorter than 16 bytes.
    """
    if key is not None or deterministic or (protocol is not None and protocol != DEFAULT_PROTOCOL):
        return _dumps_with(obj, protocol, buffer_callback, key, deterministic)
    # The success path is what pickle.dumps is measured against: no finally,
    # and the resets are slot stores; failures leave through _dump_failed.
    try:
        pickler, sink = _idle.pop()
    except IndexError:
        sink = _Sink()
        pickler = Pickler(sink, buffer_callback=sink.forward_buffer)  # type: ignore[arg-type]
    if buffer_callback is not None:
        sink.buffer_callback = buffer_callback
    chunks = sink.chunks
    try:
        pickler.dump(obj)
    except Exception as exc:
        # The pickler is not put back: it may hold a half-written payload.
        return _dump_failed(obj, pickler, chunks, exc)
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    chunks.clear()
    pickler.clear_memo()
    pickler._payload = None
    sink.buffer_callback = None
    if len(_idle) < _IDLE_LIMIT and len(data) <= _REUSE_MAX_BYTES:
        _idle.append((pickler, sink))
    return data


def _dump_failed(obj: Any, pickler: Pickler, chunks: list[bytes], exc: Exception) -> bytes:
    """The rest of :func:`dumps` after ``pickler.dump(obj)`` raised ``exc``.

    A cached "importable by name" answer may have gone stale (a module
    attribute reassigned): forget them all and try once more. Otherwise, or if
    that fails too, raise a :class:`PicklingError` that names the path.
    """
    if isinstance(exc, RecursionError):
        raise _recursion_error(obj) from exc
    if isinstance(exc, PicklingError) and (exc.path or isinstance(exc.__cause__, RecursionError)):
        raise exc  # already located by a reducer, or too deep to walk again
    if not _locator.by_name:
        from ._diagnose import pickling_error

        raise pickling_error(obj, exc) from exc
    _locator.by_name.clear()
    chunks.clear()
    pickler.clear_memo()
    pickler._payload = None
    _dump(obj, pickler)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _dumps_with(
    obj: Any,
    protocol: int | None,
    buffer_callback: Callable[[pickle.PickleBuffer], Any] | None,
    key: Any,
    deterministic: bool,
) -> bytes:
    """dumps with a key, deterministic bytes or another protocol (the slower branch)."""
    signing_key = None
    oob: list[pickle.PickleBuffer] = []
    if key is not None:
        signing_key = _signing().check_key(key)
        if buffer_callback is not None:
            user_callback = buffer_callback

            def buffer_callback(buffer: pickle.PickleBuffer) -> Any:
                in_band = user_callback(buffer)
                if not in_band:
                    oob.append(buffer)  # the signature covers it
                return in_band

    if (
        not deterministic
        and buffer_callback is None
        and (protocol is None or protocol == DEFAULT_PROTOCOL)
    ):
        data = dumps(obj)  # signed, otherwise the default: the pooled picklers
    else:
        if deterministic:
            from ._deterministic import DeterministicPickler

            make: Any = DeterministicPickler
        else:
            make = Pickler
        buffer = io.BytesIO()
        _dump_fresh(
            obj,
            buffer,
            lambda file: make(file, protocol, buffer_callback=buffer_callback),
            oob.clear,  # a retry calls the callback for every buffer again
        )
        data = buffer.getvalue()
    if signing_key is None:
        return data
    signed: bytes = _signing().sign(signing_key, data, oob)
    return signed


def dump(
    obj: Any,
    file: IO[bytes],
    protocol: int | None = None,
    *,
    buffer_callback: Callable[[pickle.PickleBuffer], Any] | None = None,
    key: bytes | None = None,
    deterministic: bool = False,
) -> None:
    """Serialize ``obj`` into the binary ``file``.

    Parameters are as for :func:`dumps`. Without ``key`` and ``deterministic``
    the pickler writes into ``file`` as it goes; with either, the payload is
    made in memory first and written in one call.

    Raises
    ------
    picklable.PicklingError
        As for :func:`dumps`.
    """
    if key is not None or deterministic:
        file.write(_dumps_with(obj, protocol, buffer_callback, key, deterministic))
        return
    _dump_fresh(obj, file, lambda out: Pickler(out, protocol, buffer_callback=buffer_callback))


class _Watched:
    """Forwards writes to a file and remembers whether any happened."""

    __slots__ = ("file", "written")

    def __init__(self, file: IO[bytes]) -> None:
        self.file = file
        self.written = False

    def write(self, data: Any) -> Any:
        self.written = True
        return self.file.write(data)


def _dump_fresh(
    obj: Any,
    file: IO[bytes],
    make_pickler: Callable[[Any], Any],
    on_retry: Callable[[], Any] | None = None,
) -> None:
    """Pickle ``obj`` into ``file`` with a new pickler.

    As in :func:`dumps`, a failure while "importable by name" answers are cached
    gets one retry with the cache cleared (a module attribute reassigned since
    makes pickle refuse the stale reference), provided the file can be put back
    as it was: nothing written yet (the C pickler writes in 64 KiB frames), or
    seekable.
    """
    start = None
    try:
        if file.seekable():
            start = file.tell()
    except (AttributeError, OSError, ValueError):
        start = None
    watched = _Watched(file)
    try:
        make_pickler(watched).dump(obj)
        return
    except RecursionError as exc:
        raise _recursion_error(obj) from exc
    except Exception as exc:
        if not _locator.by_name or (watched.written and start is None):
            from ._diagnose import pickling_error

            raise pickling_error(obj, exc) from exc
    if watched.written:
        assert start is not None
        file.seek(start)
        file.truncate()
    _locator.by_name.clear()
    if on_retry is not None:
        on_retry()
    _dump(obj, make_pickler(file))


def _dump(obj: Any, pickler: Pickler) -> None:
    try:
        pickler.dump(obj)
    except RecursionError as exc:
        raise _recursion_error(obj) from exc
    except Exception as exc:
        from ._diagnose import pickling_error

        raise pickling_error(obj, exc) from exc


def _recursion_error(obj: Any) -> PicklingError:
    return PicklingError(
        f"Cannot pickle {type(obj).__module__}.{type(obj).__qualname__}: the object "
        "graph is nested deeper than the recursion limit "
        f"({sys.getrecursionlimit()}). Fix: flatten the structure, or "
        "raise the limit with sys.setrecursionlimit() on both sides.",
        type_name=f"{type(obj).__module__}.{type(obj).__qualname__}",
        reason="nested deeper than the recursion limit",
        hint="flatten the structure or raise sys.setrecursionlimit() on both sides",
    )
