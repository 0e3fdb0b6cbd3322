"""The Pickler: CPython's C pickler plus one ``reducer_override`` hook.

The C pickler saves None, bools, ints, floats, str, bytes, bytearray, tuples,
lists, dicts, sets and PickleBuffers itself, before it would call the hook:
plain data never runs Python code here. Everything else goes through
``reducer_override``, which looks up the kind of ``type(obj)`` (never
``isinstance`` first: proxies lie about their class) in the table of
:mod:`picklable._reduce.table`, whose reducers apply the rule:

1. importable by its own ``__module__`` + ``__qualname__``: by reference;
2. found by the locator under another importable path: by reference via it;
3. a known wrapper kind: taken apart and rebuilt;
4. otherwise by value, with all its metadata;
5. failing that, a :class:`~picklable.PicklingError` that names the path.

Its reducers are handed the pickler's context (:class:`PicklerContext`, a
:class:`~picklable._reduce.context.DumpContext`), never the pickler: the one
owner of the state of the payload being made (:class:`PayloadState`), of the
pickler's options and of the policy that deterministic payloads replace.
"""

from __future__ import annotations

import copyreg
import io
import pickle
from collections.abc import Callable
from typing import IO, Any

from . import _code, _locator
from ._diagnostics.wording import CANNOT_PICKLE
from ._reduce.context import Canonical, DumpContext
from ._reduce.scripts import SCRIPT_MODES
from ._reduce.state import PayloadState
from ._reduce.table import CLASS, FUNCTION, handler_for, reclassify
from ._reduce.type_cache import HANDLERS, LASTING
from .exceptions import PicklingError

__all__ = [
    "DEFAULT_PROTOCOL",
    "INTERPRETER_CHECK",
    "Pickler",
    "PicklerContext",
    "ReducerHook",
    "make_context",
    "needs_check",
    "resolve_protocol",
    "with_interpreter_check",
]

DEFAULT_PROTOCOL = 5

_MISSING: Any = object()  # what the hook's cache lookups answer for a type not yet seen


# What goes in front of a payload bound to this interpreter (PayloadState.bound:
# it carries code or classes by value, or a reference whose target differs
# between versions): ``_check_interpreter(record)``, its result popped. The rest
# of such a payload may import modules (their code runs) and call rebuilders
# before the first function's own record is checked; this refuses another
# interpreter's payload before any of that. Protocol 0 opcodes, valid in every
# protocol; unframed (a frame may begin after it); no MEMOIZE, so the memo
# indices of the rest are unchanged. An unbound payload gets nothing: its bytes
# are pickle's, and it loads on every version. Nor does one whose first call
# checks the record itself (see needs_check).
INTERPRETER_CHECK = b"".join(
    (
        pickle.GLOBAL,
        b"picklable._reconstruct\n_check_interpreter\n",
        pickle.MARK,
        pickle.UNICODE,
        _code.HERE.encode("raw_unicode_escape"),
        b"\n",
        pickle.TUPLE,
        pickle.REDUCE,
        pickle.POP,
    )
)


def with_interpreter_check(data: bytes) -> bytes:
    """``data`` (a whole payload, or its first chunk) with :data:`INTERPRETER_CHECK`
    in front: after its ``PROTO`` opcode (protocols 2 and later), else first."""
    if data[:1] == pickle.PROTO:
        return b"".join((data[:2], INTERPRETER_CHECK, memoryview(data)[2:]))  # one copy
    return INTERPRETER_CHECK + data


def needs_check(payload: PayloadState | None, obj: Any) -> bool:
    """Whether the payload of ``obj`` (``payload`` its state) needs
    :data:`INTERPRETER_CHECK` in front.

    It does when it is bound to this interpreter, unless its first call is
    the rebuilder of the object that bound it and checks the record itself,
    before anything else runs: a function or code object by value, with
    arguments of plain data (``PayloadState.first_value``), that the payload
    writes first (``obj`` itself, or first in tuples, lists and dicts at the
    front of ``obj``). A lone lambda, or ``(function, args)`` as pools send
    them, then costs no global lookup more to load.
    """
    if payload is None or not payload.bound:
        return False
    first = payload.first_value
    for _ in range(_FRONT_DEPTH):
        if obj is first:
            return False
        t = type(obj)
        if (t is tuple or t is list) and obj:
            obj = obj[0]
        elif t is dict and obj:
            key, obj = next(iter(obj.items()))
            if type(key) not in _PLAIN_KEYS:
                return True
        else:
            return True
    return True


_FRONT_DEPTH = 16
_PLAIN_KEYS = frozenset({str, int, bytes, float, bool})


def resolve_protocol(protocol: int | None) -> int:
    """The protocol a pickler of ours uses: 5 by default, negative for the highest."""
    if protocol is None:
        return DEFAULT_PROTOCOL
    if protocol < 0:
        return pickle.HIGHEST_PROTOCOL
    return protocol


class PicklerContext(DumpContext):
    """The :class:`DumpContext` of picklable's picklers: its operations that
    need the table of kinds, or a pickler of their own to try with."""

    __slots__ = ()

    def reclassify(self, obj: Any) -> Any:
        handler = reclassify(type(obj)).reduce
        return NotImplemented if handler is None else handler(self, obj)

    def copy_failure(self, obj: Any) -> str | None:
        trial = self._trial_pickler(_DISCARD, "copy")
        try:
            trial.dump(obj)
        except RecursionError:
            return "copying it recursed too deep"
        except Exception as exc:
            held = CANNOT_PICKLE.search(str(exc))
            if held is not None:
                return f"it holds a {held.group(1)}, which cannot be pickled"
            path = getattr(exc, "path", "")  # where in the copy: the error names it
            where = f" (at {path})" if path and type(path) is str else ""
            reason, hint = getattr(exc, "reason", ""), getattr(exc, "hint", "")
            if isinstance(exc, PicklingError) and reason and type(reason) is str:
                # picklable's own refusal: its reason and fix, not a second "Fix:"
                name = getattr(exc, "type_name", "")
                said = reason if not name or name in reason else f"{name}: {reason}"
                return f"{said}{where}" + (f" (to fix it: {hint})" if hint else "")
            return f"{type(exc).__name__}: {str(exc).rstrip('.')}{where}"
        return None

    def round_trips(self, value: Any) -> bool:
        return self.trial_failure(value) is None

    def trial_failure(self, value: Any) -> str | None:
        buffer = io.BytesIO()
        trial = self._trial_pickler(buffer, self.scripts)
        try:
            trial.dump(value)
            pickle.loads(buffer.getvalue())
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}".partition("\n")[0]
        return None

    def _trial_pickler(self, file: Any, scripts: str) -> Pickler:
        """A pickler that tries (see ``DumpContext.trial``), with this one's
        protocol and dispatch table, and its objects being tried."""
        trial = Pickler(file, self.protocol, scripts=scripts)
        context = trial.context
        context.trial = True
        context.trying = self.trying
        if self.table is not _COPYREG_TABLE:
            trial.dispatch_table = self.table
        return trial


def make_context(
    pickler_type: type, protocol: int, scripts: str, canonical: Canonical | None = None
) -> PicklerContext:
    """The context of a new pickler of ``pickler_type`` (shared with the
    deterministic pickler); its table is the dispatch table pickle consults
    after the hook: a subclass's class attribute, or copyreg's (an instance's
    own table comes through :attr:`Pickler.dispatch_table`'s setter)."""
    if scripts not in SCRIPT_MODES:
        raise ValueError(f"scripts must be one of {', '.join(SCRIPT_MODES)}, not {scripts!r}")
    table = getattr(pickler_type, "dispatch_table", None)
    if table is None or table is _TABLE_PROPERTY:
        table = _COPYREG_TABLE
    return PicklerContext(protocol, scripts, canonical, table)


class ReducerHook:
    """The ``reducer_override`` of picklable's picklers: the C one
    (:class:`Pickler`) and the pure-Python deterministic one, which inherit it
    from here. A pickler that mixes it in sets :attr:`context` in its
    ``__init__``; its reducers receive that context."""

    __slots__ = ()

    context: PicklerContext

    def reducer_override(
        self,
        obj: Any,
        _lasting: Any = LASTING.get,
        _handlers: Any = HANDLERS.get,
        _missing: Any = _MISSING,
        _type: Any = type,
        _id: Any = id,
        _classify: Any = handler_for,
        _by_name: Any = _locator.by_name.get,
        _identity_hashed: Any = _locator.identity_hashed,
        _function: Any = FUNCTION.reduce,
        _class: Any = CLASS.reduce,
    ) -> Any:
        # Called for every non-builtin object (each of 10,000 dataclass
        # instances, four times per numpy array): locals, dict hits, no
        # attribute lookups but the context, and no id() integer made for a
        # type that lasts (type_cache.LASTING) nor for a function or a class
        # hashed by identity (locator.by_name): a 2-digit int allocated and
        # compared by value, 65 ns. A function or class already found
        # importable by its own name goes to pickle's save_global without a
        # second frame.
        t = _type(obj)
        handler = _lasting(t, _missing)
        if handler is _missing:
            handler = _handlers(_id(t), _missing)
            if handler is _missing:
                handler = _classify(t)
        if handler is None:
            return NotImplemented
        if handler is _function:  # a plain function: by_name's key is itself
            if _by_name(obj) is obj:
                return NotImplemented
        elif (
            handler is _class
            and (_by_name(obj) if t in _identity_hashed else _by_name(_id(obj))) is obj
        ):
            return NotImplemented
        return handler(self.context, obj)


class Pickler(ReducerHook, pickle.Pickler):
    """A :class:`pickle.Pickler` that ships any callable correctly.

    Usable wherever a pickler class is expected; loky loads it by module name
    (``LOKY_PICKLER=picklable``).

    .. versionchanged:: 0.2.0
        ``fix_imports`` and ``buffer_callback`` may be passed by position, as
        to :class:`pickle.Pickler` and to ``cloudpickle.Pickler``.

    Parameters
    ----------
    file:
        A binary file-like object with a ``write`` method.
    protocol:
        Pickle protocol; defaults to 5 (out-of-band buffers).
    fix_imports:
        As for :class:`pickle.Pickler` (protocols 0-2 only). A callable given
        here, the third positional, is taken as ``buffer_callback``: that is
        ``cloudpickle.Pickler``'s third positional (``fix_imports`` is never
        callable).
    buffer_callback:
        As for :class:`pickle.Pickler`: called with each
        :class:`pickle.PickleBuffer`; when it returns a false value the buffer
        travels out of band.
    scripts:
        How objects of this program's script (``__main__``) travel: ``"auto"``
        (the default: the script's own object where the receiver runs the same
        script, as a spawn worker does, else an exact copy that comes along),
        ``"reference"`` (the receivers run this script; no copy is sent) or
        ``"copy"`` (always a copy).

        .. versionadded:: 0.2.0

    Attributes
    ----------
    context:
        The state of the payloads it makes, which its reducers share (an
        internal object: see ``picklable._reduce.context``).

        .. versionadded:: 0.2.0
    """

    # Slots, not a __dict__: a slot load costs a fraction of an instance-dict
    # lookup on a subclass of a C type, and the hook reads the context for
    # every object it reduces. (Subclasses get a __dict__ as usual.)
    __slots__ = ("protocol", "context")

    def __init__(
        self,
        file: IO[bytes],
        protocol: int | None = None,
        fix_imports: Any = True,
        buffer_callback: Callable[[pickle.PickleBuffer], Any] | None = None,
        *,
        scripts: str = "auto",
    ) -> None:
        if callable(fix_imports):  # cloudpickle.Pickler(file, protocol, buffer_callback)
            if buffer_callback is not None:
                raise TypeError("buffer_callback given twice (third positional and keyword)")
            fix_imports, buffer_callback = True, fix_imports
        elif fix_imports is None:
            fix_imports = True  # cloudpickle.Pickler(file, protocol, None): no callback
        protocol = resolve_protocol(protocol)
        super().__init__(
            file,
            protocol,
            fix_imports=fix_imports,
            buffer_callback=buffer_callback,
        )
        self.protocol = protocol
        self.context = make_context(type(self), protocol, scripts)

    @property
    def dispatch_table(self) -> Any:
        """Reducers by type for this pickler, as for :class:`pickle.Pickler`.

        Unset (``AttributeError``) until assigned: pickle then uses
        ``copyreg.dispatch_table``.
        """
        table = self.context.table
        if table is _COPYREG_TABLE:
            raise AttributeError("dispatch_table")
        return table

    @dispatch_table.setter
    def dispatch_table(self, table: Any) -> None:
        _C_TABLE.__set__(self, table)  # the field the C pickler reads
        self.context.table = table

    # What a payload remembers of the objects it wrote (a closure whose cells
    # went as their contents, met again as ``_closure_cell(function, i)``) holds
    # while the memo holds them: a new memo starts a new payload.

    def clear_memo(self) -> None:
        """As :meth:`pickle.Pickler.clear_memo`: the next dump starts a new payload."""
        _C_CLEAR_MEMO(self)
        self.context.payload = None

    @property
    def memo(self) -> Any:
        """As :attr:`pickle.Pickler.memo`; setting it starts a new payload."""
        return _C_MEMO.__get__(self)

    @memo.setter
    def memo(self, memo: Any) -> None:
        _C_MEMO.__set__(self, memo)
        self.context.payload = None

    @property
    def fast(self) -> bool:
        """As :attr:`pickle.Pickler.fast` (no memo: each object written anew)."""
        return bool(_C_FAST.__get__(self))

    @fast.setter
    def fast(self, fast: Any) -> None:
        _C_FAST.__set__(self, fast)
        self.context.memo_off = bool(fast)


class _Discard:
    """A write target that keeps nothing (trial dumps)."""

    __slots__ = ()

    def write(self, data: Any) -> int:
        return len(data)


_DISCARD = _Discard()

# The C pickler's own dispatch_table field, the table it falls back on, and
# the property above that fronts both.
_C_TABLE: Any = vars(pickle.Pickler)["dispatch_table"]
# The C pickler's memo, its fast flag and clear_memo, which Pickler fronts.
_C_MEMO: Any = vars(pickle.Pickler)["memo"]
_C_FAST: Any = vars(pickle.Pickler)["fast"]
_C_CLEAR_MEMO: Any = vars(pickle.Pickler)["clear_memo"]
_COPYREG_TABLE = copyreg.dispatch_table
_TABLE_PROPERTY = vars(Pickler)["dispatch_table"]
