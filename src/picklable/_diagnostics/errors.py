"""The errors users read when something cannot ship: what, where, why, fix.

The only place that adds an attribute path to an error. ``dumps`` raises
:func:`dump_error` (or :func:`recursion_error`); code that names the culprit
in its own terms (a pool's "initargs[1]", "the result of map(work)") builds
its error here too: :func:`located_error` for a culprit it found itself,
:func:`relocated_error` with :func:`rerooted` for an error found under
another root. The path comes from the walk of :mod:`.culprit`; the reason and
fix from the table's verdict (:func:`picklable._reduce.table.refusal`), the
error a reducer raised, or :func:`.hints.explain_failure`; the words from
:mod:`.wording`.
"""

from __future__ import annotations

import collections
import os
import pickle
import sys
import traceback
import types
from typing import Any

from .._compat import C_RECURSION_APART, PICKLE_NOTE
from .._reduce.table import refusal
from ..exceptions import PicklingError, make_combined, relocated
from .culprit import find_culprit, root_name, search
from .hints import explain_failure
from .wording import CANNOT_PICKLE, first_line, message, type_name

__all__ = [
    "dump_error",
    "located_error",
    "pickling_error",
    "recursion_error",
    "relocated_error",
    "rerooted",
]


def located_error(what: str, path: str, reason: str, hint: str) -> PicklingError:
    """A :class:`PicklingError` for ``what`` at ``path``, with its fields.

    Parameters
    ----------
    what:
        The culprit's type name.
    path:
        Where it sits, from a root the caller names (``initargs[1]``).
    reason, hint:
        Why it cannot ship, and the fix.
    """
    return PicklingError(
        message(what, path, reason, hint), path=path, type_name=what, reason=reason, hint=hint
    )


def rerooted(path: str, root: str) -> str:
    """``path`` with its root name replaced by ``root``: ``obj[0].x`` under
    ``the result of f`` is ``the result of f[0].x``."""
    cut = min((i for i in (path.find("."), path.find("[")) if i >= 0), default=len(path))
    return f"{root}{path[cut:]}"


def relocated_error(
    error: PicklingError, path: str, hint: str, said: str | None = None
) -> PicklingError:
    """``error`` said again at ``path`` with another fix, of the same types
    (its combined pair, or a plain :class:`PicklingError`): for code that names
    the culprit in its own terms (a pool's "the result of map(work)").

    Parameters
    ----------
    error:
        The located error (its ``.type_name`` and ``.reason`` are kept).
    path:
        The new path (see :func:`rerooted`).
    hint:
        The fix in the caller's terms.
    said:
        What the message says when ``error`` has no reason (default: the
        first line of ``error``).
    """
    what = error.type_name or "the result"
    reason = error.reason or (first_line(error) if said is None else said)
    return relocated(
        error,
        message(what, path, reason, hint),
        path=path,
        type_name=error.type_name,
        reason=error.reason,
        hint=hint,
    )


def _located(
    root: Any, error: BaseException, name: str | None
) -> tuple[str, str, str, str, BaseException]:
    """(what, path, reason, hint, cause) for a failed dump of ``root``."""
    try:
        path, culprit, cause = find_culprit(root, error, name)
    except Exception:  # the walk itself must never hide the original error
        path, culprit, cause = name or root_name(root), root, error
    known = refusal(culprit)
    if known is not None:  # what it is tells more than how pickling it failed
        what = type_name(culprit)
        reason, hint = known
    elif isinstance(cause, PicklingError) and cause.reason:
        reason, hint = cause.reason, cause.hint
        what = cause.type_name or type_name(culprit)
    elif isinstance(cause, RecursionError):
        what = type_name(culprit)
        reason, hint = _too_deep(cause)
    else:
        what = type_name(culprit)
        reason, hint = explain_failure(culprit, cause)
    return what, path, reason, hint, cause


def pickling_error(root: Any, error: BaseException, name: str | None = None) -> PicklingError:
    """Build the error that says why ``root`` cannot be dumped: what, where, why, fix.

    Parameters
    ----------
    root:
        The object given to ``dumps``.
    error:
        What the pickler raised.
    name:
        The name the path starts with (default: :func:`root_name`).

    Returns
    -------
    PicklingError
        With ``.path``, ``.type_name``, ``.reason`` and ``.hint`` (``dumps``
        raises :func:`dump_error`'s, which also keeps the type of ``error``).
    """
    what, path, reason, hint, _cause = _located(root, error, name)
    return located_error(what, path, reason, hint)


def dump_error(root: Any, error: BaseException, name: str | None = None) -> BaseException:
    """The exception ``dumps`` raises when pickling ``root`` raised ``error``.

    A :class:`PicklingError` that names the path (as :func:`pickling_error`),
    and that is also of ``error``'s type when code raised something else than
    a pickling error (``TypeError`` from the C pickler, an object's own
    ``ValueError``): callers that catch what ``pickle.dumps`` raises still catch
    it (:func:`picklable.exceptions.combined`); ``error``'s own message stays in
    the text. When the two types cannot be combined, ``error`` itself, with the
    located message as a note (PEP 678) and ``.path``, ``.reason``, ``.hint``.
    """
    what, path, reason, hint, _cause = _located(root, error, name)
    if isinstance(error, PicklingError) or type(error) is pickle.PicklingError:
        return located_error(what, path, reason, hint)
    said = first_line(error)
    if (
        said
        and said not in reason
        and not CANNOT_PICKLE.match(said)
        and _raised_by_python_code(error)
    ):
        # A library's own words (multiprocessing's "only be shared between
        # processes through inheritance"), which callers may match; a C
        # type's "cannot pickle 'x' object" is what the reason already says.
        reason = f"{reason} ({type(error).__name__}: {said})"
    text = message(what, path, reason, hint)
    fields = {"path": path, "type_name": what, "reason": reason, "hint": hint}
    combined = make_combined(PicklingError, type(error), text, **fields)
    if combined is not None:
        return combined
    return _annotated(error, text, fields)


def _raised_by_python_code(error: BaseException) -> bool:
    for frame, _ in traceback.walk_tb(error.__traceback__):
        module = frame.f_globals.get("__name__")
        if not (isinstance(module, str) and module.startswith("picklable.")):
            return True
    return False


def _annotated(error: BaseException, text: str, fields: dict[str, str]) -> BaseException:
    """``error`` itself, carrying the located message and fields."""
    notes = getattr(error, "__notes__", None)
    if PICKLE_NOTE is not None and type(notes) is list:
        # pickle's notes, last: the located message says where, with the whole path.
        while notes and type(notes[-1]) is str and notes[-1].startswith(PICKLE_NOTE):
            notes.pop()
    add_note = getattr(error, "add_note", None)
    if add_note is not None:
        add_note(text)
    for key, value in fields.items():
        try:
            setattr(error, key, value)
        except Exception:  # slots, or a frozen exception class
            pass
    return error


# Frames of the pickling machinery: a recursion through them is the graph's depth.
_MACHINERY = ("picklable.", "pickle", "copyreg", "copy")
# A frame that is this many of a RecursionError's frames recursed without end.
_RECURSING = 50


def recursion_error(root: Any, error: RecursionError) -> BaseException:
    """The exception ``dumps`` raises when pickling ``root`` hit the recursion limit.

    Either some code called itself without end while the object was pickled
    (an infinitely recursive ``__getattribute__``, ``__reduce__``, ...): "deep
    recursion", naming that code; or the graph is nested deeper than the
    limit. Both are a :class:`PicklingError` and a :class:`RecursionError`.
    """
    what = type_name(root)
    path = root_name(root)
    counts = collections.Counter(
        frame.f_code for frame, _ in traceback.walk_tb(error.__traceback__)
    )
    recursing = None
    for code, times in counts.most_common(3):
        module = _module_of(error, code)
        if times >= _RECURSING and not module.startswith(_MACHINERY):
            recursing = (code, module)
            break
    if recursing is not None:
        code, module = recursing
        culprit = _self_of(error, code)
        if culprit is not None and culprit is not root:
            try:
                found = search(root, path, lambda obj: obj is culprit)
            except Exception:  # the walk must never hide the original error
                found = None
            if found is not None:
                path, what = found[0], type_name(culprit)
        qualname = getattr(code, "co_qualname", code.co_name)
        where = f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}"
        reason = f"deep recursion: {qualname} ({where}) calls itself without end"
        if code.co_name in ("__getattribute__", "__getattr__"):
            hint = (
                f"make {qualname} look its own attributes up with "
                "object.__getattribute__(self, name), not getattr(self, name)"
            )
        else:
            hint = f"make {qualname} stop calling itself"
    else:
        reason, hint = _too_deep(error)
    fields = {"path": path, "type_name": what, "reason": reason, "hint": hint}
    made = make_combined(PicklingError, RecursionError, message(what, path, reason, hint), **fields)
    assert made is not None  # RecursionError is a plain Python-level exception type
    return made


def _too_deep(error: RecursionError) -> tuple[str, str]:
    """(reason, hint) for data nested deeper than pickling it could go."""
    limit = sys.getrecursionlimit()
    if C_RECURSION_APART and _python_depth(error) < limit - limit // 10:
        # Python's limit was not reached: C code's own was (the C pickler's, or
        # C calls inside the pure-Python one).
        reason = (
            "nested deeper than the interpreter's C recursion limit, which "
            "sys.setrecursionlimit() does not raise (Python 3.12+)"
        )
        return reason, "flatten the structure, or ship it in shallower parts"
    return (
        f"nested deeper than the recursion limit ({limit})",
        "flatten the structure, or raise sys.setrecursionlimit() on both sides",
    )


def _python_depth(error: BaseException) -> int:
    """How many Python frames were on the stack when ``error`` was raised (about)."""
    depth = sum(1 for _ in traceback.walk_tb(error.__traceback__))
    frame: types.FrameType | None = sys._getframe()
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return depth


def _self_of(error: BaseException, code: types.CodeType) -> Any:
    """The ``self`` of the first frame running ``code`` in ``error``'s traceback, or None."""
    for frame, _ in traceback.walk_tb(error.__traceback__):
        if frame.f_code is code:
            return frame.f_locals.get("self")
    return None


def _module_of(error: BaseException, code: types.CodeType) -> str:
    for frame, _ in traceback.walk_tb(error.__traceback__):
        if frame.f_code is code:
            name = frame.f_globals.get("__name__")
            return name if isinstance(name, str) else ""
    return ""
