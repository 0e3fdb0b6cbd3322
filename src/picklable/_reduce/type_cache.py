"""The pickler's per-type cache: which reducer the instances of a type take.

The hook looks a type up here for every non-builtin object it is handed, so
the cache is two plain dicts, each read with one ``get``:

* ``LASTING`` (``type -> reduce``) holds the types that live as long as the
  program does: static C types, and classes that a module binds under their
  own qualified name. Keyed by the type itself: one hash of a pointer, no
  ``id()`` integer made per object.
* ``HANDLERS`` (``id(type) -> reduce``) holds the rest: local and generated
  classes. An entry is dropped when its class dies (a weak reference's
  callback), so a long-lived worker that dumped 200 local classes does not
  keep them alive.

Nothing here may keep a class alive that the program let go of:

* at most one class per name is held: a class defined again under its name
  (a reloaded module, a notebook cell run again) lets its predecessor go when
  the new one is first stored;
* a script's class is held only while the script binds it at its top level.
  Before each full collection of the garbage collector, those the script no
  longer binds (``del``, rebound) are let go, so that collection frees them
  (issue 27). A nested class of the script goes by id.

What is cached is the caller's (``table`` keeps kinds here); this module only
knows types and their lifetimes.
"""

from __future__ import annotations

import gc
import sys
import threading
import types
import weakref
from collections.abc import Callable
from typing import Any

from .._compat import MAIN_MODULES, is_heap_type
from .._paths import walk

__all__ = ["HANDLERS", "LASTING", "cached", "clear", "forget", "store"]

# type -> reducer for the types that last; id(type) -> reducer for the others
# (what the hook reads); id(type) -> the caller's value, for both.
LASTING: dict[type, Any] = {}
HANDLERS: dict[int, Any] = {}
_values: dict[int, Any] = {}
# (module, qualname) -> the one class of that name in LASTING, and back by id;
# the script's among them (what the collector's callback looks through).
_names: dict[tuple[str, str], type] = {}
_name_by_id: dict[int, tuple[str, str]] = {}
_script_names: dict[tuple[str, str], type] = {}
# id(heap type) -> a weak reference whose callback forgets the type.
_refs: dict[int, weakref.ref[type]] = {}
# Reentrant: a class may die (and its callback run) while this thread writes.
_lock = threading.RLock()


def cached(t: type) -> Any:
    """The value stored for ``t``, or None."""
    return _values.get(id(t))


def store(t: type, value: Any, reduce: Any) -> None:
    """Remember ``value`` for ``t`` and ``reduce`` for the hook."""
    key = id(t)
    heap = is_heap_type(t)
    name = _own_name(t) if heap else None
    with _lock:
        if not heap:
            LASTING[t] = reduce  # a static type never dies
        elif name is not None:
            namesake = _names.get(name)
            if namesake is not None and namesake is not t:
                _forget(namesake)  # defined again: let the old class go
            # In this order: the collector's callback, which may run between
            # any two of these, acts on a class only once its name is stored.
            _values[key] = value
            LASTING[t] = reduce
            _name_by_id[key] = name
            _names[name] = t
            if name[0] in MAIN_MODULES:
                _script_names[name] = t
                if _release_dropped not in gc.callbacks:
                    gc.callbacks.append(_release_dropped)
        else:
            _refs[key] = weakref.ref(t, _forgetter(key))
            _values[key] = value
            HANDLERS[key] = reduce


def forget(t: type) -> None:
    """Forget ``t`` (it changed how it pickles)."""
    with _lock:
        _forget(t)


def clear() -> None:
    with _lock:
        LASTING.clear()
        _names.clear()
        _name_by_id.clear()
        _script_names.clear()
        HANDLERS.clear()
        _values.clear()
        _refs.clear()


def _forget(t: type) -> None:
    # Under _lock, or from the collector's callback: dict operations only, each
    # atomic, on entries that belong to ``t`` (alive: its id is its own).
    key = id(t)
    name = _name_by_id.pop(key, None)
    if name is not None:
        if _names.get(name) is t:
            _names.pop(name, None)
        if _script_names.get(name) is t:
            _script_names.pop(name, None)
    LASTING.pop(t, None)
    HANDLERS.pop(key, None)
    _values.pop(key, None)
    _refs.pop(key, None)


def _own_name(t: type) -> tuple[str, str] | None:
    """``(module, qualname)`` when a module already imported binds ``t``
    under its own qualified name (a script: at its top level)."""
    try:
        module_name, qualname = t.__module__, t.__qualname__
    except Exception:
        return None
    if type(module_name) is not str or type(qualname) is not str or "<" in qualname:
        return None
    module = sys.modules.get(module_name)
    if module is None:
        return None
    if module_name in MAIN_MODULES:
        found = _script_binding(module_name, qualname)
    else:
        try:
            found = walk(module, tuple(qualname.split(".")))
        except Exception:
            return None
    return (module_name, qualname) if found is t else None


def _script_binding(module_name: str, name: str) -> Any:
    """What the script binds at its top level under ``name``: read from its
    namespace dict, so that no code of the script runs (the garbage
    collector's callback asks too)."""
    module = sys.modules.get(module_name)
    if not issubclass(type(module), types.ModuleType):
        return None  # something put in sys.modules in the script's place
    namespace = module.__dict__
    return namespace.get(name) if type(namespace) is dict else None


def _release_dropped(phase: str, info: dict[str, Any]) -> None:
    """A garbage collector callback: before a full collection, let go of the
    script's classes the script no longer binds, so that it frees them."""
    if phase != "start" or info.get("generation") != 2:
        return
    # No lock: the collector may run this in the middle of any allocation,
    # this thread's own writes here included; each dict operation is atomic.
    for name, t in tuple(_script_names.items()):  # no collection runs inside this one
        if _script_binding(*name) is not t:
            _forget(t)


def _forgetter(key: int) -> Callable[[weakref.ref[type]], None]:
    def forget(ref: weakref.ref[type]) -> None:
        # Runs while the class is being freed, before its id can be reused; the
        # garbage collector may run it in the middle of any allocation, so it
        # takes no lock (each dict operation is atomic) and only removes the
        # entries this very reference guarded.
        if _refs.get(key) is ref:
            HANDLERS.pop(key, None)
            _values.pop(key, None)
            _refs.pop(key, None)

    return forget
