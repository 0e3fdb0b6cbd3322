"""What travels between a pool and its workers: frames, and the codec for payloads.

Every frame is ``<8-byte little-endian length><body>``; the body starts with a
one-byte kind. Fixed fields (ids, digests, timings) are packed with
:mod:`struct`, so a worker can tell which task a payload belongs to even when
the payload itself cannot be loaded. Payloads (functions, arguments, results,
errors) go through a :class:`Codec` and nowhere else: signing payloads (an HMAC
per frame, issue 8) means subclassing :class:`Codec`; the pool ships the codec
object to its workers at start, so both ends use the same one.

Parent to worker::

    F digest(16) payload             a function, loaded once and kept by digest
    X digest(16)                     forget a function (the parent's LRU evicted it)
    C id(8) digest(16) payload       call: payload = (args, kwargs) -> one value
    M id(8) digest(16) payload       map: payload = [item, ...] -> [fn(item), ...]
    S id(8) digest(16) payload       starmap: payload = [args, ...] -> [fn(*args), ...]
    Q                                finish the frames before this one, then exit

Worker to parent::

    R pid(8)                         ready: the initializer has run
    I payload                        the worker could not start: (stage, error info),
                                     stage: importing the main module, or the initializer
    V id(8) seconds(8) payload       all went well: the value (C) or the list (M, S)
    E id(8) seconds(8) payload       some items failed: [(outcome, value bytes or error
                                     info), ...] one per item
    L id(8) seconds(8) payload       the task did not load: (what, error info), what:
                                     its function or its arguments

Tickets. Besides its socket, each worker has a *ticket pipe*: for every task
frame the parent writes the unit's id(8) there before the frame itself, and a
worker runs a task only after it has read that task's ticket from the pipe. The
parent holds the pipe's read end too: to take back the tasks queued on a worker
whose running task is late (or hung, or whose process is stopped), it reads
the tickets still in the pipe. The kernel hands each 8-byte ticket to exactly
one reader, so a task is either started by its worker or taken back by the
parent, never both, whatever the worker is doing (issue 28). A frame whose
ticket the parent took is skipped by the worker when it reaches it; the parent
sends the task again, under a new id, to another worker.
"""

from __future__ import annotations

import pickle
import struct
from collections.abc import Callable
from typing import Any

from .._loading import loads
from .._remote import RemoteError, RemoteTraceback
from .._signing import check_key, mac_of, new_key, sign, signed_pieces
from ._inherit import StartPayload


def _first_dumps(*args: Any, **kwargs: Any) -> bytes:
    """:func:`picklable.dumps`, imported at the first payload that needs it.

    A worker imports only the loading side at its start; picklable's pickler and
    its reducers (about a third of a worker's imports) load with the first
    result that is not a plain scalar (issue 29: the first result of a new pool
    comes that much sooner). The global is then the real function.
    """
    global dumps
    from .._api import dumps as real

    dumps = real
    return real(*args, **kwargs)


dumps: Callable[..., bytes] = _first_dumps


def _first_workers_own_function(fn: Any) -> bool:
    """:func:`picklable._reduce.workers_own_function`, imported on first use
    (a parent's: see :func:`_first_dumps`)."""
    global _workers_own_function
    from .._reduce import workers_own_function

    _workers_own_function = workers_own_function
    return workers_own_function(fn)


_workers_own_function: Callable[[Any], bool] = _first_workers_own_function

# Values that picklable's pickler writes as the C pickler alone does: their
# types never reach its hook (pickle saves them before asking it), so
# pickle.dumps gives the very bytes picklable.dumps gives (tests/unit/
# test_executors.py compares them).
_PLAIN = frozenset({int, float, str, bytes, bool, type(None)})
_pickle_dumps = pickle.dumps
_PROTOCOL = 5  # picklable.DEFAULT_PROTOCOL (its module is the pickler's)

LENGTH = struct.Struct("<Q")
# Task frames, prebuilt once per task in the submitting thread.
TASK_HEAD = struct.Struct("<Qc Q 16s")
FUNC_HEAD = struct.Struct("<Qc 16s")

FunctionPayload = tuple[bytes, ...]
"""A task function's payload, in pieces that a func frame sends one after the
other: the payload is their concatenation (a signed payload's header and MAC,
then the pickle; or one piece)."""
# Result frames (worker side packs, parent side unpacks after the length).
RESULT_HEAD = struct.Struct("<Qc Q d")
RESULT_BODY = struct.Struct("<c Q d")
# The same fields, read from a frame's body (after its length).
TASK_BODY = struct.Struct("<c Q 16s")
FUNC_BODY = struct.Struct("<c 16s")
READY = struct.Struct("<Qc Q")
# A task's ticket in the worker's ticket pipe: its id.
TICKET = struct.Struct("<Q")

FUNC = b"F"
FORGET = b"X"
CALL = b"C"
MAP = b"M"
STARMAP = b"S"
STOP = b"Q"
READY_KIND = b"R"
INIT_ERROR = b"I"
VALUE = b"V"
ERRORS = b"E"
LOAD_FAILED = b"L"

# What an I frame says failed.
STAGE_MAIN = 0
STAGE_INITIALIZER = 1
# What an L frame says did not load.
LOADING_FUNCTION = 0
LOADING_ARGUMENTS = 1
# One item's outcome in an E frame.
OUTCOME_VALUE = 0
OUTCOME_RAISED = 1
OUTCOME_RESULT_UNSHIPPABLE = 2

STOP_FRAME = LENGTH.pack(1) + STOP

# An error as it travels: (exception payload or None, type name, message,
# traceback text, why the payload is missing). Plain data, so the parent can
# always build *something* from it.
ErrorInfo = tuple[bytes | None, str, str, str, str]


class Codec:
    """Turns the objects of one pool into payload bytes and back, at both ends.

    The only place where a pool serializes. A pool makes one instance, encodes
    its initializer with it, hands it to its :class:`~._core.Core`, and ships it
    to every worker at start with plain pickle (spawn: over the worker's own
    socket; fork: inherited; forkserver: through multiprocessing's socket to
    the server), so the key it holds reaches the workers and no one else.

    Every frame is signed with that key (HMAC-SHA256, see
    :mod:`picklable._signing`) and checked before anything in it is unpickled:
    a frame that another local process injected or altered is refused.
    """

    __slots__ = ("key",)

    def __init__(self, key: bytes | None = None) -> None:
        self.key = key if key is not None else new_key()

    def encode(self, obj: Any) -> bytes:
        """Serialize ``obj`` with picklable and sign it.

        Raises
        ------
        picklable.PicklingError
            Naming the attribute path of what cannot be shipped.
        """
        if type(obj) in _PLAIN:
            return sign(check_key(self.key), _pickle_dumps(obj, _PROTOCOL))
        return dumps(obj, key=self.key)

    def encode_function(self, fn: Any, workers_import_script: bool) -> FunctionPayload:
        """Serialize a task function and sign it; by reference alone when the
        workers import the sender's script and hold this very function.

        A function of the script that the workers' own import defines the same
        way (see :func:`picklable._reduce.workers_own_function`) would
        load as the worker's own anyway: its copy, and the globals it carries
        (a 200 MB array the module level made), are not sent (issue 18).

        Returns
        -------
        The signed payload in pieces (see :data:`FunctionPayload`).

        Raises
        ------
        picklable.PicklingError
            Naming the attribute path of what cannot be shipped.
        """
        if workers_import_script and _workers_own_function(fn):
            return (dumps(fn, key=self.key, scripts="reference"),)
        return signed_pieces(check_key(self.key), dumps(fn))

    def digest(self, payload: FunctionPayload) -> bytes:
        """What workers cache a function's payload by: 16 bytes of its MAC.

        Content-equal payloads have equal MACs under the pool's key, and the
        MAC is already made: a 200 MB global is not hashed a second time.
        """
        digest: bytes = mac_of(payload[0])[:16]
        return digest

    def encode_inherited(self, obj: Any) -> bytes:
        """Serialize ``obj`` for a worker being started, and sign it.

        Called inside multiprocessing's spawning context (see
        :mod:`picklable._pool._inherit`), with ``ForkingPickler``'s reducers:
        queues, locks, events and shared values travel as multiprocessing
        hands them to a child. :meth:`decode` loads it.
        """
        from ._forking import dump_inheriting

        return dump_inheriting(obj, self.key)

    def decode(self, data: bytes | bytearray | memoryview) -> Any:
        """Check and load a payload made by :meth:`encode`.

        Raises
        ------
        picklable.UnpicklingError
            Naming what is missing in this process, or refusing a frame whose
            signature does not match.
        """
        return loads(data, key=self.key)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.key,))


def start_codec(
    initializer: Any, initargs: Any, retries: int, method: str
) -> tuple[Codec, StartPayload | None]:
    """Check the options both pool APIs share; make the pool's codec (its key)
    and the payload that takes the initializer to each worker.

    Raises
    ------
    TypeError
        ``initializer`` is not callable.
    ValueError
        ``retries`` is negative.
    picklable.PicklingError
        The initializer or its arguments cannot reach a worker (spawn and
        forkserver pickle them at each start; fork hands them over as they are).
    """
    if initializer is not None and not callable(initializer):
        raise TypeError("initializer must be a callable")
    if retries < 0:
        raise ValueError("retries must be 0 or more")
    codec = Codec()
    if initializer is None:
        return codec, None
    start = StartPayload((initializer, tuple(initargs)), codec=codec)
    if method != "fork":
        start.check()
    return codec, start


def type_name(t: type) -> str:
    """``module.Qualname`` of a type, without the ``builtins.`` prefix."""
    module = getattr(t, "__module__", None)
    name = getattr(t, "__qualname__", None) or getattr(t, "__name__", "?")
    if module in (None, "builtins"):
        return str(name)
    return f"{module}.{name}"


def safe_str(obj: Any) -> str:
    """``str(obj)``, or a stand-in when its ``__str__`` raises."""
    try:
        return str(obj)
    except Exception as exc:  # a broken __str__ must not hide the original error
        return f"<str() failed: {type(exc).__name__}>"


def error_info(exc: BaseException, codec: Codec, skip_frames: int = 0) -> ErrorInfo:
    """What the worker sends for ``exc``: the exception itself if it can travel.

    The payload is loaded once here before it is sent: an exception that
    cannot be rebuilt fails here, in the worker, and the parent gets a
    :class:`RemoteError` with the reason instead of a payload it cannot load.
    Never raises: a hostile exception (a ``__setattr__`` that refuses, a
    ``__str__`` that raises) must not take the worker down.
    """
    name = "<unknown exception>"
    try:
        name = type_name(type(exc))
        message = safe_str(exc)
        text = _format(exc, skip_frames)
    except BaseException as why:  # pragma: no cover - only a very hostile exception
        return (None, name, "<unprintable>", "", f"cannot describe it: {type(why).__name__}")
    try:
        data: bytes | None = codec.encode(exc)
        rebuilt = codec.decode(data)  # type: ignore[arg-type]
        if type(rebuilt) is not type(exc):
            raise TypeError(f"it loads as {type_name(type(rebuilt))}, not {name}")
        reason = ""
    except BaseException as why:
        data = None
        reason = f"{type_name(type(why))}: {safe_str(why)}"
    return (data, name, message, text, reason)


def _format(exc: BaseException, skip_frames: int) -> str:
    import traceback

    tb = exc.__traceback__
    for _ in range(skip_frames):
        if tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
    if skip_frames:
        # The worker loop's own frame is of no interest, in the text or in a
        # traceback shipped with the exception. with_traceback bypasses a
        # __setattr__ that refuses (frozen exceptions).
        try:
            exc.with_traceback(tb)
        except BaseException:
            pass
    try:
        return "".join(traceback.format_exception(type(exc), exc, tb))
    except BaseException as why:  # a broken __str__ or __repr__ in the chain
        return f"{type_name(type(exc))}: <traceback could not be formatted: {type(why).__name__}>\n"


def rebuild_error(info: ErrorInfo, codec: Codec) -> BaseException:
    """The exception a worker raised, with its traceback text as ``__cause__``."""
    data, name, message, text, reason = info
    exc: Any = None
    if data is not None:
        try:
            exc = codec.decode(data)
        except Exception as why:
            reason = (
                f"it could not be loaded in the parent: {type_name(type(why))}: {safe_str(why)}"
            )
    if not isinstance(exc, BaseException):
        exc = RemoteError(name, message, reason or "unknown", text)
    remote = RemoteTraceback(text)
    # The text already shows the whole chain; a cause rebuilt with the
    # exception stays reachable without being printed twice. Set through
    # BaseException's own descriptor: an exception class may refuse setattr.
    error: BaseException = exc
    remote.cause = error.__cause__
    _CAUSE.__set__(error, remote)
    return error


_CAUSE = BaseException.__dict__["__cause__"]


def task_frame(kind: bytes, unit_id: int, digest: bytes, payload: bytes) -> bytes:
    """A ready-to-send task frame (built once per task, outside the manager thread)."""
    return TASK_HEAD.pack(25 + len(payload), kind, unit_id, digest) + payload


def func_frame(digest: bytes, payload: FunctionPayload) -> list[bytes]:
    """The frame that defines a function in a worker, as pieces for ``sendmsg``."""
    size = 17 + sum(len(piece) for piece in payload)
    return [FUNC_HEAD.pack(size, FUNC, digest), *payload]


def forget_frame(digest: bytes) -> bytes:
    return FUNC_HEAD.pack(17, FORGET, digest)


def retag_frame(frame: bytes | bytearray, unit_id: int) -> bytearray:
    """A copy of a task frame under a new unit id (a task taken back and sent again:
    the stale copy in the first worker's stream never matches a ticket)."""
    copy = bytearray(frame)
    TICKET.pack_into(copy, 9, unit_id)  # after the length (8) and the kind (1)
    return copy


def check_task_timeout(value: float | None) -> float | None:
    """``value`` if it is None or a positive number of seconds (``math.inf``: no limit).

    Raises
    ------
    TypeError, ValueError
        For anything else.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"task_timeout must be a number of seconds or None, not {value!r}")
    if not value > 0:
        raise ValueError(f"task_timeout must be greater than 0 (math.inf: no limit), not {value!r}")
    return float(value)


def task_timeout(value: float | None, default: float | None) -> float | None:
    """The limit of a call's tasks: its own ``task_timeout``, else the pool's;
    None for no limit (``math.inf`` lifts the pool's for one call)."""
    value = default if value is None else check_task_timeout(value)
    return None if value is None or value == float("inf") else value
