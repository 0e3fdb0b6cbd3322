"""Why a payload failed to load here, and what to do.

The loading half of the diagnostics, low in the layers (with the payload
format) so that :mod:`picklable._unpickler` uses it: it knows nothing of how
objects are dumped (the table of kinds), only what the unpickler raised and the
payload's bytes. :func:`load_failure` names the module, attribute or rebuild
that failed here, with the fix; :func:`opcode_damage` says whether the bytes
are even a pickle.
"""

from __future__ import annotations

import functools
import io
import pickle
import re
import sys
import traceback
import types
from collections.abc import Mapping
from typing import Any

from .. import _caches
from .wording import first_line, type_name

__all__ = ["load_failure", "opcode_damage", "package_version"]

# find_class's words for a name its module lacks: up to 3.13 (the C unpickler;
# 3.11 says "pickle local attribute" for a <locals> path), and 3.14+'s for a
# dotted path. 3.14+ raises getattr's own AttributeError for a plain name.
_ATTRIBUTE_MISSING = re.compile(
    r"Can't (?:get|pickle) (?:local )?attribute '(?P<attribute>[^']+)' on <module "
    r"'(?P<module>[^']+)'|Can't resolve path '(?P<path>[^']+)' on module '(?P<on>[^']+)'"
)
# Frames of the loader itself: the culprit is the first frame below them.
_LOADER_MODULES = frozenset(
    {
        "picklable._api",
        "picklable._loading",
        "picklable._unpickler",
        "picklable._allow",
        "pickle",
        "picklable._reconstruct",
        "picklable._code",
        "copyreg",
    }
)


def package_version(module: str) -> str:
    """``'<package> <version>'`` of the distribution that provides ``module`` here, or
    ``'<package>'`` alone when no version is known."""
    top = module.partition(".")[0]
    found = sys.modules.get(top)
    version = getattr(found, "__version__", None)
    if not isinstance(version, str):
        try:
            from importlib import metadata

            names = _packages_distributions().get(top) or [top]
            version = metadata.version(names[0])
        except Exception:
            version = None
    return f"{top} {version}" if version else f"{top}, version unknown"


def _in_stdlib(top: str) -> bool:
    """Whether ``top`` names a module of Python's standard library (builtins included)."""
    return top in sys.stdlib_module_names or top in sys.builtin_module_names


def _other_python(missing: str, module: str) -> tuple[str, str, str]:
    """The hint for a standard library name this interpreter lacks: no package to
    install, the sender ran another Python (one that added it, or has not yet
    removed it). A payload with code by value names both versions before it gets
    here (its interpreter check); one of references alone does not record its
    sender's version, so this names the receiver's."""
    here = f"Python {sys.version_info.major}.{sys.version_info.minor}"
    return (
        (
            f"Cannot load {missing}: {here} here has no {missing}, and {module!r} is part of "
            f"Python's standard library: the payload was made by another Python version (one "
            f"that added it, or that has not removed it yet). Fix: load it with the sender's "
            f"Python version, or send what {here} has."
        ),
        f"{missing} not in {here}'s standard library",
        "load it with the sender's Python version",
    )


@functools.lru_cache(maxsize=1)
def _packages_distributions() -> Mapping[str, list[str]]:
    # Scans every installed distribution (~1 s with a large environment): once
    # per process, not once per failed load (a worker fed damaged payloads).
    from importlib import metadata

    return metadata.packages_distributions()


_caches.register("loading.distributions", _packages_distributions.cache_clear)


def _missing_attribute(exc: AttributeError) -> tuple[str, str] | None:
    """(attribute, module) when the unpickler's find_class did not find a name."""
    found = _ATTRIBUTE_MISSING.search(str(exc))
    if found is not None:
        if found["attribute"]:
            return found["attribute"], found["module"]
        return found["path"], found["on"]
    # 3.14+: "module 'm' has no attribute 'x'", raised by the loader itself (not by
    # a __setstate__ or constructor that the payload called).
    name, obj = getattr(exc, "name", None), getattr(exc, "obj", None)
    if type(name) is str and isinstance(obj, types.ModuleType) and _builder_frame(exc) is None:
        module = getattr(obj, "__name__", None)
        if type(module) is str:
            return name, module
    return None


def _builder_frame(exc: BaseException) -> types.FrameType | None:
    """The frame of the code the loader called when ``exc`` was raised (a
    ``__setstate__``, a constructor, a reducer's rebuild function)."""
    frames = [frame for frame, _ in traceback.walk_tb(exc.__traceback__)]
    candidates = [
        f
        for f in frames
        if f.f_globals.get("__name__") not in _LOADER_MODULES
        and not f.f_code.co_filename.startswith("<frozen")
    ]
    return candidates[0] if candidates else None


# The methods through which pickle hands a list or dict subclass its items.
_ITEM_SETTERS = {"__setitem__": "dict", "append": "list", "extend": "list"}


def _item_setter_reads_unset(
    frame: types.FrameType, exc: BaseException
) -> tuple[type, str, str] | None:
    """``(class, method, attribute)`` when ``exc`` is the ``AttributeError`` of
    a list or dict subclass's item setter reading an attribute of the very
    object it fills: pickle's protocol gives the items (SETITEMS, APPENDS)
    before the attributes (BUILD), so such a class loads from no payload."""
    method = frame.f_code.co_name
    base = _ITEM_SETTERS.get(method)
    if base is None or not isinstance(exc, AttributeError):
        return None
    names = frame.f_code.co_varnames
    if not names or frame.f_code.co_argcount < 1:
        return None
    instance = frame.f_locals.get(names[0])
    attribute = getattr(exc, "name", None)
    if (
        instance is None
        or getattr(exc, "obj", None) is not instance
        or type(attribute) is not str
        or not isinstance(instance, dict if base == "dict" else list)
    ):
        return None
    return type(instance), method, attribute


def _items_before_attributes(
    name: str, said: str, cls: type, method: str, attribute: str
) -> tuple[str, str, str]:
    kind = "dict" if method == "__setitem__" else "list"
    owner = cls.__qualname__
    return (
        (
            f"Cannot load: {name} raised {said}. pickle's protocol gives a {kind} subclass "
            f"its items (through {method}) before its attributes, and {owner}.{method} "
            f"reads .{attribute}, which is set only after: a {owner} with items loads "
            "from no payload here, whether pickle, cloudpickle or picklable made it. "
            f"Fix: ship what holds the {owner} by reference (define it in a module both "
            f"sides import), or give {owner} a __reduce__ that sets its attributes first."
        ),
        f"{name} raised {said} (items are set before attributes)",
        f"ship what holds the {owner} by reference, or give {owner} a __reduce__",
    )


def _frame_name(frame: types.FrameType) -> str:
    code = frame.f_code
    qualname = getattr(code, "co_qualname", code.co_name)
    module = frame.f_globals.get("__name__", "?")
    return f"{module}.{qualname}"


def opcode_damage(data: Any) -> str | None:
    """What is wrong with ``data`` at the level of pickle opcodes, or None.

    Reads the opcodes (without running any) and follows the stack, the marks and
    the memo as an unpickler would: an unknown opcode, an argument that does not
    decode (a flipped bit in a string), a stream that ends early, an opcode that
    pops more than was pushed, a memo entry read before it was written, or no
    single object left at ``STOP``. Called on failures only.
    """
    import pickletools  # only ever needed to explain a failure

    try:
        view = memoryview(data).cast("B")
    except TypeError:
        return None
    stack = 0  # objects above the innermost mark
    marks: list[int] = []
    memo: set[Any] = set()
    position = 0
    try:
        for opcode, arg, at in pickletools.genops(io.BytesIO(view)):
            position = at or 0
            name = opcode.name
            before = opcode.stack_before
            if pickletools.markobject in before or (name == "POP" and not stack and marks):
                if not marks:
                    return f"{name} at byte {position} needs a MARK that was never set"
                stack = marks.pop()
                # What the opcode takes from under the mark (SETITEMS: the dict).
                below = before.index(pickletools.markobject) if name != "POP" else 0
            else:
                below = len(before)
            if stack < below:
                return f"{name} at byte {position} takes more objects than the stream holds"
            if name == "STOP":
                if marks or stack != 1:
                    return f"STOP at byte {position} leaves an unfinished object"
                return None
            stack -= below
            if name == "PROTO" and type(arg) is int and arg > pickle.HIGHEST_PROTOCOL + 3:
                return f"PROTO at byte {position} announces protocol {arg}"
            if name == "MARK":
                marks.append(stack)
                stack = 0
                continue
            if name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo.add(arg)
            elif name == "MEMOIZE":
                memo.add(len(memo))
            elif name in ("GET", "BINGET", "LONG_BINGET") and arg not in memo:
                return f"{name} at byte {position} reads memo entry {arg}, never written"
            stack += len(opcode.stack_after)
    except ValueError as exc:  # genops: bad opcode, bad argument, truncated stream
        return f"{exc}"
    finally:
        view.release()
    return f"the stream ends at byte {position} without STOP"


def _plausible_protocol(text: str) -> bool:
    """Whether "unsupported pickle protocol: N" can come from a newer Python (a few
    versions past this one's highest), rather than from a damaged first bytes."""
    number = text.rpartition(" ")[2]
    return number.isdigit() and int(number) <= pickle.HIGHEST_PROTOCOL + 3


def load_failure(exc: BaseException, data: Any = None) -> tuple[str, str, str]:
    """(message, reason, hint) for an exception raised while loading a payload.

    .. versionchanged:: 0.2.0
       ``data``.

    Parameters
    ----------
    exc:
        What the unpickler raised.
    data:
        The payload, when the caller has it: if its opcodes do not even parse
        (:func:`opcode_damage`), it is damaged, whatever ``exc`` says.

    Returns
    -------
    tuple of str
        The message of the :class:`~picklable.UnpicklingError` that replaces
        it: what could not be imported or built here, and the fix.
    """
    text = first_line(exc)
    if (
        isinstance(exc, ValueError)
        and text.startswith("unsupported pickle protocol")
        and _plausible_protocol(text)
    ):
        return (
            (
                f"Cannot load: {text} (made by a newer Python). Fix: load it with the sender's "
                "Python version, or dump with a protocol this Python knows (protocol=5)."
            ),
            text,
            "dump with a protocol both sides know",
        )
    if data is not None:
        damage = opcode_damage(data)
        if damage is not None:
            said = f"{type(exc).__name__}: {first_line(exc)}".rstrip(": ")
            return (
                (
                    f"Cannot load: the payload is damaged or not a pickle ({damage}; {said}). "
                    "Fix: check that the bytes arrive unchanged (and whole); sign payloads "
                    "with key= to have any change refused before loading."
                ),
                "damaged or truncated payload",
                "check that the bytes arrive unchanged",
            )
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        name = exc.name
        top = name.partition(".")[0]
        if top != name and top in sys.modules:
            installed = package_version(top)
            return (
                (
                    f"Cannot load: module {name!r} is not importable here, but {top!r} is "
                    f"({installed}): the sender has another version. Fix: install the sender's "
                    f"version of {top!r} here."
                ),
                f"module {name!r} not importable ({installed} here)",
                f"install the sender's version of {top!r}",
            )
        return (
            (
                f"Cannot load: module {name!r} is not importable here. Fix: install it in the "
                "receiving environment, or ship the sender's module by value with "
                "picklable.register_by_value()."
            ),
            f"module {name!r} not importable",
            "install it in the receiving environment",
        )
    missing = _missing_attribute(exc) if isinstance(exc, AttributeError) else None
    if missing is not None:
        attribute, module = missing
        if _in_stdlib(module.partition(".")[0]):
            return _other_python(f"{module}.{attribute}", module)
        installed = package_version(module)
        top = module.partition(".")[0]
        return (
            (
                f"Cannot load {module}.{attribute}: module {module!r} here ({installed}) has no "
                f"{attribute!r} (renamed or removed, or the sender has another version). Fix: "
                f"install the sender's version of {top!r} here, or keep the old name as an alias."
            ),
            f"{module}.{attribute} not found here ({installed})",
            f"install the sender's version of {top!r}",
        )
    if isinstance(exc, (pickle.UnpicklingError, EOFError)):
        kind = type(exc).__name__
        return (
            (
                f"Cannot load: the payload is damaged or not a pickle ({kind}: {exc}). Fix: check "
                "that the bytes arrive unchanged (and whole)."
            ),
            "damaged or truncated payload",
            "check that the bytes arrive unchanged",
        )
    kind = type_name(exc)
    said = f"{kind}: {text}" if text else kind
    if isinstance(exc, TypeError) and ".__init_subclass__()" in text:
        # Raised by the call itself (no frame of the hook): a keyword missing.
        hook = text.partition("()")[0]
        return (
            (
                f"Cannot load: {hook}() raised {said}, making a class copied by value. "
                "A class statement's keywords (class C(Base, key=...)) go to its base's "
                "__init_subclass__, and Python keeps them nowhere: no copy can give them "
                "again. Fix: define the class in a module both sides import (it then goes "
                "by reference)."
            ),
            f"{hook}() raised {said}",
            "define the class in a module both sides import",
        )
    frame = _builder_frame(exc)
    if frame is not None:
        name = _frame_name(frame)
        unset = _item_setter_reads_unset(frame, exc)
        if unset is not None:
            return _items_before_attributes(name, said, *unset)
        module = frame.f_globals.get("__name__", "")
        module = module if isinstance(module, str) else ""
        top = module.partition(".")[0]
        if not top or top in ("__main__", "__mp_main__"):
            return (
                (
                    f"Cannot load: {name} raised {said}. The payload holds an object this "
                    f"code cannot rebuild. Fix: make {name.partition('.')[2] or name} accept what "
                    "the "
                    "sender's version stored, or run the same code on both sides."
                ),
                f"{name} raised {said}",
                "run the same code on both sides",
            )
        if module.startswith("concurrent.interpreters"):
            # An interpreter, a queue: an id of the process that made it (3.14+).
            return (
                (
                    f"Cannot load: {name} raised {said}. The payload holds a handle of "
                    "concurrent.interpreters (an interpreter or a queue), whose id names "
                    "an object of the process that made it: this process has no such "
                    "object. Fix: pass such handles between the interpreters of one "
                    "process, never to another process."
                ),
                f"{name} raised {said}",
                "pass interpreter handles within one process",
            )
        if _in_stdlib(top):
            # No package version to blame: the standard library is this Python's,
            # and a payload with code by value is refused on another minor version
            # before anything of it runs (its interpreter check).
            here = f"Python {sys.version_info.major}.{sys.version_info.minor}"
            return (
                (
                    f"Cannot load: {name} raised {said}. {here}'s standard library refused "
                    "to rebuild an object of the payload. Fix: if the sender ran another "
                    f"Python, run {here} there; otherwise this is a copy picklable made "
                    "wrong: report it, with the object's class."
                ),
                f"{name} raised {said}",
                f"report it: the standard library ({top}) refused picklable's copy",
            )
        installed = package_version(module)
        return (
            (
                f"Cannot load: {name} raised {said}. The payload holds an object this environment "
                f"cannot rebuild (here: {installed}; the sender may have another version). Fix: "
                f"install the sender's version of {top!r} here."
            ),
            f"{name} raised {said}",
            f"install the sender's version of {top!r}",
        )
    intact = "The payload's opcodes are intact, so" if data is not None else "Either"
    return (
        (
            f"Cannot load: rebuilding an object raised {said}. {intact} a value inside the "
            "payload was damaged on the way, or the class here differs from the sender's "
            "(another version of its package?). Fix: check that the bytes arrive unchanged "
            "(sign them with key=), and install the same versions on both sides."
        ),
        f"{said} while rebuilding",
        "check the bytes arrive unchanged; install the same versions on both sides",
    )
