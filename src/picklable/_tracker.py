"""The class tracker: classes shipped by value keep their identity.

A class that goes by value carries an id. The process that sent it maps the id
back to the class, so the class coming home (in a result, an exception) is the
very class object it sent; a receiver maps it to the class it built, so the
next payload naming it reuses that class. The maps are weak (a class nobody
uses any more is freed) and every write goes through one lock: dumps and loads
may run in several threads at once.
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from typing import Any

from ._compat import MAIN_MODULES
from ._paths import walk

__all__ = [
    "built",
    "claim_object",
    "id_of",
    "known",
    "known_id_of_object",
    "known_object",
    "main_original",
    "mark_built",
    "object_id",
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
_built: weakref.WeakSet[type] = weakref.WeakSet()

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


def claim(cls: type, base: str) -> str:
    """An id derived from ``base`` for ``cls``: ``base`` itself unless another
    live class holds it, else ``base-2``, ``base-3`` ... (deterministic ids).
    ``cls`` keeps a random id it already has for ordinary payloads."""
    with _lock:
        found = base
        n = 1
        while True:
            holder = _class_by_id.get(found)
            if holder is None or holder is cls:
                break
            n += 1
            found = f"{base}-{n}"
        _class_by_id[found] = cls
        if cls not in _id_by_class:
            _id_by_class[cls] = found
    return found


def known(tracker_id: str) -> type | None:
    """The class this process made or sent under ``tracker_id``, if alive."""
    return _class_by_id.get(tracker_id)


def mark_built(cls: type) -> None:
    """Remember that ``cls`` was built here from a payload."""
    with _lock:
        _built.add(cls)


def built(cls: type) -> bool:
    """Whether ``cls`` was built here from a payload (not defined here)."""
    return cls in _built


def origin(cls: type) -> Origin | None:
    """``(module, qualname, file)`` of a script's class: how a spawn worker's
    copy finds the parent's original again (see :func:`main_original`)."""
    module = cls.__module__
    if module not in MAIN_MODULES:
        return None
    main = sys.modules.get(module)
    return (module, cls.__qualname__, getattr(main, "__file__", None))


def main_original(found_origin: Origin | None) -> type | None:
    """The class a child process sends back, as the parent's own ``__main__`` class.

    Under spawn a worker re-imports the parent's script as ``__mp_main__``; its
    classes are re-executions of the parent's. Back in the parent (whose
    ``__main__`` runs that same file) they map to the original class by name.
    """
    if found_origin is None:
        return None
    module, qualname, filename = found_origin
    main = sys.modules.get("__main__")
    if (
        module not in MAIN_MODULES
        or filename is None
        or main is None
        or getattr(main, "__name__", None) != "__main__"
        or getattr(main, "__file__", None) != filename
    ):
        return None
    try:
        found = walk(main, tuple(qualname.split(".")))
    except AttributeError:
        return None
    if (
        isinstance(found, type)
        and found.__qualname__ == qualname
        and found.__module__ == "__main__"
    ):
        return found
    return None


# Other objects shipped by value that keep their identity (type variables):
# apart from classes, under the same lock.
_object_by_id: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
_id_by_object: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def object_id(obj: Any) -> str:
    """The id ``obj`` (not a class) travels with: the one it came with, or a new one."""
    found = _id_by_object.get(obj)
    if found is not None:
        return found
    with _lock:
        found = _id_by_object.get(obj)
        if found is None:
            found = os.urandom(16).hex()
            _object_by_id[found] = obj
            _id_by_object[obj] = found
    return found


def claim_object(obj: Any, base: str) -> str:
    """As :func:`claim`, for an object that is not a class."""
    with _lock:
        found = base
        n = 1
        while True:
            holder = _object_by_id.get(found)
            if holder is None or holder is obj:
                break
            n += 1
            found = f"{base}-{n}"
        _object_by_id[found] = obj
        if obj not in _id_by_object:
            _id_by_object[obj] = found
    return found


def known_id_of_object(obj: Any) -> str | None:
    """The id ``obj`` already has, or None."""
    return _id_by_object.get(obj)


def known_object(tracker_id: str) -> Any:
    """The object this process made or sent under ``tracker_id``, if alive, else None."""
    return _object_by_id.get(tracker_id)


def track_object(obj: Any, tracker_id: str) -> None:
    """Record that ``tracker_id`` names ``obj`` (both ways)."""
    with _lock:
        _object_by_id[tracker_id] = obj
        _id_by_object[obj] = tracker_id
