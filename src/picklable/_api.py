"""The front door: ``dumps`` and ``dump`` (``loads`` and ``load``, its loading
half, are :mod:`picklable._loading`'s, and importable from here too).

This is where the options meet: pooled picklers for the default protocol (a
``dumps`` call costs about what ``pickle.dumps`` costs), signing (``key=``,
:mod:`picklable._signing`), deterministic bytes (:mod:`picklable._deterministic`),
the allow-list (``allowed=``, :mod:`picklable._allow`), the one retry after a
stale "importable by name" answer, and the errors users read: a failure to
dump is located (:mod:`picklable._diagnostics.errors`) and raised as one
:class:`~picklable.PicklingError` that names the path, and that is also of the
type the pickler raised (``TypeError``, an object's own ``ValueError``...).

**One traceback per error.** The located error is raised with picklable's
internal chain (the C pickler's exception, the retry) suppressed: a failed
``dumps`` prints the caller's line, one frame of ``dumps`` and the message.
The exception the pickler raised stays reachable as ``__context__``.
``PICKLABLE_TRACEBACK=full`` in the environment prints the whole chain;
:func:`picklable.explain` tells every part of the object.

Signing, the deterministic pickler and the diagnostics are imported on first
use: a worker that only loads, and never fails, imports none of them.
"""

from __future__ import annotations

import io
import pickle
import types
from collections.abc import Callable
from typing import IO, Any

from . import _caches, _locator
from ._compat import C_RECURSION_APART, chained
from ._loading import load, loads, signing_module
from ._pickler import DEFAULT_PROTOCOL, Pickler, needs_check, with_interpreter_check
from ._reduce.context import DumpContext
from ._reduce.repeat import GIVE_UP, keep_payload, kept_or_facts, skipped, tries

__all__ = ["dump", "dumps", "load", "loads", "signing_module"]


def _dump_error(obj: Any, exc: BaseException) -> BaseException:
    """What a failed dump raises: located, of the type users catch, its chain
    suppressed (the diagnostics load on first failure)."""
    from ._diagnostics import errors

    if isinstance(exc, RecursionError):
        error = errors.recursion_error(obj, exc)
    elif _is_located(exc):
        error = exc  # already located by a reducer
    else:
        error = errors.dump_error(obj, exc)
    return chained(error, exc)


def _is_located(exc: BaseException) -> bool:
    path = getattr(exc, "path", None)
    return isinstance(path, str) and bool(path) and isinstance(exc, pickle.PicklingError)


def _stale_reference(exc: BaseException) -> bool:
    """Whether ``exc`` may come from a stale "importable by name" answer: the
    C pickler refusing a reference (its own PicklingError, "not the same
    object", "attribute lookup ... failed"), once names are cached."""
    return type(exc) is pickle.PicklingError and bool(_locator.by_name)


class _Sink:
    """A write target that keeps the chunks: cheaper to reset than a BytesIO.

    For a pooled pickler made with out-of-band buffers, :meth:`forward_buffer`
    is its buffer callback, and each ``dumps`` sets the caller's callback here.
    """

    __slots__ = ("chunks", "write", "buffer_callback")

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.write = self.chunks.append
        self.buffer_callback: Callable[[pickle.PickleBuffer], Any] | None = None

    def forward_buffer(self, buffer: pickle.PickleBuffer) -> Any:
        return self.buffer_callback(buffer)  # type: ignore[misc]  # set while dumping


class _PooledPickler(Pickler):
    """A pickler of :func:`dumps`'s pools, with its sink and the sink's chunks
    at hand (the pools hold picklers alone: a tuple per call costs more)."""

    __slots__ = ("sink", "chunks")

    def __init__(self, out_of_band: bool) -> None:
        sink = _Sink()
        forward = sink.forward_buffer if out_of_band else None
        super().__init__(sink, buffer_callback=forward)  # type: ignore[arg-type]
        self.sink = sink
        self.chunks = sink.chunks

    # The C pickler's own: dumps resets the payload itself, after reading it
    # (these run once per dumps call, where a Python frame would cost).
    clear_memo = pickle.Pickler.clear_memo
    memo = vars(pickle.Pickler)["memo"]


# Idle default-protocol picklers, without and with a buffer callback (one made
# with a callback calls it, a Python call, for every in-band buffer too: once
# per numpy array). dumps pops one, so threads and re-entrant calls never
# share, and puts it back clean.
_FUNCTION = types.FunctionType
_by_name = _locator.by_name.get
_pickle_dumps = pickle.dumps
_tries = tries.get
_idle: list[_PooledPickler] = []
_idle_out_of_band: list[_PooledPickler] = []
_caches.register("api.idle_picklers", _idle.clear)
_caches.register("api.idle_out_of_band_picklers", _idle_out_of_band.clear)
_IDLE_LIMIT = 16
# The C pickler keeps an output buffer as large as its largest payload and
# reallocates it at every dump: a pickler that wrote more than this is dropped.
_REUSE_MAX_BYTES = 1 << 20
# The C pickler's memo table never shrinks, and clear_memo() walks all of it:
# after one payload of 100,000 objects, every later dumps would pay ~300 us
# (issue 18). A memo entry costs at least two bytes of output, so a payload
# this short leaves a table whose clearing costs nothing; a longer one gets a
# new, minimal table (freeing the old one costs what one clear would).
_SMALL_MEMO_BYTES = 512
# A longer payload may still have memoized few objects (an 8 KB array: 8 entries,
# 32 slots): the C pickler's __sizeof__ counts its memo table's slots (16 bytes
# each, on every supported Python), so a table this small is cleared, cheaper than
# a new one (60 ns for __sizeof__ and the clear against 170-330 ns).
_SMALL_MEMO_SIZEOF = 1536


def dumps(
    obj: Any,
    protocol: int | None = None,
    buffer_callback: Callable[[pickle.PickleBuffer], Any] | None = None,
    key: bytes | None = None,
    deterministic: bool = False,
    scripts: str = "auto",
    fix_imports: bool = True,
) -> bytes:
    # The options are not keyword-only on purpose: CPython fills each missing
    # keyword-only default with a dict lookup, positional ones from a tuple,
    # and this call is measured against pickle.dumps. Pass them by keyword.
    # (protocol and buffer_callback are positional in cloudpickle.dumps too.)
    """Serialize ``obj`` to bytes (see :class:`Pickler` for the rule).

    .. versionchanged:: 0.2.0
        ``fix_imports``; errors are also of the type the pickler raised, with
        one traceback (``PICKLABLE_TRACEBACK=full`` for the internal chain).

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
    scripts:
        How objects of this program's script (``__main__``) travel: ``"auto"``
        (the receiver's own where it runs the same script, as a spawn worker
        does, else the copy that comes along), ``"reference"`` (the receivers
        run this script: no copy is sent) or ``"copy"`` (always a copy). See
        :class:`Pickler`.

        .. versionadded:: 0.2.0
    fix_imports:
        As for :func:`pickle.dumps` (protocols 0-2 only).

    Returns
    -------
    bytes
        The payload. One that carries code or classes by value is refused by
        another Python minor version before anything of it runs: the check of
        the interpreter that made it comes first (see docs/safety.md).

    Raises
    ------
    picklable.PicklingError
        With ``.path``, ``.reason`` and ``.hint`` naming what cannot ship. When
        the pickler failed because code raised another exception (``TypeError``
        from the C pickler, an object's ``__reduce__`` raising ``ValueError``),
        the error is also of that type (see :func:`picklable.exceptions.combined`).
    TypeError, ValueError
        ``key`` is not bytes, or shorter than 16 bytes.
    """
    if (
        key is not None
        or deterministic
        or (protocol is not None and protocol != DEFAULT_PROTOCOL)
        or scripts != "auto"
        or fix_imports is not True
    ):
        return _dumps_with(obj, protocol, buffer_callback, key, deterministic, scripts, fix_imports)
    if buffer_callback is not None:
        return _dumps_out_of_band(obj, buffer_callback)
    facts = None
    kind = type(obj)
    if kind is _FUNCTION or kind is type:
        if _by_name(obj) is obj:
            # Known importable by its own name: the hook would let pickle write
            # the reference, and pickle alone writes it sooner (a stale answer
            # raises there and again below, where dumps retries).
            try:
                return _pickle_dumps(obj, DEFAULT_PROTOCOL)
            except Exception:
                pass
        else:
            # A copy: the same bytes as at its last dump if nothing it is
            # made of changed (see _reduce.repeat; a pool's every submit).
            failed = _tries(id(obj), 0)
            if failed < GIVE_UP:
                facts = kept_or_facts(obj)
                if facts.__class__ is bytes:
                    return facts
            else:
                skipped(id(obj), failed)
    # The success path is what pickle.dumps is measured against: no finally,
    # each reset one store or call; failures leave through _dump_failed.
    try:
        pickler = _idle.pop()
    except IndexError:
        pickler = _PooledPickler(out_of_band=False)
    chunks = pickler.chunks
    try:
        pickler.dump(obj)
    except Exception as exc:
        # The pickler is not put back: it may hold a half-written payload.
        retried = _dump_failed(obj, pickler, chunks, exc)
        if isinstance(retried, bytes):
            return retried
        # One traceback: the cause is set (or not) as the module doc says.
        raise retried from retried.__cause__
    if len(chunks) == 1:
        data = chunks.pop()
        size = len(data)
        if size <= _SMALL_MEMO_BYTES or pickler.__sizeof__() <= _SMALL_MEMO_SIZEOF:
            pickler.clear_memo()
        else:
            pickler.memo = {}
    else:
        data = b"".join(chunks)
        chunks.clear()
        size = len(data)
        pickler.memo = {}
    payload = pickler.context.payload
    if payload is not None:
        if payload.bound and payload.first_value is not obj and needs_check(payload, obj):
            data = with_interpreter_check(data)
        pickler.context.payload = None
    if size <= _REUSE_MAX_BYTES and len(_idle) < _IDLE_LIMIT:
        _idle.append(pickler)
    if facts is not None:
        keep_payload(obj, facts, data)  # type: ignore[arg-type]
    return data


def _dumps_out_of_band(obj: Any, buffer_callback: Callable[[pickle.PickleBuffer], Any]) -> bytes:
    """:func:`dumps` with a buffer callback: the pooled picklers made with one.

    A second copy of dumps's few lines on purpose: folded into dumps, the
    checks for a callback made plain dumps slower (paired runs: 3-7% on an
    8 KB array, 2-4% on an int), and dumps is what pickle.dumps is measured
    against.
    """
    try:
        pickler = _idle_out_of_band.pop()
    except IndexError:
        pickler = _PooledPickler(out_of_band=True)
    sink = pickler.sink
    sink.buffer_callback = buffer_callback
    chunks = pickler.chunks
    try:
        pickler.dump(obj)
    except Exception as exc:
        retried = _dump_failed(obj, pickler, chunks, exc)
        if isinstance(retried, bytes):
            return retried
        raise retried from retried.__cause__
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    chunks.clear()
    pickler.memo = {}  # few objects beside large buffers: a new table costs no more
    payload = pickler.context.payload
    if payload is not None:
        if payload.bound and payload.first_value is not obj and needs_check(payload, obj):
            data = with_interpreter_check(data)
        pickler.context.payload = None
    sink.buffer_callback = None
    if len(data) <= _REUSE_MAX_BYTES and len(_idle_out_of_band) < _IDLE_LIMIT:
        _idle_out_of_band.append(pickler)
    return data


def _retry(
    obj: Any, exc: Exception, context: DumpContext, again: Callable[[bool, bool], object]
) -> BaseException | None:
    """The one retry of a failed dump (``context`` the failed pickler's): the
    error to raise, or None when ``again(check_copies)`` made the payload.

    Try once more when the failure may come from a cached "importable by name"
    answer gone stale (a module attribute reassigned, which makes the C
    pickler refuse the reference: the cache is forgotten), or from a copied
    object of the script that cannot be copied (``check_copies``: the second
    try sends those as references alone; see ``DumpContext.retry``); and once
    more when what fails sits in an exception's ``__cause__`` or
    ``__context__`` (``stand_ins``). Any other failure is not retried: an
    object's failing ``__reduce__`` runs once, as with pickle (the error's
    walk to it pickles nothing).
    """
    check_copies = context.copied_scripts()
    if not _is_located(exc) and (_stale_reference(exc) or check_copies):
        _locator.forget_by_name()
        try:
            again(check_copies, False)
        except Exception as failed:
            exc = failed
        else:
            return None
    error = _dump_error(obj, exc)
    if not _in_a_chain(error):
        return error
    # What fails is in an exception's __cause__ or __context__: the exception
    # travels with a stand-in for that link (pickle ships it without any
    # chain); the error is raised if that fails too.
    try:
        again(check_copies, True)
    except Exception:
        return error
    return None


def _in_a_chain(error: BaseException) -> bool:
    """Whether the culprit of a failed dump sits in an exception's chain."""
    path = getattr(error, "path", None)
    return type(path) is str and (".__cause__" in path or ".__context__" in path)


def _dump_failed(
    obj: Any, pickler: _PooledPickler, chunks: list[bytes], exc: Exception
) -> bytes | BaseException:
    """The rest of :func:`dumps` after ``pickler.dump(obj)`` raised ``exc``:
    the payload, or the error for dumps to raise (see :func:`_retry`)."""
    context = pickler.context
    if isinstance(exc, RecursionError):
        if pickler.sink.buffer_callback is None:  # a callback would see its buffers twice
            deeper = _deeper(obj, exc, context.scripts)
            if deeper is not None:
                return deeper
        return _dump_error(obj, exc)

    def again(check_copies: bool, stand_ins: bool) -> None:
        chunks.clear()
        pickler.clear_memo()
        context.retry(check_copies, stand_ins)
        try:
            pickler.dump(obj)
        finally:
            context.check_copies = context.stand_ins = False

    error = _retry(obj, exc, context, again)
    if error is not None:
        return error
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    return with_interpreter_check(data) if needs_check(context.payload, obj) else data


def _deeper(
    obj: Any,
    exc: RecursionError,
    scripts: str,
    protocol: int | None = None,
    fix_imports: bool = True,
) -> bytes | BaseException | None:
    """The payload of data nested deeper than the C pickler goes, made by the
    pure-Python pickler (:mod:`picklable._deterministic`'s), or what to raise
    when that fails too; None before Python 3.12.

    Since 3.12 the C pickler's depth is bounded apart from
    ``sys.getrecursionlimit()`` (3.12 and 3.13: a fixed count of C calls, about
    750 and 5,000 levels of lists; 3.14: the C stack), and raising the limit no
    longer helps it. Python code recurses as deep as the limit allows: the
    error's advice (raise it) holds again, as it does on 3.11. Loading needs no
    raise: the unpickler does not recurse.
    """
    if not C_RECURSION_APART:
        return None  # 3.11: the limit bounds both picklers, the C one the least
    from ._deterministic import DeterministicPickler

    buffer = io.BytesIO()
    pickler = DeterministicPickler(buffer, protocol, fix_imports=fix_imports, scripts=scripts)
    try:
        pickler.dump(obj)
    except RecursionError:
        return _dump_error(obj, exc)
    except Exception as failed:  # deep inside, what cannot ship: that is the error
        return _dump_error(obj, failed)
    data = buffer.getvalue()
    return with_interpreter_check(data) if needs_check(pickler.context.payload, obj) else data


def _dumps_with(
    obj: Any,
    protocol: int | None,
    buffer_callback: Callable[[pickle.PickleBuffer], Any] | None,
    key: Any,
    deterministic: bool,
    scripts: str = "auto",
    fix_imports: bool = True,
) -> bytes:
    """dumps with a key, deterministic bytes, another protocol, another script
    mode or fix_imports (the slower branch)."""
    signing_key = None
    oob: list[pickle.PickleBuffer] = []
    if key is not None:
        signing_key = signing_module().check_key(key)
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
        and scripts == "auto"
        and fix_imports is True
    ):
        data = dumps(obj)  # signed, otherwise the default: the pooled picklers
    else:
        if deterministic:
            from ._deterministic import DeterministicPickler

            make: Any = DeterministicPickler
        else:
            make = Pickler
        buffer = io.BytesIO()
        error = _dump_fresh(
            obj,
            buffer,
            lambda file: make(
                file,
                protocol,
                fix_imports=fix_imports,
                buffer_callback=buffer_callback,
                scripts=scripts,
            ),
            oob.clear,  # a retry calls the callback for every buffer again
            None
            if deterministic or buffer_callback is not None
            else lambda exc: _deeper(obj, exc, scripts, protocol, fix_imports),
        )
        if error is not None:
            # One traceback: see the module doc
            raise error
        data = buffer.getvalue()
    if signing_key is None:
        return data
    signed: bytes = signing_module().sign(signing_key, data, oob)
    return signed


def dump(
    obj: Any,
    file: IO[bytes],
    protocol: int | None = None,
    buffer_callback: Callable[[pickle.PickleBuffer], Any] | None = None,
    *,
    key: bytes | None = None,
    deterministic: bool = False,
    scripts: str = "auto",
    fix_imports: bool = True,
) -> None:
    """Serialize ``obj`` into the binary ``file``.

    .. versionchanged:: 0.2.0
        ``buffer_callback`` may be passed by position; ``fix_imports``.

    Parameters are as for :func:`dumps` (``buffer_callback`` is the fourth
    positional, as in ``cloudpickle.dump``). The payload is written once it is
    complete (a failed dump writes nothing): in the chunks the pickler made,
    large buffers as they are (without ``key`` and ``deterministic``), or in
    one call (with either). As with :func:`dumps`, another Python minor
    version refuses a payload with code or classes by value before anything
    of it runs.

    Raises
    ------
    picklable.PicklingError
        As for :func:`dumps`.
    """
    if key is not None or deterministic:
        file.write(
            _dumps_with(obj, protocol, buffer_callback, key, deterministic, scripts, fix_imports)
        )
        return
    error = _dump_fresh(
        obj,
        file,
        lambda out: Pickler(
            out, protocol, fix_imports, buffer_callback=buffer_callback, scripts=scripts
        ),
        deeper=None
        if buffer_callback is not None
        else lambda exc: _deeper(obj, exc, scripts, protocol, fix_imports),
    )
    if error is not None:
        # One traceback: see the module doc
        raise error


class _Held:
    """A write target that keeps what the pickler writes, by reference."""

    __slots__ = ("chunks", "write")

    def __init__(self) -> None:
        self.chunks: list[Any] = []
        self.write = self.chunks.append


def _dump_fresh(
    obj: Any,
    file: IO[bytes],
    make_pickler: Callable[[Any], Any],
    on_retry: Callable[[], Any] | None = None,
    deeper: Callable[[RecursionError], bytes | BaseException | None] | None = None,
) -> BaseException | None:
    """Pickle ``obj`` into ``file`` with a new pickler; the error to raise, if any.

    What the pickler writes is held until the payload is complete, then
    written in order: a payload bound to this interpreter gets the check of
    its record in front (known only at the end; see ``needs_check``), and a
    failed dump writes nothing. Holding costs the pickle's own bytes, not
    its large buffers: the pickler hands those to ``write`` as they are
    (bytes, bytearrays, buffers of 64 KiB and more), kept here by reference.
    As in :func:`dumps`, a failure that may come from a stale "importable by
    name" answer (a module attribute reassigned since makes pickle refuse the
    stale reference), or from a script object that cannot be copied, gets one
    retry, and data nested too deep for the C pickler one with ``deeper`` (see
    :func:`_deeper`).
    """
    held = _Held()
    pickler = make_pickler(held)
    try:
        pickler.dump(obj)
    except Exception as exc:
        if isinstance(exc, RecursionError):
            made = None if deeper is None else deeper(exc)
            if not isinstance(made, bytes):
                return made if made is not None else _dump_error(obj, exc)
            file.write(made)
            return None

        def again(check_copies: bool, stand_ins: bool) -> None:
            nonlocal held, pickler
            if on_retry is not None:
                on_retry()
            held = _Held()
            pickler = make_pickler(held)
            pickler.context.retry(check_copies, stand_ins)
            pickler.dump(obj)

        error = _retry(obj, exc, pickler.context, again)
        if error is not None:
            return error
    chunks = held.chunks
    if chunks and needs_check(pickler.context.payload, obj):
        chunks[0] = with_interpreter_check(chunks[0])
    for chunk in chunks:
        file.write(chunk)
    return None
