"""Frames between the auditing process and its loading children.

``<4-byte little-endian length><pickle>`` of plain data (tuples, str, bytes),
so plain :mod:`pickle` carries them and nothing of the audited code is needed
to read one.
"""

from __future__ import annotations

import pickle
import re
import struct
from typing import IO, Any

_HEADER = struct.Struct("<I")


def read_frame(stream: IO[bytes]) -> Any:
    """One frame from ``stream``, or None at end of file."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)


def write_frame(stream: IO[bytes], message: Any) -> None:
    """Write one frame and flush it."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


# Reprs carry addresses that differ between processes without the object being
# different (pickle's messages hold reprs from Python 3.14 on).
ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def first_line(exc: BaseException) -> str:
    """``Type: first line of the message``, addresses removed (a report of the
    same code reads the same in every run)."""
    text = str(exc).strip()
    first = ADDRESS.sub("", text.splitlines()[0]) if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
