"""The allow-list of ``loads(data, allowed=[...])``: defence in depth, not a sandbox.

With an allow-list, a payload may only name objects of the listed modules (a
name covers its submodules: ``"numpy"`` admits ``numpy.core.multiarray``), plus
a fixed set that picklable's own formats and pickle's standard reductions need
(:data:`IMPLICIT`: plain data types, builtin exceptions, ``copyreg``'s
reconstructors, ``functools.partial``, ...). Every way a payload can reach an
object by name is checked:

* pickle's ``GLOBAL``/``STACK_GLOBAL`` opcodes (``find_class``);
* picklable's rebuilders that import or look up by name: ``_import``,
  ``_resolve`` (each path step, and the object it ends at), by-value classes
  found again by tracker id or in the receiver's ``__main__``;
* by-value code: a function shipped by value counts as an object of the module
  its globals name (``__main__`` for a script's functions), a class as one of
  its ``__module__``; bare code objects are refused (they belong to no module);
* ``getattr``/``setattr`` named in the payload are replaced by guarded ones
  (no ``_private`` or dunder names but ``__new__``, no module attributes;
  ``setattr`` only fills closure cells, which is all picklable needs).

An object reached from an allowed module must itself belong to an allowed
module (its ``__module__``): ``mypkg.system`` after ``from os import system``
is refused unless ``os``/``posix`` is allowed too.

Why it is not a sandbox: an allowed callable is called with the arguments the
payload chooses (REDUCE), and pickle's BUILD sets attributes on any object the
payload holds, including allowed classes and modules. A payload limited to
``numpy`` still runs whatever numpy does with hostile arguments, and one that
may carry ``__main__`` code runs that code. Use the allow-list to narrow what a
trusted-but-buggy peer can reach; use signed payloads (``key=``) to know who
made a payload. Never load payloads from an untrusted source.
"""

from __future__ import annotations

import _codecs
import _compat_pickle
import builtins
import copyreg
import dataclasses
import functools
import inspect
import operator
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from . import _reconstruct, exceptions
from ._compat import MAIN_MODULES
from ._paths import format_path
from .exceptions import UnpicklingError

__all__ = ["IMPLICIT", "Policy"]

T = TypeVar("T")

_PY2_MODULES = {"__builtin__": "builtins", "copy_reg": "copyreg"}

_SAFE_BUILTINS = [
    "object",
    "bool",
    "int",
    "float",
    "complex",
    "str",
    "bytes",
    "bytearray",
    "list",
    "tuple",
    "dict",
    "set",
    "frozenset",
    "slice",
    "range",
    "type",
    "property",
    "classmethod",
    "staticmethod",
    "memoryview",
    "Ellipsis",
    "NotImplemented",
]


def _implicit() -> dict[tuple[str, str], Any]:
    table: dict[tuple[str, str], Any] = {}
    for name in _SAFE_BUILTINS:
        table["builtins", name] = getattr(builtins, name)
    for name, value in vars(builtins).items():
        if isinstance(value, type) and issubclass(value, BaseException):
            table["builtins", name] = value
    table["copyreg", "_reconstructor"] = copyreg._reconstructor  # type: ignore[attr-defined]
    table["copyreg", "__newobj__"] = copyreg.__newobj__  # type: ignore[attr-defined]
    table["copyreg", "__newobj_ex__"] = copyreg.__newobj_ex__  # type: ignore[attr-defined]
    table["functools", "partial"] = functools.partial
    table["_codecs", "encode"] = _codecs.encode  # bytes under protocols 0-2
    table["operator", "itemgetter"] = operator.itemgetter  # picklable's _FIRST
    for name in ("MethodType", "MappingProxyType", "FunctionType", "CellType", "SimpleNamespace"):
        table["types", name] = getattr(types, name)
    # What a by-value dataclass carries in __dataclass_fields__ / __dataclass_params__.
    for name in (
        "Field",
        "_DataclassParams",
        "MISSING",
        "_HAS_DEFAULT_FACTORY",
        "KW_ONLY",
        "_FIELD",
        "_FIELD_CLASSVAR",
        "_FIELD_INITVAR",
    ):
        if hasattr(dataclasses, name):
            table["dataclasses", name] = getattr(dataclasses, name)
    table["picklable.exceptions", "_rebuild_error"] = exceptions._rebuild_error
    table["picklable.exceptions", "_rebuild_combined"] = exceptions._rebuild_combined
    table["picklable.exceptions", "combined"] = exceptions.combined
    table["picklable.exceptions", "PicklingError"] = exceptions.PicklingError
    table["picklable.exceptions", "UnpicklingError"] = exceptions.UnpicklingError
    return table


IMPLICIT: dict[tuple[str, str], Any] = _implicit()
"""(module, name) -> object: always admitted under an allow-list."""
_IMPLICIT_IDS = {id(value): value for value in IMPLICIT.values()}
_IMPLICIT_MODULES = frozenset(module for module, _ in IMPLICIT)

# Path steps picklable's locator writes (``_resolve``); other dunders (``__globals__``,
# ``__builtins__``, ``__class__`` ...) lead out of a module and are refused.
_PATH_DUNDERS = frozenset({"__dict__", "__func__", "__wrapped__", "__closure__"})

# Metadata _with_state may set on an admitted object; other dunders are refused.
_STATE_DUNDERS = frozenset(
    {
        "__doc__",
        "__wrapped__",
        "__name__",
        "__qualname__",
        "__module__",
        "__annotations__",
        "__dict__",
    }
)


def _is_implicit(obj: Any) -> bool:
    return _IMPLICIT_IDS.get(id(obj), _IMPLICIT_IDS) is obj


def _dunder(name: Any) -> bool:
    return type(name) is str and name.startswith("__") and name.endswith("__")


class Policy:
    """An allow-list of module names (each also covers its submodules).

    Parameters
    ----------
    allowed:
        Module names or module objects. ``"__main__"`` also covers
        ``"__mp_main__"`` (a script re-imported by a spawn worker).

    Raises
    ------
    TypeError
        ``allowed`` is a single string, or holds something else than names and modules.
    """

    def __init__(self, allowed: Iterable[Any]) -> None:
        if isinstance(allowed, (str, bytes)):
            raise TypeError(
                f"allowed must be a list of module names, not a single string: "
                f"write allowed=[{allowed!r}]"
            )
        names: list[str] = []
        for entry in allowed:
            name = entry.__name__ if isinstance(entry, types.ModuleType) else entry
            if type(name) is not str or not name or name != name.strip(" ."):
                raise TypeError(f"allowed holds {entry!r}: expected module names such as 'numpy'")
            names.append(name)
        if any(n in MAIN_MODULES for n in names):
            names.extend(MAIN_MODULES)
        self.names = tuple(sorted(set(names)))
        self._prefixes = tuple(n + "." for n in self.names)

    def __iter__(self) -> Iterator[str]:
        """The module names (a Policy is itself a valid ``allowed=``)."""
        return iter(self.names)

    def allows(self, module: Any) -> bool:
        """Whether objects of ``module`` may be loaded."""
        if type(module) is not str:
            return False
        return module in self.names or module.startswith(self._prefixes)

    # ----------------------------------------------------------------- errors

    def refuse(self, what: str, module: Any, why: str = "") -> UnpicklingError:
        top = module.partition(".")[0] if type(module) is str and module else None
        listed = ", ".join(repr(n) for n in self.names) or "nothing"
        fix = (
            f"Fix: add {top!r} to allowed= if you trust what it does with "
            "arguments the payload chooses."
            if top
            else "Fix: do not load this payload under an allow-list."
        )
        return UnpicklingError(
            f"Refusing to load {what}: {why or f'module {module!r} is not in the allow-list'} "
            f"(allowed: {listed}). {fix}",
            reason=f"{what} not allowed",
            hint=f"add {top!r} to allowed="
            if top
            else "load it without an allow-list, if you trust it",
        )

    def admit(self, obj: T, what: str) -> T:
        """Return ``obj`` if it belongs to an allowed module (or is implicit), else raise."""
        if _is_implicit(obj):
            return obj
        if isinstance(obj, types.ModuleType):
            if not self.allows(obj.__name__):
                raise self.refuse(
                    what, obj.__name__, f"it is the module {obj.__name__!r}, not allowed"
                )
            return obj
        try:
            # Functions and classes say where they come from; so do instances of
            # Python classes (through their class), whose __call__ is that code.
            module = getattr(obj, "__module__", None)
        except Exception:
            module = None
        if type(module) is str and not self.allows(module):
            raise self.refuse(what, module, f"it belongs to module {module!r}, not allowed")
        return obj

    # ----------------------------------------------------------- find_class

    def find_class(self, module: str, name: str) -> Any:
        """What a GLOBAL opcode naming ``module`` + ``name`` loads, if admitted."""
        # Protocols 0-2 write Python 2 names for builtins and copyreg; read them
        # as their Python 3 names before checking (only names Python 3 lacks).
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[module, name]
        elif module in _PY2_MODULES:
            module = _PY2_MODULES[module]
        what = f"{module}.{name}"
        if module == "picklable._reconstruct":
            guarded = self.rebuilders.get(name)
            if guarded is not None:
                return guarded
            raise self.refuse(what, module, "it is not a rebuilder payloads may name")
        implicit = IMPLICIT.get((module, name))
        if implicit is not None:
            return implicit
        if (module, name) in (("builtins", "getattr"), ("builtins", "setattr")):
            return self.guarded_getattr if name == "getattr" else self.guarded_setattr
        if not self.allows(module):
            raise self.refuse(what, module)
        steps = name.split(".")
        for step in steps:
            if not step or step == "<locals>" or (_dunder(step) and step != "__new__"):
                raise self.refuse(what, module, f"the name {name!r} leads outside the module")
        obj = _reconstruct._import(module)
        try:
            for step in steps:
                obj = getattr(obj, step)
        except AttributeError as exc:
            raise UnpicklingError(
                f"Cannot load {what}: {exc}. Fix: install the same version on both sides.",
                reason=f"{what} not found",
                hint="install the same version on both sides",
            ) from exc
        return self.admit(obj, what)

    # --------------------------------------------------- guarded builtins

    def guarded_getattr(self, obj: Any, name: str, *default: Any) -> Any:
        """``getattr`` for payloads: public names of non-module objects, and ``__new__``."""
        if (
            type(name) is not str
            or isinstance(obj, types.ModuleType)
            or (name.startswith("_") and name != "__new__")
        ):
            raise self.refuse(
                f"getattr(<{type(obj).__name__}>, {name!r})", None, "the attribute is not public"
            )
        return self.admit(
            getattr(obj, name, *default), f"getattr(<{type(obj).__name__}>, {name!r})"
        )

    def guarded_setattr(self, obj: Any, name: str, value: Any) -> None:
        """``setattr`` for payloads: only fills closure cells (picklable's use)."""
        if type(obj) is not types.CellType or name != "cell_contents":
            raise self.refuse(
                f"setattr(<{type(obj).__name__}>, {name!r}, ...)",
                None,
                "it only fills closure cells",
            )
        obj.cell_contents = value

    # ------------------------------------------------ guarded rebuilders

    @functools.cached_property
    def rebuilders(self) -> dict[str, Any]:
        """picklable._reconstruct name -> what a payload gets under this policy.

        Plain functions (closures), not bound methods: ``type(_make_function)``
        is how payloads name ``types.FunctionType``.
        """
        return _guarded_rebuilders(self)

    def by_value(self, module: Any, what: str) -> None:
        """Refuse code shipped by value unless its module is allowed."""
        if not self.allows(module):
            raise self.refuse(
                f"{what} shipped by value",
                module,
                f"code shipped by value counts as module {module!r}, not allowed",
            )


def _arguments(rebuilder: _reconstruct.Rebuilder, args: tuple[Any, ...]) -> dict[str, Any]:
    """The payload's positional arguments of ``rebuilder``, by parameter name."""
    return dict(zip(_PARAMETERS[rebuilder.name], args))


_PARAMETERS = {
    name: tuple(inspect.signature(rebuilder.function).parameters)
    for name, rebuilder in _reconstruct.REBUILDERS.items()
}

Guard = Callable[[Policy, _reconstruct.Rebuilder], Callable[..., Any]]


def _guard_import(policy: Policy, rebuilder: _reconstruct.Rebuilder) -> Callable[..., Any]:
    """``_import`` and ``_resolve``: the module, every path step and the result."""
    function = rebuilder.function

    def guarded(*args: Any) -> Any:
        arguments = _arguments(rebuilder, args)
        module = arguments.get("module")
        path = arguments.get("path")
        if path is None:
            if not policy.allows(module):
                raise policy.refuse(f"import of {module!r}", module)
            return function(*args)
        if type(module) is not str or type(path) is not tuple:
            raise policy.refuse(f"reference {module!r}:{path!r}", None, "malformed reference")
        for step in path:
            if type(step) is tuple and len(step) != 1:
                raise policy.refuse(f"reference {module!r}:{path!r}", None, "malformed path")
        where = format_path(module, path)
        allowed = policy.allows(module)
        if not allowed and module not in _IMPLICIT_MODULES:
            raise policy.refuse(where, module)
        if allowed and path and path[0] == "__dict__":
            raise policy.refuse(
                where, module, "a module's namespace leads to everything it imported"
            )
        for step in path:
            key = step[0] if type(step) is tuple else step
            if type(key) is str and key.startswith("__") and key not in _PATH_DUNDERS:
                raise policy.refuse(where, module, f"the step {key!r} leads outside the module")
        obj = function(*args)
        if allowed:
            return policy.admit(obj, where)
        if _is_implicit(obj):  # a module of IMPLICIT: its listed objects only
            return obj
        raise policy.refuse(where, module)

    return guarded


def _guard_code(policy: Policy, rebuilder: _reconstruct.Rebuilder) -> Callable[..., Any]:
    """By-value code counts as the module its globals name; bare code, as none."""
    function = rebuilder.function

    def guarded(*args: Any) -> Any:
        arguments = _arguments(rebuilder, args)
        if "globals" not in arguments:
            raise policy.refuse(
                "a code object",
                None,
                "a bare code object belongs to no module an allow-list can name",
            )
        namespace = arguments["globals"]
        module = namespace.get("__name__") if type(namespace) is dict else None
        policy.by_value(module, f"function {arguments.get('name')!r}")
        return function(*args)

    return guarded


def _guard_class(policy: Policy, rebuilder: _reconstruct.Rebuilder) -> Callable[..., Any]:
    """A class by value counts as its ``__module__``; what its tracker id finds too."""
    function = rebuilder.function
    origin_at = _PARAMETERS[rebuilder.name].index("origin")

    def guarded(*args: Any) -> Any:
        arguments = _arguments(rebuilder, args)
        namespace = arguments.get("namespace")
        name = arguments.get("name")
        module = namespace.get("__module__") if type(namespace) is dict else None
        policy.by_value(module, f"class {name!r}")
        if not policy.allows("__main__") and len(args) > origin_at:
            # The receiver's own __main__ classes stay out of reach.
            args = (*args[:origin_at], None, *args[origin_at + 1 :])
        cls = function(*args)
        # A tracker id may name any class this process knows: check what it found.
        return policy.admit(cls, f"class {name!r}")

    return guarded


def _guard_state(policy: Policy, rebuilder: _reconstruct.Rebuilder) -> Callable[..., Any]:
    """Rebuilders that set attributes: only the targets and names picklable writes."""
    function = rebuilder.function
    name = rebuilder.name

    def guarded(*args: Any) -> Any:
        arguments = _arguments(rebuilder, args)
        if name == "_with_state":
            state = arguments.get("state")
            for key in state or ():
                if type(key) is not str or (key.startswith("_") and key not in _STATE_DUNDERS):
                    raise policy.refuse(
                        f"state {key!r} of a with_state object", None, "not a public attribute"
                    )
        elif name == "_exception_setstate" and not isinstance(arguments.get("exc"), BaseException):
            target = type(arguments.get("exc")).__name__
            raise policy.refuse(
                f"exception state on a {target}", None, "the target is not an exception"
            )
        return function(*args)

    return guarded


def _pass_through(policy: Policy, rebuilder: _reconstruct.Rebuilder) -> Callable[..., Any]:
    """Rebuilders that build from their arguments or call what the payload holds
    (each of which an allow-list has admitted already)."""
    return rebuilder.function


# What each reach (declared with each rebuilder) is guarded by.
_GUARDS: dict[str, Guard] = {
    "import": _guard_import,
    "code": _guard_code,
    "class": _guard_class,
    "state": _guard_state,
    "call": _pass_through,
    "build": _pass_through,
}


def _guarded_rebuilders(policy: Policy) -> dict[str, Any]:
    """Every rebuilder a payload may name, guarded as its declared reach requires."""
    return {
        name: _GUARDS[rebuilder.reach](policy, rebuilder)
        for name, rebuilder in _reconstruct.REBUILDERS.items()
    }
