"""Objects of the sender's script: its own object where the receiver runs it too.

stdlib pickle ships a ``__main__`` function by name, and a spawn worker, which
re-imports the script as ``__mp_main__``, resolves it there: the script's own
function, with its module-level setup (locks, loggers, connections). Another
machine has no such module, and gets nothing. picklable 0.1.0 always copied
``__main__`` objects: right on another machine, wrong where the object needs
the script's own state (a lock), and never the same object.

Now an object the script's namespace leads to travels as a copy that knows
where it came from: its origin ``(module, path, file, first line)`` rides in
the copy's rebuilder (``_make_function(..., origin)``, ``_make_class``'s
origin, or ``_script_or_build(origin, rebuilder, args)`` for wrappers). A
receiver that runs the same script (same file; the same definition; every
global it reads defined there: a name set in ``if __name__ == "__main__":``
is not, in a worker) returns its own object, with the attributes the sender
set on it (the state that travels with any reference; see
``docs/state-policy.md``); any other receiver builds the copy. One payload,
one memo: objects shared between parts of the payload stay shared either way.

An object that cannot be copied (it uses a lock, a thread, a connection)
travels as a reference alone, ``_main_object(origin, why)``: it loads where
the script runs, as with pickle, and elsewhere fails with the reason. The
front door finds those on a failed dump and dumps again with the context's
``check_copies`` set (the common case pays nothing).

A pickler's ``scripts`` mode (its context's) chooses: ``"auto"`` (the default above),
``"reference"`` (the receivers run this script: a pool whose workers
re-import it; references only, no copy travels) or ``"copy"`` (copies only,
with no origin, as 0.1.0 did). Lambdas, closures and anything the script's
namespace does not lead to are copies in every mode.
"""

from __future__ import annotations

import builtins
import operator
import os
import sys
import time
import types
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import _caches, _code, _locator, _reconstruct
from .._compat import MAIN_MODULES
from .._paths import Path, walk
from .._reads import script_reads
from . import guard_store
from .attributes import leads_back, state_attributes
from .script_position import Between, module_line, rebound_later

if TYPE_CHECKING:
    from .context import DumpContext
    from .main_guard import GuardIndex

__all__ = [
    "SCRIPT_MODES",
    "UNKNOWN",
    "guard_rebinds",
    "known_origin",
    "note_copy",
    "origin_of",
    "payload_script_paths",
    "recheck_scripts",
    "same_in_workers",
    "same_values",
    "script_index_table",
    "script_location",
    "script_module_of",
    "script_reference",
    "script_reference_alone",
    "with_origin",
    "without_file",
    "workers_own_function",
]

SCRIPT_MODES = ("auto", "reference", "copy")


def _script_file(module_name: str) -> str | None:
    # From the namespace: a module without __file__ (a notebook's, python -c)
    # would raise and catch an AttributeError in getattr, 1 us per dump.
    namespace = getattr(sys.modules.get(module_name), "__dict__", None)
    filename = namespace.get("__file__") if type(namespace) is dict else None
    return filename if type(filename) is str else None


# ------------------------------------------------------- one script, one version
#
# What depends on the script alone (its file's version, its main guard read from
# the source, the decision made for each of its objects) is worked out once per
# version of the script, not once per dump (issue 29): a dump of a lambda of the
# script used to stat the file, read the guard's answer, revalidate the
# namespace's index twice and walk the object's reads, about 10 us each time.
#
# What "changed" means. A spawn worker imports the script's *file* when it
# starts; the sender runs the version it started with. A worker's own object is
# the sender's only while the two are the same version, so the file is what is
# watched: its (mtime, size, inode) is read once when the script is first met,
# then again at most every _RECHECK_SECONDS (a monotonic clock read per dump),
# and whenever a picklable pool starts workers (recheck_scripts()). A file whose
# version moved since, or whose mtime is later than picklable's own import (the
# file was edited while this process ran), is not what workers import: from then
# on no object of the script is "the same in workers", each travels as a copy
# (or, if it cannot be copied, as a reference alone, which the receiver checks).
# The window: a worker that imports an edited file within _RECHECK_SECONDS of the
# edit, receiving an object dumped before the sender looked again. A stat per
# dump never closed it either: a payload waits in a queue while a worker starts
# and imports the file. The receiver's own check (the function's first line,
# every global it reads defined there: _reconstruct.script_original) stays.
#
# The namespace is watched by identity: each object's decision is kept with the
# path it was found at and, where the guard changes names, with the script's
# functions its reads went through; a hit checks that each still holds
# (``namespace[name] is value``), so a rebinding is noticed on the next dump.
#
# Not seen: an edit made between the script's start and picklable's import (the
# file as first read is taken for the script's); a function's ``__code__``
# replaced on one of the functions that another's reads go through (on the
# dumped function itself it is seen, as are its own attributes). A script with
# no file (a notebook, ``python -c``) has no version: its objects are copies,
# decided with a few dict lookups.

_RECHECK_SECONDS = 0.1
# Wall time of picklable's import (by the script, near its start): a script file
# modified later is not the version this process runs.
_STARTED_NS = time.time_ns()
_SEEN_LIMIT = 4096
_monotonic = time.monotonic
_is = operator.is_


def _file_version(filename: str) -> tuple[int, int, int] | None:
    try:
        stat = os.stat(filename)
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size, stat.st_ino)


class _Script:
    """One script module as this process runs it (see the comment above)."""

    __slots__ = (
        "module",
        "namespace",
        "filename",
        "version",
        "checked",
        "moved",
        "answer",
        "unguarded",
        "index",
        "changed",
        "called",
        "called_names",
        "called_values",
        "between",
        "ahead",
        "seen",
    )

    def __init__(self, module: Any, filename: str | None) -> None:
        self.module = module
        self.namespace: dict[str, Any] = vars(module)
        self.filename = filename
        self.checked = _monotonic()
        # Decisions per object: id -> _Seen (checked by identity on use).
        self.seen: dict[int, _Seen] = {}
        self.version = None if filename is None else _file_version(filename)
        self.moved = self.version is None or self.version[0] > _STARTED_NS
        # The guard's (names bound or changed, names it calls a method of),
        # read from the file once, when a question needs it (issue 29: a parse
        # of the whole script, and of every function its guard calls), or from
        # the answer an earlier run kept on disk (.guard_store); None: cannot
        # tell. Until then, what the guard may touch of a large script not in
        # the store is asked of the running script's code (``index``): most
        # names it surely does not.
        self.answer: Any = _UNREAD
        # What the module level binds outside the guard: a worker defines it for
        # sure (asked by a pool sending a script function by reference).
        self.unguarded: frozenset[str] | Any | None = _UNREAD
        self.index: GuardIndex | Any | None = _UNREAD
        self.changed: frozenset[str] | Any | None = _UNREAD
        self.called: tuple[tuple[str, bool], ...] = ()
        # The names the guard calls methods of, and what they held when last
        # looked at (one C-level identity check per dump; see check()).
        self.called_names: tuple[str, ...] = ()
        self.called_values: tuple[Any, ...] = ()
        # What the module level binds again between two guards (rare: empty
        # for most scripts), and of that, what lies ahead of the module level
        # now (see .script_position): part of ``changed`` until it has run.
        self.between: Between = ()
        self.ahead: frozenset[str] = frozenset()
        if filename is None:
            self.answer = self.index = self.unguarded = None
            self._read_changed()

    def untouched(self, names: set[str]) -> bool:
        """Whether the guard surely binds, changes and calls a method of none
        of ``names``, told without reading its whole answer (False: ask
        ``changed``)."""
        if self.changed is not _UNREAD:
            return False
        index = self.index
        if index is _UNREAD:
            if self._read_answers(small_only=True):
                return False  # the whole answer is at hand: ask changed
            # main_guard (ast, dis) loads with the first question: a worker that
            # only loads payloads never needs it.
            from .main_guard import guard_index

            filename = self.filename
            index = None if filename is None else guard_index(filename, self.namespace)
            self.index = index
        return index is not None and not index.may_touch(names)

    def _answers_of(self, source: bytes) -> Any:
        """The guard's answer and the unguarded bindings, read from ``source``
        (the file's bytes, one parse) and kept on disk."""
        from .main_guard import answers

        filename: str = self.filename  # type: ignore[assignment]
        read = answers(filename, source)
        guard_store.keep(filename, source, *read)
        return read

    def _read_answers(self, *, small_only: bool = False) -> bool:
        """Both answers, from the store (see :mod:`.guard_store`) or else from
        the file, then kept there; None for what an unreadable file cannot
        tell. With ``small_only``, a script larger than ``guard_store.SMALL``
        and not in the store is not read: False (its index is asked first)."""
        filename = self.filename
        source = None if filename is None else guard_store.source_of(filename)
        if source is None:
            if small_only:
                return False
            kept: Any = (None, None, ())
        else:
            kept = guard_store.lookup(filename, source)  # type: ignore[arg-type]
            if kept is guard_store.MISS:
                if small_only and len(source) > guard_store.SMALL:
                    return False
                kept = self._answers_of(source)
        if self.answer is _UNREAD:
            self.answer, self.between = kept[0], kept[2]
            self._read_changed()
        self.unguarded = kept[1]
        return True

    def read_changed(self) -> frozenset[str] | None:
        """``changed``, the guard's answer read from the file first if need be."""
        if self.answer is _UNREAD:
            self._read_answers()
        changed: frozenset[str] | None = self.changed
        return changed

    def worker_bindings(self) -> frozenset[str] | None:
        """The names the module level binds outside the guard, as the store or
        the file says (see :func:`.main_guard.worker_bindings`)."""
        if self.unguarded is _UNREAD:
            self._read_answers()
        bound: frozenset[str] | None = self.unguarded
        return bound

    def _read_changed(self) -> None:
        """What the guard changes, read against the namespace now (a method
        called on a module changes no name)."""
        answer = self.answer
        if answer is None:
            self.changed, self.called = None, ()
            return
        bound, called = answer
        namespace = self.namespace
        kinds = tuple((n, isinstance(namespace.get(n), types.ModuleType)) for n in called)
        self.called = kinds
        self.called_names = names = tuple(n for n, _ in kinds)
        self.called_values = tuple(map(namespace.get, names))
        changed = {n for n, is_module in kinds if not is_module}
        if self.between:
            self.ahead = rebound_later(self.between, module_line(namespace))
            changed |= self.ahead
        self.changed = bound | changed if changed else bound

    def check(self) -> None:
        """Look at the file again (every _RECHECK_SECONDS), and at the names the
        guard calls methods of (a module there may have been rebound)."""
        now = _monotonic()
        if now - self.checked >= _RECHECK_SECONDS:
            self.checked = now
            if not self.moved and (
                _script_file_of(self.module) != self.filename
                or _file_version(self.filename) != self.version  # type: ignore[arg-type]
            ):
                self.moved = True
                self.seen.clear()
        names = self.called_names
        if names and not all(map(_is, map(self.namespace.get, names), self.called_values)):
            # One of them was rebound (a module's method call changes no name,
            # another object's does): look at what each holds now.
            namespace = self.namespace
            for name, is_module in self.called:
                if isinstance(namespace.get(name), types.ModuleType) is not is_module:
                    self._read_changed()
                    self.seen.clear()
                    break
            else:
                self.called_values = tuple(map(namespace.get, names))
        if self.between and self.answer is not None:
            # The module level has moved past a statement that binds a name
            # again, or (another dump, in a later guard) stands before it.
            ahead = rebound_later(self.between, module_line(self.namespace))
            if ahead != self.ahead:
                self._read_changed()
                self.seen.clear()


def _script_file_of(module: Any) -> str | None:
    filename = getattr(module, "__file__", None)
    return filename if type(filename) is str else None


class _Seen:
    """An object of the script as last decided: where it is, whether workers
    hold it (by name alone, with its reads), its origin."""

    __slots__ = ("ref", "path", "code", "attributes", "same_name", "same_reads", "deps", "origin")

    def __init__(self, ref: Any, path: Path, code: Any, attributes: tuple[Any, ...]) -> None:
        self.ref = ref
        self.path = path
        self.code = code
        self.attributes = attributes
        self.same_name: bool | None = None
        self.same_reads: bool | None = None
        # (namespace, name, value): the script's functions and classes that the
        # reads went through; same_reads holds while each is still bound there.
        self.deps: tuple[tuple[dict[str, Any], str, Any], ...] = ()
        self.origin: Any = None


_scripts: dict[str, _Script] = {}
_UNREAD: Any = object()


def _clear_scripts() -> None:
    _scripts.clear()


_caches.register("scripts.versions", _clear_scripts)


def _script(module_name: str) -> _Script | None:
    """The script module ``module_name`` as known, checked (see above); None if
    there is no such module."""
    script = _scripts.get(module_name)
    module = sys.modules.get(module_name)
    if script is None or script.module is not module:
        if module is None:
            return None
        script = _scripts[module_name] = _Script(module, _script_file_of(module))
    else:
        script.check()
    return script


def without_file(module_name: str) -> bool:
    """Whether the script ``module_name`` has no file (a notebook's kernel,
    ``python -c``): no receiver can import it, and :func:`script_location`
    answers None for each of its objects."""
    script = _scripts.get(module_name)
    if script is None or script.module is not sys.modules.get(module_name):
        script = _script(module_name)
        if script is None:
            return False
    return script.filename is None  # set once per module object (see _script)


def recheck_scripts() -> None:
    """Look at every script's file now (a pool is about to start workers, which
    import it)."""
    for script in list(_scripts.values()):
        script.checked = -_RECHECK_SECONDS
        script.check()


def _attributes(obj: Any) -> tuple[Any, ...]:
    """A function's own attributes' values (``__wrapped__``...: what it holds)."""
    if type(obj) is types.FunctionType:
        return tuple(obj.__dict__.values()) if obj.__dict__ else ()
    return ()


class _Held(weakref.ref):  # type: ignore[type-arg]
    """A value a kept decision was made with (a function's attribute, what its
    reads went through), held weakly: the decision must keep alive neither what
    the script dropped nor, through a function's attribute naming its class
    (``A.method.owner = A``), the class that holds the function. A value that
    died compares unequal to anything (its replacement is another object)."""

    __slots__ = ()


def _hold(value: Any) -> Any:
    """``value`` as a kept decision holds it: weakly where it can be."""
    try:
        return _Held(value)
    except TypeError:
        return value  # a number, a string, a tuple: held (it cannot be weakly)


def _held(value: Any) -> Any:
    """What :func:`_hold` kept: the value, or for one that died an object that
    is nothing else (not None: a name deleted or set to None is a change too)."""
    if type(value) is _Held:
        found = value()
        return _GONE if found is None else found
    return value


_GONE: Any = object()


def _same_attributes(obj: Any, held: tuple[Any, ...]) -> bool:
    values = _attributes(obj)
    return len(values) == len(held) and all(map(_is, values, map(_held, held)))


def same_values(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """Whether ``a`` and ``b`` hold the same objects, in order."""
    return len(a) == len(b) and all(map(_is, a, b))  # one C loop: no generator frame


def _seen(script: _Script, obj: Any) -> _Seen | None:
    """The decision kept for ``obj``, if it still holds: the same object (not
    another at a reused id), still at its path, with the same code and attributes."""
    seen = script.seen.get(id(obj))
    if seen is None or seen.ref() is not obj:
        return None
    path = seen.path
    try:
        if len(path) == 1:
            if script.namespace.get(path[0]) is not obj:
                return None
        elif walk(script.module, path) is not obj:
            return None
    except Exception:
        return None
    if type(obj) is types.FunctionType and (
        obj.__code__ is not seen.code or not _same_attributes(obj, seen.attributes)
    ):
        return None
    return seen


def _remember(script: _Script, obj: Any, path: Path) -> _Seen | None:
    key = id(obj)
    table = script.seen
    try:
        ref = weakref.ref(obj, _forgetter(table, key))
    except TypeError:
        return None  # not weakly referable: decided again each time
    attributes = tuple(map(_hold, _attributes(obj)))
    seen = _Seen(ref, path, getattr(obj, "__code__", None), attributes)
    if len(table) >= _SEEN_LIMIT:
        table.clear()
    table[key] = seen
    return seen


def _forgetter(table: dict[int, _Seen], key: int) -> Any:
    """The callback that forgets a decision when its object dies (with what it
    holds), unless another object's took its id since."""

    def forget(ref: weakref.ref[Any]) -> None:
        seen = table.get(key)
        if seen is not None and seen.ref is ref:
            del table[key]

    return forget


def script_location(
    obj: Any, module_name: Any, context: DumpContext | None = None
) -> tuple[str, Path] | None:
    """``(module, path)`` inside the sender's script that yields ``obj`` itself.

    None when ``module_name`` is no script module, when the script has no file
    (an interactive session, ``python -c``, a notebook: no receiver can import
    it), or when nothing in its namespace leads to ``obj`` (a lambda, a closure).

    An answer is kept per object and checked by identity on the next dump (see
    the comment on :class:`_Script`). Otherwise, with the ``context`` that asks,
    an object without a name (a closure, a lambda: ``<`` in its qualname; an
    instance) is looked up in the table of the script's index, revalidated once
    per payload: a payload of 1,000 closures pays one lookup each, not a
    revalidation and a probe each (issue 18). The probe, for a closure set
    after the index was built under a name that held another object, is left
    out: such a closure ships as a plain copy, the sender's value (as after a
    stale index: correct, if not identical).
    """
    if module_name not in MAIN_MODULES:
        return None
    qualname = getattr(obj, "__qualname__", None)
    if context is not None and (type(qualname) is not str or "<" in qualname):
        # A closure made in a loop: one lookup in this payload's table, first.
        paths = payload_script_paths(context, module_name)
        if paths is None:
            return None
        if id(obj) not in paths and (qualname is not None or not _named(obj)):
            return None
    script = _script(module_name)
    if script is None or script.filename is None:
        return None
    seen = _seen(script, obj)
    if seen is not None:
        return module_name, seen.path
    if type(qualname) is str and "<" not in qualname:
        try:
            if walk(script.module, tuple(qualname.split("."))) is obj:
                path = tuple(qualname.split("."))
                _remember(script, obj, path)
                return module_name, path
        except Exception:
            pass
    found = _locator.locate_in(module_name, obj)
    if found is None:
        return None
    _remember(script, obj, found)
    return module_name, found


def payload_script_paths(context: DumpContext, module_name: str) -> dict[int, Path] | None:
    """The table of the script's index as this payload sees it (revalidated at
    its first use in the payload), None if the script cannot be indexed. An
    object of the script whose qualname has ``<`` (a lambda, a closure) and
    whose id is not in it has no name in the script: a plain copy."""
    payload = context.payload
    if payload is None:
        payload = context.state()
    paths = payload.script_paths.get(module_name, _UNSEEN)
    if paths is _UNSEEN:
        paths = payload.script_table()[module_name] = script_index_table(module_name)
    return paths  # type: ignore[no-any-return]


def script_index_table(module_name: str) -> dict[int, Path] | None:
    """The table of the script's index (see :func:`script_location`), revalidated
    now; None if the script has no file or cannot be indexed."""
    if _script_file(module_name) is None:
        return None
    return _locator.indexed_paths(module_name)


def _named(obj: Any) -> bool:
    """Whether the locator's probe can find ``obj`` (by a ``__name__`` of its own)."""
    try:
        return type(obj.__name__) is str
    except Exception:
        return False


_UNSEEN: Any = object()


def guard_rebinds(module_name: str, name: str) -> bool:
    """Whether the main guard of the script ``module_name``, as far as it can be
    read, binds or changes ``name`` (False where it cannot be read: a spawn
    worker's class coming home is then taken for the parent's, as pickle takes
    it)."""
    script = _script(module_name)
    if script is None or script.filename is None:
        return False
    changed = script.read_changed()
    return changed is not None and name in changed


def same_in_workers(obj: Any, module_name: str, path: Path, *, reads: bool = True) -> bool:
    """Whether a process that imports the script (a spawn worker's
    ``__mp_main__``) holds this very object at ``path``, computing what it
    computes here.

    Not when the script's file changed since this process started (see the
    comment on :class:`_Script`), when the script's main guard binds or
    changes the name the path starts with (the worker's holds another object,
    or none: :mod:`.main_guard`; a change deeper down, ``scaled.fn = g``, names
    that same first step), or, with ``reads``, when ``obj`` reads a global that
    the guard changes (``CONFIG = parse_args()``: the worker's own function
    would read another value; a class: what its methods read; a function that
    reads its namespace itself, ``globals()["SCALE"]``: the names its code
    spells out). Kept per object and script version (see
    :func:`script_location`). ``reads=False``: the name alone.

    .. versionchanged:: 0.2.0
       A script file changed since this process started answers False (issue 29);
       a class is checked by what its methods read too.
    """
    script = _script(module_name)
    if script is None or script.filename is None or not path or type(path[0]) is not str:
        return False
    if script.moved:
        return False
    seen = script.seen.get(id(obj))
    if seen is not None and (seen.path is not path or seen.ref() is not obj):
        seen = _seen(script, obj)  # not the answer script_location just gave
    if seen is not None and seen.path != path:
        seen = None
    if seen is not None:
        if not reads:
            if seen.same_name is not None:
                return seen.same_name
        elif seen.same_reads is not None and all(
            namespace.get(name) is _held(value) for namespace, name, value in seen.deps
        ):
            return seen.same_reads
    deps: tuple[tuple[dict[str, Any], str, Any], ...] = ()
    changed = script.changed
    if changed is _UNREAD:
        # The guard's answer not read yet: the names asked about are enough
        # when the guard surely touches none of them (see :class:`_Script`).
        asked = {path[0]}
        if reads:
            _, deps = _reads_unchanged(obj, _NOTHING, asked)
        changed = _NOTHING if script.untouched(asked) else script.read_changed()
    if changed is _NOTHING:
        same = True
    elif changed is None or path[0] in changed:
        same = False
        deps = ()
    elif not reads or not changed:
        same = True
        deps = ()
    else:
        same, deps = _reads_unchanged(obj, changed)
    if seen is not None:
        if reads:
            seen.same_reads, seen.deps = same, deps
        else:
            seen.same_name = same
    return same


UNKNOWN: Any = object()


def known_origin(func: types.FunctionType, module_name: str) -> Any:
    """The origin a function of the script travels with, as decided at an
    earlier dump and still holding (see :class:`_Script`); None if it travels
    as a plain copy (the guard changes it or what it reads; the file changed);
    :data:`UNKNOWN` if it must be decided (the ``"auto"`` mode's first try
    only: the caller checks). What the second dump of a function costs."""
    script = _scripts.get(module_name)
    if script is None:
        return UNKNOWN
    seen = script.seen.get(id(func))
    if seen is None:
        return UNKNOWN  # a closure or lambda no name leads to: one dict lookup
    if script.module is not sys.modules.get(module_name):
        return UNKNOWN
    names = script.called_names
    if (
        _monotonic() - script.checked >= _RECHECK_SECONDS
        or (names and not all(map(_is, map(script.namespace.get, names), script.called_values)))
        or script.between
    ):
        # What check() looks at moved (its test, inlined: this runs per dump).
        script.check()
        if script.seen.get(id(func)) is not seen:
            return UNKNOWN  # the check forgot the decisions (a name the guard calls was rebound)
    if script.moved:
        # The file changed, or it is none a worker can import ("<stdin>"): what
        # the whole decision would answer, a plain copy.
        return None
    if (
        seen.ref() is not func
        or func.__code__ is not seen.code
        or seen.same_reads is None
        or ((func.__dict__ or seen.attributes) and not _same_attributes(func, seen.attributes))
    ):
        return UNKNOWN
    path = seen.path
    namespace = script.namespace
    if len(path) == 1:
        if namespace.get(path[0]) is not func:
            return UNKNOWN
    else:
        try:
            if walk(script.module, path) is not func:
                return UNKNOWN
        except Exception:
            return UNKNOWN
    for space, name, value in seen.deps:
        if space.get(name) is not _held(value):
            return UNKNOWN
    if not seen.same_reads:
        return None
    origin = seen.origin
    if origin is None:
        origin = seen.origin = _origin(func, module_name, path)
    return origin


# What the guard changes, for a question about names it surely does not touch.
_NOTHING: frozenset[str] = frozenset()


def _reads_unchanged(
    obj: Any, changed: frozenset[str], read: set[str] | None = None
) -> tuple[bool, tuple[tuple[dict[str, Any], str, Any], ...]]:
    """Whether ``obj`` reads no global the guard changes, and the script's objects
    its reads went through (what the answer depends on); the names read are
    added to ``read``, if given."""
    same = True
    deps: list[tuple[dict[str, Any], str, Any]] = []
    for seed in [obj, *_locator.held_functions(obj)]:
        for name, namespace in script_reads(seed, MAIN_MODULES, literal=True):
            if read is not None:
                read.add(name)
            if name in changed:
                same = False
            value = namespace.get(name)
            if getattr(value, "__module__", None) in MAIN_MODULES:
                deps.append((namespace, name, _hold(value)))
    return same, tuple(deps)


# What every module's namespace holds besides what its code binds.
_MODULE_NAMES = frozenset(
    {"__name__", "__file__", "__doc__", "__spec__", "__loader__", "__package__", "__builtins__"}
)


def workers_own_function(func: Any) -> bool:
    """Whether ``func`` is a function of the sender's script that every process
    importing the script (a spawn worker, a forked one) holds, reading only
    globals that the script's module level binds outside its main guard.

    Such a function can go by reference alone (``scripts="reference"``): the
    receiver's own function is what the copy would have resolved to, and its
    globals (a large array the module level made) need not travel. A global set
    at run time (by a function declaring it ``global``, or under the guard) may
    be missing in a worker, where the copy would be used: then False.
    """
    if type(func) is not types.FunctionType:
        return False
    module = func.__module__
    where = script_location(func, module)
    if where is None or not same_in_workers(func, *where):
        return False
    script = _script(module)
    bound = None if script is None else script.worker_bindings()
    if bound is None:
        return False
    for name, _ in script_reads(func, MAIN_MODULES):
        if name not in bound and name not in _MODULE_NAMES and not hasattr(builtins, name):
            return False
    return True


def origin_of(obj: Any, module: str, path: Path) -> _reconstruct.Origin:
    """Where ``obj`` lives in the script: module, path, file and, for a
    function, the line its definition starts on."""
    script = _scripts.get(module)
    seen = None if script is None else script.seen.get(id(obj))
    if seen is not None and seen.path is path and seen.ref() is obj:
        origin = seen.origin
        if origin is None:
            origin = seen.origin = _origin(obj, module, path)
        return origin  # type: ignore[no-any-return]
    return _origin(obj, module, path)


def _origin(obj: Any, module: str, path: Path) -> _reconstruct.Origin:
    line = obj.__code__.co_firstlineno if type(obj) is types.FunctionType else None
    filename = _script_file(module)
    if filename is not None:
        # The object that the code of a copy names too: once per payload.
        filename = _code.carried(filename)
    # The module's name: the payload's copy of it too (see with_payload_names).
    return (_code.carried(module), path, filename, line)


def script_reference(
    context: DumpContext, obj: Any, module: str, path: Path, same: bool | None = None
) -> Any | None:
    """The reference alone, when that is what this pickler sends for ``obj``:
    always in ``"reference"`` mode, and in ``"auto"`` mode for an object that
    cannot be copied (on the second try, ``_check_copies``), unless it is an
    instance whose own reduction ships: then that reduction. None: copy it.

    ``same``: :func:`same_in_workers` for ``obj``, when the caller has it."""
    reason: str | None = None
    if context.scripts == "reference":
        if same is None:
            same = same_in_workers(obj, module, path)
        if not same:
            return None  # the receivers' script holds another object there: copy it
        reason = "no copy was sent (the receivers run this script)"
    elif context.check_copies:
        reason = context.copy_failure(obj)
        if reason is not None and not isinstance(obj, (types.FunctionType, type)):
            # An instance whose copy cannot ship (its state holds what no pickler
            # writes: a JIT's compiled code), but whose own reduction ships and
            # loads (numba's ufuncs: what their own pickler writes): what pickle
            # sends, which loads where the script does not run.
            own = _own_reduction(context, obj)
            if own is not None:
                if same is None:
                    same = same_in_workers(obj, module, path)
                # The receiver running the script: its own object, as the
                # reference alone gave; elsewhere, what the reduction makes.
                return _own_or_build(context, obj, (module, path), own, False) if same else own
    if reason is None:
        return None
    return (_reconstruct._main_object, (origin_of(obj, module, path), reason))


def _own_reduction(context: DumpContext, obj: Any) -> tuple[Any, ...] | None:
    """``obj``'s own reduction, where it pickles and loads again (a trial), else None."""
    try:
        reduction = obj.__reduce_ex__(context.protocol)
    except Exception:
        return None
    if type(reduction) is not tuple or context.trial_failure(reduction) is not None:
        return None
    return reduction


def script_module_of(obj: Any) -> str | None:
    """The script module (``__main__`` or ``__mp_main__``) ``obj`` belongs to: its
    own ``__module__``, or, for a wrapper object (a click command, a memoizing
    object), that of the function it wraps or holds; None for anything else."""
    try:
        module = obj.__module__
    except Exception:
        module = None
    if module in MAIN_MODULES:
        return module  # type: ignore[no-any-return]
    try:
        wrapped = obj.__wrapped__
    except Exception:
        wrapped = None
    for func in [wrapped, *_locator.held_functions(obj)]:
        module = getattr(func, "__module__", None)
        if module in MAIN_MODULES:
            return module  # type: ignore[no-any-return]
    return None


def _script_where(obj: Any, context: DumpContext | None = None) -> tuple[str, Path] | None:
    """``(module, path)`` of ``obj`` in the sender's script, if it is one of its objects."""
    module = script_module_of(obj)
    return None if module is None else script_location(obj, module, context)


def script_reference_alone(obj: Any, reason: str) -> Any | None:
    """A reference alone to ``obj`` if it is an object of the sender's script,
    for an object that cannot be copied (``reason``); else None."""
    where = _script_where(obj)
    if where is None:
        return None
    return (_reconstruct._main_object, (origin_of(obj, *where), reason))


def note_copy(context: DumpContext) -> None:
    """Record that this payload copies an object of the script (should the dump
    fail, the front door tries again, sending the uncopyable ones by reference)."""
    context.state().script_copies = True


def with_origin(context: DumpContext, obj: Any, reduction: Any, *, carry_state: bool = True) -> Any:
    """A wrapper's copy (``reduction``), marked with where it lives in the script,
    or the reference alone; ``reduction`` unchanged for anything else.

    Where the receiver has the object itself, it is the answer if it has the
    attributes of the copy's state already (``carry_state``; not asked for a
    function, which keeps its own), and the copy is built otherwise: loading
    never writes them onto the receiver's object."""
    if context.scripts == "copy" or not isinstance(reduction, tuple):
        return reduction
    where = _script_where(obj, context)  # an instance: one index lookup per payload
    if where is None:
        return reduction
    same = same_in_workers(obj, *where)  # obj is an instance or a function, never a class
    alone = script_reference(context, obj, *where, same)
    if alone is not None:
        return alone
    note_copy(context)
    if not same:
        return reduction  # a copy everywhere, as for a lambda
    return _own_or_build(context, obj, where, reduction, carry_state)


def _own_or_build(
    context: DumpContext, obj: Any, where: tuple[str, Path], reduction: Any, carry_state: bool
) -> Any:
    """``reduction`` of ``obj`` (at ``where`` in the script), made where the
    receiver does not run the script; the receiver's own object where it does
    (and has the attributes of the copy's state, with ``carry_state``)."""
    builder, args, *rest = reduction
    rest += [None] * (4 - len(rest))
    state, listitems, dictitems, setter = rest
    if listitems is not None or dictitems is not None:
        return reduction  # items would be added to the receiver's own object
    carried = state_attributes(state) if carry_state else None
    if carried is not None:
        payload = context.state()
        if id(obj) in payload.carrying or leads_back(obj, carried):
            # Its state leads back to it: it cannot ride in the call that
            # chooses between the receiver's own and the copy. A copy everywhere.
            return reduction
        payload.carry(id(obj))
    found = (origin_of(obj, *where), builder, args)  # where: (module, path)
    head = (_reconstruct._script_or_build, found if carried is None else (*found, carried))
    if state is None and setter is None and carried is None:
        return (*head, None, listitems, dictitems)
    return (*head, (state, setter, carried), listitems, dictitems, _reconstruct._built_setstate)
