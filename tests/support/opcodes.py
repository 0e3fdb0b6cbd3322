"""Pickles written opcode by opcode, for the allow-list's attack tests.

Each helper returns the bytes of one construct; :func:`payload` frames them as
a protocol-4 pickle (protocol 2 with ``protocol=2``) ending in STOP. The
building blocks mirror ``pickletools``' names::

    payload(call(stack_global("os", "system"), text("echo x")))

is ``PROTO 4, SHORT_BINUNICODE 'os', SHORT_BINUNICODE 'system', STACK_GLOBAL,
MARK, SHORT_BINUNICODE 'echo x', TUPLE, REDUCE, STOP``.
"""

from __future__ import annotations

import struct
import uuid

MARK = b"("
STOP = b"."
POP = b"0"
DUP = b"2"
NONE = b"N"
TRUE = b"\x88"
FALSE = b"\x89"
TUPLE = b"t"
EMPTY_TUPLE = b")"
EMPTY_LIST = b"]"
EMPTY_DICT = b"}"
EMPTY_SET = b"\x8f"
APPEND = b"a"
APPENDS = b"e"
SETITEM = b"s"
SETITEMS = b"u"
ADDITEMS = b"\x90"
REDUCE = b"R"
BUILD = b"b"
NEWOBJ = b"\x81"
NEWOBJ_EX = b"\x92"
OBJ = b"o"
STACK_GLOBAL = b"\x93"
BINPERSID = b"Q"
MEMOIZE = b"\x94"


def payload(*parts: bytes, protocol: int = 4) -> bytes:
    """``PROTO protocol``, the parts, ``STOP``."""
    return b"\x80" + bytes([protocol]) + b"".join(parts) + STOP


def text(value: str) -> bytes:
    """A str: SHORT_BINUNICODE or BINUNICODE."""
    data = value.encode("utf-8", "surrogatepass")
    if len(data) < 256:
        return b"\x8c" + bytes([len(data)]) + data
    return b"X" + struct.pack("<I", len(data)) + data


def binary(value: bytes) -> bytes:
    """A bytes: SHORT_BINBYTES or BINBYTES."""
    if len(value) < 256:
        return b"C" + bytes([len(value)]) + value
    return b"B" + struct.pack("<I", len(value)) + value


def integer(value: int) -> bytes:
    """An int: BININT (4 bytes, signed)."""
    return b"J" + struct.pack("<i", value)


def tuple_(*items: bytes) -> bytes:
    """MARK, the items, TUPLE."""
    return MARK + b"".join(items) + TUPLE


def list_(*items: bytes) -> bytes:
    """EMPTY_LIST, then MARK, the items, APPENDS (when there are any)."""
    return EMPTY_LIST + (MARK + b"".join(items) + APPENDS if items else b"")


def dict_(**items: bytes) -> bytes:
    """EMPTY_DICT, then MARK, str keys and values, SETITEMS."""
    body = b"".join(text(key) + value for key, value in items.items())
    return EMPTY_DICT + (MARK + body + SETITEMS if items else b"")


def pairs(*items: tuple[bytes, bytes]) -> bytes:
    """EMPTY_DICT, then MARK, the (key, value) parts, SETITEMS."""
    return EMPTY_DICT + MARK + b"".join(k + v for k, v in items) + SETITEMS


def global_(module: str, name: str) -> bytes:
    """GLOBAL (protocols 0-3): ``c module\\n name\\n``."""
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def stack_global(module: str, name: str) -> bytes:
    """Two strings and STACK_GLOBAL (protocol 4+)."""
    return text(module) + text(name) + STACK_GLOBAL


def inst(module: str, name: str, *args: bytes) -> bytes:
    """MARK, the arguments, INST ``module\\n name\\n``: call module.name(*args)."""
    return MARK + b"".join(args) + b"i" + module.encode() + b"\n" + name.encode() + b"\n"


def obj(callable_: bytes, *args: bytes) -> bytes:
    """MARK, the callable, the arguments, OBJ."""
    return MARK + callable_ + b"".join(args) + OBJ


def call(callable_: bytes, *args: bytes) -> bytes:
    """The callable, a tuple of the arguments, REDUCE."""
    return callable_ + tuple_(*args) + REDUCE


def newobj(cls: bytes, *args: bytes) -> bytes:
    """The class, a tuple of the arguments, NEWOBJ: cls.__new__(cls, *args)."""
    return cls + tuple_(*args) + NEWOBJ


def newobj_ex(cls: bytes, args: bytes, kwargs: bytes) -> bytes:
    """The class, an argument tuple, a keyword dict, NEWOBJ_EX."""
    return cls + args + kwargs + NEWOBJ_EX


def build(target: bytes, state: bytes) -> bytes:
    """The object, its state, BUILD (``__setstate__``, else ``__dict__`` update)."""
    return target + state + BUILD


def slot_build(target: bytes, **slots: bytes) -> bytes:
    """BUILD with ``(None, slots)``: ``setattr(target, name, value)`` for each."""
    return target + NONE + dict_(**slots) + b"\x86" + BUILD


def setitems(target: bytes, *items: tuple[bytes, bytes]) -> bytes:
    """The object, MARK, key-value parts, SETITEMS: ``target[key] = value``."""
    return target + MARK + b"".join(k + v for k, v in items) + SETITEMS


def appends(target: bytes, *items: bytes) -> bytes:
    """The object, MARK, the items, APPENDS: ``target.extend(items)``."""
    return target + MARK + b"".join(items) + APPENDS


def additems(target: bytes, *items: bytes) -> bytes:
    """The object, MARK, the items, ADDITEMS: ``target.add(item)`` for each."""
    return target + MARK + b"".join(items) + ADDITEMS


def ext(code: int) -> bytes:
    """EXT1, EXT2 or EXT4, by the size of ``code`` (copyreg's extension registry)."""
    if code < 256:
        return b"\x82" + bytes([code])
    if code < 65536:
        return b"\x83" + struct.pack("<H", code)
    return b"\x84" + struct.pack("<i", code)


def persid(pid: str) -> bytes:
    """PERSID (protocol 0 form): ``P pid\\n``."""
    return b"P" + pid.encode("ascii") + b"\n"


def binpersid(pid: bytes) -> bytes:
    """The persistent id object, BINPERSID."""
    return pid + BINPERSID


def put(index: int) -> bytes:
    """BINPUT (index < 256) or LONG_BINPUT."""
    return b"q" + bytes([index]) if index < 256 else b"r" + struct.pack("<I", index)


def get(index: int) -> bytes:
    """BINGET (index < 256) or LONG_BINGET."""
    return b"h" + bytes([index]) if index < 256 else b"j" + struct.pack("<I", index)


def rebuilder(name: str) -> bytes:
    """picklable._reconstruct.<name>, by STACK_GLOBAL."""
    return stack_global("picklable._reconstruct", name)


def getattr_(target: bytes, name: str) -> bytes:
    """builtins.getattr(target, name) by REDUCE."""
    return call(stack_global("builtins", "getattr"), target, text(name))


def payload_class(name: bytes, bases: bytes, namespace: bytes, origin: bytes = NONE) -> bytes:
    """_make_class(type, name, bases, namespace, a new tracker id, origin): a class
    the payload builds (with no code, unless its namespace holds some); its id is
    one no other payload of the run uses."""
    return call(
        rebuilder("_make_class"),
        stack_global("builtins", "type"),
        name,
        bases,
        namespace,
        text(f"payload-class-{uuid.uuid4().hex}"),
        origin,
    )
