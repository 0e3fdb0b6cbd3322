"""Code objects in payloads: the interpreter record and the checksum.

By-value code travels as marshal bytes sealed with a CRC32 and next to an
interpreter record (``"cpython 3.11"``). Another Python version is refused, by
name, before marshal reads a byte; damage in transit, or bytecode of another
build of the same version, fails the checksum. Loaded code objects are kept by
their bytes (bounded), so closures of one factory share one code object here
as they did in the sender.
"""

from __future__ import annotations

import importlib.util
import marshal
import sys
import types
import zlib
from typing import Any

from . import _caches
from ._compat import CLASSDICT_GLOBAL_OP
from .exceptions import UnpicklingError

__all__ = [
    "BOUND",
    "BYTECODE",
    "CODES",
    "HERE",
    "check_interpreter",
    "global_reads",
    "instruction_names",
    "interpreter_record",
    "load",
    "seal",
    "unshared",
]


def interpreter_record() -> str:
    """``"<implementation> <major.minor>"`` of this process (``"cpython 3.11"``)."""
    major, minor = sys.version_info[:2]
    return f"{sys.implementation.name} {major}.{minor}"


HERE = interpreter_record()
# Where the checksum of shipped code starts: this interpreter's bytecode magic.
_SEAL_START = zlib.crc32(importlib.util.MAGIC_NUMBER)

# marshal bytes -> code object (see the module doc). Bounded: a long-lived
# worker loads many payloads.
CODES: dict[bytes, types.CodeType] = {}
_CODES_LIMIT = 4096
_caches.register("code.loaded", CODES.clear)


def unshared(code: types.CodeType) -> types.CodeType:
    """A copy of ``code`` whose marshal bytes depend on its value alone.

    marshal (format 3 and later) marks an object as shared (``FLAG_REF``) when
    its reference count is above one or it is an interned string, and writes a
    back-reference to an object met twice. Both depend on the process: the same
    function, loaded in a worker and dumped again, would give other bytes. In
    this copy every object but the interned strings is fresh and held once
    (interned strings are the same object for the same value everywhere, and
    the code constructor interns names and identifier-like constants by value),
    so the bytes are the same wherever the code is. About ten microseconds
    per code object, once (the bytes are cached per code object); the bytes
    stay within a few percent of plain marshal's (format 2, which writes no
    references at all, costs 10-15% more).
    """
    fields: dict[str, Any] = {
        "co_code": bytes(bytearray(code.co_code)),
        "co_consts": tuple(_unshared_constant(c) for c in code.co_consts),
        "co_linetable": bytes(bytearray(code.co_linetable)),
    }
    for name in ("co_names", "co_varnames", "co_freevars", "co_cellvars"):
        fields[name] = tuple(_unshared_constant(n) for n in getattr(code, name))
    for name in ("co_filename", "co_name", "co_qualname"):  # co_qualname: 3.11+
        if hasattr(code, name):
            fields[name] = _unshared_constant(getattr(code, name))
    if hasattr(code, "co_exceptiontable"):  # 3.11+
        fields["co_exceptiontable"] = bytes(bytearray(code.co_exceptiontable))
    return code.replace(**fields)


def _unshared_constant(value: Any) -> Any:
    t = type(value)
    if t is str:
        return value[:1] + value[1:] if len(value) > 1 else value  # 1 char: a singleton
    if t is types.CodeType:
        return unshared(value)
    if t is tuple:
        return tuple(_unshared_constant(item) for item in value)
    if t is frozenset:
        return frozenset(_unshared_constant(item) for item in value)
    if t is bytes:
        return bytes(bytearray(value))
    if t is int:
        return value if -5 <= value <= 256 else int(str(value))  # small ints: singletons
    if t is float:
        return float.fromhex(value.hex()) if value == value else value
    if t is complex:
        return complex(_unshared_constant(value.real), _unshared_constant(value.imag))
    return value  # None, Ellipsis, bools: singletons


def seal(data: bytes) -> bytes:
    """marshal bytes of a code object + their CRC32 (4 bytes, little-endian),
    computed from a start value derived from this interpreter's bytecode magic.

    marshal checks the structure of what it reads but not the bytecode inside,
    and a code object runs while a payload loads (a base class's
    ``__init_subclass__``, a ``__set_name__``): a flipped bit there can crash
    the interpreter instead of raising. The checksum turns damage in transit
    into an :class:`~picklable.UnpicklingError`, and so does bytecode of
    another build with the same version number (the magic number differs
    between pre-releases). It is no defence against a forged payload (use
    ``key=``). ``marshal.loads`` ignores the trailer.
    """
    return data + zlib.crc32(data, _SEAL_START).to_bytes(4, "little")


# What check_interpreter says a payload holds: code (its rebuilders' own check),
# or anything that binds it to the Python that made it (the check in front).
BYTECODE = "this payload carries code compiled by {}"
BOUND = (
    "this payload was made by {} for that Python minor version alone (it carries "
    "code or classes by value, or objects that differ between versions)"
)


def check_interpreter(record: object, what: str = BYTECODE) -> None:
    """Refuse by-value code made by another interpreter, before building any.

    ``record`` is ``"<implementation> <major.minor>"``, the part users can act
    on; the exact bytecode version (the magic number, which also changes
    between pre-releases of one minor version) is bound by the checksum of
    the code bytes (:func:`seal`). ``what`` says what the payload holds, with
    ``{}`` for the record (:data:`BYTECODE`, :data:`BOUND`).
    """
    if type(record) is not str:
        raise UnpicklingError(
            f"Cannot load: code shipped by value comes with a {type(record).__name__} "
            "where the interpreter record (a str) should be: the payload is damaged "
            "or was not made by picklable.",
            reason="damaged payload: no interpreter record",
            hint="check that the bytes arrive unchanged",
        )
    if record == HERE:
        return
    theirs = record if _well_formed(record) else "an unknown interpreter"
    raise UnpicklingError(
        f"Cannot load: {what.format(theirs)}; this interpreter is {HERE}. "
        "Fix: run the same Python minor version on both sides.",
        reason="bytecode from another interpreter",
        hint="run the same Python minor version on both sides",
    )


def _well_formed(record: str) -> bool:
    """Whether ``record`` reads like ``"cpython 3.11"`` (it is quoted in a message)."""
    implementation, _, version = record.partition(" ")
    major, _, minor = version.partition(".")
    return (
        len(record) <= 40 and implementation.isidentifier() and major.isdigit() and minor.isdigit()
    )


def load(data: object, record: object) -> types.CodeType:
    """Build a code object from sealed marshal bytes, refusing another interpreter's."""
    if record != HERE:
        check_interpreter(record)
    if type(data) is not bytes:
        raise UnpicklingError(
            f"Cannot load: code shipped by value comes as {type(data).__name__}, not bytes: "
            "the payload is damaged or was not made by picklable.",
            reason="damaged payload: code is not bytes",
            hint="check that the bytes arrive unchanged",
        )
    code = CODES.get(data)
    if code is not None:
        return code
    if len(data) < 5 or zlib.crc32(memoryview(data)[:-4], _SEAL_START) != int.from_bytes(
        data[-4:], "little"
    ):
        raise UnpicklingError(
            "Cannot load: the bytes of code shipped by value fail their checksum: the "
            "payload was damaged on the way, or made by another build of "
            f"{HERE} whose bytecode differs (a pre-release).",
            reason="damaged payload: code checksum",
            hint="check that the bytes arrive unchanged; "
            "sign payloads with key= to detect any change",
        )
    try:
        code = marshal.loads(data)
    except (EOFError, ValueError, TypeError) as exc:
        raise UnpicklingError(
            f"Cannot load: the marshal bytes of code shipped by value are damaged ({exc}).",
            reason="damaged payload: bad code bytes",
            hint="check that the bytes arrive unchanged",
        ) from exc
    if type(code) is not types.CodeType:
        raise UnpicklingError(
            f"Cannot load: the bytes of code shipped by value hold a {type(code).__name__}, "
            "not a code object: the payload is damaged or was not made by picklable.",
            reason="damaged payload: not code",
            hint="check that the bytes arrive unchanged",
        )
    if len(CODES) >= _CODES_LIMIT:
        CODES.clear()
    CODES[data] = code
    return code


def instruction_names(
    code: types.CodeType, ops: frozenset[str], nested_ops: frozenset[str] | None = None
) -> dict[str, None]:
    """The names that the instructions ``ops`` of ``code`` take (``nested_ops``
    in the code objects nested in it, default ``ops``), in the order first met.

    From the instructions (``dis`` decodes, never runs): ``co_names`` mixes
    global names with attribute names.
    """
    # dis (and opcode) load on the first function shipped by value: a worker
    # that only loads payloads never needs them.
    import dis

    names: dict[str, None] = {}
    inner = ops if nested_ops is None else nested_ops
    stack = [(code, ops)]
    while stack:
        current, wanted = stack.pop()
        for instruction in dis.get_instructions(current):
            if instruction.opname in wanted and type(instruction.argval) is str:
                names[instruction.argval] = None
        stack.extend((c, inner) for c in current.co_consts if type(c) is types.CodeType)
    return names


# id(code) -> (code, the global names it reads); bounded.
_READS: dict[int, tuple[types.CodeType, frozenset[str]]] = {}
_caches.register("code.global_reads", _READS.clear)
_READ_OPS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", CLASSDICT_GLOBAL_OP})


def global_reads(code: types.CodeType) -> frozenset[str]:
    """Names ``code`` (and the code nested in it) reads as globals (cached)."""
    hit = _READS.get(id(code))
    if hit is not None and hit[0] is code:
        return hit[1]
    reads = frozenset(instruction_names(code, _READ_OPS))
    if len(_READS) >= _CODES_LIMIT:
        _READS.clear()
    _READS[id(code)] = (code, reads)
    return reads
