"""Code objects in payloads: the interpreter record and the checksum.

By-value code travels as marshal bytes sealed with a CRC32 and next to an
interpreter record (``"cpython 3.11"``). Another Python version is refused, by
name, before marshal reads a byte; damage in transit, or bytecode of another
build of the same version, fails the checksum. Loaded code objects are kept by
their bytes (bounded), so closures of one factory share one code object here
as they did in the sender.

The file name of the code (``co_filename``, the same in every code object
nested in it) travels beside the bytes rather than inside them, as
``(bytes, file name)`` (issue 29): one object per file name in this process
(:func:`carried`), so that pickle's memo writes a script's path once
per payload, however many functions and methods of the script it copies and
whatever origins name it (as cloudpickle's pickled code objects share it). The
checksum covers it too, and :func:`load` puts it back in every code object.
A code object whose qualname another code object of the payload has (1,000
lambdas made by ``eval`` or a code generator) carries its own ``co_name`` and
``co_qualname`` beside its bytes too, as ``(bytes, file name, name,
qualname)``, one object per value as the file name: the payload writes them
once, as cloudpickle's memo does (see
:func:`picklable._reduce.functions.named_code`).
"""

from __future__ import annotations

import importlib.util
import marshal
import reprlib
import sys
import types
import zlib
from collections.abc import Iterator
from typing import Any

from . import _caches
from ._compat import CLASSDICT_GLOBAL_OP
from .exceptions import UnpicklingError

__all__ = [
    "BOUND",
    "BYTECODE",
    "CARRIED",
    "CODES",
    "HERE",
    "Sealed",
    "carried",
    "check_interpreter",
    "global_reads",
    "instruction_names",
    "interpreter_record",
    "load",
    "seal",
    "shared_filename",
    "unshared",
]


def interpreter_record() -> str:
    """``"<implementation> <major.minor>"`` of this process (``"cpython 3.11"``)."""
    major, minor = sys.version_info[:2]
    return f"{sys.implementation.name} {major}.{minor}"


HERE = interpreter_record()
# Where the checksum of shipped code starts: this interpreter's bytecode magic.
_SEAL_START = zlib.crc32(importlib.util.MAGIC_NUMBER)

# What a payload carries for a code object: sealed marshal bytes, or sealed
# bytes without the file name and the file name (0.2.0's first payloads), or
# without the file name and the code's names and they (see the module doc).
Sealed = bytes | tuple[bytes, str] | tuple[bytes, str, str, str]

# What a payload carried -> code object (see the module doc). Bounded: a
# long-lived worker loads many payloads.
CODES: dict[Sealed, types.CodeType] = {}
_CODES_LIMIT = 4096
_caches.register("code.loaded", CODES.clear)

# file or module name -> the one object of that value that payloads carry (see
# carried()). Bounded: past the limit, a name may travel twice in one payload.
CARRIED: dict[str, str] = {}
_CARRIED_LIMIT = 4096
_caches.register("code.carried_names", CARRIED.clear)


def carried(name: str) -> str:
    """The one object of value ``name`` that payloads carry for a file name (of
    code, in the origin of a script's object) or a script's module name in an
    origin: pickle memoizes by identity, so a payload holds each once.

    A copy that nothing else holds (as :meth:`PayloadState.name
    <picklable._reduce.state.PayloadState.name>` makes): which strings a payload
    shares depends on their values alone, the same in a process that loaded
    them and dumps them again.
    """
    found = CARRIED.get(name)
    if found is None:
        if len(CARRIED) >= _CARRIED_LIMIT:
            CARRIED.clear()
        found = CARRIED[name] = name[:1] + name[1:] if len(name) > 1 else name
    return found


def unshared(
    code: types.CodeType, strip_filename: bool = False, strip_names: bool = False
) -> types.CodeType:
    """A copy of ``code`` whose marshal bytes depend on its value alone.

    ``strip_filename``: with ``""`` as the ``co_filename`` of it and of every code
    object nested in it (see :func:`shared_filename`; :func:`load` restores it).
    ``strip_names``: with ``""`` as its own ``co_name`` and ``co_qualname``
    (they travel beside the bytes too; nested code keeps its own).

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
        "co_consts": tuple(_unshared_constant(c, strip_filename) for c in code.co_consts),
        "co_linetable": bytes(bytearray(code.co_linetable)),
    }
    for name in ("co_names", "co_varnames", "co_freevars", "co_cellvars"):
        fields[name] = tuple(_unshared_constant(n) for n in getattr(code, name))
    for name in ("co_filename", "co_name", "co_qualname"):  # co_qualname: 3.11+
        if hasattr(code, name):
            fields[name] = _unshared_constant(getattr(code, name))
    if strip_filename:
        fields["co_filename"] = ""
    if strip_names:
        fields["co_name"] = fields["co_qualname"] = ""
    name = fields["co_name"]
    if len(name) > 4 and fields.get("co_qualname") == name:
        # One object twice: marshal writes a back-reference (5 bytes) the second
        # time, as it does for a function made at a module's top level.
        fields["co_qualname"] = name
    if hasattr(code, "co_exceptiontable"):  # 3.11+
        fields["co_exceptiontable"] = bytes(bytearray(code.co_exceptiontable))
    return code.replace(**fields)


def _unshared_constant(value: Any, strip_filename: bool = False) -> Any:
    t = type(value)
    if t is str:
        return value[:1] + value[1:] if len(value) > 1 else value  # 1 char: a singleton
    if t is types.CodeType:
        return unshared(value, strip_filename)
    if t is tuple:
        return tuple(_unshared_constant(item, strip_filename) for item in value)
    if t is frozenset:
        return frozenset(_unshared_constant(item, strip_filename) for item in value)
    if t is bytes:
        return bytes(bytearray(value))
    if t is int:
        return value if -5 <= value <= 256 else int(str(value))  # small ints: singletons
    if t is float:
        return float.fromhex(value.hex()) if value == value else value
    if t is complex:
        return complex(_unshared_constant(value.real), _unshared_constant(value.imag))
    return value  # None, Ellipsis, bools: singletons


def _nested_codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """The code objects in ``code``'s constants (in tuples and frozensets too)."""
    stack: list[Any] = list(code.co_consts)
    while stack:
        value = stack.pop()
        t = type(value)
        if t is types.CodeType:
            yield value
        elif t is tuple or t is frozenset:
            stack.extend(value)


def shared_filename(code: types.CodeType) -> str | None:
    """The file name that travels beside ``code``'s bytes (see the module doc):
    its ``co_filename`` when every code object nested in it has the same one and
    it is not empty (as :func:`carried`); None when the bytes keep the
    file names (they differ: a code object made by ``code.replace``; or the
    name is ``""``, which stripped bytes hold in its place)."""
    filename = code.co_filename
    if type(filename) is not str or not filename:
        return None
    stack = [code]
    while stack:
        current = stack.pop()
        for nested in _nested_codes(current):
            if nested.co_filename != filename:
                return None
            stack.append(nested)
    return carried(filename)


def with_filename(code: types.CodeType, filename: str) -> types.CodeType:
    """``code`` with ``filename`` as the ``co_filename`` of it and of every code
    object nested in it (whose bytes travelled without it)."""
    consts = code.co_consts
    if any(type(c) in _HOLDS_CODE for c in consts):
        consts = tuple(_with_filename_constant(c, filename) for c in consts)
        return code.replace(co_filename=filename, co_consts=consts)
    return code.replace(co_filename=filename)


_HOLDS_CODE = frozenset({types.CodeType, tuple, frozenset})


def _with_filename_constant(value: Any, filename: str) -> Any:
    t = type(value)
    if t is types.CodeType:
        return with_filename(value, filename)
    if t is tuple:
        return tuple(_with_filename_constant(item, filename) for item in value)
    if t is frozenset:
        return frozenset(_with_filename_constant(item, filename) for item in value)
    return value


def _filename_bytes(filename: str) -> bytes:
    # surrogatepass: a path undecodable in the file system's encoding keeps
    # its lone surrogates (os.fsdecode's surrogateescape) in co_filename.
    return filename.encode("utf-8", "surrogatepass")


def seal(data: bytes, filename: str | None = None, *names: str) -> bytes:
    """marshal bytes of a code object + their CRC32 (4 bytes, little-endian),
    computed from a start value derived from this interpreter's bytecode magic.

    ``filename``: the file name that travels beside bytes stripped of it
    (:func:`shared_filename`), covered by the same CRC32 (after the bytes);
    ``names``: the code's ``co_name`` and ``co_qualname`` that travel beside
    them too, covered after it (each with its length, so that a character
    moved from one to the other fails it too).

    marshal checks the structure of what it reads but not the bytecode inside,
    and a code object runs while a payload loads (a base class's
    ``__init_subclass__``, a ``__set_name__``): a flipped bit there can crash
    the interpreter instead of raising. The checksum turns damage in transit
    into an :class:`~picklable.UnpicklingError`, and so does bytecode of
    another build with the same version number (the magic number differs
    between pre-releases). It is no defence against a forged payload (use
    ``key=``). ``marshal.loads`` ignores the trailer.
    """
    crc = zlib.crc32(data, _SEAL_START)
    if filename is not None:
        crc = zlib.crc32(_filename_bytes(filename), crc)
    for name in names:
        crc = zlib.crc32(_name_bytes(name), crc)
    return data + crc.to_bytes(4, "little")


def _name_bytes(name: str) -> bytes:
    """What the checksum covers of a name carried beside code: its length, then it."""
    encoded = _filename_bytes(name)
    return len(encoded).to_bytes(4, "little") + encoded


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
    """Build a code object from sealed marshal bytes, refusing another interpreter's.

    ``data`` is the sealed bytes, or ``(bytes, file name)``: bytes without
    their file name (sealed with it, see :func:`seal`), which every code
    object in them gets back; or ``(bytes, file name, name, qualname)``:
    without the code's own names either, which it gets back.
    """
    if record != HERE:
        check_interpreter(record)
    if type(data) is tuple:
        return _load_stripped(data)
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
        raise _checksum_error()
    code = _unmarshal(data)
    if len(CODES) >= _CODES_LIMIT:
        CODES.clear()
    CODES[data] = code
    return code


def _load_stripped(carried: tuple[Any, ...]) -> types.CodeType:
    """:func:`load` for ``(bytes, file name)`` and ``(bytes, file name, name,
    qualname)``: bytes that travelled without them."""
    size = len(carried)
    if (size != 2 and size != 4) or type(carried[0]) is not bytes:
        raise UnpicklingError(
            "Cannot load: code shipped by value comes as a tuple that is not (bytes, "
            "file name) or (bytes, file name, name, qualname): the payload is damaged "
            "or was not made by picklable.",
            reason="damaged payload: code is not bytes",
            hint="check that the bytes arrive unchanged",
        )
    try:
        code = CODES.get(carried)  # holds well-formed keys only
    except TypeError:  # unhashable: damaged, refused below
        code = None
    if code is not None:
        return code
    data, filename = carried[0], carried[1]
    names: tuple[Any, ...] = carried[2:]
    if type(filename) is not str or not filename:
        raise UnpicklingError(
            f"Cannot load: code shipped by value comes with {reprlib.repr(filename)} as "
            "its file name (a non-empty str): the payload is damaged or was not made "
            "by picklable.",
            reason="damaged payload: bad code file name",
            hint="check that the bytes arrive unchanged",
        )
    if not all(type(n) is str for n in names):
        raise UnpicklingError(
            f"Cannot load: code shipped by value comes with {reprlib.repr(names)} as "
            "its name and qualname (two str): the payload is damaged "
            "or was not made by picklable.",
            reason="damaged payload: bad code name",
            hint="check that the bytes arrive unchanged",
        )
    crc = 0
    try:
        name = _filename_bytes(filename)
        crc = zlib.crc32(name, zlib.crc32(memoryview(data)[:-4], _SEAL_START))
        for carried_name in names:
            crc = zlib.crc32(_name_bytes(carried_name), crc)
    except UnicodeError:
        name = b""  # not a name picklable wrote: the checksum fails
    if len(data) < 5 or not name or crc != int.from_bytes(data[-4:], "little"):
        raise _checksum_error()
    code = with_filename(_unmarshal(data), filename)
    if names:
        code = _with_names(code, names[0], names[1])
    if len(CODES) >= _CODES_LIMIT:
        CODES.clear()
    CODES[carried] = code
    return code


def _with_names(code: types.CodeType, name: str, qualname: str) -> types.CodeType:
    """``code`` with its own ``co_name`` and ``co_qualname`` back."""
    return code.replace(co_name=name, co_qualname=qualname)


def _checksum_error() -> UnpicklingError:
    return UnpicklingError(
        "Cannot load: the bytes of code shipped by value fail their checksum: the "
        "payload was damaged on the way, or made by another build of "
        f"{HERE} whose bytecode differs (a pre-release).",
        reason="damaged payload: code checksum",
        hint="check that the bytes arrive unchanged; sign payloads with key= to detect any change",
    )


def _unmarshal(data: bytes) -> types.CodeType:
    """The code object of sealed bytes whose checksum held."""
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
    return code


def instruction_names(
    code: types.CodeType, ops: frozenset[str], nested_ops: frozenset[str] | None = None
) -> dict[str, None]:
    """The names that the instructions ``ops`` of ``code`` take (``nested_ops``
    in the code objects nested in it, default ``ops``), in the order first met.

    Only instructions whose argument indexes ``co_names`` (``LOAD_GLOBAL``,
    ``STORE_GLOBAL``, ``LOAD_NAME``...): ``co_names`` alone mixes global names
    with attribute names. Read from ``co_code`` directly (never run): two bytes
    per instruction, ``EXTENDED_ARG`` prefixes folded in, the inline caches of
    Python 3.11+ zeroed there (opcode 0, ``CACHE``). 10x faster than
    ``dis.get_instructions`` (issue 29: every code object's first dump), which
    the tests hold it equal to on the stdlib's functions.
    """
    wanted = _opcodes(ops)
    inner = wanted if nested_ops is None else _opcodes(nested_ops)
    extended, load_global = _OPCODE_CONSTANTS
    names: dict[str, None] = {}
    stack = [(code, wanted)]
    while stack:
        current, numbers = stack.pop()
        raw = current.co_code
        table = current.co_names
        prefix = 0
        for at in range(0, len(raw), 2):
            op = raw[at]
            if op == extended:
                prefix = (prefix | raw[at + 1]) << 8
                continue
            if op in numbers:
                arg = prefix | raw[at + 1]
                # 3.11+: LOAD_GLOBAL's low bit says "push NULL too", not the name.
                names[table[arg >> 1 if op == load_global else arg]] = None
            prefix = 0
        stack.extend((c, inner) for c in current.co_consts if type(c) is types.CodeType)
    return names


# (EXTENDED_ARG, LOAD_GLOBAL where its argument is shifted by one bit, else -1);
# the numbers of each set of names asked (opcode loads on the first function
# shipped by value: a worker that only loads payloads never needs it).
_OPCODE_CONSTANTS: tuple[int, int] = (-1, -1)
_OPCODE_SETS: dict[frozenset[str], frozenset[int]] = {}
# The instructions whose argument is an index into co_names as it is (LOAD_GLOBAL's
# from 3.11 on is shifted, which instruction_names undoes): all it may be asked for.
_NAME_OPS = frozenset(
    {
        "LOAD_GLOBAL",
        "STORE_GLOBAL",
        "DELETE_GLOBAL",
        "LOAD_NAME",
        "STORE_NAME",
        "DELETE_NAME",
        "LOAD_FROM_DICT_OR_GLOBALS",
    }
)


def _opcodes(ops: frozenset[str]) -> frozenset[int]:
    global _OPCODE_CONSTANTS
    numbers = _OPCODE_SETS.get(ops)
    if numbers is None:
        import opcode

        if not ops <= _NAME_OPS:
            raise ValueError(f"not instructions that take a name: {sorted(ops - _NAME_OPS)}")
        shifted = opcode.opmap["LOAD_GLOBAL"] if sys.version_info >= (3, 11) else -1
        _OPCODE_CONSTANTS = (opcode.opmap["EXTENDED_ARG"], shifted)
        numbers = _OPCODE_SETS[ops] = frozenset(opcode.opmap[o] for o in ops if o in opcode.opmap)
    return numbers


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
