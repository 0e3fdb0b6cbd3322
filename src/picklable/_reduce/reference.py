"""Steps 2 and 3 of the rule: by reference, under the object's own name or a
path the locator finds (checked by identity), and why an object has neither."""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from .. import _caches, _reconstruct
from .._code import global_reads
from .._compat import MAIN_MODULES
from .._layout import ITEMS, is_slot
from .._locator import held_functions, importable_by_own_name, locate
from .._paths import Path, walk
from .attributes import candidate_state, leads_back
from .registry import registered_by_value
from .scripts import script_location, script_reference

if TYPE_CHECKING:
    from .context import DumpContext

__all__ = [
    "Reference",
    "class_attribute_reference",
    "copy_links",
    "locate_anywhere",
    "located_reference",
    "own_or_copy",
    "reduce_reference",
    "reference",
    "reference_pieces",
    "split_state",
    "took_a_name",
    "why_not_importable",
    "with_carried_state",
]


def reference(context: DumpContext, obj: Any, module: str, path: Path) -> Any:
    """Reduce ``obj`` to a by-reference load of ``module`` + ``path``.

    When the path is plain attributes inside ``obj.__module__``, return the dotted
    name: pickle then writes a STACK_GLOBAL that loads in C. Otherwise load
    through :func:`_reconstruct._resolve`. Names travel as exact strings: a
    class whose ``__module__`` is a ``str`` subclass (plum's, compiled by mypyc)
    would have pickle write an instance of it where STACK_GLOBAL needs a str.
    """
    own = getattr(obj, "__module__", None)
    if (
        context.protocol >= 4
        and all(type(step) is str for step in path)
        and type(own) is str
        and own == module
    ):
        return ".".join(path)
    exact = tuple(str.__str__(step) if isinstance(step, str) else step for step in path)
    return (_reconstruct._resolve, (str.__str__(module), exact))


def locate_anywhere(context: DumpContext, obj: Any) -> tuple[str, str, Path] | None:
    """Where the receiver finds ``obj`` itself: ``("name", module, path)`` (its
    own name), ``("located", module, path)`` (a path the locator found) or
    ``("script", module, path)`` (in the sender's script; see
    :mod:`.scripts`), or None; None too where looking it up raises (a
    ``__getattr__`` that raises something else than ``AttributeError`` for
    every name it lacks): then it ships as pickle ships it."""
    try:
        return _locate_anywhere(context, obj)
    except Exception:
        return None


def _locate_anywhere(context: DumpContext, obj: Any) -> tuple[str, str, Path] | None:
    try:
        module = obj.__module__
    except Exception:
        module = None
    if module in MAIN_MODULES:
        if context.scripts != "copy":
            found = script_location(obj, module)
            if found is not None:
                return ("script", *found)
        return None
    if registered_by_value(module) is not None:
        return None  # the receiver lacks the module: whatever it defines is copied
    if importable_by_own_name(obj):
        return ("name", module, tuple(obj.__qualname__.split(".")))
    located = locate(obj)
    if located is None or registered_by_value(located[0]) is not None:
        return None
    return ("located", *located)


def located_reference(context: DumpContext, obj: Any, *, carry_state: bool = True) -> Any:
    """A by-reference reduction of ``obj`` if it is importable anywhere, else None.

    A wrapper found this way (a decorator product, a proxy, a cache wrapper)
    carries the state the sender set on it (:func:`with_carried_state`). An
    object of the sender's script is None here (it is copied, with its origin:
    see :mod:`.scripts`) unless only a reference can travel.
    """
    where = locate_anywhere(context, obj)
    if where is None:
        return None
    how, module, path = where
    if how == "script":
        # A reference alone (the receivers run this script, or it cannot be
        # copied), else None: the caller copies it, with its origin.
        alone = script_reference(context, obj, module, path)
        if alone is None or not carry_state or alone[0] is not _reconstruct._main_object:
            return alone  # none, or its own reduction (nothing to carry)
        return with_carried_state(context, obj, module, alone)
    if _through_carried(context, module, path) or (
        how == "located" and _in_state(obj, module, path)
    ):
        return None
    reduction = obj.__qualname__ if how == "name" else reference(context, obj, module, path)
    return with_carried_state(context, obj, module, reduction) if carry_state else reduction


def _in_state(obj: Any, module: str, path: Path) -> bool:
    """Whether ``obj``, an instance (not a function, class or module), was found
    as an attribute of another instance's state (``captured.run``: a finished
    sacred Run that a run set on each captured function). What a program sets
    on an object at run time is not where an import puts it: the receiver's
    object holds its own value there (or none), so this is no reference to
    ``obj``; it ships as any instance does (or is refused, with the reason)."""
    if isinstance(obj, (types.FunctionType, type, types.ModuleType)) or len(path) < 2:
        return False
    last = path[-1]
    if type(last) is not str:
        return False
    try:
        parent = walk(sys.modules[module], path[:-1])
    except Exception:
        return False
    if isinstance(parent, (type, types.ModuleType)):
        return False
    try:
        return candidate_state(parent).get(last, _NOT_THERE) is obj
    except Exception:
        return False


_NOT_THERE: Any = object()


def _through_carried(context: DumpContext, module: str, path: Path) -> bool:
    """Whether ``path`` (inside ``module``) passes through an object whose state
    this payload carries (in the arguments of the call that finds it, or being
    tried): the receiver may load a copy of that object, and a reference walked
    from its module would reach the receiver's original's attribute instead of
    the copy's. Then the object at the end is no located reference: it goes
    with the state that holds it (a copy, like the rest of that state)."""
    payload = context.payload
    carrying = payload.carrying if payload is not None else ()
    trying = context.trying
    if (not carrying and not trying) or len(path) < 2:
        return False
    current: Any = sys.modules.get(module)
    if current is None:
        return False
    for step in path[:-1]:
        try:
            current = walk(current, (step,))
        except Exception:
            return False
        if id(current) in carrying or id(current) in trying:
            return True
    return False


_PLAIN = frozenset({int, float, complex, str, bytes, bool, type(None)})


def split_state(context: DumpContext, obj: Any) -> tuple[dict[str, Any], list[str]]:
    """``(the state that travels with a reference to obj, the names left behind)``.

    What the sender set on a wrapper found by reference travels, so the
    receiver's object has it too; what cannot travel (a lock, a thread, a
    connection: process-local by nature; or a value whose class cannot rebuild
    it from its own pickle) stays behind, and the receiver's own value is used.
    Each value other than plain data is tried once (dumped and loaded here;
    the answer is kept for that very value). Inside a trial, nothing is tried
    again: a trial's cost is one dump and one load. See ``docs/state-policy.md``.
    """
    carried: dict[str, Any] = {}
    behind: list[str] = []
    active = context.trying
    active.add(id(obj))
    try:
        for key, value in candidate_state(obj).items():
            if context.trial or type(value) in _PLAIN or _travels(context, obj, key, value):
                carried[key] = value
            else:
                behind.append(key)
    finally:
        active.discard(id(obj))
    return carried, behind


# A process-wide cache, not per-dump state: (id(owner), attribute) -> (the
# value tried, whether it round-trips). A value is tried once, not at every
# dumps that carries it (the value is held, and must be the very one again);
# bounded, and cleared with the other caches (picklable.clear_caches).
_tried_cache: dict[tuple[int, str], tuple[Any, bool]] = {}
_TRIED_LIMIT = 4096
_caches.register("reference.tried_state", _tried_cache.clear)


def _travels(context: DumpContext, owner: Any, key: str, value: Any) -> bool:
    tried = _tried_cache.get((id(owner), key))
    if tried is not None and tried[0] is value:
        return bool(tried[1])
    ok = context.round_trips(value)
    if len(_tried_cache) >= _TRIED_LIMIT:
        _tried_cache.clear()
    _tried_cache[(id(owner), key)] = (value, ok)
    return ok


class Reference:
    """An object by reference alone, inside a reduction that carries its state
    (its reduction is the reference: the receiver's own object)."""

    __slots__ = ("obj", "reduction")

    def __init__(self, obj: Any, reduction: Any) -> None:
        self.obj = obj
        self.reduction = reduction


def reduce_reference(context: DumpContext, marker: Reference) -> Any:
    return marker.reduction


def reference_pieces(marker: Reference, reduction: Any = None) -> Any:
    return iter(())


def own_or_copy(context: DumpContext, obj: Any, reduction: Any, state: dict[str, Any]) -> Any:
    """``obj`` by ``reduction`` (a reference) with ``state``, what the sender set
    on it: the receiver's own object where it has that state already, else a
    copy of it carrying that state (:func:`picklable._reconstruct._own_or_copy`);
    loading never writes it onto the receiver's object.

    The state rides in the arguments, so that the receiver compares before it
    chooses; a state that leads back to ``obj`` cannot (the call would need its
    own result), so it is set on a copy afterwards, and the receiver always
    gets a copy then. Met again inside the state it carries (a path the walk
    missed), ``obj`` is that copy (pickle then uses it for the outer call too).
    """
    payload = context.state()
    again = id(obj) in payload.carrying
    payload.carry(id(obj))
    own = Reference(obj, reduction)
    if again or leads_back(obj, state):
        return (
            _reconstruct._own_or_copy,
            (own, None, True),
            _as_instance_state(obj, state),
            None,
            None,
            _reconstruct._set_instance_state,
        )
    links = copy_links(context, obj)
    if links:
        return (_reconstruct._own_or_copy, (own, state, False, links))
    return (_reconstruct._own_or_copy, (own, state))


def _as_instance_state(obj: Any, state: dict[str, Any]) -> Any:
    """``state`` as ``_set_instance_state`` sets it on a copy of ``obj``: a
    ``__dict__``, or ``(__dict__ or None, slots)`` where some of it is slots
    or a list's or dict's items."""
    cls = type(obj)
    slots = {k: v for k, v in state.items() if k == ITEMS or is_slot(cls, k)}
    if not slots:
        return state
    rest = {k: v for k, v in state.items() if k not in slots}
    return (rest or None, slots)


_LINKS_LIMIT = 64


def copy_links(context: DumpContext, obj: Any) -> dict[str, Any] | None:
    """The globals that a copy of ``obj`` made by the receiver would run with,
    whose objects this payload sends with their state: ``{name: object}``.

    The receiver copies its own ``obj`` where the sender's state differs
    (:func:`picklable._reconstruct._own_or_copy`). That copy's code (its
    function, what a proxy or cache wraps, the functions of the same module
    held in its closure or as ``__wrapped__``) reads its module's globals; where
    one of them is an object found by reference with state the sender set (a
    sacred captured function that ``main`` calls), the receiver may get a copy
    of it elsewhere in the payload, and the copies must call each other, not
    the originals they stand for. The objects travel with ``obj`` (by
    reference, with their state: one graph, whichever way each loads).
    """
    func = _reconstruct.home_function(obj)
    if func is None:
        return None
    home = func.__globals__
    names: set[str] = set()
    seen: set[int] = set()
    todo = [func]
    while todo and len(seen) < _LINKS_LIMIT:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        names.update(global_reads(current.__code__))
        held = []
        for cell in current.__closure__ or ():
            try:
                held.append(cell.cell_contents)
            except ValueError:  # an empty cell
                continue
        held.append(current.__dict__.get("__wrapped__"))
        todo.extend(f for f in held if type(f) is types.FunctionType and f.__globals__ is home)
    trying = context.trying
    links = {}
    for name in sorted(names):
        value = home.get(name)
        if value is None or value is obj or id(value) in trying:
            continue
        if _carries_state(context, value):
            links[name] = value
    return links or None


def _carries_state(context: DumpContext, value: Any) -> bool:
    """Whether ``value`` would be found by reference with state the sender set
    on it: a wrapper (a decorator product, a proxy), or an object this payload
    carries so already."""
    if type(value) in _PLAIN or isinstance(value, (type, types.ModuleType)):
        return False
    if id(value) not in context.state().carrying:
        try:
            wrapper = _reconstruct.is_wrapt_proxy(value) or took_a_name(value)
        except Exception:
            return False
        if not wrapper:
            return False
    try:
        if not candidate_state(value):
            return False
        where = locate_anywhere(context, value)
    except Exception:
        return False
    return where is not None and where[0] != "script"


def with_carried_state(context: DumpContext, obj: Any, module: str, reduction: Any) -> Any:
    """``reduction`` (a reference to ``obj``), plus the state that travels with it.

    The receiver keeps its own object where it has that state already (the
    same values, or equal ones), and gets a copy carrying the sender's state
    otherwise (:func:`own_or_copy`): two payloads with different states are two
    objects there, and the receiver's own is never modified.
    """
    if not candidate_state(obj) or id(obj) in context.trying:
        return reduction
    carried = split_state(context, obj)[0]
    if not carried:
        return reduction
    if isinstance(reduction, str):
        reduction = (_reconstruct._resolve, (module, tuple(reduction.split("."))))
    return own_or_copy(context, obj, reduction, carried)


def took_a_name(obj: Any) -> bool:
    """Whether ``obj`` is a decorator product: a function it wraps or holds has
    a name that now leads to ``obj`` (so pickle cannot ship that function, nor
    ``obj`` by value). Only these callable objects go by reference; any other
    instance keeps pickle's semantics (class by reference, state by value)."""
    try:
        wrapped = obj.__wrapped__
    except Exception:
        wrapped = None
    candidates = [wrapped] if wrapped is not None else []
    candidates.extend(held_functions(obj))
    for func in candidates:
        try:
            module, qualname = func.__module__, func.__qualname__
        except Exception:
            continue
        if type(module) is not str or type(qualname) is not str or "<" in qualname:
            continue
        home = sys.modules.get(module)
        if home is None:
            continue
        *parents, last = qualname.split(".")
        try:
            parent = walk(home, tuple(parents))
            found = vars(parent).get(last) if isinstance(parent, type) else getattr(parent, last)
        except Exception:
            continue
        if _in_decorator_stack(found, obj):
            return True
    return False


def _in_decorator_stack(found: Any, obj: Any) -> bool:
    """Whether ``obj`` is ``found`` or one of the layers a stack of decorators put
    there (``__func__`` of a classmethod, ``__wrapped__`` of a wrapper...)."""
    for _ in range(16):
        if found is obj:
            return True
        if isinstance(found, (classmethod, staticmethod)):
            found = found.__func__
            continue
        try:
            found = found.__wrapped__
        except Exception:
            return False
        if found is None:
            return False
    return False


def why_not_importable(obj: Any) -> str:
    """Why ``obj`` cannot be found by name in another process (what explain says)."""
    if isinstance(obj, types.ModuleType):
        registered = registered_by_value(obj.__name__)
        if registered is not None:
            return f"module {registered!r} is registered with picklable.register_by_value()"
        return "a module built in memory, not importable: its namespace is copied"
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if module in MAIN_MODULES:
        return f"defined in {module}, and the receiving process has its own {module}"
    if isinstance(module, str):
        registered = registered_by_value(module)
        if registered is not None:
            return f"module {registered!r} is registered with picklable.register_by_value()"
    if not isinstance(module, str) or not isinstance(qualname, str):
        return "it has no __module__ and __qualname__ to import it by"
    if "<lambda>" in qualname:
        return "a lambda has no importable name, and no importable path leads to it"
    if "<locals>" in qualname:
        outer = qualname.split(".<locals>")[0]
        return (
            f"defined inside {outer}() (<locals> in its qualname), "
            "and no importable path leads to it"
        )
    home = sys.modules.get(module)
    if home is None:
        return f"its module {module!r} is not imported here"
    try:
        found = walk(home, tuple(qualname.split(".")))
    except Exception:
        return f"{module}.{qualname} does not exist (renamed or deleted after it was made?)"
    if found is not obj:
        return (
            f"{module}.{qualname} is another object (a wrapper that took its name?), "
            "and no importable path leads to this one"
        )
    return "the locator found no importable path to it"


def class_attribute_reference(context: DumpContext, obj: Any) -> Any:
    """A by-reference reduction of a descriptor the locator finds on a class, or None."""
    try:
        located = locate(obj)
    except Exception:  # a descriptor with a hostile __getattr__
        return None
    return None if located is None else reference(context, obj, *located)
