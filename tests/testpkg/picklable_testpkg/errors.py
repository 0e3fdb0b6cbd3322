"""Exception classes stdlib pickle cannot rebuild, and functions that raise them.

The ``fail_*`` functions run in a child interpreter: they raise, catch and
return the exception (with its traceback), so the test process gets it back
through picklable. ``describe`` runs there too, on exceptions the test ships.
"""

from __future__ import annotations

import errno
import os
import threading
import traceback
from typing import Any

# Every __init__ of SideEffectError that ran in this process.
INIT_CALLS: list[str] = []


class PlainError(Exception):
    """Defines nothing: stdlib pickle is exact for it."""


class OwnStop(StopIteration):
    """A plain subclass of a builtin with a C field (``value``)."""


class KwOnlyError(Exception):
    """``__init__`` with a keyword-only argument: ``cls(*args)`` fails."""

    def __init__(self, message: str, *, code: int) -> None:
        super().__init__(message)
        self.code = code


class ExtraArgsError(Exception):
    """``__init__`` takes three arguments, passes one formatted message up."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


class SideEffectError(Exception):
    """``__init__`` records itself: it must not run again when loading."""

    def __init__(self, what: str) -> None:
        INIT_CALLS.append(what)
        super().__init__(what)


class SlottedError(Exception):
    """Attributes in slots, which ``BaseException.__reduce__`` ignores."""

    __slots__ = ("detail", "__hidden")

    def __init__(self, detail: Any, hidden: Any) -> None:
        super().__init__()
        self.detail = detail
        self.__hidden = hidden

    @property
    def hidden(self) -> Any:
        return self.__hidden


class FrozenError(Exception):
    """Refuses ``setattr`` after ``__init__``, like an attrs frozen exception."""

    def __init__(self, message: str, *, field: str) -> None:
        object.__setattr__(self, "field", field)
        super().__init__(message)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")


class OwnReduceError(Exception):
    """Defines ``__reduce__``: its own rebuild is kept (and counted)."""

    rebuilt = 0

    def __init__(self, a: int, *, b: int) -> None:
        super().__init__(a, b)
        self.a = a
        self.b = b

    def __reduce__(self) -> Any:
        return (_rebuild_own, (self.a, self.b))


def _rebuild_own(a: int, b: int) -> OwnReduceError:
    OwnReduceError.rebuilt += 1
    return OwnReduceError(a, b=b)


class StateHooksError(Exception):
    """``__getstate__`` drops a cache; ``__setstate__`` marks the instance."""

    def __init__(self, message: str, *, secret: str) -> None:
        super().__init__(message)
        self.secret = secret
        self.cache = object()  # not picklable meaning: never shipped

    def __getstate__(self) -> dict[str, Any]:
        return {"secret": self.secret}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.restored = True


class MissingConfigError(FileNotFoundError):
    """An OSError subclass with its own signature: errno/strerror/filename must survive."""

    def __init__(self, path: str, *, hint: str) -> None:
        super().__init__(errno.ENOENT, os.strerror(errno.ENOENT), path)
        self.hint = hint


class StagedGroup(ExceptionGroup):  # type: ignore[type-arg]
    """A group with an extra keyword-only argument in ``__new__`` and ``__init__``."""

    def __new__(cls, message: str, exceptions: Any, *, stage: str) -> StagedGroup:
        self = super().__new__(cls, message, exceptions)
        self.stage = stage
        return self

    def __init__(self, message: str, exceptions: Any, *, stage: str) -> None:
        super().__init__(message, exceptions)

    def derive(self, excs: Any) -> StagedGroup:
        return StagedGroup(self.message, excs, stage=self.stage)


# ---------------------------------------------------------------- raised remotely


def _parse(path: str, line: int) -> None:
    raise ExtraArgsError(path, line, "unexpected token")  # LINE: parse


def _load(path: str) -> None:
    try:
        _parse(path, 7)
    except ExtraArgsError as exc:
        raise KwOnlyError(f"cannot load {path}", code=2) from exc  # LINE: load


def _step(n: int) -> None:
    if n:
        _step(n - 1)
    else:
        _load("config.toml")


def fail_chained() -> KwOnlyError:
    """Raise a KwOnlyError caused by an ExtraArgsError through 5 frames; return it."""
    try:
        _step(3)
    except KwOnlyError as exc:
        exc.add_note("while starting the worker")
        return exc
    raise AssertionError("unreachable")


def fail_with_context() -> SideEffectError:
    """A SideEffectError raised while handling a ZeroDivisionError (implicit context)."""
    try:
        try:
            1 / 0  # noqa: B018
        except ZeroDivisionError:
            raise SideEffectError("cleanup failed")  # noqa: B904
    except SideEffectError as exc:
        exc.attempt = 3  # set after construction
        return exc
    raise AssertionError("unreachable")


def fail_group() -> StagedGroup:
    """A group of the exceptions above, each raised (so each has a traceback)."""
    members: list[Exception] = [fn() for fn in (fail_chained, fail_with_context)]
    try:
        raise MissingConfigError("/etc/app.toml", hint="create it")
    except MissingConfigError as exc:
        members.append(exc)
    try:
        raise StagedGroup("startup failed", members, stage="init")
    except StagedGroup as group:
        return group


def fail_and_format(kind: str) -> tuple[BaseException, str]:
    """Fail as ``kind`` and also return the traceback as printed here."""
    exc: BaseException = {
        "chained": fail_chained,
        "context": fail_with_context,
        "group": fail_group,
    }[kind]()
    return exc, "".join(traceback.format_exception(exc))


def format_loaded(payload: bytes) -> str:
    """Load an exception here and return the traceback as printed here."""
    import picklable

    return "".join(traceback.format_exception(picklable.loads(payload)))


def init_calls() -> list[str]:
    """The SideEffectError.__init__ calls this process has seen."""
    return list(INIT_CALLS)


def describe(payload: bytes) -> dict[str, Any]:
    """Load an exception here and say what it is (plain data only)."""
    import picklable

    before = list(INIT_CALLS)
    exc = picklable.loads(payload)
    return {**summary(exc), "init_calls": INIT_CALLS[len(before) :]}


def summary(exc: BaseException | None, depth: int = 0) -> dict[str, Any]:
    """Type, args, attributes, chain and traceback facts, recursively."""
    if exc is None:
        return {}
    out: dict[str, Any] = {
        "type": f"{type(exc).__module__}.{type(exc).__qualname__}",
        "args": repr(exc.args),
        "str": str(exc),
        "dict": {k: repr(v) for k, v in sorted(vars(exc).items())},
        "suppress_context": exc.__suppress_context__,
        "tb_names": [frame.name for frame in traceback.extract_tb(exc.__traceback__)],
    }
    for name in (
        *("detail", "hidden", "errno", "strerror", "filename", "stage"),
        *("lineno", "offset", "value", "code", "start", "end", "reason", "characters_written"),
    ):
        if hasattr(exc, name):
            out[name] = repr(getattr(exc, name))
    if depth < 4:
        out["cause"] = summary(exc.__cause__, depth + 1)
        out["context"] = summary(exc.__context__, depth + 1)
        if isinstance(exc, BaseExceptionGroup):
            out["members"] = [summary(e, depth + 1) for e in exc.exceptions]
    return out


class HoldsLock(Exception):
    """An exception that holds what cannot travel (a connection, a lock)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.conn = threading.Lock()


def fail_with_unshippable_cause() -> None:
    """Raise a RuntimeError whose cause cannot be pickled (pickle ships the
    RuntimeError without its chain)."""
    try:
        raise HoldsLock("db down")
    except HoldsLock as exc:
        raise RuntimeError("task failed") from exc
