"""The class tracker: classes shipped by value keep their identity.

A class that goes by value carries an id. The process that sent it maps the id
back to the class, so the class coming home (in a result, an exception) is the
very class object it sent; a receiver maps it to the class it built, so the
next payload naming it reuses that class. The maps are weak (a class nobody
uses any more is freed) and every write goes through one lock: dumps and loads
may run in several threads at once.
"""

from __future__ import annotations

import collections
import os
import sys
import threading
import types
import weakref
from typing import Any

from ._code import CARRIED, carried
from ._compat import MAIN_MODULES
from ._paths import walk

__all__ = [
    "MISSING",
    "built",
    "claim_object",
    "id_of",
    "known",
    "known_id_of_object",
    "known_object",
    "main_original",
    "mark_built",
    "object_id",
    "script_original",
    "track",
    "track_object",
]

# Reentrant: the garbage collector may free a tracked class (and run the weak
# maps' callbacks) in the middle of a write.
_lock = threading.RLock()
_class_by_id: weakref.WeakValueDictionary[str, type] = weakref.WeakValueDictionary()
_id_by_class: weakref.WeakKeyDictionary[type, str] = weakref.WeakKeyDictionary()
# Classes this process built from payloads. Their attributes are (re)applied at
# every load, so a worker always runs the sender's latest version of a class; a
# class that originates in this process is never touched.
_built: weakref.WeakSet[object] = weakref.WeakSet()

Origin = tuple[str, str, "str | None"]


def id_of(cls: type) -> str:
    """The id ``cls`` travels with: the one it came with, or a new random one."""
    found = _id_by_class.get(cls)
    if found is not None:
        return found
    with _lock:
        found = _id_by_class.get(cls)
        if found is None:
            found = os.urandom(16).hex()  # as unique as uuid4, without importing uuid
            _class_by_id[found] = cls
            _id_by_class[cls] = found
    return found


def current_id(cls: type) -> str | None:
    """The id ``cls`` already has, or None."""
    return _id_by_class.get(cls)


def track(cls: type, tracker_id: str) -> None:
    """Record that ``tracker_id`` names ``cls`` (both ways)."""
    with _lock:
        _class_by_id[tracker_id] = cls
        _id_by_class[cls] = tracker_id


def _claim(obj: Any, base: str, by_id: Any, id_of_obj: Any) -> str:
    """``base``, or ``base-2``, ``base-3`` ...: the first id no other live
    object holds in ``by_id``; recorded both ways (``obj`` keeps an id it has)."""
    with _lock:
        found = base
        n = 1
        while True:
            holder = by_id.get(found)
            if holder is None or holder is obj:
                break
            n += 1
            found = f"{base}-{n}"
        by_id[found] = obj
        if obj not in id_of_obj:
            id_of_obj[obj] = found
    return found


def claim(cls: type, base: str) -> str:
    """An id derived from ``base`` for ``cls``: ``base`` itself unless another
    live class holds it, else ``base-2``, ``base-3`` ... (deterministic ids).
    ``cls`` keeps a random id it already has for ordinary payloads."""
    return _claim(cls, base, _class_by_id, _id_by_class)


def known(tracker_id: str) -> type | None:
    """The class this process made or sent under ``tracker_id``, if alive."""
    return _class_by_id.get(tracker_id)


# Script objects' copies built here, by id (a copy's __hash__ may read state it
# does not have yet); weak where the object allows it, else kept and bounded
# (only the state setter that follows their REDUCE asks).
_built_objects: weakref.WeakValueDictionary[int, object] = weakref.WeakValueDictionary()
_built_strong: dict[int, object] = {}
_BUILT_STRONG_LIMIT = 4096


def mark_built(obj: object) -> None:
    """Remember that ``obj`` (a class, a script object's copy) was built here from
    a payload, not found in this process: its state from the payload applies."""
    with _lock:
        if isinstance(obj, type):
            _built.add(obj)
            return
        try:
            _built_objects[id(obj)] = obj
        except TypeError:
            if len(_built_strong) >= _BUILT_STRONG_LIMIT:
                _built_strong.clear()
            _built_strong[id(obj)] = obj


def built(obj: object) -> bool:
    """Whether ``obj`` was built here from a payload (not defined here)."""
    if isinstance(obj, type):
        return obj in _built
    return _built_objects.get(id(obj)) is obj or _built_strong.get(id(obj)) is obj


def origin(cls: type) -> Origin | None:
    """``(module, qualname, file)`` of a script's class: how a spawn worker's
    copy finds the parent's original again (see :func:`main_original`). None
    unless the class is the one the script holds at that place: a class a
    decorator replaced, one defined again under its name, or one of two a
    factory made under one name would be taken for the other there."""
    module = cls.__module__
    if module not in MAIN_MODULES:
        return None
    main = sys.modules.get(module)
    qualname = cls.__qualname__
    try:
        # (A top-level class, the most: one getattr, as each dump of it asks.)
        found = (
            getattr(main, qualname)
            if "." not in qualname
            else walk(main, tuple(qualname.split(".")))
        )
    except Exception:
        return None
    if found is not cls:
        return None
    filename = getattr(main, "__file__", None)
    if type(filename) is str:
        # The one its methods' code and origins name.
        filename = CARRIED.get(filename) or carried(filename)
    return (CARRIED.get(module) or carried(module), cls.__qualname__, filename)


def script_original(
    path: tuple[object, ...], filename: str | None, line: int | None
) -> tuple[object, types.ModuleType | None]:
    """``(the object at path in this process's copy of the sender's script, that
    module)``, or ``(MISSING, None)``.

    The script is the module ``__main__`` or ``__mp_main__`` (a spawn worker
    re-imports the parent's script under that name) whose ``__file__`` is
    ``filename``. ``line`` (a function's first line) guards against a file that
    changed since the sender ran it: another definition is not the original.
    """
    if filename is None:
        return MISSING, None
    for name in MAIN_MODULES:
        module = sys.modules.get(name)
        if module is None or getattr(module, "__file__", None) != filename:
            continue
        try:
            found = walk(module, path)
        except Exception:
            continue
        code = getattr(found, "__code__", None)
        if line is not None and getattr(code, "co_firstlineno", None) != line:
            continue
        return found, module
    return MISSING, None


MISSING = object()


def main_original(found_origin: Origin | None) -> type | None:
    """The class of the sender's script as this process's own: the parent's
    class for a spawn worker's copy coming home, the worker's re-imported class
    for the parent's (a spawn worker runs the same script as ``__mp_main__``)."""
    if found_origin is None:
        return None
    module, qualname, filename = found_origin
    if module not in MAIN_MODULES:
        return None
    found, _ = script_original(tuple(qualname.split(".")), filename, None)
    if (
        isinstance(found, type)
        and found.__qualname__ == qualname
        and found.__module__ in MAIN_MODULES
    ):
        return found
    return None


# Other objects shipped by value that keep their identity (type variables, type
# aliases, sentinels): apart from classes, under the same lock. Weak where the
# object allows it; type aliases and sentinels cannot be weakly referenced, and
# are kept strongly instead, the most recently used _STRONG_LIMIT of them (a
# program that makes aliases in a loop does not grow this map forever; an
# evicted one travels under a new id, and its next copy is a new object).
_object_by_id: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
_id_by_object: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
_strong_by_id: collections.OrderedDict[str, Any] = collections.OrderedDict()
_strong_id_by_object: dict[int, str] = {}
_STRONG_LIMIT = 4096


def _weak(obj: Any) -> bool:
    try:
        weakref.ref(obj)
    except TypeError:
        return False
    return True


def _strong_id(obj: Any) -> str | None:
    found = _strong_id_by_object.get(id(obj))
    if found is not None and _strong_by_id.get(found) is obj:
        _strong_by_id.move_to_end(found)
        return found
    return None


def _strong_track(obj: Any, tracker_id: str) -> None:
    old = _strong_id_by_object.get(id(obj))
    if old is not None and _strong_by_id.get(old) is obj and old != tracker_id:
        del _strong_by_id[old]
    previous = _strong_by_id.get(tracker_id)
    replaced = previous is not None and previous is not obj
    if replaced and _strong_id_by_object.get(id(previous)) == tracker_id:
        del _strong_id_by_object[id(previous)]
    _strong_by_id[tracker_id] = obj
    _strong_by_id.move_to_end(tracker_id)
    _strong_id_by_object[id(obj)] = tracker_id
    while len(_strong_by_id) > _STRONG_LIMIT:
        gone, evicted = _strong_by_id.popitem(last=False)
        if _strong_id_by_object.get(id(evicted)) == gone:
            del _strong_id_by_object[id(evicted)]


def object_id(obj: Any) -> str:
    """The id ``obj`` (not a class) travels with: the one it came with, or a new one."""
    with _lock:
        found = known_id_of_object(obj)
        if found is None:
            found = os.urandom(16).hex()
            track_object(obj, found)
    return found


def claim_object(obj: Any, base: str) -> str:
    """As :func:`claim`, for an object that is not a class."""
    if _weak(obj):
        return _claim(obj, base, _object_by_id, _id_by_object)
    with _lock:
        found = base
        n = 1
        while True:
            holder = _strong_by_id.get(found)
            if holder is None or holder is obj:
                break
            n += 1
            found = f"{base}-{n}"
        if _strong_id(obj) is None:
            _strong_track(obj, found)
        else:
            _strong_by_id[found] = obj  # another id for it, as _claim records
            _strong_by_id.move_to_end(found)
    return found


def known_id_of_object(obj: Any) -> str | None:
    """The id ``obj`` already has, or None."""
    if _weak(obj):
        return _id_by_object.get(obj)
    with _lock:
        return _strong_id(obj)


def known_object(tracker_id: str) -> Any:
    """The object this process made or sent under ``tracker_id``, if alive, else None."""
    found = _object_by_id.get(tracker_id)
    if found is None:
        with _lock:
            found = _strong_by_id.get(tracker_id)
            if found is not None:
                _strong_by_id.move_to_end(tracker_id)
    return found


def track_object(obj: Any, tracker_id: str) -> None:
    """Record that ``tracker_id`` names ``obj`` (both ways)."""
    with _lock:
        if _weak(obj):
            _object_by_id[tracker_id] = obj
            _id_by_object[obj] = tracker_id
        else:
            _strong_track(obj, tracker_id)
