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
front door finds those on a failed dump and dumps again with
``_check_copies`` set (the common case pays nothing).

A pickler's ``_scripts`` mode chooses: ``"auto"`` (the default above),
``"reference"`` (the receivers run this script: a pool whose workers
re-import it; references only, no copy travels) or ``"copy"`` (copies only,
with no origin, as 0.1.0 did). Lambdas, closures and anything the script's
namespace does not lead to are copies in every mode.
"""

from __future__ import annotations

import builtins
import sys
import types
from typing import TYPE_CHECKING, Any

from .. import _locator, _reconstruct
from .._compat import MAIN_MODULES
from .._paths import Path, walk
from .._reads import script_reads
from .attributes import leads_back, state_attributes
from .main_guard import guard_bindings, worker_bindings

if TYPE_CHECKING:
    from .._pickler import Pickler

__all__ = [
    "SCRIPT_MODES",
    "note_copy",
    "origin_of",
    "same_in_workers",
    "script_location",
    "script_module_of",
    "script_reference",
    "script_reference_alone",
    "with_origin",
    "workers_own_function",
]

SCRIPT_MODES = ("auto", "reference", "copy")


def _script_file(module_name: str) -> str | None:
    module = sys.modules.get(module_name)
    filename = getattr(module, "__file__", None)
    return filename if type(filename) is str else None


def script_location(
    obj: Any, module_name: Any, pickler: Pickler | None = None
) -> tuple[str, Path] | None:
    """``(module, path)`` inside the sender's script that yields ``obj`` itself.

    None when ``module_name`` is no script module, when the script has no file
    (an interactive session, ``python -c``, a notebook: no receiver can import
    it), or when nothing in its namespace leads to ``obj`` (a lambda, a closure).

    With the ``pickler`` that asks, a closure or a lambda (``<`` in its
    qualname: no name leads to it) is looked up in the table of the script's
    index, revalidated once per payload: a payload of 1,000 closures pays one
    lookup each, not a revalidation and a probe each (issue 18). The probe, for
    a closure set after the index was built under a name that held another
    object, is left out: such a closure ships as a plain copy, the sender's
    value (as after a stale index: correct, if not identical).
    """
    if module_name not in MAIN_MODULES:
        return None
    qualname = getattr(obj, "__qualname__", None)
    if type(qualname) is str and "<" not in qualname:
        if _script_file(module_name) is None:
            return None
        try:
            if walk(sys.modules[module_name], tuple(qualname.split("."))) is obj:
                return module_name, tuple(qualname.split("."))
        except Exception:
            pass
    elif pickler is not None:
        payload = pickler._payload
        tables = (pickler._state() if payload is None else payload).script_paths
        paths = tables.get(module_name, _UNSEEN)
        if paths is _UNSEEN:
            paths = tables[module_name] = _script_paths(module_name)
        if paths is None or id(obj) not in paths:
            return None
    elif _script_file(module_name) is None:
        return None
    path = _locator.locate_in(module_name, obj)
    return None if path is None else (module_name, path)


_UNSEEN: Any = object()


def _script_paths(module_name: str) -> dict[int, Path] | None:
    """The table of the script's index (see :func:`script_location`); None if the
    script has no file or cannot be indexed."""
    if _script_file(module_name) is None:
        return None
    return _locator.indexed_paths(module_name)


def same_in_workers(obj: Any, module_name: str, path: Path, *, reads: bool = True) -> bool:
    """Whether a process that imports the script (a spawn worker's
    ``__mp_main__``) holds this very object at ``path``, computing what it
    computes here.

    Not when the script's main guard binds or changes the name the path starts
    with (the worker's holds another object, or none: :mod:`.main_guard`; a
    change deeper down, ``scaled.fn = g``, names that same first step), or,
    with ``reads``, when ``obj`` reads a global that the guard changes
    (``CONFIG = parse_args()``: the worker's own function would read another
    value). A class is checked by its name alone (``reads=False``): its
    methods read the globals of whichever process runs them, as with pickle.
    """
    module = sys.modules.get(module_name)
    filename = _script_file(module_name)
    if module is None or filename is None or not path or type(path[0]) is not str:
        return False
    namespace = vars(module)
    changed = guard_bindings(filename, namespace)
    if changed is None or path[0] in changed:
        return False
    if not reads or not changed:
        return True
    for seed in [obj, *_locator.held_functions(obj)]:
        for name, _ in script_reads(seed, MAIN_MODULES):
            if name in changed:
                return False
    return True


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
    filename = _script_file(module)
    bound = None if filename is None else worker_bindings(filename)
    if bound is None:
        return False
    for name, _ in script_reads(func, MAIN_MODULES):
        if name not in bound and name not in _MODULE_NAMES and not hasattr(builtins, name):
            return False
    return True


def origin_of(obj: Any, module: str, path: Path) -> _reconstruct.Origin:
    """Where ``obj`` lives in the script: module, path, file and, for a
    function, the line its definition starts on."""
    line = obj.__code__.co_firstlineno if type(obj) is types.FunctionType else None
    return (module, path, _script_file(module), line)


def script_reference(
    pickler: Pickler, obj: Any, module: str, path: Path, same: bool | None = None
) -> Any | None:
    """The reference alone, when that is what this pickler sends for ``obj``:
    always in ``"reference"`` mode, and in ``"auto"`` mode for an object that
    cannot be copied (on the second try, ``_check_copies``). None: copy it.

    ``same``: :func:`same_in_workers` for ``obj``, when the caller has it."""
    reason: str | None = None
    if pickler._scripts == "reference":
        if same is None:
            same = same_in_workers(obj, module, path, reads=not isinstance(obj, type))
        if not same:
            return None  # the receivers' script holds another object there: copy it
        reason = "no copy was sent (the receivers run this script)"
    elif pickler._check_copies:
        reason = pickler._copy_failure(obj)
    if reason is None:
        return None
    return (_reconstruct._main_object, (origin_of(obj, module, path), reason))


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


def _script_where(obj: Any) -> tuple[str, Path] | None:
    """``(module, path)`` of ``obj`` in the sender's script, if it is one of its objects."""
    module = script_module_of(obj)
    return None if module is None else script_location(obj, module)


def script_reference_alone(obj: Any, reason: str) -> Any | None:
    """A reference alone to ``obj`` if it is an object of the sender's script,
    for an object that cannot be copied (``reason``); else None."""
    where = _script_where(obj)
    if where is None:
        return None
    return (_reconstruct._main_object, (origin_of(obj, *where), reason))


def note_copy(pickler: Pickler) -> None:
    """Record that this payload copies an object of the script (should the dump
    fail, the front door tries again, sending the uncopyable ones by reference)."""
    pickler._state().script_copies = True


def with_origin(pickler: Pickler, obj: Any, reduction: Any, *, carry_state: bool = True) -> Any:
    """A wrapper's copy (``reduction``), marked with where it lives in the script,
    or the reference alone; ``reduction`` unchanged for anything else.

    Where the receiver has the object itself, it is the answer if it has the
    attributes of the copy's state already (``carry_state``; not asked for a
    function, which keeps its own), and the copy is built otherwise: loading
    never writes them onto the receiver's object."""
    if pickler._scripts == "copy" or not isinstance(reduction, tuple):
        return reduction
    where = _script_where(obj)
    if where is None:
        return reduction
    same = same_in_workers(obj, *where)  # obj is an instance or a function, never a class
    alone = script_reference(pickler, obj, *where, same)
    if alone is not None:
        return alone
    note_copy(pickler)
    if not same:
        return reduction  # a copy everywhere, as for a lambda
    builder, args, *rest = reduction
    rest += [None] * (4 - len(rest))
    state, listitems, dictitems, setter = rest
    if listitems is not None or dictitems is not None:
        return reduction  # items would be added to the receiver's own object
    carried = state_attributes(state) if carry_state else None
    if carried is not None:
        payload = pickler._state()
        if id(obj) in payload.carrying or leads_back(obj, carried):
            # Its state leads back to it: it cannot ride in the call that
            # chooses between the receiver's own and the copy. A copy everywhere.
            return reduction
        payload.carrying.add(id(obj))
    found = (origin_of(obj, *where), builder, args)
    head = (_reconstruct._script_or_build, found if carried is None else (*found, carried))
    if state is None and setter is None and carried is None:
        return (*head, None, listitems, dictitems)
    return (*head, (state, setter, carried), listitems, dictitems, _reconstruct._built_setstate)
