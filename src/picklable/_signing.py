"""Signed payloads: HMAC-SHA256 over the pickle, checked before anything loads.

A pickle runs code when it is loaded. When payloads cross a boundary that an
attacker could write to (a socket, a shared directory, a queue), sign them with
a secret key both sides hold: ``dumps(obj, key=k)`` / ``loads(data, key=k)``.
A payload that was not made with that key -- tampered with, truncated, unsigned,
or signed with another key -- is refused with :class:`picklable.UnpicklingError`
before a single pickle opcode runs.

Framing (all integers little-endian)::

    offset  size  field
    0       4     magic  b"\\x00PKS"   (0x00 is no pickle opcode: plain pickle.loads
                                       refuses it at the first byte)
    4       1     format version (1 = HMAC-SHA256)
    5       8     length of the pickle that follows, in bytes (u64)
    13      4     number of out-of-band buffers the pickle was made with (u32)
    17      32    MAC = HMAC-SHA256(key, bytes 0..17 + pickle
                        + for each out-of-band buffer: u64 length + its bytes)
    49      n     the pickle (protocol 5 by default)

The header is covered by the MAC, so neither the version, the length nor the
buffer count can be changed. Out-of-band buffers (``buffer_callback`` /
``buffers=``) are covered too, in order. Overhead: 49 bytes per payload, and one
pass of SHA-256 over the pickle and its buffers on each side.

What signing does not do: it does not encrypt (anyone who sees a payload can
read it), and it does not stop replay (an old, genuinely signed payload stays
valid for as long as the key does). Keys are ``bytes`` of at least 16 bytes;
:func:`new_key` makes a random 32-byte one, e.g. one per process pool.

Reading a signed payload from a stream (``load(file, key=k)``,
:func:`read_verified`) has to trust the header's length before the MAC can
be checked, since the MAC covers the pickle that follows. So a length above
``max_size`` (:data:`MAX_STREAM_SIZE`, 1 GiB, by default) is refused before a
byte of the pickle is read, and the pickle is read and fed to the MAC in
chunks of 4 MiB as it arrives: a forged header costs the reader only what the
writer actually sends, and at most ``max_size``.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Sequence
from typing import IO, Any

from . import _caches
from .exceptions import UnpicklingError

# The constant-time compare that hmac.compare_digest is, without the import of
# hmac and hashlib (Python modules a pool worker would load only for this).
try:
    from _hashlib import compare_digest
except ImportError:  # pragma: no cover - CPython built without OpenSSL
    from hmac import compare_digest

__all__ = [
    "HEADER_SIZE",
    "MAGIC",
    "MAX_STREAM_SIZE",
    "is_signed",
    "mac_of",
    "new_key",
    "read_verified",
    "sign",
    "signed_pieces",
    "verify",
]

MAGIC = b"\x00PKS"
VERSION = 1
_MAGIC_V1 = MAGIC + bytes([VERSION])
_HEAD = struct.Struct("<4sBQI")  # magic, version, pickle length, buffer count
_MAC_SIZE = 32
HEADER_SIZE = _HEAD.size + _MAC_SIZE  # 49
MIN_KEY_BYTES = 16
_U64 = struct.Struct("<Q")
MAX_STREAM_SIZE = 1 << 30
"""The largest signed pickle ``load(file, key=...)`` reads by default, in bytes (1 GiB)."""
_CHUNK = 1 << 22  # what one read of a signed stream asks for (4 MiB)


def new_key() -> bytes:
    """A fresh random signing key (32 bytes from the OS's CSPRNG, as :mod:`secrets` uses).

    Returns
    -------
    bytes
        Give it to both sides (``dumps(obj, key=k)``, ``loads(data, key=k)``);
        never ship it inside a payload.
    """
    return os.urandom(32)


def check_key(key: Any) -> bytes:
    """Return ``key`` as bytes, or raise if it cannot sign.

    Raises
    ------
    TypeError
        ``key`` is not bytes-like (a ``str`` password must be encoded, better
        derived with :func:`hashlib.pbkdf2_hmac`).
    ValueError
        ``key`` is shorter than 16 bytes.
    """
    if type(key) is bytes and len(key) >= MIN_KEY_BYTES:
        return key  # the common case, checked without a copy
    if not isinstance(key, (bytes, bytearray, memoryview)):
        raise TypeError(f"key must be bytes (e.g. picklable.new_key()), not {type(key).__name__}")
    data = bytes(key)
    if len(data) < MIN_KEY_BYTES:
        raise ValueError(
            f"key is {len(data)} bytes long; a signing key needs at least {MIN_KEY_BYTES} "
            "(picklable.new_key() makes a random 32-byte one)"
        )
    return data


def _buffer_bytes(buffer: Any) -> memoryview:
    view = memoryview(buffer)
    if not view.contiguous:
        raise UnpicklingError(
            "Cannot check the signature: an out-of-band buffer is not contiguous.",
            reason="non-contiguous out-of-band buffer",
            hint="pass the buffers exactly as the sender's buffer_callback received them",
        )
    return view.cast("B") if (view.ndim != 1 or view.format != "B") else view


# key -> an HMAC whose key schedule is done: copying it costs a third of a fresh
# hmac.new (a pool signs four small frames per task). Bounded; keys are few.
# OpenSSL's HMAC object (what hmac.HMAC wraps) when present: its copy is C.
_keyed: dict[bytes, Any] = {}
_KEYED_LIMIT = 64
_caches.register("signing.keyed_hmacs", _keyed.clear)


def _new_keyed_hmac(key: bytes) -> Any:
    try:
        from _hashlib import hmac_new
    except ImportError:  # pragma: no cover - CPython built without OpenSSL
        import hashlib
        import hmac

        return hmac.new(key, digestmod=hashlib.sha256)
    return hmac_new(key, digestmod="sha256")


def _keyed_mac(key: bytes) -> Any:
    """A fresh HMAC-SHA256 of ``key``, nothing fed yet."""
    base = _keyed.get(key)
    if base is None:
        if len(_keyed) >= _KEYED_LIMIT:
            _keyed.clear()
        base = _keyed[key] = _new_keyed_hmac(key)
    return base.copy()


def _feed_buffers(mac: Any, buffers: Sequence[Any]) -> None:
    for buffer in buffers:
        view = _buffer_bytes(buffer)
        mac.update(_U64.pack(view.nbytes))
        mac.update(view)


def _mac(
    key: bytes, head: bytes | memoryview, body: bytes | memoryview, buffers: Sequence[Any]
) -> bytes:
    mac = _keyed_mac(key)
    mac.update(head)
    mac.update(body)
    _feed_buffers(mac, buffers)
    digest: bytes = mac.digest()
    return digest


def sign(key: bytes, body: bytes, buffers: Sequence[Any] = ()) -> bytes:
    """Frame ``body`` (a pickle) as a signed payload (see the module doc).

    Parameters
    ----------
    key:
        The signing key, already checked by :func:`check_key`.
    body:
        The pickle.
    buffers:
        The out-of-band buffers the pickle was made with, in order.

    Returns
    -------
    bytes
        Header, MAC and pickle.
    """
    return b"".join(signed_pieces(key, body, buffers))


def signed_pieces(key: bytes, body: bytes, buffers: Sequence[Any] = ()) -> tuple[bytes, bytes]:
    """:func:`sign`'s payload in two pieces, header and MAC, then ``body``
    itself: for a sender that writes pieces (``sendmsg``), without the copy
    of ``body`` that joining them makes (200 MB of a large global)."""
    head = _HEAD.pack(MAGIC, VERSION, len(body), len(buffers))
    return head + _mac(key, head, body, buffers), body


def mac_of(payload: Any) -> Any:
    """The MAC of a payload made by :func:`sign` (bytes, or a view of them; not
    checked here). Under one key, equal payloads have equal MACs: a digest of
    the payload that costs no second pass over it."""
    return payload[_HEAD.size : HEADER_SIZE]


def is_signed(data: Any) -> bool:
    """Whether ``data`` starts like a signed payload."""
    try:
        return bytes(memoryview(data)[:4]) == MAGIC
    except TypeError:
        return False


def _refuse(message: str, reason: str, hint: str) -> UnpicklingError:
    return UnpicklingError(f"Refusing to load: {message}", reason=reason, hint=hint)


def verify(
    key: bytes, data: Any, buffers: Iterable[Any] | None = None
) -> tuple[memoryview, list[Any] | None]:
    """Check a signed payload and return ``(pickle, buffers)`` to load.

    Nothing of the pickle is interpreted before the MAC matched.

    Parameters
    ----------
    key:
        The key, already checked by :func:`check_key`.
    data:
        The whole signed payload.
    buffers:
        The out-of-band buffers given to ``loads``, if any.

    Returns
    -------
    tuple
        A view of the pickle, and the buffers as a list (or None).

    Raises
    ------
    picklable.UnpicklingError
        Unsigned, truncated, extended, tampered with, or signed with another key.
    """
    if (
        type(data) is bytes
        and buffers is None
        and len(data) >= HEADER_SIZE
        and data[:5] == _MAGIC_V1
    ):
        # The common case (a pool frame): whole bytes, no out-of-band buffers.
        _, _, length, count = _HEAD.unpack_from(data)
        if count == 0 and len(data) - HEADER_SIZE == length:
            body = memoryview(data)[HEADER_SIZE:]
            if compare_digest(_mac(key, data[: _HEAD.size], body, ()), mac_of(data)):
                return body, None
        # Otherwise the full checks below say precisely what is wrong.
    try:
        view = memoryview(data).cast("B")
    except TypeError as exc:
        raise TypeError(f"data must be bytes-like, not {type(data).__name__}") from exc
    if len(view) < _HEAD.size or bytes(view[:4]) != MAGIC:
        if len(view) and view[0] == 0x80:
            detail = "it is an unsigned pickle"
        elif len(view) < _HEAD.size and bytes(view[: len(view)]) == MAGIC[: len(view)]:
            detail = f"it is truncated ({len(view)} bytes, shorter than the header)"
        else:
            detail = "it does not start with a signed-payload header"
        raise _refuse(
            f"a key was given but the payload is not signed: {detail}.",
            "payload not signed",
            "sign it with dumps(obj, key=...) on the sending side",
        )
    _, version, length, count = _HEAD.unpack_from(view)
    if version != VERSION:
        raise _refuse(
            f"the payload is signed with format version {version}; this picklable "
            f"reads version {VERSION}.",
            "unknown signature format",
            "install the same picklable version on both sides",
        )
    available = len(view) - HEADER_SIZE
    if available < length:
        raise _refuse(
            f"the signed payload is truncated: its header announces a {length:,}-byte pickle, "
            f"{max(available, 0):,} bytes arrived.",
            "truncated payload",
            "check that the whole payload arrives (framing, buffer sizes)",
        )
    if available > length:
        raise _refuse(
            f"{available - length:,} unexpected bytes follow the signed pickle.",
            "bytes after the signed payload",
            "pass exactly one payload to loads",
        )
    given = _given_buffers(buffers, count)
    head = view[: _HEAD.size]
    body = view[HEADER_SIZE:]
    expected = _mac(key, head, body, given)
    if not compare_digest(expected, mac_of(view)):
        raise _bad_signature()
    return body, (given if buffers is not None else None)


def _given_buffers(buffers: Iterable[Any] | None, count: int) -> list[Any]:
    """The out-of-band buffers given to the reader, as many as were signed."""
    given = list(buffers) if buffers is not None else []
    if len(given) != count:
        raise _refuse(
            f"the payload was signed with {count} out-of-band buffer(s); {len(given)} given.",
            "out-of-band buffer count differs",
            "pass buffers= exactly as the sender's buffer_callback received them",
        )
    return given


def _bad_signature() -> UnpicklingError:
    return _refuse(
        "the signature does not match: the payload was changed after signing, or "
        "signed with another key.",
        "bad signature",
        "use the same key on both sides; never load a payload whose signature fails",
    )


def read_verified(
    file: IO[bytes],
    key: bytes,
    buffers: Iterable[Any] | None = None,
    max_size: int = MAX_STREAM_SIZE,
) -> tuple[bytearray, list[Any] | None]:
    """Read one signed payload from ``file`` and check it: ``(pickle, buffers)``.

    The header is read first; a pickle longer than ``max_size`` is refused
    before any of it is read. The pickle is then read in chunks of at most
    4 MiB, each fed to the MAC as it arrives; nothing is returned (or
    unpickled) unless the MAC matches.

    Parameters
    ----------
    file:
        A binary stream positioned at a signed payload (``dump(obj, file, key=k)``).
    key:
        The key, already checked by :func:`check_key`.
    buffers:
        The out-of-band buffers, if any.
    max_size:
        The largest pickle to read, in bytes.

    Returns
    -------
    tuple
        The pickle, and the buffers as a list (or None).

    Raises
    ------
    picklable.UnpicklingError
        Unsigned, truncated, too large, tampered with, or signed with another key.
    """
    head = _read_exactly(file, HEADER_SIZE)
    if len(head) < HEADER_SIZE or head[:5] != _MAGIC_V1:
        verify(key, head, buffers)  # says precisely what is wrong with it
        raise _refuse(  # pragma: no cover - verify always raises for these
            "the stream does not start with a signed payload.",
            "payload not signed",
            "sign it with dump(obj, file, key=...) on the sending side",
        )
    _, _, length, count = _HEAD.unpack_from(head)
    if length > max_size:
        raise _refuse(
            f"the signed payload's header announces a {length:,}-byte pickle, more than "
            f"max_size ({max_size:,} bytes). The header cannot be checked before the pickle "
            "is read (the signature covers both), so nothing was read. Fix: if payloads "
            f"this large are expected, pass load(file, key=..., max_size={length}).",
            "signed payload larger than max_size",
            "raise max_size= if payloads this large are expected",
        )
    given = _given_buffers(buffers, count)
    mac = _keyed_mac(key)
    mac.update(head[: _HEAD.size])
    body = bytearray()
    while len(body) < length:
        chunk = file.read(min(length - len(body), _CHUNK))
        if not chunk:
            raise _refuse(
                f"the signed payload is truncated: its header announces a {length:,}-byte "
                f"pickle, {len(body):,} bytes arrived before the stream ended.",
                "truncated payload",
                "check that the whole payload arrives (framing, buffer sizes)",
            )
        mac.update(chunk)
        body += chunk
    _feed_buffers(mac, given)
    if not compare_digest(mac.digest(), mac_of(head)):
        raise _bad_signature()
    return body, (given if buffers is not None else None)


def _read_exactly(file: IO[bytes], size: int) -> bytes:
    chunks = []
    while size > 0:
        chunk = file.read(min(size, _CHUNK))
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def signed_without_key() -> UnpicklingError:
    """The error for a signed payload given to ``loads``/``load`` without a key."""
    return _refuse(
        "this payload is signed; pass the key it was signed with (loads(data, key=...)).",
        "signed payload, no key given",
        "pass key= to loads/load",
    )
