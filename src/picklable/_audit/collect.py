"""Which objects a package offers: the public callables an audit round-trips.

For a module: the names in ``__all__`` when it has one (every name of its
namespace with ``private``), otherwise its public names minus what it merely
imported (imported modules, and functions and classes defined outside the
package). Of those, the callables: functions, classes, builtins and callable
objects (decorator products such as click commands). For each class defined in
the package, its members: methods, classmethods, staticmethods, properties and
other data descriptors, accessor classes, nested classes (one level deep), and
callable attributes; members inherited from built-in types (``object``,
``Exception``) are left out, as are dunder names.

The same object reached by several names is audited once, under the first name
(aliases are kept). Submodules (``recursive``) are imported in name order;
``__main__``, ``tests``, ``test`` and ``conftest`` are never imported, and one
that fails to import is recorded as a :class:`~.model.Problem`. Without
``recursive``, submodules that a package exports (in ``__all__``, often loaded
lazily on first access, as scipy does) are not imported: a note names them.

``ignore`` patterns (:func:`fnmatch.fnmatchcase` on dotted names) leave objects
out: an object is ignored when any of its names matches, and an ignored class
takes its members with it.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import importlib
import importlib.util
import inspect
import pkgutil
import types
from collections.abc import Iterable, Sequence
from typing import Any

from .._compat import class_module
from .model import Problem
from .wire import first_line

_SKIPPED_SUBMODULES = frozenset({"__main__", "tests", "test", "conftest"})
_MAX_NESTING = 2
_NAMED_IN_NOTE = 5  # submodules named in a note before "..."
_BUILTIN_METHOD_TYPES = (
    types.BuiltinFunctionType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.ClassMethodDescriptorType,
    types.MethodWrapperType,
)


class TargetError(LookupError):
    """A target named on the command line cannot be imported or found."""


@dataclasses.dataclass
class Target:
    """One object to audit, and where it lives.

    Attributes
    ----------
    name:
        Dotted name it was reached by.
    module, path:
        Where the children find it again: ``getattr`` along ``path`` from
        the imported ``module``.
    kind:
        See :class:`~.model.Entry`.
    obj:
        The object itself.
    stable:
        Whether the lookup yields this very object every time (false for
        bound methods that ``cls.attr`` builds on each access).
    aliases:
        Other names reaching the same object.
    """

    name: str
    module: str
    path: tuple[str, ...]
    kind: str
    obj: Any
    stable: bool = True
    aliases: list[str] = dataclasses.field(default_factory=list)


def resolve(name: str) -> tuple[Any, str, tuple[str, ...]]:
    """Import the target ``name``: a module, or an attribute path inside one.

    Returns
    -------
    (object, module name, attribute path)

    Raises
    ------
    TargetError
        If no prefix of ``name`` imports, the import raises, or an attribute
        is missing.
    """
    parts = name.split(".")
    if not all(p.isidentifier() for p in parts):
        raise TargetError(f"{name!r} is not a dotted name (e.g. 'json' or 'pandas.Series')")
    for cut in range(len(parts), 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
                continue  # this prefix is not a module: try a shorter one
            raise TargetError(f"importing {module_name!r} failed: {first_line(exc)}") from exc
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise TargetError(f"importing {module_name!r} failed: {first_line(exc)}") from exc
        obj: Any = module
        for i, attr in enumerate(parts[cut:], start=cut):
            try:
                obj = getattr(obj, attr)
            except Exception as exc:
                raise TargetError(
                    f"{'.'.join(parts[:i])!r} has no attribute {attr!r}: {first_line(exc)}"
                ) from exc
        return obj, module_name, tuple(parts[cut:])
    raise TargetError(f"no module named {parts[0]!r}: is it installed in this environment?")


def module_kind(value: Any) -> str:
    """Kind of a module-level callable."""
    if type(value) is types.FunctionType:
        return "function"
    if isinstance(value, type):
        return "class"
    if isinstance(value, _BUILTIN_METHOD_TYPES):
        return "builtin"
    if _has(value, "__wrapped__"):
        return "decorated function"
    return "callable object"


def _has(obj: Any, name: str) -> bool:
    try:
        return hasattr(obj, name)
    except Exception:  # a proxy or property that raises
        return False


def _get(obj: Any, name: str) -> Any:
    """``getattr(obj, name, None)``, None also where reading it raises (a
    proxy outside its context, a module ``__getattr__`` for a missing extra)."""
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


def member_kind(raw: Any, value: Any) -> str | None:
    """Kind of a class member from its raw ``__dict__`` entry and what ``getattr`` gives.

    None when the member is neither callable nor a descriptor worth shipping.
    """
    if isinstance(raw, classmethod):
        return "classmethod"
    if isinstance(raw, staticmethod):
        return "staticmethod"
    if type(raw) is types.FunctionType:
        return "method"
    if isinstance(raw, type):
        return "class"
    if isinstance(raw, (property, functools.cached_property)):
        return "property"
    if isinstance(value, type):
        return "accessor"
    if isinstance(raw, _BUILTIN_METHOD_TYPES):
        return "builtin"
    if inspect.isdatadescriptor(raw):
        return "property"
    if callable(raw) and _has(type(raw), "__get__"):
        return "decorated method"  # a wrapper object that binds like a function
    if callable(value):
        return "callable object"
    return None


@dataclasses.dataclass
class Collected:
    """What :func:`collect` found.

    Attributes
    ----------
    targets:
        The objects to audit, each once.
    problems:
        Modules that failed to import, attributes that failed to read.
    ignored:
        Names left out by an ``ignore`` pattern.
    notes:
        Things the user should know about what was not audited (exported
        submodules without ``recursive``).
    """

    targets: list[Target]
    problems: list[Problem]
    ignored: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)

    def __iter__(self) -> Any:
        # (targets, problems) = collect(...) keeps working.
        return iter((self.targets, self.problems))


class Collector:
    """Walks modules and classes, keeping each object once."""

    def __init__(
        self,
        *,
        private: bool,
        recursive: bool,
        members: bool,
        properties: bool = True,
        ignore: Sequence[str] = (),
    ) -> None:
        self.private = private
        self.recursive = recursive
        self.members = members
        self.properties = properties
        self.ignore = tuple(ignore)
        self.targets: list[Target] = []
        self.problems: list[Problem] = []
        self.ignored: list[str] = []
        self.notes: list[str] = []
        self._seen: dict[int, Target] = {}
        self._ignored_ids: set[int] = set()
        self._expanded: set[int] = set()

    def add_target(self, name: str) -> None:
        """Collect what the command-line target ``name`` offers.

        Raises
        ------
        TargetError
            See :func:`resolve`.
        """
        obj, module_name, path = resolve(name)
        if isinstance(obj, types.ModuleType):
            self._module(obj)
            if self.recursive and _has(obj, "__path__"):
                self._submodules(obj)
        elif not path:  # pragma: no cover - resolve() returns modules for bare names
            raise TargetError(f"{name!r} is not a module")
        else:
            owner = obj  # the object itself; its kind from the last step
            kind = module_kind(owner)
            if len(path) > 1:
                parent = resolve(".".join([module_name, *path[:-1]]))[0]
                found = _raw_member(parent, path[-1]) if isinstance(parent, type) else None
                if found is not None:
                    kind = member_kind(found, obj) or kind
            added = self._add(name, module_name, path, kind, obj, _stable_lookup(name, obj))
            ignored = not added and name in self.ignored
            if isinstance(obj, type) and not ignored:  # named: members even if seen before
                self._class_members(obj, module_name, path, depth=0)

    # Modules --------------------------------------------------------------------

    def _module(self, module: types.ModuleType) -> None:
        module_name = module.__name__
        package = module_name.partition(".")[0]
        for name, value in self._module_values(module, package):
            if isinstance(value, types.ModuleType) or not callable(value):
                continue
            first = self._add(
                f"{module_name}.{name}", module_name, (name,), module_kind(value), value, True
            )
            if first and self.members and isinstance(value, type) and _in_package(value, package):
                self._class_members(value, module_name, (name,), depth=0)

    def _module_values(self, module: types.ModuleType, package: str) -> Iterable[tuple[str, Any]]:
        # A module __getattr__ may raise anything for a name it lacks (dask.ml's:
        # "Dask-ML is not installed"): then the module has no __all__.
        exported = _get(module, "__all__")
        if not self.private and isinstance(exported, (list, tuple)):
            names = list(dict.fromkeys(n for n in exported if isinstance(n, str)))
            explicit = True
        else:
            names = [n for n in list(vars(module)) if isinstance(n, str) and self._public(n)]
            explicit = False
        submodules: list[str] = []
        for name in names:
            if explicit and _lazy_submodule(module, name):
                # Reading it would import it (a module __getattr__): it is not
                # audited without recursive, so do not pay for the import.
                submodules.append(f"{module.__name__}.{name}")
                continue
            try:
                value = getattr(module, name)
            except Exception as exc:
                self.problems.append(Problem(f"{module.__name__}.{name}", first_line(exc)))
                continue
            if (
                explicit
                and isinstance(value, types.ModuleType)
                and value.__name__.startswith(module.__name__ + ".")
            ):
                submodules.append(value.__name__)
            if not explicit and not _defined_here(value, package):
                continue
            yield name, value
        if submodules and not self.recursive:
            self._note_submodules(module.__name__, submodules)

    def _note_submodules(self, module: str, submodules: list[str]) -> None:
        named = ", ".join(submodules[:_NAMED_IN_NOTE])
        more = f", ..., {len(submodules)} in all" if len(submodules) > _NAMED_IN_NOTE else ""
        what = "submodule" if len(submodules) == 1 else "submodules"
        self.notes.append(
            f"{module} exports {len(submodules)} {what} that were not audited "
            f"({named}{more}): pass --recursive (recursive=True), or name them as targets"
        )

    def _submodules(self, package: types.ModuleType) -> None:
        try:
            infos = sorted(
                pkgutil.iter_modules(package.__path__, package.__name__ + "."), key=lambda i: i.name
            )
        except Exception as exc:
            self.problems.append(
                Problem(package.__name__, f"listing submodules failed: {first_line(exc)}")
            )
            return
        for info in infos:
            short = info.name.rpartition(".")[2]
            if short in _SKIPPED_SUBMODULES or not self._public(short):
                continue
            if self.ignore and self._ignored(info.name):
                self.ignored.append(info.name)  # not even imported
                continue
            try:
                module = importlib.import_module(info.name)
            except BaseException as exc:  # SystemExit from a script-like module too
                if isinstance(exc, KeyboardInterrupt):
                    raise
                self.problems.append(Problem(info.name, f"import failed: {first_line(exc)}"))
                continue
            self._module(module)
            if info.ispkg:
                self._submodules(module)

    # Classes --------------------------------------------------------------------

    def _class_members(
        self, cls: type, module_name: str, path: tuple[str, ...], depth: int
    ) -> None:
        if id(cls) in self._expanded:
            return
        self._expanded.add(id(cls))
        package = (class_module(cls) or "").partition(".")[0]
        try:
            names = dir(cls)
        except Exception as exc:
            self.problems.append(
                Problem(_dotted(module_name, path), f"dir() failed: {first_line(exc)}")
            )
            return
        for name in names:
            if not self._public(name):
                continue
            raw = _raw_member(cls, name)
            if raw is None:
                continue
            try:
                value = getattr(cls, name)
            except Exception as exc:
                self.problems.append(Problem(_dotted(module_name, (*path, name)), first_line(exc)))
                continue
            kind = member_kind(raw, value)
            if kind is None or (kind == "property" and not self.properties):
                continue
            try:
                stable = getattr(cls, name) is value
            except Exception:
                stable = False
            member_path = (*path, name)
            first = self._add(
                _dotted(module_name, member_path), module_name, member_path, kind, value, stable
            )
            if (
                first
                and kind == "class"
                and depth + 1 < _MAX_NESTING
                and _in_package(value, package)
                and getattr(value, "__qualname__", "").startswith(cls.__qualname__ + ".")
            ):
                self._class_members(value, module_name, member_path, depth + 1)

    # Bookkeeping ------------------------------------------------------------------

    def _public(self, name: str) -> bool:
        if name.startswith("__") and name.endswith("__"):
            return False
        return self.private or not name.startswith("_")

    def _ignored(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.ignore)

    def _add(
        self, name: str, module: str, path: tuple[str, ...], kind: str, obj: Any, stable: bool
    ) -> bool:
        """Record ``obj``; False (alias noted) when it was already collected or is ignored."""
        key = id(obj) if stable else id(_identity_key(obj))
        if key in self._ignored_ids:
            return False
        if self.ignore and self._ignored(name):
            self._ignored_ids.add(key)
            self.ignored.append(name)
            known = self._seen.pop(key, None)
            if known is not None:  # first collected under a name not ignored
                self.targets.remove(known)
                self.ignored.append(known.name)
            return False
        known = self._seen.get(key)
        if known is not None:
            if name != known.name and name not in known.aliases:
                known.aliases.append(name)
            return False
        target = Target(name, module, path, kind, obj, stable)
        self._seen[key] = target
        self.targets.append(target)
        return True

    def result(self) -> Collected:
        """What was collected; members of ignored classes are left out too."""
        prefixes = tuple(name + "." for name in self.ignored)
        targets = [t for t in self.targets if not t.name.startswith(prefixes)]
        dropped = [t.name for t in self.targets if t.name.startswith(prefixes)]
        return Collected(targets, self.problems, self.ignored + dropped, self.notes)


def _lazy_submodule(module: types.ModuleType, name: str) -> bool:
    """``name`` is exported by the package ``module`` but not loaded yet: a
    submodule its ``__getattr__`` would import on first access."""
    if name in vars(module) or not _has(module, "__path__"):
        return False
    try:
        return importlib.util.find_spec(f"{module.__name__}.{name}") is not None
    except Exception:  # a broken finder, or a parent that fails to import
        return False


def _identity_key(obj: Any) -> Any:
    """What makes a freshly built bound method the same as another one."""
    func = _get(obj, "__func__")
    return func if func is not None else obj


def _stable_lookup(name: str, obj: Any) -> bool:
    try:
        return resolve(name)[0] is obj
    except TargetError:
        return False


def _raw_member(cls: type, name: str) -> Any:
    """The ``__dict__`` entry defining ``name`` along the MRO, or None when it
    comes from a built-in type (``object``, ``Exception``, ``dict`` ...)."""
    for klass in getattr(cls, "__mro__", (cls,)):
        try:
            namespace = vars(klass)
        except TypeError:
            continue
        if name in namespace:
            if getattr(klass, "__module__", None) == "builtins":
                return None
            return namespace[name]
    return None


def _in_package(value: Any, package: str) -> bool:
    module = class_module(value) if isinstance(value, type) else _get(value, "__module__")
    return isinstance(module, str) and (module == package or module.startswith(package + "."))


def _defined_here(value: Any, package: str) -> bool:
    """False for functions and classes a module imported from elsewhere."""
    if isinstance(value, (types.FunctionType, type, *_BUILTIN_METHOD_TYPES)):
        return _in_package(value, package)
    return True


def _dotted(module: str, path: tuple[str, ...]) -> str:
    return ".".join([module, *path])


def collect(
    targets: Iterable[str],
    *,
    private: bool = False,
    recursive: bool = False,
    members: bool = True,
    properties: bool = True,
    ignore: Sequence[str] = (),
) -> Collected:
    """Every object the ``targets`` offer, each once.

    Parameters
    ----------
    targets:
        Dotted names: modules (``json``), classes (``pandas.Series``) or any
        object path.
    private:
        Include ``_private`` names (never dunders).
    recursive:
        Walk submodules of packages.
    members:
        Audit the members of classes found in modules (classes named as
        targets always have their members audited).
    properties:
        Audit property objects (and other data descriptors) of classes.
    ignore:
        ``fnmatch`` patterns of dotted names to leave out.

    Returns
    -------
    Collected
        Unpacks as ``(targets, problems)``; also has ``ignored`` and ``notes``.

    Raises
    ------
    TargetError
        When a target itself cannot be imported or found.
    """
    collector = Collector(
        private=private,
        recursive=recursive,
        members=members,
        properties=properties,
        ignore=ignore,
    )
    for name in targets:
        collector.add_target(name)
    return collector.result()
