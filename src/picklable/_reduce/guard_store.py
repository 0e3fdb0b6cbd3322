"""A script's main-guard answers kept on disk per content of the script (issue 29).

What a script's main guard binds (:mod:`.main_guard`) is read from its
source: a parse and a walk, 1-10 ms, that the first dump of a script's object
paid in every process that ran the script, and a picklable pool's first task
of a script function again (what the module level binds outside the guard: a
worker defines it for sure). The answers depend on the source
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

    picklable guard answer 3
    <Python's cache tag> <main_guard.py's mtime_ns> <its size>
    <BLAKE2b-128 of the script's bytes>
    guard none                (the guard cannot be read: any name may differ)
  or
    bound <n>                 (what the guard binds or changes)
    <n names>
    called <m>                (what it calls a method of)
    <m names>
  then
    unguarded <k> | none      (what the module level binds outside the guard)
    <k names>
    between <j>               (statements between guards binding names again)
    <j lines: the statement's first line, then its names, space-separated>
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
_HEADER = "picklable guard answer 3"
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
    """The answers kept for the script ``filename`` with this ``source``:
    ``(guard, unguarded, between)``, where ``guard`` is the guard's ``(bound,
    called)`` frozensets, ``unguarded`` the names the module level binds
    outside the guard, each None where it cannot be told, and ``between``
    what it binds again between guards (see :mod:`.main_guard`); else
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
        return _parse_answers(lines[3:-1])
    except (ValueError, IndexError, UnicodeError):
        return MISS


def _parse_answers(lines: list[str]) -> Any:
    at = 0

    def names(label: str) -> frozenset[str] | None:
        nonlocal at
        word, count = lines[at].split(" ")
        if word != label:
            raise ValueError(word)
        at += 1
        if count == "none":
            return None
        found = lines[at : at + int(count)]
        if len(found) != int(count) or not all(map(_plain_name, found)):
            raise ValueError(label)
        at += len(found)
        return frozenset(found)

    if lines[0] == "guard none":
        at, guard = 1, None
    else:
        bound = names("bound")
        called = names("called")
        if bound is None or called is None:
            raise ValueError("half an answer")
        guard = (bound, called)
    unguarded = names("unguarded")
    word, count = lines[at].split(" ")
    if word != "between":
        raise ValueError(word)
    between = []
    for line in lines[at + 1 : at + 1 + int(count)]:
        first, *rebound = line.split(" ")
        if not rebound or not all(map(_plain_name, rebound)):
            raise ValueError("between")
        between.append((int(first), frozenset(rebound)))
    at += 1 + len(between)
    if len(between) != int(count) or at != len(lines):
        raise ValueError("trailing lines")
    return guard, unguarded, tuple(between)


def _plain_name(name: str) -> bool:
    return name.isascii() and name.isidentifier()


def _section(label: str, names: frozenset[str] | None) -> list[str] | None:
    if names is None:
        return [f"{label} none"]
    if not all(map(_plain_name, names)):
        return None
    return [f"{label} {len(names)}", *sorted(names)]


def keep(
    filename: str,
    source: bytes,
    guard: Any,
    unguarded: frozenset[str] | None,
    between: tuple[tuple[int, frozenset[str]], ...] = (),
) -> None:
    """Keep the answers for the script ``filename`` with this ``source`` (see
    :func:`lookup`; quietly nothing when the directory cannot be written)."""
    analysis = _analysis_key()
    entry = _entry(filename)
    if analysis is None or entry is None:
        return
    lines = [_HEADER, analysis, _digest(source)]
    sections: list[list[str] | None] = (
        [["guard none"]]
        if guard is None
        else [_section("bound", guard[0]), _section("called", guard[1])]
    )
    sections.append(_section("unguarded", unguarded))
    if not all(_plain_name(name) for _, bound in between for name in bound):
        return
    sections.append(
        [f"between {len(between)}", *(" ".join([str(first), *sorted(b)]) for first, b in between)]
    )
    for section in sections:
        if section is None:
            return  # a name that is not an identifier: read from the script each time
        lines.extend(section)
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
