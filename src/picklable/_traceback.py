"""Tracebacks that travel: frame records out, real traceback objects back.

A traceback is shipped as a tuple of *frame records*, one per ``tb_next`` step::

    (filename, name, qualname, module, lineno, end_lineno, colno, end_colno, line)

``qualname`` is None when it equals ``name``; the positions are those of the
instruction that was running (what ``traceback`` underlines with ``^^^^``);
``line`` is that source line as the sender read it, or None. Locals never
travel: they may be huge, secret or unpicklable, and a receiver cannot run the
frames anyway. Identical records are the same tuple object, so pickle's memo
writes a recursion of 1,000 identical frames as one record and 999 references.

The receiver builds a real :class:`types.TracebackType` chain. Each frame is the
frame of a generator that never started, made from a one-line template whose
code object is replaced: ``co_filename``, ``co_name``, ``co_qualname`` and a
location table (3.11+) that puts every instruction at the shipped positions. So
``traceback.print_exception`` prints the sender's file, function, line and
carets; nothing ever executes, and an unstarted generator's frame has no
``f_back``, so a rebuilt traceback does not keep the receiver's call stack alive
(a frame that ran and finished would, from Python 3.12 on). Frames are inert,
so they are cached per record and shared by every traceback that needs them.

When the receiver cannot read a file (another machine, a temporary script), the
shipped lines are served to :mod:`linecache` through the frame globals'
``__spec__.loader`` (also their ``__loader__``), the way it reads source from
zip files.
"""

from __future__ import annotations

import importlib.machinery
import itertools
import linecache
import types
from typing import TYPE_CHECKING, Any, cast

from . import _caches
from ._compat import TRACEBACK_SPANS

if TYPE_CHECKING:
    import importlib.abc

Record = tuple[
    str,  # filename
    str,  # name
    str | None,  # qualname, None when equal to name
    str | None,  # module (the frame globals' __name__)
    int | None,  # lineno
    int | None,  # end_lineno
    int | None,  # colno (UTF-8 byte offset, as in co_positions)
    int | None,  # end_colno
    str | None,  # the source line, without its newline
]

_CACHE_LIMIT = 4096

# (id(code), lasti) -> (code, record): a second dump of the same failure is lookups.
_records: dict[tuple[int, int], tuple[types.CodeType, Record]] = {}
# record -> frame, on the receiving side.
_frames: dict[Record, types.FrameType] = {}
# (module, filename) -> the globals of rebuilt frames.
_globals: dict[tuple[str | None, str], dict[str, Any]] = {}
# filename -> {lineno: line}: source lines shipped for files this process may lack.
_shipped_lines: dict[str, dict[int, str]] = {}
# Files whose text linecache took from _shipped_lines.
_served: set[str] = set()


def _clear() -> None:
    # Shipped source lines stay: tracebacks already rebuilt still show them.
    _records.clear()
    _frames.clear()
    _globals.clear()


_caches.register("traceback.records", _clear)

# A generator function on a single line: all its instructions share one location.
_TEMPLATE: types.CodeType = compile("def _frame(): yield", "<picklable>", "exec").co_consts[0]


# ------------------------------------------------------------------ sending side


def records(tb: types.TracebackType | None) -> tuple[Record, ...]:
    """The frame records of ``tb`` and its ``tb_next`` chain, oldest call first."""
    out = []
    seen: dict[Record, Record] = {}
    while tb is not None:
        record = _record(tb)
        out.append(seen.setdefault(record, record))
        tb = tb.tb_next
    return tuple(out)


def _record(tb: types.TracebackType) -> Record:
    frame = tb.tb_frame
    code = frame.f_code
    lasti = tb.tb_lasti
    key = (id(code), lasti)
    cached = _records.get(key)
    if cached is not None and cached[0] is code:
        return cached[1]
    lineno: int | None = tb.tb_lineno
    end_lineno = colno = end_colno = None
    if lasti >= 0:
        found = next(itertools.islice(code.co_positions(), lasti // 2, None), None)
        if found is not None and found[0] is not None:
            lineno, end_lineno, colno, end_colno = found
    name = code.co_name
    qualname = getattr(code, "co_qualname", name)
    module = frame.f_globals.get("__name__")
    line = None
    if lineno is not None and lineno > 0:
        line = linecache.getline(code.co_filename, lineno, frame.f_globals).rstrip("\r\n") or None
    record: Record = (
        code.co_filename,
        name,
        None if qualname == name else qualname,
        module if type(module) is str else None,
        lineno,
        end_lineno,
        colno,
        end_colno,
        line,
    )
    if len(_records) >= _CACHE_LIMIT:
        _records.clear()
    _records[key] = (code, record)
    return record


# ---------------------------------------------------------------- receiving side


def build(shipped: tuple[Record, ...]) -> types.TracebackType | None:
    """A real traceback whose frames are the shipped records, oldest call first."""
    tb = None
    # Equal records arrive as one object (pickle's memo): look each up once.
    seen: dict[int, types.FrameType] = {}
    for record in reversed(shipped):
        frame = seen.get(id(record))
        if frame is None:
            frame = _frames.get(record)
            if frame is None:
                frame = _make_frame(record)
            seen[id(record)] = frame
        lineno = record[4]
        tb = types.TracebackType(tb, frame, 0, lineno if lineno is not None else -1)
    return tb


def _make_frame(record: Record) -> types.FrameType:
    filename, name, qualname, module, lineno, end_lineno, colno, end_colno, line = record
    if line is not None and lineno is not None:
        _remember_line(filename, lineno, line)
        if (
            TRACEBACK_SPANS
            and end_lineno is not None
            and end_lineno > lineno
            and not linecache.getline(filename, end_lineno).strip()
        ):
            # Of a span over lines this process lacks, only the first travelled:
            # it is shown alone, underlined to its end (as 3.11 shows any span),
            # not followed by blank lines.
            end_lineno, end_colno = lineno, len(line.encode())
    changes: dict[str, Any] = {
        "co_filename": filename,
        "co_name": name,
        "co_firstlineno": lineno if lineno is not None and lineno > 0 else 1,
    }
    changes["co_qualname"] = qualname or name
    units = len(_TEMPLATE.co_code) // 2
    changes["co_linetable"] = _location_table(units, lineno, end_lineno, colno, end_colno)
    code = _TEMPLATE.replace(**changes)
    generator: types.GeneratorType[None, None, None] = types.FunctionType(
        code, _frame_globals(module, filename)
    )()
    frame: types.FrameType | None = generator.gi_frame
    # Dropping a generator that never started runs none of its code; its frame
    # lives on, owned by the frame object, with no f_back.
    del generator
    assert frame is not None
    if len(_frames) >= _CACHE_LIMIT:
        _frames.clear()
    _frames[record] = frame
    return frame


def _frame_globals(module: str | None, filename: str) -> dict[str, Any]:
    key = (module, filename)
    found = _globals.get(key)
    if found is None:
        if len(_globals) >= _CACHE_LIMIT:
            _globals.clear()  # frames built before keep theirs
        loader = _ShippedSource(filename)
        # A module's globals, as linecache reads them: the loader is also the
        # spec's (Python 3.15 warns when a __loader__ has no __spec__.loader),
        # and from 3.13 on the spec's name lets it serve lines when __name__ is None.
        spec = importlib.machinery.ModuleSpec(
            module or "<picklable>",
            cast("importlib.abc.Loader", loader),  # linecache calls get_source only
            origin=filename,
        )
        found = _globals[key] = {"__name__": module, "__loader__": loader, "__spec__": spec}
    return found


# Location table (Objects/locations.md, CPython 3.11+): an entry covers 1-8
# code units. Code 14 carries line delta, end line delta, column + 1 and end
# column + 1; code 13 a line delta only; code 15 means "no location".
_LONG, _NO_COLUMNS, _NO_LOCATION = 14, 13, 15

# From Python 3.13 on, traceback reads every line an instruction spans: a
# damaged or forged span of a billion lines would print for hours. A longer
# span than any real statement's keeps its line, without columns.
_MAX_SPAN = 10_000


def _location_table(
    units: int,
    lineno: int | None,
    end_lineno: int | None,
    colno: int | None,
    end_colno: int | None,
) -> bytes:
    out = bytearray()
    exact = (
        lineno is not None
        and end_lineno is not None
        and colno is not None
        and end_colno is not None
        and 0 <= end_lineno - lineno <= _MAX_SPAN
        and (end_lineno > lineno or colno <= end_colno)
    )
    while units > 0:
        size = min(units, 8)
        units -= size
        if lineno is None:
            out.append(0x80 | (_NO_LOCATION << 3) | (size - 1))
        elif exact:
            assert end_lineno is not None and colno is not None and end_colno is not None
            out.append(0x80 | (_LONG << 3) | (size - 1))
            _svarint(out, 0)  # co_firstlineno is the line itself
            _varint(out, end_lineno - lineno)
            _varint(out, colno + 1)
            _varint(out, end_colno + 1)
        else:
            out.append(0x80 | (_NO_COLUMNS << 3) | (size - 1))
            _svarint(out, 0)
    return bytes(out)


def _varint(out: bytearray, value: int) -> None:
    while value >= 64:
        out.append(64 | (value & 63))
        value >>= 6
    out.append(value)


def _svarint(out: bytearray, value: int) -> None:
    _varint(out, ((-value) << 1) | 1 if value < 0 else value << 1)


# ------------------------------------------------------------ shipped source lines


# Shipped lines are served as a whole file text, padded up to the last line: a
# damaged or forged line number must not make that text gigabytes long.
_MAX_SHIPPED_LINENO = 1_000_000


def _remember_line(filename: str, lineno: int, line: str) -> None:
    if not 0 < lineno <= _MAX_SHIPPED_LINENO:
        return  # the frame keeps its position; the line is not shown
    if len(line.splitlines()) > 1:
        # linecache splits text with str.splitlines(): a form feed or other
        # separator inside the line would shift every line after it.
        line = " ".join(line.splitlines())
    if filename not in _shipped_lines and len(_shipped_lines) >= _CACHE_LIMIT:
        # Forget every shipped line, and the frames that would not ship theirs again.
        _shipped_lines.clear()
        _served.clear()
        _frames.clear()
    lines = _shipped_lines.setdefault(filename, {})
    if lines.get(lineno) == line:
        return
    lines[lineno] = line
    if filename in _served:
        # linecache holds the text it took from us; let it ask again.
        entry = linecache.cache.get(filename)
        if entry is not None and len(entry) == 4 and entry[1] is None:
            del linecache.cache[filename]
        _served.discard(filename)


class _ShippedSource:
    """``__loader__`` of rebuilt frames: the lines the sender shipped.

    :mod:`linecache` asks a frame's loader only when it cannot read the file
    itself, so a file present here always wins over the shipped line.
    """

    __slots__ = ("filename",)

    def __init__(self, filename: str) -> None:
        self.filename = filename

    def get_source(self, fullname: str) -> str | None:
        """The shipped lines of this file, blank where none were shipped."""
        lines = _shipped_lines.get(self.filename)
        if not lines:
            return None
        _served.add(self.filename)
        return "".join(lines.get(n, "") + "\n" for n in range(1, max(lines) + 1))
