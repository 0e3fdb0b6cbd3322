"""Find an importable path that yields this very object.

stdlib pickle only tries ``obj.__module__`` + ``obj.__qualname__``. Real code breaks
that in three ways: a decorator puts a wrapper under the function's name, a
decorator returns an object that keeps the function in an attribute, and a
factory makes a function (``<locals>`` in its qualname) that is then set on a
class. The locator indexes modules (their globals, the attributes of the classes
they define, wrapper objects, ``__wrapped__`` chains and closures) by object id
and answers "where does this object live?".

Rules:

* Every answer is checked by identity when it is given: a stale index or a
  reassigned name can never yield a reference to another object.
* Indexes are cached per module and rebuilt when the module (or one of the
  classes it defines) gained or lost attributes. A miss on a stale index only
  means "ship by value": correct, if not identical.
"""

from __future__ import annotations

import functools
import importlib
import sys
import threading
import types
import weakref
from typing import Any

from . import _caches
from ._compat import MAIN_MODULES, class_module, is_heap_type
from ._paths import Path, walk

# How deep the index follows wrappers (wrapper -> attribute -> __wrapped__ ...).
_MAX_DEPTH = 4
# Package-wide search for factory-made functions stops after this many modules.
_MAX_PACKAGE_MODULES = 2000

_lock = threading.RLock()

_C_SLOTS = (types.WrapperDescriptorType, types.MethodDescriptorType)


def python_call_type(t: type) -> bool:
    """Instances of ``t`` are wrapper objects: ``__call__`` is written in Python.

    C types (``functools.partial``, ``operator.itemgetter`` -- a heap type since
    3.11) implement ``__call__`` as a slot wrapper and are left to pickle.
    """
    if not is_heap_type(t):
        return False  # a static C type: no Python-written attribute at all
    for klass in t.__mro__[:-1]:
        raw = vars(klass).get("__call__")
        if raw is not None:
            return not isinstance(raw, _C_SLOTS)
    return False


def _heap_callable(obj: Any) -> bool:
    """A callable instance of a Python-defined class (a wrapper object)."""
    return not isinstance(obj, type) and python_call_type(type(obj))


def _is_descriptor(obj: Any) -> bool:
    t = type(obj)
    return (
        not isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType))
        and hasattr(t, "__get__")
        and t
        not in (
            types.MethodDescriptorType,
            types.WrapperDescriptorType,
            types.ClassMethodDescriptorType,
        )
    )


# Exact types that _worth_indexing answers without a call: the bulk of a module's
# globals (its imports, constants, functions and classes). Static types: their
# instances can be nothing else, so the answer is the one the general test gives.
_INDEXED_KINDS = frozenset({types.FunctionType, type, classmethod, staticmethod, property})
_PLAIN_KINDS = frozenset(
    {
        types.ModuleType,
        types.BuiltinFunctionType,
        int,
        float,
        complex,
        str,
        bytes,
        bool,
        type(None),
        tuple,
        list,
        dict,
        set,
        frozenset,
    }
)


def _worth_indexing(obj: Any, _type: Any = type) -> bool:
    kind = _type(obj)
    if kind in _INDEXED_KINDS:
        return True
    if kind in _PLAIN_KINDS:
        return False
    return isinstance(
        obj,
        (
            types.FunctionType,
            type,
            classmethod,
            staticmethod,
            property,
        ),
    ) or _heap_callable(obj)


class _ModuleIndex:
    """id(object) -> path, for one module."""

    __slots__ = ("module", "paths", "classes", "_class_refs", "by_code", "fingerprint")

    def __init__(self, module: types.ModuleType) -> None:
        self.module = module
        self.paths: dict[int, Path] = {}
        # Weak: a script that deletes a class (or a module that replaces one)
        # frees it; the index is stale then, and built again on its next use.
        self.classes: list[tuple[weakref.ref[type], Path]] = []
        # id(code) -> paths where a function of that code was indexed: where a
        # factory's next product is likely set (checked by identity on use).
        self.by_code: dict[int, list[Path]] = {}
        self._build()
        self._class_refs = [ref for ref, _ in self.classes]
        self.fingerprint = self._fingerprint()

    def _fingerprint(self) -> tuple[int, int]:
        # Checked on every lookup that misses the cache (once per payload of a
        # script's lambda): the weak references alone, no tuple unpacked each.
        try:
            size = len(vars(self.module))
        except TypeError:  # pragma: no cover - modules always have a __dict__
            size = -1
        total = 0
        for ref in self._class_refs:
            cls = ref()
            if cls is None:
                return size, -1  # a class was freed: stale
            total += len(cls.__dict__)  # what vars() reads, without its call
        return size, total

    def stale(self) -> bool:
        return self._fingerprint() != self.fingerprint

    def probe(self, obj: Any) -> Path | None:
        """Look for ``obj`` under its own name in the module and its classes.

        The fingerprint misses a name reassigned to another object of the same
        kind (``Frame.mean = make_stat(...)`` twice); this catches that case,
        also when the new object's ``__name__`` is not the attribute's (a
        factory's product set where an earlier product of the factory was).
        """
        if type(obj) is types.FunctionType:
            for path in self.by_code.get(id(obj.__code__), ()):
                try:
                    if walk(self.module, path) is obj:
                        return path
                except Exception:
                    continue
        name = getattr(obj, "__name__", None)
        if type(name) is not str:
            return None
        if vars(self.module).get(name) is obj:
            return (name,)
        for ref, path in self.classes:
            cls = ref()
            if cls is None:
                continue
            raw = vars(cls).get(name)
            if raw is obj:
                return (*path, name)
            if isinstance(raw, staticmethod) and raw.__func__ is obj:
                return (*path, name)
            if isinstance(raw, classmethod) and raw.__func__ is obj:
                return (*path, name, "__func__")
        return None

    def _build(self) -> None:
        name = self.module.__name__
        try:
            items = list(vars(self.module).items())
        except TypeError:  # pragma: no cover
            return
        paths = self.paths
        by_code = self.by_code
        # Breadth first, so the shortest path to an object wins.
        frontier: list[tuple[Any, Path]] = []
        for key, value in items:
            try:
                if not isinstance(key, str) or not _worth_indexing(value):
                    continue
            except Exception:  # a global that raises when touched (a context-local proxy)
                continue
            if id(value) not in paths:
                paths[id(value)] = (key,)
                frontier.append((value, (key,)))
        seen_classes: set[int] = set()
        for _ in range(_MAX_DEPTH):
            nxt: list[tuple[Any, Path]] = []
            for value, path in frontier:
                try:
                    children = _children(value, path, name, seen_classes, self.classes)
                except Exception:
                    # Touching it raises (werkzeug's LocalProxy outside a request:
                    # "Working outside of application context"): nothing found in it.
                    continue
                for child, child_path in children:
                    if id(child) not in paths:
                        paths[id(child)] = child_path
                        nxt.append((child, child_path))
                        if type(child) is types.FunctionType and "<locals>" in child.__qualname__:
                            by_code.setdefault(id(child.__code__), []).append(child_path)
            if not nxt:
                break
            frontier = nxt


def _children(
    value: Any,
    path: Path,
    module_name: str,
    seen_classes: set[int],
    classes: list[tuple[weakref.ref[type], Path]],
) -> list[tuple[Any, Path]]:
    """Objects reachable from ``value`` by a path that resolves back to them."""
    if type(value) is types.FunctionType:  # most of what a module indexes
        return _function_children(value, path)
    out: list[tuple[Any, Path]] = []
    if isinstance(value, type):
        if class_module(value) != module_name or id(value) in seen_classes:
            return out
        seen_classes.add(id(value))
        classes.append((weakref.ref(value), path))
        try:
            namespace = list(vars(value).items())
        except TypeError:  # pragma: no cover
            return out
        for key, raw in namespace:
            kind = type(raw)
            if kind is types.FunctionType:  # a method: what the general tests below answer
                out.append((raw, (*path, key)))
                continue
            if kind in _PLAIN_KINDS:  # data: nothing below takes it
                continue
            if kind is not getattr(raw, "__class__", None) and hasattr(kind, "__get__"):
                # A proxy (wrapt) claims another class and binds on access:
                # reach the raw object through __dict__.
                out.append((raw, (*path, "__dict__", (key,))))
            elif isinstance(raw, staticmethod):
                out.append((raw.__func__, (*path, key)))
            elif isinstance(raw, classmethod):
                if type(raw.__func__) is types.FunctionType:
                    out.append((raw.__func__, (*path, key, "__func__")))
                else:
                    # A descriptor inside: the classmethod chains to its __get__ (3.9-3.12),
                    # so the bound object has no __func__; go through __dict__.
                    out.append((raw.__func__, (*path, "__dict__", (key,), "__func__")))
            elif isinstance(raw, (types.FunctionType, type, property)):
                out.append((raw, (*path, key)))
            elif _is_descriptor(raw):
                # getset/member descriptors, compiled cached properties. A C
                # descriptor's __get__(None, cls) has no side effects: use the
                # plain name when it returns the descriptor itself. Python
                # descriptors may compute anything: reach them through __dict__.
                if is_heap_type(type(raw)):
                    out.append((raw, (*path, "__dict__", (key,))))
                else:
                    try:
                        same = getattr(value, key) is raw
                    except Exception:
                        same = False
                    out.append((raw, (*path, key) if same else (*path, "__dict__", (key,))))
            elif _heap_callable(raw):
                if hasattr(type(raw), "__get__"):
                    # Binds on attribute access: reach the raw object through __dict__.
                    out.append((raw, (*path, "__dict__", (key,))))
                else:
                    out.append((raw, (*path, key)))
        return out
    if isinstance(value, property):
        for accessor in ("fget", "fset", "fdel"):
            fn = getattr(value, accessor)
            if fn is not None:
                out.append((fn, (*path, accessor)))
        return out
    if isinstance(value, (classmethod, staticmethod)):
        out.append((value.__func__, (*path, "__func__")))
        return out
    # Wrapper objects: what they wrap.
    try:
        wrapped = value.__wrapped__
    except Exception:
        wrapped = None
    if wrapped is not None and _worth_indexing(wrapped):
        out.append((wrapped, (*path, "__wrapped__")))
    if _heap_callable(value):
        try:
            attributes = list(vars(value).items())
        except Exception:  # no __dict__, or one that raises when touched
            attributes = []
        for key, attr in attributes:
            if key != "__wrapped__" and isinstance(key, str) and _worth_indexing(attr):
                out.append((attr, (*path, key)))
    return out


def _function_children(func: types.FunctionType, path: Path) -> list[tuple[Any, Path]]:
    """What a function (its type exactly: a proxy claims the class) leads to: its
    ``__wrapped__`` and the functions and wrapper objects its cells hold."""
    out: list[tuple[Any, Path]] = []
    # Where a function's __wrapped__ can only be (FunctionType defines none): no
    # AttributeError made and caught for each of a module's functions.
    wrapped = dict.get(func.__dict__, "__wrapped__")
    if wrapped is not None and _worth_indexing(wrapped):
        out.append((wrapped, (*path, "__wrapped__")))
    if func.__closure__:  # most functions have none: no call for them
        for i, content in _callables_in_cells(func):
            out.append((content, (*path, "__closure__", i, "cell_contents")))
    return out


def _callables_in_cells(func: types.FunctionType) -> list[tuple[int, Any]]:
    """``(index, content)`` of the cells of ``func`` that hold a function or a
    wrapper object (empty cells left out): what a closure may have decorated."""
    found: list[tuple[int, Any]] = []
    for i, cell in enumerate(func.__closure__ or ()):
        try:
            content = cell.cell_contents
        except ValueError:
            continue
        if isinstance(content, types.FunctionType) or _heap_callable(content):
            found.append((i, content))
    return found


# Objects found importable by their own name: object -> object for functions
# and classes whose metaclass hashes them by identity (one pointer hashed, no
# ``id()`` integer made per lookup), id -> object for classes of a metaclass
# with its own ``__hash__`` (which may be anything; see by_name_key).
# pickle itself checks the name again when it writes the reference, so a stale
# entry can only raise (and dumps then retries with a fresh cache), never ship
# another object.
by_name: dict[Any, Any] = {}
_BY_NAME_LIMIT = 100_000

_indexes: dict[str, _ModuleIndex] = {}
# Last answers: id(obj) -> (module, path); checked by identity on every use.
_hits: dict[int, tuple[str, Path]] = {}
_HITS_LIMIT = 100_000


def _remember_hit(key: int, answer: tuple[str, Path]) -> None:
    # Bounded: a long-lived process may locate many short-lived objects (their
    # ids are reused; every hit is checked by identity before it is trusted).
    if len(_hits) >= _HITS_LIMIT:
        _hits.clear()
    _hits[key] = answer


def _index_for(module_name: str, *, revalidate: bool) -> _ModuleIndex | None:
    module = sys.modules.get(module_name)
    if module is None or not isinstance(module, types.ModuleType):
        return None
    index = _indexes.get(module_name)
    if index is None or index.module is not module or (revalidate and index.stale()):
        index = _ModuleIndex(module)
        _indexes[module_name] = index
        top = module_name.partition(".")[0]
        _package_generation[top] = _package_generation.get(top, 0) + 1
    return index


# Top-level package -> how many times an index of one of its modules was built.
_package_generation: dict[str, int] = {}
# Top-level package -> ((len(sys.modules), generation), id -> [(module, path), ...])
# over the indexes of its loaded modules: what the package-wide search reads.
_package_maps: dict[str, tuple[tuple[int, int], dict[int, list[tuple[str, Path]]]]] = {}


def _package_map(top: str) -> dict[int, list[tuple[str, Path]]]:
    """Every indexed object of package ``top``'s loaded modules, by id.

    Made once and reused until a module is imported or removed, or one of the
    package's indexes is rebuilt: without it, each factory-made function that
    is found nowhere (closures made by a library, shipped by value) would
    re-list sys.modules and consult hundreds of indexes, one dump after another.
    """
    cached = _package_maps.get(top)
    if cached is not None and cached[0] == (len(sys.modules), _package_generation.get(top, 0)):
        return cached[1]
    prefix = top + "."
    names = [n for n in list(sys.modules) if n == top or n.startswith(prefix)]
    merged: dict[int, list[tuple[str, Path]]] = {}
    for module_name in names[:_MAX_PACKAGE_MODULES]:
        index = _index_for(module_name, revalidate=False)
        if index is None:
            continue
        for key, path in index.paths.items():
            merged.setdefault(key, []).append((module_name, path))
    # Read after the loop: building the indexes above moved the generation on.
    _package_maps[top] = ((len(sys.modules), _package_generation.get(top, 0)), merged)
    return merged


def _resolves_to(module_name: str, path: Path, obj: Any) -> bool:
    module = sys.modules.get(module_name)
    if module is None:
        return False
    try:
        return walk(module, path) is obj
    except Exception:
        return False


def importable_by_own_name(obj: Any) -> bool:
    """True when ``obj.__module__`` + ``obj.__qualname__`` import to ``obj`` itself.

    This is stdlib pickle's by-reference test, done without raising.
    """
    try:
        module_name = obj.__module__
        qualname = obj.__qualname__
    except Exception:
        return False
    if (
        type(module_name) is not str
        or type(qualname) is not str
        or module_name in MAIN_MODULES
        or "<" in qualname
    ):
        return False
    module = sys.modules.get(module_name)
    if module is None:
        try:
            module = importlib.import_module(module_name)
        except Exception:
            return False
    try:
        if "." not in qualname:
            return getattr(module, qualname) is obj
        return walk(module, tuple(qualname.split("."))) is obj
    except Exception:
        return False


# Attributes through which wrappers and descriptors hold the function they wrap.
_INNER_ATTRIBUTES = ("__func__", "fget", "func", "__wrapped__")


def _add_module(names: list[str], module_name: Any) -> None:
    if type(module_name) is str and module_name not in MAIN_MODULES and module_name not in names:
        names.append(module_name)


def _add_origin(names: list[str], candidate: Any) -> None:
    """Add the module ``candidate`` was defined in, and its owner class's module."""
    # getattr with a default: no exception made where there is no such attribute
    # (a property, a staticmethod's __qualname__ before 3.10), asked once per
    # descriptor of a kept class at each dump.
    try:
        module_name = getattr(candidate, "__module__", None)
        qualname = getattr(candidate, "__qualname__", None)
    except Exception:  # an attribute that raises
        module_name = qualname = None
    _add_module(names, module_name)
    # ``Owner.method`` whose Owner was moved to another module (pandas sets
    # DataFrame.__module__ = "pandas"): index the module the owner now names.
    if type(qualname) is str and "." in qualname and "<" not in qualname:
        home = sys.modules.get(module_name) if type(module_name) is str else None
        head = getattr(home, qualname.partition(".")[0], None) if home is not None else None
        if isinstance(head, type):
            _add_module(names, getattr(head, "__module__", None))


_HELD_ITEMS = 64


def held_functions(obj: Any) -> list[Any]:
    """Functions an object holds in its attributes (``__dict__`` or slots), in a
    ``functools.partial`` attribute, or one level down in a dict, list or tuple
    attribute (a dispatcher's registry): where a decorator object keeps what it
    decorated."""
    values: list[Any] = []
    try:
        own = getattr(obj, "__dict__", None)  # what vars() reads, without its TypeError
        if own is not None:
            values.extend(own.values())
    except Exception:
        pass
    for klass in type(obj).__mro__[:-1]:
        slots = vars(klass).get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            try:
                values.append(object.__getattribute__(obj, slot))
            except Exception:
                continue
    found: list[Any] = []
    for held in values:
        value = held.func if type(held) is functools.partial else held  # curried
        if isinstance(value, types.FunctionType):
            found.append(value)
        elif type(value) in (dict, list, tuple):
            items: Any = value.values() if type(value) is dict else value
            for i, item in enumerate(items):
                if i >= _HELD_ITEMS:
                    break
                if isinstance(item, types.FunctionType):
                    found.append(item)
    return found


def _candidate_modules(obj: Any) -> list[str]:
    """Modules worth indexing to find ``obj``: where it, or what it wraps, was
    defined, and where the class owning it now says it lives."""
    names: list[str] = []
    _add_origin(names, obj)
    # A plain function keeps other attributes in its __dict__ (FunctionType
    # defines none of those read below): read them there, without a failing
    # getattr each time (this runs for every function the locator looks for).
    own = obj.__dict__ if type(obj) is types.FunctionType else None
    owner = own.get("__objclass__") if own is not None else getattr(obj, "__objclass__", None)
    if isinstance(owner, type):
        _add_origin(names, owner)
    # What it wraps, down the chain: a wrapper lives where its function was defined.
    current = obj
    for _ in range(16):
        inner = None
        own = current.__dict__ if type(current) is types.FunctionType else None
        for attribute in _INNER_ATTRIBUTES:
            if own is not None:
                inner = own.get(attribute)
            else:
                try:
                    inner = getattr(current, attribute, None)
                except Exception:
                    inner = None
            if inner is not None and inner is not current:
                break
        if inner is None or inner is current:
            break
        _add_origin(names, inner)
        current = inner
    if isinstance(obj, types.FunctionType):
        for _, content in _callables_in_cells(obj):
            _add_origin(names, content)
    elif not isinstance(obj, type):
        for attr in held_functions(obj):
            _add_origin(names, attr)
    if isinstance(obj, type) and getattr(obj, "__module__", None) == "builtins":
        names.append("types")
    return names


def locate(obj: Any) -> tuple[str, Path] | None:
    """Return ``(module, path)`` such that importing ``module`` and following
    ``path`` yields ``obj`` itself, or None.
    """
    key = id(obj)
    hit = _hits.get(key)
    if hit is not None and _resolves_to(hit[0], hit[1], obj):
        return hit
    with _lock:
        candidates = _candidate_modules(obj)
        for module_name in candidates:
            index = _index_for(module_name, revalidate=True)
            if index is None:
                continue
            path = index.paths.get(key) or index.probe(obj)
            if path is not None and _resolves_to(module_name, path, obj):
                _remember_hit(key, (module_name, path))
                return module_name, path
        qualname = getattr(obj, "__qualname__", None)
        # Factory-made functions, descriptors and callable objects (which carry
        # no owner's name: a dispatcher set as a class attribute) may be set on a
        # class anywhere in their package: search it.
        if (type(qualname) is str and "<locals>" in qualname) or (
            qualname is None and (_is_descriptor(obj) or _heap_callable(obj))
        ):
            found = _search_packages(obj, candidates)
            if found is not None:
                _remember_hit(key, found)
                return found
    return None


def locate_in(module_name: str, obj: Any) -> Path | None:
    """A path inside the module ``module_name`` (a script's ``__main__`` too) that
    yields ``obj`` itself, or None. ``locate`` never answers with a script: the
    receiver has another ``__main__``; the reducers of script objects ask here."""
    with _lock:
        index = _index_for(module_name, revalidate=True)
        if index is None:
            return None
        path = index.paths.get(id(obj)) or index.probe(obj)
    if path is not None and _resolves_to(module_name, path, obj):
        return path
    return None


def indexed_paths(module_name: str) -> dict[int, Path] | None:
    """id -> path of every object the index of ``module_name`` holds, the index
    revalidated now; None if it is not a module that can be indexed.

    The index's own table (read it, never change it; a rebuilt index gets a new
    one). A script's payload reads it once, for all its closures (issue 18; see
    ``picklable._reduce.scripts.script_location``).
    """
    # Asked once per payload of a script's functions (a payload of one lambda too):
    # an index still valid is read without the lock (indexes never change once built).
    index = _indexes.get(module_name)
    if index is not None and index.module is sys.modules.get(module_name) and not index.stale():
        return index.paths
    with _lock:
        index = _index_for(module_name, revalidate=True)
        return None if index is None else index.paths


def locate_module_object(obj: Any, near: Any) -> tuple[str, Path] | None:
    """Where a module holds the instance ``obj`` at its top level, searching the
    package of ``near`` (the function of a method bound to ``obj``): the
    ``mp`` context of ``mpmath.mp.nsum``. Instances are not indexed; this scan
    runs only for the owners of bound methods, and its answer is kept."""
    key = id(obj)
    hit = _hits.get(key)
    if hit is not None and _resolves_to(hit[0], hit[1], obj):
        return hit
    module_name = getattr(near, "__module__", None)
    if type(module_name) is not str or module_name in MAIN_MODULES:
        return None
    top = module_name.partition(".")[0]
    prefix = top + "."
    names = sorted(
        (n for n in list(sys.modules) if n == top or n.startswith(prefix)),
        key=lambda n: (n.count("."), n),
    )
    for name in names[:_MAX_PACKAGE_MODULES]:
        module = sys.modules.get(name)
        try:
            items = list(vars(module).items())
        except TypeError:
            continue
        for attribute, value in items:
            if value is obj and type(attribute) is str:
                _remember_hit(key, (name, (attribute,)))
                return name, (attribute,)
    return None


def _search_packages(obj: Any, candidates: list[str]) -> tuple[str, Path] | None:
    """Factory-made functions are often set on a class of a sibling module
    (the old ``pandas.Series.sum``): search the rest of the package."""
    key = id(obj)
    for candidate in candidates:
        top = candidate.partition(".")[0]
        if top == candidate and not hasattr(sys.modules.get(top), "__path__"):
            continue  # a plain module, not a package: nothing else to search
        for module_name, path in _package_map(top).get(key, ()):
            if module_name not in candidates and _resolves_to(module_name, path, obj):
                return module_name, path
    return None


def clear_cache() -> None:
    """Forget every module index and every answer (part of ``clear_caches()``)."""
    with _lock:
        _indexes.clear()
        _package_maps.clear()
        _package_generation.clear()
        _hits.clear()
        forget_by_name()
        # In place: the pickler's hook holds this very set.
        identity_hashed.intersection_update(_ALWAYS_IDENTITY_HASHED)


_caches.register("locator", clear_cache)


def by_name_key(obj: Any) -> Any:
    """The key of ``obj`` in :data:`by_name`: itself when its type hashes it by
    identity (a function; a class whose metaclass keeps ``type.__hash__``,
    which :data:`identity_hashed` then lists), else its id."""
    t = type(obj)
    if t in identity_hashed:
        return obj
    if isinstance(obj, type) and t.__hash__ is _TYPE_HASH:
        identity_hashed.add(t)
        return obj
    return id(obj)


# The types whose instances by_name keys by themselves: the pickler's hook
# reads it to choose the key of the function or class it holds.
_ALWAYS_IDENTITY_HASHED = frozenset({types.FunctionType, type})
identity_hashed: set[type] = set(_ALWAYS_IDENTITY_HASHED)
_TYPE_HASH: Any = type.__hash__


def forget_by_name() -> None:
    """Empty :data:`by_name` (a reference went stale: dumps tries again)."""
    by_name.clear()
    _by_name_names.clear()


def remember_by_name(obj: Any) -> None:
    if len(by_name) >= _BY_NAME_LIMIT:
        forget_by_name()
    name = _name_of(obj)
    if name is not None:
        namesake = _by_name_names.get(name)
        if namesake is not None and namesake is not obj:
            # Defined again under its name (a notebook cell run twice): the
            # old one no longer ships by that name; let it go.
            by_name.pop(by_name_key(namesake), None)
        _by_name_names[name] = obj
    by_name[by_name_key(obj)] = obj


def _name_of(obj: Any) -> tuple[str, str] | None:
    try:
        name = (obj.__module__, obj.__qualname__)
    except Exception:
        return None
    return name if type(name[0]) is str and type(name[1]) is str else None


# (module, qualname) -> the one object of that name in by_name.
_by_name_names: dict[tuple[str, str], Any] = {}
