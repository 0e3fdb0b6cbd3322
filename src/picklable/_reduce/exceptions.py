"""Exceptions that ship faithfully: type, args, attributes, chain, traceback.

stdlib pickle reduces an exception to ``(type(exc), exc.args, exc.__dict__)``:
loading calls the class with ``args``, which fails (in the receiver, far from
the cause) for every ``__init__`` that takes other arguments than it passes to
``super().__init__`` (keyword-only, extra or renamed parameters; CPython issues
76877, 120810, 101159), runs ``__init__`` side effects a second time, and drops
slots, ``__cause__``, ``__context__``, ``__suppress_context__`` and the traceback.

How an exception class is reduced is decided once per class (:class:`_Plan`):

``own``
    A class of ours to respect: it (not a builtin base) defines ``__reduce__`` or
    ``__reduce_ex__``, or :mod:`copyreg` holds a reducer for it. Its reduction is
    kept; the chain and traceback are added through a state setter.
``builtin``
    ``builtins`` classes (``ValueError``, ``OSError``, ``ExceptionGroup`` ...):
    their own reduction, exact for everything their ``__init__`` derives from
    ``args`` (``OSError.errno``/``strerror``/``filename``, ``SyntaxError.lineno``
    ...), plus the fields only keyword arguments set (``NameError.name``,
    ``AttributeError.name``/``obj``), plus chain and traceback. With none of
    those, the reducer returns ``NotImplemented``: the bytes stdlib pickle writes.
``instance``
    Every other class: the instance is created by its builtin base's ``__new__``
    (``Exception.__new__(cls, *args)``; no ``__init__``, no Python ``__new__``
    runs), then its state is set: ``args``, the builtin base's C-level fields,
    ``__dict__`` (``__notes__`` included), slots, chain and traceback. The state
    is one dict applied by ``BaseException.__setstate__`` in C, unless the class
    has its own ``__setattr__``, ``__getstate__`` or ``__setstate__``; then
    :func:`_reconstruct._exception_setstate` honours those. A class that defines
    none of ``__init__``, ``__new__``, slots or state hooks, in an instance with
    no chain and no traceback, takes the stdlib path as well.

The traceback is a :mod:`picklable._traceback` record tuple: file, function,
positions and source line per frame, never locals. Chains with cycles
(``e.__context__`` leading back to ``e``) are safe: chain and traceback are
state, saved after the exception is memoized.
"""

from __future__ import annotations

import copyreg
import types
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .. import _reconstruct, _traceback
from .._compat import is_heap_type
from .._layout import slots_of

if TYPE_CHECKING:
    from .context import DumpContext

__all__ = ["exception_kind", "exception_pieces", "reduce_traceback"]

Handler = Callable[["DumpContext", Any], Any]
_C_FIELD_TYPES = (types.MemberDescriptorType, types.GetSetDescriptorType)
# Set only from keyword arguments, so a builtin's own reduction (args) drops them.
_KEYWORD_FIELDS: dict[type, tuple[str, ...]] = {
    NameError: ("name",),
    AttributeError: ("name", "obj"),
    ImportError: ("name_from",) if hasattr(ImportError(), "name_from") else (),
}
# Read-only C fields, set by __new__ from its arguments.
_READ_ONLY = frozenset({"message", "exceptions"})
_BASE_FIELDS = frozenset(vars(BaseException))
_UNSET: Any = object()
_STATE_HOOKS = ("__setattr__", "__getstate__", "__setstate__")


def exception_kind(t: type) -> Handler:
    """The reducer for instances of the exception class ``t`` (see the module doc).

    The plan holds no reference to ``t`` (a class nobody uses any more must be
    freed), and checks at each instance that the hooks it was made for are
    still the class's own: a class given a ``__reduce__`` later is planned again.
    """
    plan = _Plan(t)
    if plan.kind == "own":
        return plan.reduce_own
    if plan.kind == "builtin":
        return plan.reduce_builtin
    return plan.reduce_instance


# ``tblib.pickling_support.install()`` (which importing ``distributed`` runs)
# registers one reducer for every exception class and for tracebacks. That is
# not a class author's choice, and its payloads would need tblib to load: ours win.
_BLANKET_REDUCER_MODULES = frozenset({"tblib.pickling_support"})


def _registered(t: type) -> Any:
    """The copyreg reducer a class's author registered for ``t``, if any."""
    registered = copyreg.dispatch_table.get(t)
    if registered is None:
        return None
    function = getattr(registered, "func", registered)  # tblib wraps one in a partial
    if getattr(function, "__module__", None) in _BLANKET_REDUCER_MODULES:
        return None
    return registered


def _stdlib_reduction(context: DumpContext, exc: BaseException) -> Any:
    """What stdlib pickle writes for ``exc``, even when copyreg holds another
    reducer for its class: pickle consults copyreg after us, and a blanket
    reducer (tblib's) would make the payload need tblib to load."""
    if type(exc) in copyreg.dispatch_table:
        return exc.__reduce_ex__(context.protocol)
    return NotImplemented  # pickle's own path: the same bytes


def reduce_traceback(context: DumpContext, tb: types.TracebackType) -> Any:
    """A traceback as frame records (file, function, positions, line; no locals)."""
    registered = _registered(types.TracebackType)
    if registered is not None:
        return registered(tb)
    return (_reconstruct._make_traceback, (_traceback.records(tb),))


def chain(exc: BaseException, dump: DumpContext | None = None) -> dict[str, Any]:
    """The chain and traceback of ``exc`` that differ from a new exception's.

    ``__suppress_context__`` follows ``__cause__``: setting a cause sets it.
    In a dump's second try after a failure inside a chain (``dump.stand_ins``),
    a link that cannot travel is stood in for (see :func:`_stand_in`).
    """
    out: dict[str, Any] = {}
    cause = exc.__cause__
    if cause is not None:
        out["__cause__"] = cause
    context = exc.__context__
    if context is not None:
        out["__context__"] = context
    if dump is not None and dump.stand_ins:
        made: dict[int, BaseException] = {}  # a cause that is the context too: one
        for key, link in tuple(out.items()):
            if id(link) not in made:
                why = dump.trial_failure(link)
                made[id(link)] = link if why is None else _stand_in(link, why)
            out[key] = made[id(link)]
    if exc.__suppress_context__ or cause is not None:
        out["__suppress_context__"] = exc.__suppress_context__
    tb = exc.__traceback__
    if tb is not None:
        out["__traceback__"] = tb
    return out


def exception_pieces(exc: BaseException, reduction: Any = None) -> Iterator[tuple[str, Any]]:
    """(path suffix, piece) for each piece that shipping ``exc`` ships.

    For the error path of a failed ``dumps`` (``_diagnostics.culprit``): a generic walk
    through ``__reduce_ex__`` sees ``args`` and ``__dict__`` but not slots, the
    members of a group, ``__cause__`` or ``__context__``.
    """
    for i, arg in enumerate(exc.args):
        yield f".args[{i}]", arg
    for key, value in vars(exc).items():
        yield f".{key}", value
    for name in _slot_names([k for k in type(exc).__mro__ if _is_ours(k)]):
        try:
            yield f".{name}", getattr(exc, name)
        except AttributeError:
            continue
    for i, member in enumerate(getattr(exc, "exceptions", None) or ()):
        yield f".exceptions[{i}]", member
    if exc.__cause__ is not None:
        yield ".__cause__", exc.__cause__
    if exc.__context__ is not None and exc.__context__ is not exc.__cause__:
        yield ".__context__", exc.__context__


def _is_ours(klass: type) -> bool:
    """A class whose methods are Python code, not a builtin exception's."""
    return is_heap_type(klass) and klass.__module__ != "builtins"


# Hooks whose presence decides a plan: a plan records which of them the class
# had (as "is it BaseException's own?" flags, which hold no reference to it).
_PLAN_HOOKS = ("__reduce__", "__reduce_ex__", "__setstate__", "__setattr__", "__init__", "__new__")
_BASE_HOOKS = tuple(getattr(BaseException, name) for name in _PLAN_HOOKS)
_OBJECT_GETSTATE = getattr(object, "__getstate__", None)


def _signature(t: type) -> tuple[bool, ...]:
    flags = tuple(getattr(t, name) is base for name, base in zip(_PLAN_HOOKS, _BASE_HOOKS))
    return (*flags, getattr(t, "__getstate__", None) is _OBJECT_GETSTATE)


class _Plan:
    """How instances of one exception class are reduced (see module doc)."""

    def __init__(self, t: type) -> None:
        self.signature = _signature(t)
        mro = t.__mro__
        ours = [k for k in mro if _is_ours(k)]
        defined: set[str] = set()
        for klass in ours:
            defined.update(vars(klass))
        if "__reduce__" in defined or "__reduce_ex__" in defined:
            self.kind = "own"
        elif not ours:
            self.kind = "builtin"
        else:
            self.kind = "instance"
        self.keyword_fields = tuple(
            {name: None for klass in mro for name in _KEYWORD_FIELDS.get(klass, ())}
        )
        # C-level fields of the builtin bases (errno, filename, name, value, ...).
        fields: dict[str, None] = {}
        for klass in mro:
            if _is_ours(klass) or klass is BaseException or klass is object:
                continue
            for name, value in vars(klass).items():
                if (
                    isinstance(value, _C_FIELD_TYPES)
                    and name not in _BASE_FIELDS
                    and name not in _READ_ONLY
                ):
                    fields[name] = None
        self.c_fields = tuple(fields)
        self.slots = _slot_names(ours)
        self.group = issubclass(t, BaseExceptionGroup)
        # OSError.__new__ leaves args empty when a subclass has its own __init__;
        # a group's __new__ takes (message, exceptions), not args.
        self.set_args = self.group or issubclass(t, OSError)
        self.hooks = {name for name in _STATE_HOOKS if name in defined}
        self.simple = not ({"__init__", "__new__", *_STATE_HOOKS} & defined) and not self.slots
        self.new = _builtin_new(t)

    def _plain(self, exc: BaseException) -> bool:
        """Whether stdlib's reduction is exact for ``exc``."""
        if self.group:
            return False  # see reduce_builtin
        if (
            exc.__traceback__ is not None
            or exc.__context__ is not None
            or exc.__cause__ is not None
        ):
            return False
        if exc.__suppress_context__:
            return False
        if any(getattr(exc, name, None) is not None for name in self.keyword_fields):
            return False
        return not self.changed_fields(exc)

    def changed_fields(self, exc: BaseException) -> dict[str, Any]:
        """The C fields of ``exc`` (``errno``, ``lineno``, ``value``, ``code``...)
        that differ from what its arguments make: set after it was made
        (``e.errno = ECONNREFUSED``), which the builtin's own reduction, its
        class and arguments, leaves out. Only where the class's constructor is
        the builtin's (its plan is ``builtin``, or ``simple``)."""
        if not self.c_fields or not (self.kind == "builtin" or self.simple):
            return {}
        try:
            fresh: Any = type(exc)(*exc.args)
        except Exception:  # arguments it no longer takes: every field set travels
            fresh = None
        changed = {}
        for name in self.c_fields:
            try:
                value = getattr(exc, name)
            except AttributeError:  # BlockingIOError.characters_written when unset
                continue
            made = getattr(fresh, name, _UNSET)
            if value is not made and (value is None or value != made):
                changed[name] = value
        return changed

    # --------------------------------------------------------------- reducers

    def _stale(self, exc: BaseException) -> bool:
        """Whether the class of ``exc`` changed its hooks since this plan was made."""
        return _signature(type(exc)) != self.signature

    def reduce_builtin(self, context: DumpContext, exc: BaseException) -> Any:
        if self._plain(exc):
            return _stdlib_reduction(context, exc)
        registered = _registered(type(exc))
        if registered is not None:
            return _add_chain(registered(exc), chain(exc, context))
        reduced: Any = exc.__reduce_ex__(context.protocol)
        state = dict(reduced[2] or {}) if len(reduced) > 2 else {}
        if self.group:
            # A tuple, not the list in args: pickle memoizes a list before its
            # items, so a member whose __context__ is the group would rebuild
            # the group from an empty list.
            reduced = (reduced[0], (exc.message, exc.exceptions))  # type: ignore[attr-defined]
            state["args"] = exc.args
        for name in self.keyword_fields:
            value = getattr(exc, name, None)
            if value is not None:
                state[name] = value
        state.update(self.changed_fields(exc))
        state.update(chain(exc, context))
        return (reduced[0], reduced[1], state)

    def reduce_own(self, context: DumpContext, exc: BaseException) -> Any:
        if self._stale(exc):
            return context.reclassify(exc)
        registered = _registered(type(exc))
        reduced = registered(exc) if registered is not None else exc.__reduce_ex__(context.protocol)
        return _add_chain(reduced, chain(exc, context))

    def reduce_instance(self, context: DumpContext, exc: BaseException) -> Any:
        if self._stale(exc):
            return context.reclassify(exc)
        cls = type(exc)
        registered = _registered(cls)
        if registered is not None:
            return _add_chain(registered(exc), chain(exc, context))
        if self.simple and self._plain(exc):
            return _stdlib_reduction(context, exc)
        if self.group:
            new_args: tuple[Any, ...] = (exc.message, exc.exceptions)  # type: ignore[attr-defined]
        else:
            new_args = exc.args
        if self.new is None:
            head: tuple[Any, ...] = (copyreg.__newobj__, (cls, *new_args))  # type: ignore[attr-defined]
        else:
            head = (self.new, (cls, *new_args))
        fields: dict[str, Any] = {}
        if self.set_args:
            fields["args"] = exc.args
        for name in self.c_fields:
            try:
                value = getattr(exc, name)
            except AttributeError:  # BlockingIOError.characters_written when unset
                continue
            if value is not None:
                fields[name] = value
        hooks = self.hooks
        if "__getstate__" in hooks:
            inner: Any = exc.__getstate__()
        else:
            own = dict(exc.__dict__)
            for name in self.slots:
                try:
                    own[name] = getattr(exc, name)
                except AttributeError:  # an empty slot stays empty
                    continue
            if "__setstate__" in hooks:
                inner = own
            else:
                inner = None
                fields.update(own)
        fields.update(chain(exc, context))
        if not hooks:
            # One dict, set key by key by BaseException.__setstate__ in C.
            return (*head, fields)
        return (*head, (inner, None, fields), None, None, _reconstruct._exception_setstate)


def _stand_in(link: BaseException, why: str) -> BaseException:
    """A :class:`picklable.RemoteError` for a link of a chain that cannot
    travel (an exception holding a lock, an open response): its type, message
    and traceback text (its own chain's too), and why it stayed behind."""
    import traceback

    from .._remote import RemoteError, RemoteTraceback

    name = f"{type(link).__module__}.{type(link).__qualname__}"
    try:
        message = str(link)
    except Exception as exc:  # a broken __str__
        message = f"<str() failed: {type(exc).__name__}>"
    try:
        text = "".join(traceback.format_exception(link))
    except Exception as exc:
        text = f"{name}: <traceback could not be formatted: {type(exc).__name__}>\n"
    stand_in = RemoteError(name, message, f"it cannot be pickled ({why})", text)
    stand_in.__cause__ = RemoteTraceback(text)
    return stand_in


def _add_chain(reduced: Any, extra: dict[str, Any]) -> Any:
    """Add chain and traceback to a class's own reduction."""
    if not extra or isinstance(reduced, str):
        return reduced
    reduced = tuple(reduced) + (None,) * (6 - len(reduced))
    func, args, state, listitems, dictitems, setter = reduced
    return (
        func,
        args,
        (state, setter, extra),
        listitems,
        dictitems,
        _reconstruct._exception_setstate,
    )


def _slot_names(classes: list[type]) -> tuple[str, ...]:
    return tuple(slots_of(classes))


def _builtin_new(t: type) -> Any:
    """The builtin ``__new__`` to create instances of ``t`` with, or None for ``t.__new__``.

    None when no class of ours defines ``__new__`` (``cls.__new__`` is then the
    builtin one, and pickle writes a NEWOBJ). Otherwise the ``__new__`` of the
    nearest class whose ``__new__`` is C code: a Python ``__new__`` may have
    another signature or side effects, like ``__init__``.
    """
    found_ours = False
    for klass in t.__mro__:
        new = vars(klass).get("__new__")
        if new is None:
            continue
        if isinstance(new, (staticmethod, types.FunctionType)):
            found_ours = True
            continue
        return new if found_ours else None
    return None
