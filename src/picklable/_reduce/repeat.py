"""The payload of a script's function or class dumped again, unchanged (issue 29).

A pool pickles its task function once per ``submit``; a program ships the same
function of its script a thousand times. When nothing the payload was made of
has changed, the payload is the same bytes: this module keeps them, with the
*facts* they were made of, and gives them back when every fact still holds.

The facts of a function are everything its reduction reads (see
``functions.function_by_value``): its code, globals dict, name, qualified name,
module, docstring, defaults, keyword defaults, closure cells and their
contents, annotations, attributes, the value of each global name its code may
read (or that there is none), where the script keeps it (``scripts.known_origin``,
which notices a changed script file, a main guard that rebinds a name, a
rebound name) -- and, through them, the facts of each value they hold. Those
of a class (``classes.class_by_value``) are its namespace, bases, names, id
and origin (``classes.script_origin``). They are
compared by identity, element by element, with the facts kept beside the
bytes. No object compared can be a new one at a reused address: functions,
classes, modules and code objects are kept by weak reference (one that died
compares unequal to anything), plain data (strings, numbers) and built-in
functions by strong reference. A container (a tuple, list or dict, a
descriptor) is not kept at all: its contents are facts, and where the walk met
it before (pickle's memo writes it once), since what it holds may hold the
very function or class (``A.kinds = (A,)``, ``A.method.owner = A``, a
method's ``__class__`` cell). So a kept payload keeps nothing alive (issue 27:
a class the script drops is freed), and it is forgotten when its function or
class is.

A payload is kept only where every value it reaches is one whose facts are
known:

* plain data (``int``, ``float``, ``str``, ``bytes``, ``bool``, ``None``),
  tuples of it and of the kinds below, lists of up to 64 items of plain data
  (``__slots__ = ["x"]``, a list of weights), and dicts of up to 64 items whose
  keys are plain data and values any of these kinds (a configuration dict);
* a function of the script (``__main__``) whose travel was decided at an
  earlier dump (``known_origin``), a lambda or closure that no name of the
  script's index leads to, or a function of a script without a file (a
  notebook's kernel): those two are plain copies; by value with the facts above;
* a class of the script made by a class statement (of ``type`` itself);
* a function or class that the pickler's hook ships by reference (the
  ``by_name`` cache that the hook reads, as it reads it), still found at its
  module and qualified name -- pickle's own check when it writes the reference;
* a module imported by its name (not one built in memory nor registered with
  ``register_by_value``), and the submodules a function reaches through it
  (``functions.submodules_used``);
* a built-in function of a module (``from math import sqrt``), which pickle
  writes as a reference, still found at its module and name;
* in a class: the descriptors of its ``__slots__`` (left out of the copy), and
  a ``property``, ``staticmethod`` or ``classmethod`` that the locator finds in
  no module (``wrappers.reduce_property``, ``reduce_classmethod``): its
  functions and its ``__dict__``.

Anything else (an instance, a long list or dict, a dataclass, a class with a
metaclass or an annotation scope, a function with type parameters) makes the
payload one that is made every time, as before. A payload is kept only when
the facts read before its dump equal those read after (the dump decided
nothing new), at most :data:`_MAX_BYTES` long.
"""

from __future__ import annotations

import copyreg
import operator
import sys
import types
import weakref
from collections.abc import Callable
from typing import Any

from .. import _caches, _locator, _tracker
from .._compat import CLASSDICT_CELL, LAZY_ANNOTATIONS, MAIN_MODULES, TYPE_PARAMS
from . import classes, functions, objects, wrappers
from .registry import ships_by_value
from .scripts import (
    UNKNOWN,
    known_origin,
    same_values,
    script_index_table,
    without_file,
)
from .table import CLASS, FUNCTION, handler_for
from .type_cache import HANDLERS, LASTING

__all__ = ["ASK_AGAIN", "GIVE_UP", "facts_of", "keep_payload", "kept_or_facts", "skipped", "tries"]

_MISSING: Any = object()
_NO_FILE: Any = object()
_UNNAMED: Any = object()
_LEAVES = frozenset({int, float, str, bytes, bool, type(None)})
_MAX_BYTES = 1 << 15
_LIMIT = 128

_FUNCTION_REDUCE = FUNCTION.reduce
_CLASS_REDUCE = CLASS.reduce
_CELL_REDUCE = functions.reduce_cell
_MODULE_REDUCE = objects.reduce_module
_WRAPPER_REDUCE = wrappers.reduce_classmethod  # staticmethod's too
_PROPERTY_REDUCE = wrappers.reduce_property
_INSTANCE_SLOTS = frozenset({"__dict__", "__weakref__"})
_GETSET = types.GetSetDescriptorType
_MEMBER = types.MemberDescriptorType
_BUILTIN = types.BuiltinFunctionType
_ITEMS = 64

# The facts of one payload: (the strong ones, the weakly held ones). Each held
# one leaves _HELD in the strong list where the walk met it, so the two lists
# line up: a function met under one name, not under another, is another fact.
Facts = tuple[list[Any], list[Any]]
# id -> (where the walk met it, the object: alive until the walk ends)
Seen = dict[int, tuple[int, Any]]
_HELD: Any = object()
_BY_NAME: Any = object()
_AGAIN: Any = object()  # a container met before in the walk, then where (see _met)


class _Kept:
    """A payload and what it was made of (see the module doc)."""

    __slots__ = ("ref", "facts", "held", "data")

    def __init__(
        self, ref: weakref.ref[Any], facts: list[Any], held: list[weakref.ref[Any]], data: bytes
    ) -> None:
        self.ref = ref
        self.facts = facts
        self.held = held
        self.data = data


# id(function or class) -> its payload and the facts it was made of
_kept: dict[int, _Kept] = {}
_caches.register("repeat.kept_payloads", _kept.clear)

_intern = sys.intern
_deref: Callable[[weakref.ref[Any]], Any] = weakref.ref.__call__


# id -> how many of the object's dumps read its facts and found them unknown (0:
# dumped once, not read: a payload is kept from an object's second dump on).
# At GIVE_UP, dumps stops asking (a function that reads a dict: a miss costs a
# walk) and counts the dumps it did not ask at instead (see skipped); at
# ASK_AGAIN it asks once more, so that an object whose facts were unknown
# for a while (a class whose methods another library replaced, then put
# back) is kept again. Only the cost depends on it: an id reused by another
# object makes a read sooner or later, never a wrong payload.
tries: dict[int, int] = {}
GIVE_UP = 3
ASK_AGAIN = GIVE_UP + 64
_TRIES_LIMIT = 4096
_caches.register("repeat.tries", tries.clear)


def skipped(key: int, failed: int) -> None:
    """A dump of the object ``key`` that did not ask (``failed`` >= GIVE_UP):
    counted, and at ASK_AGAIN the next dump asks once more (one more miss
    and it is left alone for as long again)."""
    tries[key] = failed + 1 if failed < ASK_AGAIN else GIVE_UP - 1


def kept_or_facts(obj: types.FunctionType | type) -> bytes | Facts | None:
    """The payload kept for ``obj`` if every fact it was made of still holds;
    else the facts to keep the payload about to be made by (see
    :func:`keep_payload`), or None when this dump keeps nothing."""
    key = id(obj)
    kept = _kept.get(key)
    if kept is not None and kept.ref() is obj:
        found = facts_of(obj)
        if found is not None and _holds(found, kept):
            return kept.data
        if found is None:  # no longer known: asked again, as any other
            del _kept[key]
            tries[key] = 1
        return found  # changed: kept again after this dump, if it can be
    failed = tries.get(key)
    if failed is None:
        if len(tries) >= _TRIES_LIMIT:
            tries.clear()
        tries[key] = 0  # a first dump
        return None
    found = facts_of(obj)
    if found is None:
        tries[key] = failed + 1
    return found


def _holds(found: Facts, kept: _Kept) -> bool:
    facts, held = found
    return (
        same_values(facts, kept.facts)
        and len(held) == len(kept.held)
        and all(map(operator.is_, held, map(_deref, kept.held)))
    )


def keep_payload(obj: types.FunctionType | type, before: Facts | None, data: bytes) -> None:
    """Keep ``data``, the payload of ``obj`` just made, if the facts read
    ``before`` the dump still hold after it."""
    if before is None:
        return
    if len(data) > _MAX_BYTES:
        tries[id(obj)] = GIVE_UP  # kept by no later dump either: no more reads
        return
    after = facts_of(obj)
    if after is None or not (same_values(before[0], after[0]) and same_values(before[1], after[1])):
        return
    if len(_kept) >= _LIMIT:
        _kept.clear()
    key = id(obj)
    ref = weakref.ref(obj, _forgetter(key))
    _kept[key] = _Kept(ref, after[0], [weakref.ref(held) for held in after[1]], data)
    tries.pop(key, None)


def _forgetter(key: int) -> Callable[[weakref.ref[Any]], None]:
    def forget(ref: weakref.ref[Any]) -> None:
        kept = _kept.get(key)
        if kept is not None and kept.ref is ref:
            del _kept[key]

    return forget


def facts_of(obj: types.FunctionType | type) -> Facts | None:
    """What the payload of ``obj``, a function or a class, is made of (see the
    module doc); None when it reaches a value whose facts are not known."""
    facts: list[Any] = []
    held: list[Any] = []
    try:
        if _value(obj, facts, held, {}):
            return facts, held
    except Exception:
        pass  # an attribute that raises: decided by the dump, every time
    return None


def _function(func: types.FunctionType, facts: list[Any], held: list[Any], seen: Seen) -> bool:
    facts.append(_HELD)
    held.append(func)
    if id(func) in seen:
        return True  # met before: pickle's memo
    seen[id(func)] = (len(seen), func)
    if LASTING.get(types.FunctionType) is not _FUNCTION_REDUCE:
        return False  # the hook's table not (yet) what these facts assume
    if _locator.by_name.get(func) is func:
        return _by_reference(func, facts)
    module = func.__module__
    if module not in MAIN_MODULES:
        return False
    origin = known_origin(func, module)
    if origin is UNKNOWN:
        # Decided as functions.reduce_function decides without a kept answer.
        if "<" in func.__qualname__:
            # A lambda or closure that no name of the script's index leads to
            # (the table's identity is a fact: a rebuilt index has a new one).
            table = script_index_table(module)
            if table is not None and id(func) in table:
                return False
            facts.append(table)
            origin = _UNNAMED
        elif without_file(module):
            origin = _NO_FILE  # a script no receiver imports: plain copies
        else:
            return False
    code = func.__code__
    if functions.rebuilt_by_receiver(code):
        return False
    annotate = func.__annotate__ if LAZY_ANNOTATIONS else None  # type: ignore[attr-defined]
    if TYPE_PARAMS and func.__type_params__:  # type: ignore[attr-defined]
        return False
    facts.append(_HELD)
    held.append(code)
    # Its globals dict is the function's for life (and the function is held):
    # what the payload reads of it is below.
    home = func.__globals__
    home_name = home.get("__name__")
    package = home.get("__package__")
    doc = func.__doc__
    if type(home_name) not in _LEAVES or type(package) not in _LEAVES or type(doc) not in _LEAVES:
        return False
    facts += (origin, home_name, package, func.__name__, func.__qualname__, module, doc)
    modules = None  # what function_by_value looks for submodules in
    for name in functions.code_info(code)[2]:
        value = home.get(name, _MISSING)
        if value is _MISSING:
            facts.append(value)
        elif not _value(value, facts, held, seen):
            return False
        elif type(value) is types.ModuleType:
            modules = [value] if modules is None else [*modules, value]
    # The closure itself is the function's for life (read-only, its cells
    # too): their contents are the facts.
    closure = func.__closure__
    if closure is not None:
        # Asked of the table where the hook has met no cell yet: a closure's
        # cells of plain data travel as their contents (functions._closure_refs).
        handler = LASTING.get(types.CellType, _MISSING)
        if handler is _MISSING:
            handler = handler_for(types.CellType)
        if handler is not _CELL_REDUCE:
            return False
        for cell in closure:
            try:
                content = cell.cell_contents
            except ValueError:
                facts.append(_MISSING)
                continue
            if not _value(content, facts, held, seen):
                return False
            if type(content) is types.ModuleType:
                modules = [content] if modules is None else [*modules, content]
    if modules is not None:
        for submodule in functions.submodules_used(code, modules):
            if not _module(submodule, facts, held):
                return False
    return (
        _value(func.__defaults__, facts, held, seen)
        and _mapping(func.__kwdefaults__, facts, held, seen)
        and _annotations(func, annotate, facts, held, seen)
        and _mapping(func.__dict__, facts, held, seen)
    )


def _annotations(
    func: types.FunctionType, annotate: Any, facts: list[Any], held: list[Any], seen: Seen
) -> bool:
    """What a copy carries of the annotations (functions._annotations_instead,
    Python 3.14+: computed once, then kept on ``func``): the dict, or else its
    ``__annotate__`` by value, unless the dict is no longer what it gives."""
    annotations = func.__annotations__
    if annotate is None or functions.same_in_every_format(annotations):
        if annotate is None:
            facts.append(None)
        elif type(annotate) is types.FunctionType:
            # Which one, held weakly: its __classdict__ cell leads to the class
            # namespace, and through a method's __class__ cell to the class.
            facts.append(_HELD)
            held.append(annotate)
        else:
            return False
        return _mapping(annotations, facts, held, seen)
    if type(annotate) is not types.FunctionType or CLASSDICT_CELL in annotate.__code__.co_freevars:
        return False  # a class's namespace, whether the payload brings it: the dump decides
    # The dump compares the dict with what annotate gives now: asked again here
    # (what annotate reads may have changed where no fact shows it, a module's
    # attribute), and the dict's values are facts when they travel instead.
    if functions.kept_apart(annotations, annotate):
        facts.append(_HELD)
        held.append(annotate)
        return _mapping(annotations, facts, held, seen)
    facts.append(None)
    return _value(annotate, facts, held, seen)


def _mapping(mapping: dict[Any, Any] | None, facts: list[Any], held: list[Any], seen: Seen) -> bool:
    """A dict (a function's ``__dict__``, keyword defaults or annotations, a
    descriptor's ``__dict__``, a dict a function reads): its keys, plain data,
    and their values, in order, as they are now."""
    if mapping is None or (not mapping and type(mapping) is dict):
        facts.append(mapping)  # it holds nothing: held as it is, compared by identity
        return True
    if type(mapping) is not dict or len(mapping) > _ITEMS:
        return False
    if _met(mapping, facts, seen):
        return True
    facts.append(len(mapping))
    for key, value in mapping.items():
        facts.append(key)
        if type(key) not in _LEAVES or not _value(value, facts, held, seen):
            return False
    return True


def _value(value: Any, facts: list[Any], held: list[Any], seen: Seen) -> bool:
    """Note ``value`` (in ``facts`` or ``held``) and what it is made of; False
    if its facts are not known."""
    kind = type(value)
    if kind in _LEAVES:
        facts.append(value)
        return True
    if kind is tuple:
        for item in value:
            if type(item) not in _LEAVES:
                break
        else:  # plain data alone: it holds nothing else, held as it is
            facts.append(value)
            return True
        if _met(value, facts, seen):
            return True
        facts.append(len(value))
        for item in value:
            if type(item) in _LEAVES:
                facts.append(item)
            elif not _value(item, facts, held, seen):
                return False
        return True
    if kind is types.FunctionType:
        return _function(value, facts, held, seen)
    if kind is types.ModuleType:
        return _module(value, facts, held)
    if isinstance(value, type):
        return _class(value, facts, held, seen)
    if kind is list:
        return _leaf_list(value, facts, seen)
    if kind is dict:
        return _mapping(value, facts, held, seen)
    if kind is _BUILTIN:
        return _builtin(value, facts)
    if kind is staticmethod or kind is classmethod:
        return _method_wrapper(value, facts, held, seen)
    if kind is property:
        return _property(value, facts, held, seen)
    return False


def _leaf_list(items: list[Any], facts: list[Any], seen: Seen) -> bool:
    """A short list of plain data (``__slots__ = ["x", "y"]``, a list of
    numbers a function reads): its items as they are now."""
    if len(items) > _ITEMS:
        return False  # a table: read at every dump, for a payload too long to keep
    if _met(items, facts, seen):
        return True
    facts.append(len(items))
    for item in items:
        if type(item) not in _LEAVES:
            return False
        facts.append(item)
    return True


def _builtin(func: types.BuiltinFunctionType, facts: list[Any]) -> bool:
    """A built-in function of a module (``from math import sqrt``, ``len``):
    the hook leaves it to pickle, whose ``__reduce__`` names it and whose
    ``save_global`` writes a reference to it."""
    owner = func.__self__
    if owner is not None and type(owner) is not types.ModuleType:
        return False  # a method of an object (random.random): pickle ships the object
    if LASTING.get(_BUILTIN, _MISSING) is not None or _BUILTIN in copyreg.dispatch_table:
        return False  # the hook's table not (yet) what this assumes, or a reducer of the user's
    facts.append(func)  # held: it lives as long as its module does
    return func.__name__ == func.__qualname__ and _by_reference(func, facts)


def _met(container: Any, facts: list[Any], seen: Seen) -> bool:
    """Whether this walk met ``container`` (a tuple, list, dict or descriptor)
    before: pickle's memo writes it once. Noted by where in the walk, not held:
    what it holds may hold the object the payload is kept for (a tuple or a
    method's ``__dict__`` naming its class, a method's ``__class__`` cell), and
    a new one with the same contents makes the same payload. ``seen`` keeps it
    alive until the walk ends, so its id is its own until then."""
    key = id(container)
    at = seen.get(key)
    if at is not None:
        facts.append(_AGAIN)
        facts.append(at[0])
        return True
    seen[key] = (len(seen), container)
    facts.append(type(container))
    return False


def _method_wrapper(
    wrapper: staticmethod[Any, Any] | classmethod[Any, Any, Any],
    facts: list[Any],
    held: list[Any],
    seen: Seen,
) -> bool:
    """A staticmethod or classmethod (wrappers.reduce_classmethod): by
    reference where the locator finds it (then decided by the dump), else its
    function and its ``__dict__``."""
    if LASTING.get(type(wrapper)) is not _WRAPPER_REDUCE:
        return False
    if _met(wrapper, facts, seen):
        return True
    if _locator.locate(wrapper) is not None:
        return False
    # Its __dict__: the name, module, doc (and before 3.14 the annotations dict)
    # of its function, copied there.
    state = getattr(wrapper, "__dict__", None) or None  # the reducer's state
    return _value(wrapper.__func__, facts, held, seen) and _mapping(state, facts, held, seen)


def _property(prop: property, facts: list[Any], held: list[Any], seen: Seen) -> bool:
    """A property (wrappers.reduce_property): by reference where the locator
    finds it (then decided by the dump), else its accessors and doc."""
    if LASTING.get(property) is not _PROPERTY_REDUCE:
        return False
    if _met(prop, facts, seen):
        return True
    if _locator.locate(prop) is not None or getattr(prop, "__dict__", None):
        return False
    return (
        _value(prop.fget, facts, held, seen)
        and _value(prop.fset, facts, held, seen)
        and _value(prop.fdel, facts, held, seen)
        and _value(prop.__doc__, facts, held, seen)
    )


def _class(cls: type, facts: list[Any], held: list[Any], seen: Seen) -> bool:
    facts.append(_HELD)
    held.append(cls)
    if id(cls) in seen:
        return True  # met before: pickle's memo
    seen[id(cls)] = (len(seen), cls)
    # The hook's own test (Pickler.reducer_override): a class of a metaclass
    # that another reducer takes is decided by the dump.
    kind = type(cls)
    handler = LASTING.get(kind)
    if handler is None:
        handler = HANDLERS.get(id(kind))
    if handler is not _CLASS_REDUCE:
        return False
    key = cls if kind in _locator.identity_hashed else id(cls)
    if _locator.by_name.get(key) is cls:
        return _by_reference(cls, facts)
    # A copy (classes.reduce_class, class_by_value): a class of the script made
    # by a class statement, of type itself (no enum, no ABC registry).
    namespace = cls.__dict__
    module = namespace.get("__module__")
    if kind is not type or type in copyreg.dispatch_table or module not in MAIN_MODULES:
        return False
    origin = classes.script_origin(cls)
    facts += (module, cls.__qualname__, cls.__name__, _tracker.id_of(cls), origin is None)
    if origin is not None:
        facts += origin
    # copyreg's cache, left out of the copy (see classes.copyreg_cache)
    cache_left_out = "__slotnames__" in namespace and classes.copyreg_cache(cls)
    facts.append(cache_left_out)
    if not _value(cls.__bases__, facts, held, seen):
        return False
    slots = classes.slot_names(cls) if "__slots__" in namespace else ()
    facts.append(len(namespace))
    for name, value in namespace.items():
        facts.append(name)
        if name in _INSTANCE_SLOTS and type(value) is _GETSET:
            continue  # type's own descriptors, left out of the copy
        if name in slots and type(value) is _MEMBER:
            continue  # the slots' descriptors: __slots__ makes them again
        if cache_left_out and name == "__slotnames__":
            continue
        if not _value(value, facts, held, seen):
            return False
    return True


def _module(module: types.ModuleType, facts: list[Any], held: list[Any]) -> bool:
    """A module that the payload imports by name (objects.reduce_module)."""
    facts.append(_HELD)
    held.append(module)
    if LASTING.get(types.ModuleType) is not _MODULE_REDUCE:
        return False
    name = module.__name__
    if type(name) is not str or name in MAIN_MODULES or ships_by_value(name):
        return False
    facts.append(_intern(name))
    return sys.modules.get(name) is module


def _by_reference(obj: Any, facts: list[Any]) -> bool:
    """A function or class that pickle writes as a reference: what it writes,
    and pickle's own check that the reference still finds it."""
    facts.append(_BY_NAME)  # not to be read as the start of a copy's facts
    module = obj.__module__
    qualname = obj.__qualname__
    if type(module) is not str or type(qualname) is not str:
        return False
    # Interned: a static type makes its __qualname__ anew at each read.
    facts.append(_intern(module))
    facts.append(_intern(qualname))
    return _locator.importable_by_own_name(obj)
