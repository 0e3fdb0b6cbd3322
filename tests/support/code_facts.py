"""What a function's code says about where it comes from, compared on both sides.

``describe(obj)`` gives, for a function (with its ``__wrapped__`` chain) or a
class (its methods), every code object's file, names and first line, nested
code objects included, and ``inspect.getsource`` where it works. The script
side describes its originals; a child interpreter describes what it loaded.
``failure(fn, *args)`` is the traceback of a call, frame by frame.
"""

from __future__ import annotations

import inspect
import traceback
import types
from typing import Any

import picklable


def codes(code: types.CodeType) -> list[tuple[Any, ...]]:
    """``(co_filename, co_name, co_qualname, co_firstlineno)`` of ``code`` and
    of every code object nested in it, depth first."""
    found = [
        (
            code.co_filename,
            code.co_name,
            getattr(code, "co_qualname", code.co_name),
            code.co_firstlineno,
        )
    ]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found.extend(codes(const))
    return found


def _source(obj: Any) -> str | None:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return None


def _function(func: Any) -> dict[str, Any]:
    facts = {
        "name": func.__name__,
        "qualname": func.__qualname__,
        "module": func.__module__,
        "codes": codes(func.__code__),
        "source": _source(func),
    }
    wrapped = func.__dict__.get("__wrapped__")
    if wrapped is not None:
        facts["wrapped"] = _function(wrapped)
    return facts


def describe(obj: Any) -> Any:
    """The facts of a function or of a class's functions (see the module doc),
    or a list of those for a list."""
    if isinstance(obj, list):
        return [describe(item) for item in obj]
    if isinstance(obj, type):
        return {
            key: _function(value)
            for key, value in vars(obj).items()
            if isinstance(value, types.FunctionType)
        }
    return _function(obj)


def describe_loaded(payload: bytes) -> Any:
    """:func:`describe` of what ``payload`` loads to (in the receiver)."""
    return describe(picklable.loads(payload))


def failure(fn: Any, *args: Any) -> list[tuple[str, int | None, str]]:
    """``(file, line, function)`` of each frame of the traceback that calling
    ``fn(*args)`` raises, below this function's own frame."""
    try:
        fn(*args)
    except Exception as exc:
        frames = traceback.extract_tb(exc.__traceback__)[1:]
        return [(frame.filename, frame.lineno, frame.name) for frame in frames]
    raise AssertionError(f"{fn!r} did not raise")


def loaded_failure(payload: bytes, *args: Any) -> list[tuple[str, int | None, str]]:
    """:func:`failure` of the function that ``payload`` loads to."""
    return failure(picklable.loads(payload), *args)


def method_failure(payload: bytes, method: str, *args: Any) -> list[tuple[str, int | None, str]]:
    """:func:`failure` of a method of an instance of the class ``payload`` loads to."""
    cls = picklable.loads(payload)
    return failure(getattr(cls(), method), *args)
