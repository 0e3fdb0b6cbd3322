"""Why an object's pickling failed, and what to do instead.

Used by the errors of ``dumps`` (:mod:`picklable._diagnostics.errors`), by
``explain`` and by the audit. For an object whose pickling failed,
:func:`explain_failure` gives the reason and the fix: the table's verdict when
the object is of a kind that never ships (:func:`picklable._reduce.table.refusal`),
else what the failure itself tells (which class's ``__reduce__`` raised, a C
type without pickle support, a name that does not lead back to the object).
"""

from __future__ import annotations

import re
import sys
import traceback
import types
from typing import Any

from .._compat import class_module, written_in_c
from .._reduce.refusals import LOCK, Hint
from .._reduce.table import refusal
from .wording import CANNOT_PICKLE, first_line, type_name

__all__ = [
    "CANNOT_PICKLE",
    "REDUCE_METHODS",
    "Hint",
    "explain_failure",
    "first_line",
    "type_name",
]


# --------------------------------------------------------- from the failure

# pickle's own words when a name it would write does not lead back to the object:
# the C pickler's up to 3.13 ("attribute lookup", "import of module"), the
# pure-Python pickler's and 3.14's ("not found as", 3.14: "Can't pickle X: " and
# the ImportError's message), and every version's "not the same object as".
_BY_NAME = re.compile(
    r"Can't pickle (?P<what>.+?): (?:attribute lookup (?P<attr>\S+) on (?P<module>\S+) "
    r"failed|it's not the same object as (?P<name>\S+)|it's not found as (?P<absent>\S+)"
    r"|import of module '(?P<missing>[^']+)' failed|No module named '(?P<unknown>[^']+)')"
)
# Type names a culprit may hold that are kinds with a reason and fix of their own.
_HELD_KINDS = {"_thread.lock": LOCK, "_thread.RLock": LOCK}
REDUCE_METHODS = (
    "__reduce_ex__",
    "__reduce__",
    "__getstate__",
    "__getnewargs_ex__",
    "__getnewargs__",
)


def _raising_method(culprit: Any, cause: BaseException) -> tuple[str, str] | None:
    """(class qualname, method name) of the pickling method of ``culprit`` that raised.

    Read from the traceback: the innermost frame running one of the reduce
    methods, matched by code object to the class that defines it. When the
    method is written in C (no frame), the class that defines it in the MRO.
    """
    t = type(culprit)
    frames = [frame for frame, _ in traceback.walk_tb(cause.__traceback__)]
    for frame in reversed(frames):
        code = frame.f_code
        if code.co_name not in REDUCE_METHODS:
            continue
        for klass in t.__mro__:
            raw = vars(klass).get(code.co_name)
            raw = getattr(raw, "__func__", raw)
            if getattr(raw, "__code__", None) is code:
                return klass.__qualname__, code.co_name
    for name in REDUCE_METHODS[:3]:
        for klass in t.__mro__:
            if klass is object:
                break
            if name in vars(klass):
                return klass.__qualname__, name
    return None


# The interpreter's own modules (their C parts are _io, _thread, _collections ...).
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))


def _changeable(klass_name: str, culprit: Any) -> bool:
    """Whether advising to change ``klass_name``'s pickling method can help: not for
    the interpreter's own types (builtins, the stdlib), which no user changes."""
    for klass in type(culprit).__mro__:
        if klass.__qualname__ == klass_name:
            top = (class_module(klass) or "").partition(".")[0]
            return top != "builtins" and top.lstrip("_") not in _STDLIB
    return False


def _by_name(culprit: Any, message: str) -> Hint | None:
    """pickle reduced ``culprit`` to a name that does not lead back to it."""
    found = _BY_NAME.search(message)
    if found is None:
        return None
    missing = found["missing"] or found["unknown"]
    if missing:
        where = f"its module {missing!r} cannot be imported"
    elif found["attr"]:
        where = f"{found['module']}.{found['attr']} does not exist"
    elif found["absent"]:
        where = f"{found['absent']} does not exist"
    else:
        where = f"{found['name']} is another object"
    kind = (
        "built-in function"
        if isinstance(culprit, types.BuiltinFunctionType)
        else type_name(culprit)
    )
    return (
        f"a {kind} ships by its name, and here {where}",
        (
            "make it reachable under its own __module__ and __qualname__ (an extension "
            "that sets them wrongly, or a name deleted or rebound after import), or ship a "
            "module-level function that calls it"
        ),
    )


def explain_failure(culprit: Any, cause: BaseException) -> Hint:
    """(reason, fix) for ``culprit``, whose pickling failed with ``cause``.

    Parameters
    ----------
    culprit:
        The object that failed (the end of the error's path).
    cause:
        The exception its pickling raised.

    Returns
    -------
    tuple of str
        Why it cannot ship, and what to do instead.
    """
    known = refusal(culprit)
    if known is not None:
        return known
    kind = type(cause).__name__
    message = first_line(cause)
    said = f"{kind}: {message}" if message else kind
    named = CANNOT_PICKLE.match(message) if kind == "TypeError" else None
    if named is not None:
        t = type(culprit)
        if named.group(1) in (t.__name__, t.__qualname__, type_name(culprit)):
            what = "a C type" if written_in_c(t) else "a subclass of a C type"
            return (
                f"{type_name(culprit)} is {what} without pickle support",
                (
                    "ship what it is made from and rebuild it inside the worker, or register a "
                    "reducer with copyreg.pickle()"
                ),
            )
        held = _HELD_KINDS.get(named.group(1))
        if held is not None:
            return (f"it holds a {named.group(1)}: {held[0]}", held[1])
        return (
            f"it holds a {named.group(1)}, which cannot be pickled",
            "ship what it is made from and rebuild it inside the worker",
        )
    by_name = _by_name(culprit, message)
    if by_name is not None:
        return by_name
    method = _raising_method(culprit, cause)
    if method is not None:
        klass, name = method
        fix = "ship what it is made from and rebuild it inside the worker"
        if _changeable(klass, culprit):
            fix += f", or change {klass}.{name}"
        return (f"{klass}.{name} raised {said}", fix)
    return (
        said,
        (
            "ship what it is made from and rebuild it inside the worker, or give its class "
            "__reduce__ / __getstate__"
        ),
    )
