"""A script's main-guard answer kept on disk per content of the script (issue 29).

What a script's main guard binds (:mod:`.main_guard`) is read from its
source: a parse and a walk, 1-10 ms, that the first dump of a script's object
paid in every process that ran the script. The answer depends on the source
alone, on the Python that parses it and on the code that reads it, so it is
kept as ``.pyc`` files keep code: one small file per script path, holding
the digest of the source it answers for. A process that runs an unchanged
script reads it back (a read of the script, a BLAKE2 digest, a read of the
entry: about 0.1 ms) and imports neither :mod:`ast` nor :mod:`.main_guard`.

Where: ``$PICKLABLE_CACHE_DIR/guard`` if that variable is set (set and empty:
nothing is kept or read), else ``$XDG_CACHE_HOME/picklable/guard`` or
``~/.cache/picklable/guard``. An entry whose source digest, Python or reading
code (the stat of ``main_guard.py``) differs from the running ones, or that
is not an answer in the format below, is a miss; an ``OSError`` is a miss or a
write skipped (a read-only home). Entries are written whole (a file of their
own, then renamed), so a reader never sees half of one.

The store is trusted as ``__pycache__`` is: whoever can write the user's cache
directory can change what the guard is said to bind (a worker would use its
own object for one the guard rebinds), as they could change the cached code
of every module the user imports.

Format (ASCII text; one name per line: an answer with a name that is not an
ASCII identifier, ``globals()["a b"]``, is not kept)::

    picklable guard answer 1
    <Python's cache tag> <main_guard.py's mtime_ns> <its size>
    <BLAKE2b-128 of the script's bytes>
    none                      (the guard cannot be read: any name may differ)
  or
    bound <n>
    <n names>
    called <m>
    <m names>
"""

from __future__ import annotations

import os
import sys
from _thread import get_ident
from typing import Any

try:  # what hashlib.blake2b is, without hashlib's import of OpenSSL (3 ms)
    from _blake2 import blake2b as _blake2b
except ImportError:  # pragma: no cover - a Python without the builtin module
    from hashlib import blake2b as _blake2b

__all__ = ["MISS", "directory", "keep", "lookup", "source_of"]

# Scripts up to this size have their whole guard read on a miss, and kept: a
# parse of 8 KB costs about what the code-object index and the partial parse
# it leads to cost (2026-12-05: 0.8 ms against 1.5 ms for a 30-line script).
SMALL = 8192
MISS: Any = object()
_HEADER = "picklable guard answer 1"
_analysis: list[str | None] = []


def directory() -> str | None:
    """Where entries live; None when the store is off (``PICKLABLE_CACHE_DIR=``)."""
    root = os.environ.get("PICKLABLE_CACHE_DIR")
    if root is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "picklable")
    elif not root:
        return None
    return os.path.join(root, "guard")


def _analysis_key() -> str | None:
    """The Python and the reading code an answer comes from (once per process)."""
    if not _analysis:
        reader = os.path.join(os.path.dirname(__file__), "main_guard.py")
        try:
            stat = os.stat(reader)
        except OSError:  # no source file (a zip import): keep nothing
            _analysis.append(None)
        else:
            tag = sys.implementation.cache_tag
            _analysis.append(f"{tag} {stat.st_mtime_ns} {stat.st_size}")
    return _analysis[0]


def source_of(filename: str) -> bytes | None:
    """The script's bytes as they are now; None if they cannot be read."""
    try:
        with open(filename, "rb") as file:
            return file.read()
    except OSError:
        return None


def _entry(filename: str) -> str | None:
    where = directory()
    if where is None:
        return None
    key = _blake2b(os.path.abspath(filename).encode("utf-8", "surrogateescape"), digest_size=16)
    return os.path.join(where, key.hexdigest())


def _digest(source: bytes) -> str:
    return _blake2b(source, digest_size=16).hexdigest()


def lookup(filename: str, source: bytes) -> Any:
    """The answer kept for the script ``filename`` with this ``source``:
    ``(bound, called)`` frozensets, or None (the guard cannot be read); else
    :data:`MISS`."""
    analysis = _analysis_key()
    entry = _entry(filename)
    if analysis is None or entry is None:
        return MISS
    try:
        with open(entry, "rb") as file:
            lines = file.read().decode("ascii").split("\n")  # no codec lookup: bytes
    except (OSError, ValueError):
        return MISS
    if lines[:3] != [_HEADER, analysis, _digest(source)] or lines[-1] != "":
        return MISS
    try:
        return _parse_answer(lines[3:-1])
    except (ValueError, IndexError, UnicodeError):
        return MISS


def _parse_answer(lines: list[str]) -> Any:
    if lines == ["none"]:
        return None
    sets = []
    at = 0
    for label in ("bound", "called"):
        word, count = lines[at].split(" ")
        if word != label:
            raise ValueError(word)
        names = lines[at + 1 : at + 1 + int(count)]
        if len(names) != int(count):
            raise ValueError(count)
        if not all(map(_plain_name, names)):
            raise ValueError("not a name")
        sets.append(frozenset(names))
        at += 1 + int(count)
    if at != len(lines):
        raise ValueError("trailing lines")
    return sets[0], sets[1]


def _plain_name(name: str) -> bool:
    return name.isascii() and name.isidentifier()


def keep(filename: str, source: bytes, answer: Any) -> None:
    """Keep ``answer`` for the script ``filename`` with this ``source``
    (quietly nothing when the directory cannot be written)."""
    analysis = _analysis_key()
    entry = _entry(filename)
    if analysis is None or entry is None:
        return
    lines = [_HEADER, analysis, _digest(source)]
    if answer is None:
        lines.append("none")
    else:
        for label, names in zip(("bound", "called"), answer, strict=True):
            if not all(map(_plain_name, names)):
                return
            lines.append(f"{label} {len(names)}")
            lines.extend(sorted(names))
    text = "\n".join(lines) + "\n"
    partial = f"{entry}.{os.getpid()}.{get_ident()}.part"  # one writer per name
    try:
        os.makedirs(os.path.dirname(entry), mode=0o700, exist_ok=True)
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(text.encode("ascii"))
        os.replace(partial, entry)
    except OSError:
        try:
            os.unlink(partial)
        except OSError:
            pass
