"""The allow-list of ``loads(data, allowed=[...])``: what a payload may reach, call and modify.

Under an allow-list the payload is read by :class:`GuardedUnpickler`, pickle's
pure-Python unpickler with every opcode that reaches, calls or modifies an
object replaced by a checked one; the C unpickler (which cannot be checked
opcode by opcode) is never used. What holds, for every payload:

* **What it reaches** belongs to an allowed module (a name covers its
  submodules: ``"numpy"`` admits ``numpy.core.multiarray``), or is one of
  :data:`IMPLICIT` (plain types, builtin exceptions, ``copyreg``'s
  reconstructors and the few objects picklable's own formats of functions,
  dataclasses and enums name). That is checked for every object a name leads
  to (``GLOBAL``, ``STACK_GLOBAL``, ``INST``, ``EXT1/2/4`` -- through
  ``copyreg``'s registry, never its cache --, ``PERSID``), for every step of
  a dotted name or a located path (modules in between included), and for
  every result of a call (``REDUCE``, ``NEWOBJ``, ``NEWOBJ_EX``, ``OBJ``,
  ``INST``, picklable's rebuilders), containers of results included. An
  object belongs to the module its ``__module__`` names; one without a
  ``__module__`` (a dict, ``sys.modules``, a list) is not admitted by name,
  and a module's namespace never at all. Descriptors and builtin methods
  belong to their class or ``__self__``; of builtin types, only dunders of
  :data:`SAFE_DUNDERS` (operators, ``__new__``...) are admitted, never
  ``__setattr__``, ``__subclasses__``, ``__reduce_ex__``, ``__globals__``...
* **What it calls** is what it reached: admitted objects only. Of the builtin
  types whose methods write to their object (dict, list, set, bytearray,
  memoryview, exceptions), only methods that read are admitted (the others
  would write to whatever the payload hands them, through ``map`` or a
  ``partial``); ``str.format`` never (its fields read any attribute).
* **What it modifies**: ``BUILD`` (without the object's own
  ``__setstate__``), ``SETITEM(S)``, ``APPEND(S)``, ``ADDITEMS`` and
  picklable's state rebuilders only modify objects the payload made: never a
  module, a class (but one built from payloads), an object it reached by
  name, or an object a call returned that something else already held (a
  class's member, a cached singleton). Writes through a proxy or a
  memoryview are checked on the object they land on; ``BUILD`` writes only
  into the object's own ``__dict__``, not one a hook of its class hands out.
* **By-value code** (functions, code objects) is arbitrary code, refused
  unless the caller opts in with ``Policy(..., by_value_code=True)``; then
  it must claim an allowed module (``"__main__"`` for a script's), and runs
  with the real builtins: the allow-list limits what the payload's *opcodes*
  reach, not what its code does once it runs. The few stdlib functions that
  by-value classes hold and that read what their argument's data names
  (:data:`WITH_CODE_ONLY`: a dataclass's ``__replace__``) need the opt-in too.

What it does not do (see docs/safety.md): an admitted callable runs with the
arguments the payload chooses, and does whatever it does with them (a
numpy function with hostile arguments, ``logging.disable``, a class's own
``__setstate__`` on an object a call returned). Use the allow-list to narrow
what a trusted-but-buggy peer can reach; use signed payloads (``key=``) to
know who made a payload.
"""

from __future__ import annotations

import _codecs
import _compat_pickle
import builtins
import copyreg
import dataclasses
import datetime as dt
import enum
import functools
import inspect
import io
import operator
import pickle
import struct
import sys
import types
import zoneinfo
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, ClassVar, TypeVar

from . import _capability, _reconstruct, _tracker, exceptions
from ._allow_calls import (
    CALL_CHECKS,
    STATE_CHECKS,
    called_dunders,
    no_attribute_swap,
    refuse_class_hooks,
    refuse_composed_dunder,
    refuse_taken_place,
)
from ._compat import (
    FROZENDICT,
    LAZY_IMPORT_TYPE,
    MAIN_MODULES,
    PICKLE_OWN_TYPES,
    SENTINEL_TYPE,
    TEMPLATE_TYPES,
    class_module,
)
from ._layout import class_lookup
from ._paths import Path, format_path
from ._reduce import table
from ._reduce.builtins import DICT_VIEW_TYPES, STANDARD_STREAMS, TYPEVAR_TYPES, lazy_import_spec
from .exceptions import UnpicklingError

__all__ = ["IMPLICIT", "SAFE_DUNDERS", "WITH_CODE_ONLY", "GuardedUnpickler", "Policy"]

T = TypeVar("T")

_PY2_MODULES = {"__builtin__": "builtins", "copy_reg": "copyreg"}
# Modules an error never suggests listing: they hold eval, exec, open, import.
_NEVER_WORTH_ALLOWING = frozenset(
    {
        "builtins",
        "__builtin__",
        "os",
        "posix",
        "nt",
        "sys",
        "subprocess",
        "importlib",
        "ctypes",
        "marshal",
        "pickle",
        "types",
        "code",
        "runpy",
        "shutil",
        "socket",
        "pty",
    }
)

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
    # Functions of values: they read their arguments (and call only what the
    # payload gives them: a key=, a __len__), import nothing, write nothing.
    "abs",
    "all",
    "any",
    "ascii",
    "bin",
    "callable",
    "chr",
    "divmod",
    "format",
    "hash",
    "hex",
    "isinstance",
    "issubclass",
    "len",
    "max",
    "min",
    "oct",
    "ord",
    "pow",
    "repr",
    "round",
    "sorted",
    "sum",
    "enumerate",
    "filter",
    "map",
    "reversed",
    "zip",
    # Python 3.15: an immutable dict, and sentinel("NAME") (a new unique object).
    *(name for name in ("frozendict", "sentinel") if hasattr(builtins, name)),
]

# What a by-value dataclass carries in __dataclass_fields__ / __dataclass_params__
# and its annotations: records, sentinels, the frozen error, InitVar(...).
_DATACLASS_NAMES = (
    "Field",
    "_DataclassParams",
    "MISSING",
    "_HAS_DEFAULT_FACTORY",
    "KW_ONLY",
    "_FIELD",
    "_FIELD_CLASSVAR",
    "_FIELD_INITVAR",
    "FrozenInstanceError",
    "InitVar",
    "_recursive_repr",  # rebuilds the recursion guard of a generated __repr__ (to 3.12)
    "_auto_docstring",  # 3.15: the __doc__ of a dataclass without a docstring
    # Python 3.15: the __doc__ of a dataclass without one, made from its signature
    # when read (and set on the class it is read through: the payload's own).
    "_auto_docstring",
)
# An Enum by value names its metaclass and base, a Flag its boundary and the
# operators Flag defines (IntFlag's namespace holds Flag's own functions).
_ENUM_NAMES = (
    "EnumType",
    "EnumMeta",
    "Enum",
    "IntEnum",
    "Flag",
    "IntFlag",
    "StrEnum",
    "ReprEnum",
    "FlagBoundary",
    "Flag.__or__",
    "Flag.__and__",
    "Flag.__xor__",
    "Flag.__invert__",
)


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
    table["functools", "cached_property"] = functools.cached_property
    for template_type in TEMPLATE_TYPES:  # Python 3.14+: t-strings, data
        table["string.templatelib", template_type.__name__] = template_type
    if TEMPLATE_TYPES:
        templatelib = sys.modules["string.templatelib"]
        table["string.templatelib", "_template_unpickle"] = templatelib._template_unpickle
    placeholder = getattr(functools, "Placeholder", None)  # Python 3.14+
    if placeholder is not None:
        table["functools", "Placeholder"] = placeholder  # a partial's empty slot
    # The stdlib's date and time values: data like an int (a DataFrame's time zone).
    for name in ("date", "time", "datetime", "timedelta", "timezone", "tzinfo"):
        table["datetime", name] = getattr(dt, name)
    table["zoneinfo", "ZoneInfo"] = zoneinfo.ZoneInfo
    table["_codecs", "encode"] = _codecs.encode  # bytes under protocols 0-2
    table["operator", "itemgetter"] = operator.itemgetter  # functions' state before 0.2.0
    # list[int] pickles as getitem(list, int): a subscription, its result checked.
    table["operator", "getitem"] = table["_operator", "getitem"] = operator.getitem
    for name in (
        "MethodType",
        "MappingProxyType",
        "FunctionType",
        "CellType",
        "SimpleNamespace",
        "GenericAlias",
    ):
        table["types", name] = getattr(types, name)
    for module, names in ((dataclasses, _DATACLASS_NAMES), (enum, _ENUM_NAMES)):
        for name in names:
            found: Any = module
            for step in name.split("."):
                found = getattr(found, step, None)
            if found is not None:
                table[module.__name__, name] = found
    table["picklable.exceptions", "_rebuild_error"] = exceptions._rebuild_error
    table["picklable.exceptions", "_rebuild_combined"] = exceptions._rebuild_combined
    table["picklable.exceptions", "combined"] = exceptions.combined
    table["picklable.exceptions", "PicklingError"] = exceptions.PicklingError
    table["picklable.exceptions", "UnpicklingError"] = exceptions.UnpicklingError
    return table


IMPLICIT: dict[tuple[str, str], Any] = _implicit()
"""(module, name) -> object: always admitted under an allow-list.

Each is safe to call with any arguments: it builds a new object (a type, an
exception, an instance through ``copyreg``, a partial, a bound method, an
Enum class), reads (``itemgetter``, ``getitem``; their results are checked
like any other), or wraps (``_recursive_repr``). None of them imports,
evaluates text, or modifies its arguments. ``builtins.getattr`` and
``builtins.setattr`` are admitted as guarded versions.
"""
_IMPLICIT_IDS = {id(value): value for value in IMPLICIT.values()}


def _with_code_only() -> dict[tuple[str, str], Any]:
    table: dict[tuple[str, str], Any] = {}
    replace = getattr(dataclasses, "_replace", None)  # Python 3.13+
    if replace is not None:
        table["dataclasses", "_replace"] = replace
    return table


WITH_CODE_ONLY: dict[tuple[str, str], Any] = _with_code_only()
"""(module, name) -> object: admitted only with ``by_value_code``; without it, a
stand-in that refuses to be called, and that no class rebuilder sets.

Since Python 3.13 every dataclass's ``__replace__`` is ``dataclasses._replace``,
which reads each attribute its argument's ``__dataclass_fields__`` names and hands
the values to its argument's ``__class__``: on an object a payload makes, reads past
every check (a method of an allowed class's foreign base, a class's ``__mro__``)
into an object of the payload's choosing. A dataclass shipped by value holds it,
and its generated methods are by-value code (which can run anything) anyway. A
payload that carries a script's dataclass only for a receiver that does not run
the script (where the receiver's own class is used) loads with the stand-in, never
set on a class.
"""


class _Withheld:
    """What a name of :data:`WITH_CODE_ONLY` loads as without by-value code."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}, withheld without by_value_code>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise UnpicklingError(
            f"Refusing to call {self.name}: it reads the attributes its argument names, "
            "which only a payload with by-value code may have it do (a dataclass shipped by "
            "value holds it). Fix: if you would run this payload as a program, pass "
            "allowed=picklable.Policy([...], by_value_code=True).",
            reason=f"{self.name} not allowed (by-value code)",
            hint="opt in with picklable.Policy(..., by_value_code=True)",
        )


_WITHHELD = {key: _Withheld(".".join(key)) for key in WITH_CODE_ONLY}


def _withheld_in(value: Any) -> _Withheld | None:
    """A stand-in among the values of ``value``: a dict, or a tuple of them (a state)."""
    for part in value if type(value) is tuple else (value,):
        if type(part) is dict:
            for item in part.values():
                if type(item) is _Withheld:
                    return item
    return None


SAFE_DUNDERS = frozenset(
    {
        "__new__",
        "__str__",
        "__repr__",
        "__format__",
        "__hash__",
        "__bool__",
        "__int__",
        "__float__",
        "__complex__",
        "__index__",
        "__len__",
        "__contains__",
        "__getitem__",
        *(
            f"__{prefix}{op}__"
            for op in (
                "add",
                "sub",
                "mul",
                "truediv",
                "floordiv",
                "mod",
                "pow",
                "lshift",
                "rshift",
                "and",
                "or",
                "xor",
            )
            for prefix in ("", "r")
        ),
        "__neg__",
        "__pos__",
        "__abs__",
        "__invert__",
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
    }
)
"""Dunders of builtin types a payload may name: operators and conversions, which
read their operands. Not the ones that set, delete, reduce, walk or re-initialise
(``__setattr__``, ``__init__``, ``__reduce_ex__``, ``__subclasses__``,
``__getattribute__``, ``__globals__``, ``__class__``, ``__dict__`` ...)."""

# Path steps picklable's locator writes (``_resolve``): through a wrapper, a
# classmethod, a closure, a class's own namespace. Other dunders of objects
# (``__globals__``, ``__builtins__``, ``__class__``, ``__self__`` ...) lead out.
# Since Python 3.14 a function's and a class's __annotate__ is the code of its
# annotations (PEP 649), a function of the same module: pickle names it by its
# qualname ("f.__annotate__"). A class keeps it under another key, its own all the same.
# A function's or an alias's __type_params__ (3.12+): a read-only tuple of type
# variables, each checked as typing's.
_PATH_DUNDERS = frozenset(
    {"__func__", "__wrapped__", "__closure__", "__annotate__", "__type_params__"}
)
_STORED_AS = {"__annotate__": "__annotate_func__"}

# Plain data: admitted as a value (what a call returns), never by name (a
# module's dict or list is a name's way to everything the module holds).
_PLAIN = PICKLE_OWN_TYPES | {slice, range, type(Ellipsis), type(NotImplemented)}
# Immutable containers: a module's own can be reached by name (their items checked).
_FROZEN: tuple[type, ...] = (tuple, frozenset)
_MAPPINGS: tuple[type, ...] = (dict,)
if FROZENDICT is not None:
    _PLAIN |= {FROZENDICT}
    _FROZEN += (FROZENDICT,)
    _MAPPINGS += (FROZENDICT,)
# A t-string's Template and Interpolations (3.14+): immutable, checked through what
# they hold (a Template its Interpolations, each its value).
_HOLDS: dict[type, Callable[[Any], Iterable[Any]]] = {}
if TEMPLATE_TYPES:
    _template, _interpolation = TEMPLATE_TYPES
    _HOLDS[_template] = operator.attrgetter("interpolations")
    _HOLDS[_interpolation] = lambda interpolation: (interpolation.value,)
    _PLAIN |= set(TEMPLATE_TYPES)
    _FROZEN += TEMPLATE_TYPES
_CONTAINERS = (list, tuple, set, frozenset, dict)
MAX_DEPTH = 10_000
# Partials calling partials: calling the outermost recurses in C without a
# recursion check (a chain of 60,000 crashed CPython 3.11); no payload of a
# program's partials holds more than a few.
MAX_PARTIAL_CHAIN = 1_000
_PARTIAL_FUNC: Any = functools.partial.func  # the C field, past a subclass's attribute


def _calls_what_it_holds(cls: type) -> bool:
    """Whether instances of ``cls`` may call what their state holds: descriptors
    (``__get__``, ``__set__``) and callables."""
    return any(
        name in vars(klass)
        for klass in _TYPE_MRO.__get__(cls, type)[:-1]  # not object's
        for name in ("__get__", "__set__", "__call__")
    )


def _called_through(obj: Any) -> Any:
    """What calling ``obj`` calls in C without a recursion check: a partial's
    function, a bound method's or a staticmethod's; None for anything else."""
    if isinstance(obj, functools.partial):
        return _PARTIAL_FUNC.__get__(obj)
    if type(obj) is types.MethodType or type(obj) is staticmethod:
        return obj.__func__
    return None


_PARTIAL_SETSTATE: Any = functools.partial.__setstate__  # type: ignore[attr-defined]
"""How deep the objects a guarded load builds may nest (a tuple in a tuple ...,
or an object built from arguments built from ...). Deeper is refused: CPython
hashes a nested tuple recursively in C without a depth check, and a 200,000-deep
tuple used as a dict key overflows the C stack (a crash, not an exception), as
do other recursive C routines of builtin types."""

# Callees that never call the classes among their arguments: builtin containers
# (they store their items), subscription and type checks.
_STORING_TYPES = frozenset(
    {list, tuple, set, frozenset, dict, type, object, types.SimpleNamespace}
    | ({FROZENDICT} if FROZENDICT is not None else set())
)
_STORING_FUNCTIONS = (
    operator.getitem,
    isinstance,
    issubclass,
    repr,
    hash,
    len,
    copyreg.__newobj__,  # type: ignore[attr-defined]
    copyreg.__newobj_ex__,  # type: ignore[attr-defined]
    copyreg._reconstructor,  # type: ignore[attr-defined]
)
# Containers searched for modules among a call's arguments.
_SCANNED = frozenset({list, tuple, set, frozenset, dict})
# Views of a dict (OrderedDict's too, as picklable ships them): data like the
# dict they view, which is checked. Type variables are inert labels whose
# ``__module__`` names where they were made, not their code: they count as their
# class's module (typing). The receiver's own standard streams, as ``sys.stdout``
# names them, are admitted with ``sys``; their methods still belong to ``_io``.
_DICT_VIEWS = frozenset(DICT_VIEW_TYPES)
_IMMUTABLE = frozenset({type(None), bool, int, float, complex, str, bytes, range, slice})
# Intermediate steps of a path that run no code when walked (item and index steps).
_PATH_CONTAINERS = (tuple, list, dict, types.MappingProxyType, types.CellType)
_MUTABLE_BUILTINS = (dict, list, set, bytearray)

# Methods written in C: what a subscription of a receiver's object may run.
_C_METHODS = frozenset({types.WrapperDescriptorType, types.MethodDescriptorType})


_SHOWN_AS_IS = (str, bytes, int, float, bool, type(None))


def _shown(value: Any) -> str:
    """``value`` for a refusal's message: plain data as ``repr`` writes it, a
    tuple or list of it item by item, anything else by its type's name alone (a
    payload's object could run code in ``repr()``)."""
    if type(value) in _SHOWN_AS_IS:
        return repr(value)
    if type(value) in (tuple, list):
        inner = ", ".join(_shown(item) for item in value[:8])
        more = ", ..." if len(value) > 8 else ""
        return f"({inner}{more})" if type(value) is tuple else f"[{inner}{more}]"
    return f"<a {type(value).__name__}>"


def _is_metaclass(obj: Any) -> bool:
    """Whether ``obj`` is ``type`` or a subclass of it: calling it makes a class."""
    return isinstance(obj, type) and issubclass(obj, type)


def _subscript_runs_code(kind: type) -> bool:
    """Whether reading an item of a ``kind`` runs code: a ``__missing__``
    (``defaultdict``'s writes the key), or a ``__getitem__`` that is neither C
    code nor typing's (its special forms make new aliases)."""
    if class_lookup(kind, "__missing__") is not None:
        return True
    getitem = class_lookup(kind, "__getitem__")
    if getitem is None or type(getitem) in _C_METHODS:
        return False
    return not (type(getitem) is types.FunctionType and getitem.__module__ == "typing")


# Builtin types whose methods may write to their object: only these methods are admitted.
_WRITABLE_BUILTINS = (dict, list, set, bytearray, memoryview, BaseException)
_READ_ONLY_METHODS = frozenset(
    {
        # dict, set, list
        "get",
        "keys",
        "values",
        "items",
        "copy",
        "fromkeys",
        "index",
        "count",
        "union",
        "intersection",
        "difference",
        "symmetric_difference",
        "issubset",
        "issuperset",
        "isdisjoint",
        # bytearray and memoryview (new objects or reads)
        "decode",
        "hex",
        "find",
        "rfind",
        "rindex",
        "startswith",
        "endswith",
        "tobytes",
        "tolist",
        "toreadonly",
        *SAFE_DUNDERS,
    }
)

_DESCRIPTORS = (
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.ClassMethodDescriptorType,
    types.GetSetDescriptorType,
    types.MemberDescriptorType,
)
_BOUND_BUILTINS = (types.BuiltinFunctionType, types.MethodWrapperType)


class _Layout:
    """A class that adds ``__dict__`` and ``__weakref__`` to object's layout."""


# Since Python 3.15 every such class holds the same two descriptors, whose
# __objclass__ is object: each is a class's own attribute all the same, as a
# class's own descriptors were before (they read and set the instance's dict,
# and a class's __dict__ is its read-only view).
_SHARED_LAYOUT = {
    id(descriptor): descriptor
    for descriptor in (vars(_Layout)["__dict__"], vars(_Layout)["__weakref__"])
    if descriptor.__objclass__ is object
}
_TYPE_MODULE = type.__dict__["__module__"]
_TYPE_MRO = type.__dict__["__mro__"]


def _type_module(cls: type) -> Any:
    """The module a class belongs to, read past a metaclass's ``__module__``; where
    that is no string (wrapt's pure-Python proxies hold a property there), the one
    its body's functions name."""
    module = _TYPE_MODULE.__get__(cls, type)
    return module if type(module) is str else class_module(cls)


def _is_implicit(obj: Any) -> bool:
    return _IMPLICIT_IDS.get(id(obj), _IMPLICIT_IDS) is obj


def _dunder(name: Any) -> bool:
    return type(name) is str and name.startswith("__") and name.endswith("__")


def _refs(value: Any) -> int:
    return sys.getrefcount(value)


def _calibrate() -> int:
    value = object()
    return _refs(value)


# What _refs() says of an object that only the caller's local variable holds:
# fresh, made by the call that returned it (CPython reference counts).
_FRESH_REFS = _calibrate() if hasattr(sys, "getrefcount") else -1


class Policy:
    """An allow-list of module names (each also covers its submodules).

    .. versionchanged:: 0.2.0
       ``by_value_code``; by-value code is refused without it.

    Parameters
    ----------
    allowed:
        Module names or module objects. ``"__main__"`` also covers
        ``"__mp_main__"`` (a script re-imported by a spawn worker).
    by_value_code:
        Also load code shipped by value (functions of a script, lambdas,
        closures, code objects) claiming an allowed module. By-value code is
        arbitrary code, and once it runs the allow-list no longer applies to
        what it does: opt in only for payloads you would run as a program.
        Must be ``True`` exactly.

    Raises
    ------
    TypeError
        ``allowed`` is a single string, or holds something else than names
        and modules; ``by_value_code`` is not a bool.
    """

    def __init__(
        self, allowed: Iterable[Any], *, by_value_code: bool = False, unsafe: bool = False
    ) -> None:
        if isinstance(allowed, (str, bytes)):
            raise TypeError(
                f"allowed must be a list of module names, not a single string: "
                f"write allowed=[{allowed!r}]"
            )
        if type(by_value_code) is not bool:
            raise TypeError(
                f"by_value_code must be True or False, not {by_value_code!r}: by-value code "
                "is arbitrary code, opt in with by_value_code=True"
            )
        if type(unsafe) is not bool:
            raise TypeError(
                f"unsafe must be True or False, not {unsafe!r}: names that can run code "
                "are admitted only with unsafe=True"
            )
        inherited: bool = allowed.by_value_code if isinstance(allowed, Policy) else False
        inherited_unsafe: bool = allowed.unsafe if isinstance(allowed, Policy) else False
        names: list[str] = []
        for entry in allowed:
            name = entry.__name__ if isinstance(entry, types.ModuleType) else entry
            if type(name) is not str or not name or name != name.strip(" ."):
                raise TypeError(f"allowed holds {entry!r}: expected module names such as 'numpy'")
            names.append(name)
        if any(n in MAIN_MODULES for n in names):
            names.extend(MAIN_MODULES)
        for name in list(names):  # "__main__.f" is "__mp_main__.f" in a spawn worker
            top, dot, rest = name.partition(".")
            if top in MAIN_MODULES and dot:
                names.extend(f"{main}.{rest}" for main in MAIN_MODULES)
        self.names = tuple(sorted(set(names)))
        self.by_value_code: bool = by_value_code or inherited
        self.unsafe: bool = unsafe or inherited_unsafe
        self._prefixes = tuple(n + "." for n in self.names)
        self._exact = frozenset(self.names)
        self._exactly: dict[int, Any] = {}  # objects admitted by their exact name

    def __iter__(self) -> Iterator[str]:
        """The module names (a Policy is itself a valid ``allowed=``)."""
        return iter(self.names)

    def __repr__(self) -> str:
        code = ", by_value_code=True" if self.by_value_code else ""
        unsafe = ", unsafe=True" if self.unsafe else ""
        return f"Policy({list(self.names)!r}{code}{unsafe})"

    def allows(self, module: Any) -> bool:
        """Whether objects of ``module`` may be loaded.

        Never picklable's private modules (``picklable._reconstruct`` is named
        through its guarded rebuilders, the others not at all), even with
        ``"picklable"`` listed: they build code and classes unchecked.
        """
        if type(module) is not str or module.startswith("picklable._"):
            return False
        if not self.unsafe and _capability.runs_code(module):
            return False
        return module in self.names or module.startswith(self._prefixes)

    def _emitted(self, module: str, path: Path) -> bool:
        """A rebuild function that objects of an allowed module emit (see
        :data:`picklable._capability.EMITTED_BY`)."""
        if not all(type(step) is str for step in path):
            return False
        emitters = _capability.EMITTED_BY.get((module, ".".join(path)), ())
        return any(self.allows(emitter) for emitter in emitters)

    def names_exactly(self, *names: Any) -> bool:
        """Whether the allow-list names one of ``names`` (``module.qualname``) exactly."""
        return any(name in self._exact for name in names if type(name) is str)

    # ----------------------------------------------------------------- errors

    def refuse(
        self, what: str, module: Any, why: str = "", *, exact: str | None = None
    ) -> UnpicklingError:
        """The error for ``what``, refused because of ``module`` (or None: no module
        helps); ``exact``: the name that would admit this object alone."""
        top = module.partition(".")[0] if type(module) is str and module else None
        listed = ", ".join(repr(n) for n in self.names) or "nothing"
        if top in _NEVER_WORTH_ALLOWING or (
            type(module) is str and module.startswith("picklable._")
        ):
            # Listing these would admit eval and exec, or picklable's unguarded internals.
            top = None
        alone = f" (its classes), or {exact!r} (this object alone)," if top and exact else ""
        fix = (
            f"Fix: add {top!r}{alone} to allowed= if you trust what it does with "
            "arguments the payload chooses."
            if top
            else "Fix: do not load this payload under an allow-list (load it only if you "
            "trust whoever made it)."
        )
        return UnpicklingError(
            f"Refusing to load {what}: {why or f'module {module!r} is not in the allow-list'} "
            f"(allowed: {listed}). {fix}",
            reason=f"{what} not allowed",
            hint=f"add {top!r} to allowed="
            if top
            else "load it without an allow-list, if you trust it",
        )

    def refuse_code(self, what: str, module: Any) -> UnpicklingError:
        """The error for by-value code, refused without the opt-in or outside the list."""
        if not self.by_value_code:
            listed = ", ".join(repr(n) for n in self.names) or "nothing"
            names = list(
                self.names if module is None or self.allows(module) else (*self.names, module)
            )
            return UnpicklingError(
                f"Refusing to load {what}: code shipped by value is arbitrary code, "
                f"and this allow-list does not accept any (allowed: {listed}). Fix: if you "
                "would run this payload as a program, pass "
                f"allowed=picklable.Policy({names!r}, by_value_code=True).",
                reason=f"{what} not allowed (by-value code)",
                hint="opt in with picklable.Policy(..., by_value_code=True)",
            )
        return self.refuse(
            what, module, f"code shipped by value counts as module {module!r}, not allowed"
        )

    def refuse_capability(self, what: str, name: str) -> UnpicklingError:
        """The error for a name that can run code or act as this process."""
        listed = ", ".join(repr(n) for n in self.names) or "nothing"
        return UnpicklingError(
            f"Refusing to load {what}: {name} can run code or act as this process "
            "(evaluate or import code, load a pickle or a library, start a process, "
            "open files, change the process's state), and is refused even when the "
            f"allow-list names it (allowed: {listed}). Fix: do not load this payload "
            "under an allow-list; if you would run it as a program, pass "
            f"allowed=picklable.Policy({[*self.names]!r}, unsafe=True).",
            reason=f"{what} not allowed (can run code)",
            hint="load it only if you trust whoever made it (Policy(..., unsafe=True))",
        )

    def refuse_unnamed(self, what: str, name: str | None) -> UnpicklingError:
        """The error for a function of an allowed module that is no rebuild function."""
        listed = ", ".join(repr(n) for n in self.names) or "nothing"
        fix = (
            f"Fix: add {name!r} to allowed= if you trust what it does with arguments "
            "the payload chooses."
            if name
            else "Fix: do not load this payload under an allow-list."
        )
        return _Unnamed(
            f"Refusing to load {what}: an allowed module admits its classes and the "
            "functions its objects' reductions name to rebuild them, not its other "
            "functions and methods, which act (read files, change state, call what "
            f"they are given); those must be named exactly (allowed: {listed}). {fix}",
            reason=f"{what} not allowed (not named exactly)",
            hint=f"add {name!r} to allowed=" if name else "load it without an allow-list",
        )

    def check_callable(self, obj: Any, what: str, *names: Any) -> None:
        """Refuse ``obj`` (reached by ``names``, or returned by a call) unless it is
        data, a class, a rebuild function, a method of a builtin type, or named
        exactly; and refuse a name that can run code unless ``unsafe``."""
        if _is_implicit(obj):
            return
        own = _own_name(obj)
        if not self.unsafe:
            for name in (*names, own):
                if _capability.runs_code(name):
                    raise self.refuse_capability(what, name)
        if isinstance(obj, (type, types.ModuleType)) or not _callable(obj):
            return
        if _builtin_owned(obj) or _is_constructor(obj) or _stands_for_a_type(obj):
            return
        if _is_annotate(obj) or _capability.is_rebuild_function(obj):
            return
        if self.names_exactly(*names, own):
            self._exactly[id(obj)] = obj  # what wraps it is checked against it later
            return
        raise self.refuse_unnamed(what, next((n for n in names if n), own))

    # -------------------------------------------------------------- admission

    def admit(
        self,
        obj: T,
        what: str,
        *,
        named: bool = True,
        found_in: str | None = None,
        names: tuple[str, ...] = (),
    ) -> T:
        """Return ``obj`` if it belongs to an allowed module (or is implicit), else raise.

        ``found_in``: the module whose namespace holds ``obj`` (an extension type
        that says ``builtins`` without being one counts as that module's).
        ``named``: ``obj`` was reached by a name (a global, a path, ``getattr``);
        plain data reached so is refused (a module's dict or list leads to all it
        holds), and a callable must be a rebuild function or named exactly (see
        :meth:`check_callable`). Otherwise ``obj`` is a value (what a call
        returned): plain data is admitted if every object inside is, and it is no
        module's namespace.
        """
        if _is_implicit(obj):
            return obj
        t = type(obj)
        if t in _DICT_VIEWS and not named:
            self._admit_contents(obj.mapping, what)  # type: ignore[attr-defined]
            return obj
        if t in _PLAIN:
            if t in _IMMUTABLE:
                return obj
            if named and t not in _FROZEN:
                # A module's dict or list leads to everything it holds, and
                # whatever modifies it modifies the module.
                raise self.refuse(
                    what, None, f"it is a {t.__name__} that a module holds, not an object of one"
                )
            self._admit_contents(obj, what, named=named)
            return obj
        self._admit_object(obj, what, 0, found_in)
        if named:
            self.check_callable(obj, what, *names)
        return obj

    def _admit_contents(self, root: Any, what: str, *, named: bool = False) -> None:
        """Every object inside a container a call returned (iteratively, each once)."""
        seen: set[int] = set()
        todo = [root]
        while todo:
            current = todo.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            t = type(current)
            if t in _MAPPINGS:
                if t is dict and _is_namespace(current):
                    raise self.refuse(what, None, "it is a module's namespace (or sys.modules)")
                todo.extend(current.keys())
                todo.extend(current.values())
            elif t in (list, tuple, set, frozenset):
                todo.extend(current)
            elif t in _HOLDS:
                todo.extend(_HOLDS[t](current))
            elif t in _DICT_VIEWS:
                todo.append(current.mapping)
            elif t in _PLAIN or _is_implicit(current):
                continue
            else:
                self._admit_object(current, f"{what} (an object inside it)", 0)
                if named:
                    self.check_callable(current, f"{what} (an object inside it)")

    def _admit_object(self, obj: Any, what: str, depth: int, found_in: str | None = None) -> None:
        """The module check for anything but plain data (see :meth:`admit`)."""
        if _is_implicit(obj) or self._exactly.get(id(obj), self) is obj:
            return
        if depth > 8:
            raise self.refuse(what, None, "it wraps callables too deeply to check")
        if type(obj) is types.CodeType:
            if not self.by_value_code:
                raise self.refuse_code("a code object", None)
            return
        if isinstance(obj, types.ModuleType):
            name = getattr(obj, "__name__", None)
            if not self.allows(name):
                raise self.refuse(what, name, f"it is the module {name!r}, not allowed")
            return
        if isinstance(obj, type):
            module = _type_module(obj)
            if module == "builtins" and found_in is not None and _misnamed(obj):
                module = found_in  # an extension type that never set its module (wrapt's)
            if not self.allows(module):
                raise self.refuse(what, module, f"it belongs to module {module!r}, not allowed")
            return
        if found_in == "sys" and any(obj is getattr(sys, n, None) for n in STANDARD_STREAMS):
            return
        t = type(obj)
        if t is LAZY_IMPORT_TYPE:
            # A lazy import (3.15) belongs to the module it imports when first used.
            spec = lazy_import_spec(obj)
            module = None if spec is None else spec[0]
            if not self.allows(module):
                raise self.refuse(what, module, f"it imports module {module!r}, not allowed")
            return
        if t in _DESCRIPTORS:
            if _SHARED_LAYOUT.get(id(obj)) is obj:
                return
            owner = obj.__objclass__
            self._admit_object(owner, what, depth + 1)
            self._check_builtin_name(owner, obj.__name__, what)
            return
        if t in _BOUND_BUILTINS:
            owner = obj.__self__
            if owner is None or isinstance(owner, types.ModuleType):
                module = getattr(owner, "__name__", None) or getattr(obj, "__module__", None)
                if not self.allows(module) and not _is_implicit(obj):
                    raise self.refuse(what, module, f"it belongs to module {module!r}, not allowed")
                return
            if type(owner) in _PLAIN and type(owner) not in _IMMUTABLE:
                self.admit(owner, what, named=False)
            else:
                self._admit_object(owner, what, depth + 1)
            if not _capability.is_rebuild_function(obj):  # zoneinfo.ZoneInfo._unpickle
                self._check_builtin_name(type(owner), obj.__name__, what)
            return
        if t is types.MethodType:
            self._admit_object(obj.__func__, what, depth + 1)
            owner = obj.__self__
            if type(owner) not in _PLAIN:
                self._admit_object(owner, what, depth + 1)
            return
        # Wrappers of builtin types call what they wrap: that must belong too.
        inner = _WRAPPED_CALLABLES.get(t)
        if inner is not None:
            for wrapped in inner(obj):
                if wrapped is not None:
                    self._admit_object(wrapped, what, depth + 1)
        try:
            # Functions, classes' instances and wrappers (functools.wraps copies
            # it) say which module they belong to.
            module = getattr(obj, "__module__", None)
        except Exception:
            module = None
        if type(module) is not str or t in TYPEVAR_TYPES or t is SENTINEL_TYPE:
            module = None  # its class's module decides, whatever module it names
        if IMPLICIT_TYPES.get(id(t)) is t and (
            module is None or inner is not None or module == _type_module(t)
        ):
            return  # an instance of an implicit class (a partial, a cell, an exception)
        if module is None:
            module = _type_module(t)  # instances of C types: their type's
        if not self.allows(module):
            raise self.refuse(what, module, f"it belongs to module {module!r}, not allowed")

    def _check_builtin_name(self, owner: Any, name: Any, what: str) -> None:
        """Of a builtin type's methods, only public ones and :data:`SAFE_DUNDERS`; of
        the mutable builtins (dict, list, set, bytearray, exceptions), only those that
        read; never the format methods of str, which walk attributes."""
        if type(name) is not str:
            raise self.refuse(what, None, "a method without a name")
        heap = isinstance(owner, type) and bool(owner.__flags__ & (1 << 9))
        if name.startswith("_") and name not in SAFE_DUNDERS and not heap:
            raise self.refuse(
                what, None, f"{name!r} of a builtin type is not an attribute a payload may use"
            )
        if not isinstance(owner, type) or heap:
            return
        if issubclass(owner, str) and name in ("format", "format_map"):
            raise self.refuse(
                what, None, "a format string reads any attribute of its arguments (__globals__...)"
            )
        if issubclass(owner, _WRITABLE_BUILTINS) and name not in _READ_ONLY_METHODS:
            if self.by_value_code:
                return  # picklable's copies of functions fill their globals with dict.update
            raise self.refuse(
                what,
                None,
                f"{owner.__name__}.{name} modifies its object, which a payload may hand it "
                "(a module's dict a call returned, through map or a partial)",
            )

    # ------------------------------------------------------------------ names

    def implicit(self, module: Any, name: Any) -> Any:
        """What an always-admitted name loads as, None if ``module.name`` is none:
        IMPLICIT's object; one of :data:`WITH_CODE_ONLY` with by-value code, else
        its stand-in."""
        found = IMPLICIT.get((module, name))
        if found is None and (module, name) in WITH_CODE_ONLY:
            key = (module, name)
            found = WITH_CODE_ONLY[key] if self.by_value_code else _WITHHELD[key]
        return found

    def find_class(self, module: str, name: str, *, python2_names: bool = True) -> Any:
        """What a GLOBAL opcode naming ``module`` + ``name`` loads, if admitted.

        ``python2_names``: read Python 2 names as their Python 3 ones first (as
        pickle does for protocols 0-2 with ``fix_imports``); never otherwise, so a
        name no Python 3 module has (``exceptions.OSError`` in a protocol 4
        payload) is refused as the name it is.
        """
        # Protocols 0-2 write Python 2 names for builtins and copyreg; read them
        # as their Python 3 names before checking (only names Python 3 lacks).
        if not python2_names:
            pass
        elif (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[module, name]
        elif module in _PY2_MODULES:
            module = _PY2_MODULES[module]
        what = f"{module}.{name}"
        implicit = self.implicit(module, name)
        if implicit is not None:
            return implicit
        if type(module) is not str or type(name) is not str:
            raise self.refuse(repr(what), None, "a global is named by two strings")
        if (
            not self.allows(module)
            and not self.names_exactly(what)
            and not self._emitted(module, tuple(name.split(".")))
        ):
            raise self.refuse(what, module, exact=what)
        return self.walk(module, tuple(name.split(".")), what)

    def walk(self, module: str, path: Path, what: str) -> Any:
        """Follow ``path`` from ``module``, checking every step and every object on the way.

        A path the allow-list names exactly (``"numpy.fromfile"``) is followed
        without checking the modules and classes on the way (the list named them),
        and leads to what it names, unless that can run code.
        """
        if not self.unsafe and _capability.runs_code(module):
            raise self.refuse_capability(what, module)
        dotted = ".".join((module, *path)) if all(type(s) is str for s in path) else None
        # What a wrapper or a method wraps is named with it (the recursion guard of
        # a dataclass's __repr__ calls the function it wraps, as a method its function).
        names = [dotted] if dotted else []
        names += [
            ".".join((module, *path[:at]))
            for at, step in enumerate(path)
            if step in ("__wrapped__", "__func__") and all(type(s) is str for s in path[:at])
        ]
        exact = not self.allows(module) and (
            self.names_exactly(*names) or self._emitted(module, path)
        )
        if not exact and not self.allows(module):
            raise self.refuse(what, module, exact=dotted)
        obj = _reconstruct._import(module)
        if not path:
            raise self.refuse(what, None, "a reference names an object in the module")
        home = None
        for step in path:
            home = obj.__name__ if isinstance(obj, types.ModuleType) else None
            obj = self._step(obj, step, what, home, checked=not exact)
        if exact:
            self.check_callable(obj, what, *names)
            if type(obj) not in _IMMUTABLE:
                self._exactly[id(obj)] = obj
            return obj
        return self.admit(obj, what, found_in=home, names=tuple(names))

    def _step(
        self, obj: Any, step: Any, what: str, home: str | None = None, *, checked: bool = True
    ) -> Any:
        """One step of a path: allowed on ``obj``? Then the object it leads to, checked."""
        if type(step) is str:
            if not step or step == "<locals>":
                raise self.refuse(what, None, f"the name {_shown(step)} leads nowhere")
            if _dunder(step):
                self._check_dunder_step(obj, step, what)
                found = vars(obj) if step == "__dict__" else _getattr(obj, step, what)
            else:
                found = _getattr(obj, step, what)
        elif type(step) is int and isinstance(obj, (tuple, list)):
            found = _item(obj, step, what)
        elif type(step) is tuple and len(step) == 1 and isinstance(obj, types.MappingProxyType):
            found = _item(obj, step[0], what)
        else:
            raise self.refuse(what, None, f"the step {_shown(step)} is no step of a located path")
        # Walking a container's items runs no code; anything else on the way
        # (a module in between included) must belong to an allowed module.
        if checked and (
            isinstance(found, types.ModuleType) or not isinstance(found, _PATH_CONTAINERS)
        ):
            self._admit_object(found, what, 0, home)
        return found

    def _check_dunder_step(self, obj: Any, name: str, what: str) -> None:
        """A dunder step: a class's own attribute, or one of the locator's steps."""
        if isinstance(obj, types.ModuleType):
            if obj is sys and name in STANDARD_STREAMS:
                return  # sys.__stdout__: the stream, checked like sys.stdout
            raise self.refuse(
                what, None, f"{name!r} of a module leads to everything the module imported"
            )
        if isinstance(obj, type):
            if name == "__dict__":
                return  # a class's namespace (read-only); its items are checked
            self._check_class_attribute(obj, name, what)
            return
        if name in _PATH_DUNDERS:
            return
        raise self.refuse(what, None, f"the step {name!r} leads outside the module")

    def _check_class_attribute(self, cls: type, name: str, what: str) -> None:
        """A class's dunder attribute: defined by an allowed class, or a safe builtin one."""
        if name == "__new__":
            return
        stored = _STORED_AS.get(name, name)
        for klass in _TYPE_MRO.__get__(cls, type):
            namespace = vars(klass)
            if name in namespace or stored in namespace:
                if klass.__flags__ & (1 << 9) and self.allows(_type_module(klass)):
                    return  # the allowed module's own code
                if name in SAFE_DUNDERS:
                    return
                break
        raise self.refuse(
            what, None, f"{name!r} of {cls.__qualname__} is not an attribute a payload may use"
        )

    def by_value(self, module: Any, what: str) -> None:
        """A class built by value counts as its ``__module__``."""
        if type(module) is not str:
            # A descriptor there, and no function of its body names its module.
            raise self.refuse(
                f"{what} shipped by value",
                None,
                f"it names no module (its __module__ is a {type(module).__qualname__})",
            )
        if not self.allows(module):
            raise self.refuse(
                f"{what} shipped by value",
                module,
                f"it counts as module {module!r}, not allowed",
            )


def _builtins_own(cls: type) -> bool:
    """A type of module ``builtins`` (``int``, ``bytearray``, ``slice``): made from
    its arguments, as its instances are."""
    return (
        not cls.__flags__ & (1 << 9)
        and _type_module(cls) == "builtins"
        and getattr(builtins, cls.__name__, None) is cls
    )


def _misnamed(cls: type) -> bool:
    """An extension type that says ``builtins`` without being one of builtins' own."""
    return (
        not cls.__flags__ & (1 << 9)
        and _type_module(cls) == "builtins"
        and getattr(builtins, cls.__name__, None) is not cls
    )


def _callable(obj: Any) -> bool:
    """``callable(obj)``, read from its type (no hook of the object runs)."""
    return any("__call__" in vars(klass) for klass in _TYPE_MRO.__get__(type(obj), type))


def _own_name(obj: Any) -> str | None:
    """``module.qualname`` of a class, a function or a method, by what it is; None
    for other objects (read without running any of their code)."""
    t = type(obj)
    if isinstance(obj, type):
        return f"{_type_module(obj)}.{_TYPE_QUALNAME.__get__(obj, type)}"
    if isinstance(obj, types.ModuleType):
        name = getattr(obj, "__name__", None)
        return name if type(name) is str else None
    if t in _DESCRIPTORS:
        owner = obj.__objclass__
        return f"{_own_name(owner)}.{obj.__name__}"
    if t in _BOUND_BUILTINS:
        owner = obj.__self__
        name = obj.__name__
        if owner is None:
            module = getattr(obj, "__module__", None)
            return f"{module}.{name}" if type(module) is str else None
        if isinstance(owner, types.ModuleType):
            return f"{owner.__name__}.{name}"
        base = _own_name(owner if isinstance(owner, type) else type(owner))
        return f"{base}.{name}"
    if t is types.MethodType:
        return _own_name(obj.__func__)
    if t is types.FunctionType or t.__name__ == "cython_function_or_method":
        module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        if type(module) is str and type(qualname) is str:
            return f"{module}.{qualname}"
    return None


def _emitted_rebuild(func: Any, value: Any) -> bool:
    """``value`` is what a rebuild function that an allowed module's objects emit
    (:data:`picklable._capability.EMITTED_BY`) made: an object of the rebuild
    function's own package (a pyarrow array for pandas' strings), no callable."""
    name = _own_name(func)
    if name is None or not _capability.is_rebuild_function(func):
        return False
    module, _, qualname = name.rpartition(".")
    if (module, qualname) not in _capability.EMITTED_BY or _callable(value):
        return False
    owner = _type_module(type(value))
    return type(owner) is str and owner.partition(".")[0] == module.partition(".")[0]


def _heap(cls: Any) -> bool:
    """A class made by a ``class`` statement (not a builtin or extension type)."""
    return isinstance(cls, type) and bool(cls.__flags__ & (1 << 9))


_REBUILD_DECLARATIONS = (
    "__reduce__",
    "__reduce_ex__",
    "__getnewargs__",
    "__getnewargs_ex__",
    "__getinitargs__",
)


# Kinds of picklable's own table whose reductions rebuild an object from its state
# (never calling its class with arguments): a class of these kinds declares nothing.
# Streams pickle as the receiver's own (``sys.stdout``) or not at all, as do the
# kinds picklable refuses: none is rebuilt by calling its class either.
_BUILT_FROM_STATE = frozenset(
    {"data", "function", "class", "instance", "callable instance", "stream", "refused"}
)


def _declares_rebuild(cls: type) -> bool:
    """Whether ``cls`` or a base other than ``object`` says how its instances are
    rebuilt (a reduction method, a ``copyreg`` reducer for it or its metaclass), or
    picklable's own table rebuilds its kind by calling it (weak collections,
    ``abc.abstractclassmethod``, property subclasses)."""
    if type(cls) in copyreg.dispatch_table:
        return True
    if table.kind_for(cls).name not in _BUILT_FROM_STATE:
        return True
    mro = _TYPE_MRO.__get__(cls, type)
    for at, klass in enumerate(mro):
        if klass is object:
            continue
        if klass in copyreg.dispatch_table:
            return True
        namespace = vars(klass)
        if any(name in namespace for name in _REBUILD_DECLARATIONS):
            return not _new_below_c_reduction(mro, at)
    return False


def _new_below_c_reduction(mro: tuple[type, ...], at: int) -> bool:
    """Whether the reduction ``mro[at]`` declares is a builtin or extension type's
    ``__reduce__``/``__reduce_ex__`` (whose code may rebuild through a function of
    its own, never calling the class: ``ndarray``'s names ``_reconstruct``) that a
    class's ``__new__`` below it overrides (``numpy.memmap``, whose ``__new__``
    opens and creates files): that reduction says nothing about calling that
    ``__new__`` with arguments. A ``__getnewargs__`` does (pickle hands its values
    to ``cls.__new__``), and so does a class's own (Python) reduction."""
    declarer = mro[at]
    if _heap(declarer) or not any(
        name in vars(declarer) for name in ("__reduce__", "__reduce_ex__")
    ):
        return False
    return any(_heap(klass) and "__new__" in vars(klass) for klass in mro[:at])


def _is_annotate(obj: Any) -> bool:
    """A class's or a function's ``__annotate__`` (PEP 649, Python 3.14+): the code of
    its annotations, which reading ``__annotations__`` runs anyway; it comes with
    what it annotates."""
    return type(obj) is types.FunctionType and obj.__name__ == "__annotate__"


def _stands_for_a_type(obj: Any) -> bool:
    """An object that stands for a class where classes are expected (PEP 560:
    its type defines ``__mro_entries__``): ``typing.List``, ``List[int]``, a
    ``NewType``; calling it makes an instance, as calling a class does."""
    return any("__mro_entries__" in vars(klass) for klass in _TYPE_MRO.__get__(type(obj), type))


def _builtin_owned(obj: Any) -> bool:
    """A method of a builtin or always-admitted type (``dict.get``, ``[].index``):
    what it may do is :meth:`Policy._check_builtin_name`'s to say."""
    t = type(obj)
    if t in _DESCRIPTORS:
        owner = obj.__objclass__
    elif t in _BOUND_BUILTINS:
        owner = obj.__self__
        if owner is None or isinstance(owner, types.ModuleType):
            return False
        if not isinstance(owner, type):
            owner = type(owner)
    else:
        return False
    if IMPLICIT_TYPES.get(id(owner)) is owner:
        return True
    return (
        not owner.__flags__ & (1 << 9)
        and _type_module(owner) == "builtins"
        and getattr(builtins, owner.__name__, None) is owner
    )


def _new_owner(new: Any, cls: Any) -> type | None:
    """The class of ``cls``'s MRO whose ``__new__`` is ``new``, or None."""
    if not isinstance(cls, type):
        return None
    klass: type
    for klass in _TYPE_MRO.__get__(cls, type):
        raw = vars(klass).get("__new__")
        if raw is new or (type(raw) is staticmethod and raw.__func__ is new):
            return klass
    return None


def _is_constructor(obj: Any) -> bool:
    """A class's ``__new__`` (``numpy.ndarray.__new__``): making an instance, as
    naming the class does."""
    if getattr(obj, "__name__", None) != "__new__":
        return False
    t = type(obj)
    if t in _BOUND_BUILTINS:
        return isinstance(obj.__self__, type)
    return t is types.FunctionType  # a class's own __new__, a staticmethod


class _Unnamed(UnpicklingError):
    """A function or method of an allowed module that the list does not name exactly."""


class _NotThere(UnpicklingError):
    """A name of a path that this environment does not have (not a refusal)."""


def _getattr(obj: Any, name: str, what: str) -> Any:
    try:
        return getattr(obj, name)
    except AttributeError as exc:
        raise _NotThere(
            f"Cannot load {what}: {exc}. Fix: install the same version on both sides.",
            reason=f"{what} not found",
            hint="install the same version on both sides",
        ) from exc


def _item(obj: Any, key: Any, what: str) -> Any:
    try:
        return obj[key]
    except (LookupError, TypeError) as exc:
        raise _NotThere(
            f"Cannot load {what}: no item {key!r} there ({exc}). Fix: install the same "
            "version on both sides.",
            reason=f"{what} not found",
            hint="install the same version on both sides",
        ) from exc


# Implicit types whose instances call other objects (when called, or when the
# attribute they implement is read): what they call.
_WRAPPED_CALLABLES: dict[type, Callable[[Any], tuple[Any, ...]]] = {
    staticmethod: lambda obj: (obj.__func__,),
    classmethod: lambda obj: (obj.__func__,),
    functools.partial: lambda obj: (obj.func,),
    property: lambda obj: (obj.fget, obj.fset, obj.fdel),
    functools.cached_property: lambda obj: (getattr(obj, "func", None),),
    types.GenericAlias: lambda obj: (obj.__origin__,),
}

IMPLICIT_TYPES: dict[int, type] = {
    id(value): value
    for value in (*IMPLICIT.values(), types.TracebackType)
    if isinstance(value, type)
}
"""The implicit classes, by id: their instances need no module of their own
(tracebacks are made by picklable's ``_make_traceback`` only)."""

# id(module.__dict__) -> that dict, for the modules of sys.modules; rebuilt when
# sys.modules grows or shrinks.
_namespaces: dict[int, Any] = {}  # swapped whole, never changed in place
_namespaces_of = -1


def _is_namespace(obj: dict[Any, Any]) -> bool:
    """Whether ``obj`` is a module's ``__dict__`` or ``sys.modules`` itself."""
    global _namespaces, _namespaces_of
    if obj is sys.modules:
        return True
    namespaces = _namespaces
    if len(sys.modules) != _namespaces_of:
        # Rebuilt aside and swapped in one assignment: a load in another thread
        # never sees it half-built.
        namespaces = {}
        for module in list(sys.modules.values()):
            namespace = getattr(module, "__dict__", None)
            if type(namespace) is dict:
                namespaces[id(namespace)] = namespace
        _namespaces, _namespaces_of = namespaces, len(sys.modules)
    return namespaces.get(id(obj)) is obj


# ------------------------------------------------------------ the unpickler


_ARGUMENTS: dict[str, tuple[str, ...]] = {
    name: tuple(inspect.signature(rebuilder.function).parameters)
    for name, rebuilder in _reconstruct.REBUILDERS.items()
}


def _constructors(cls: type) -> set[type]:
    """The classes whose ``__new__`` and ``__init__`` calling ``cls`` runs."""
    owners = set()
    for name in ("__new__", "__init__"):
        for klass in _TYPE_MRO.__get__(cls, type):
            if name in vars(klass):
                owners.add(klass)
                break
    return owners


def _arguments(rebuilder: _reconstruct.Rebuilder, args: tuple[Any, ...]) -> dict[str, Any]:
    """The payload's positional arguments of ``rebuilder``, by parameter name."""
    return dict(zip(_ARGUMENTS[rebuilder.name], args))


# pickle's pure-Python unpickler: one handler per opcode, which this one replaces
# where an opcode reaches, calls or modifies an object. (Untyped in typeshed.)
_PythonUnpickler: Any = pickle._Unpickler


class GuardedUnpickler(_PythonUnpickler):  # type: ignore[misc]
    """pickle's pure-Python unpickler with every reach, call and write checked.

    Parameters
    ----------
    file:
        A binary file to read one or more payloads from.
    policy:
        What the payloads may reach (a :class:`Policy`, or module names).
    fix_imports, encoding, errors, buffers:
        As for :class:`pickle.Unpickler`.
    persistent_load:
        A receiver's own ``persistent_load`` (a :class:`picklable.Unpickler`
        subclass's); what it returns is checked like any named object.
    """

    dispatch: ClassVar[dict[int, Any]] = dict(_PythonUnpickler.dispatch)
    # Stand-ins a class's dunder may hold: called, they refuse (_allow_calls).
    inert_types: ClassVar[frozenset[type]] = frozenset({_Withheld})

    def __init__(
        self,
        file: IO[bytes],
        policy: Iterable[Any],
        *,
        fix_imports: bool = True,
        encoding: str = "ASCII",
        errors: str = "strict",
        buffers: Iterable[Any] | None = None,
        persistent_load: Callable[[Any], Any] | None = None,
        _shared: GuardedUnpickler | None = None,
    ) -> None:
        super().__init__(
            file, fix_imports=fix_imports, encoding=encoding, errors=errors, buffers=buffers
        )
        self.policy = policy if isinstance(policy, Policy) else Policy(policy)
        self._receiver_persistent_load = persistent_load
        # pickle's pure-Python reader takes what a short read gives (a truncated
        # bytes object outside a frame would load short): read exactly, as C does.
        self._file_read = _exact_reader(file.read)
        self._file_readline = _line_reader(file.readline)
        if _shared is not None:
            # A nested payload (a script object's copy): one load, one record.
            self._named: dict[int, Any] = _shared._named
            self._made: dict[int, Any] = _shared._made
            self._seen: dict[int, Any] = _shared._seen
            self._classes: dict[int, Any] = _shared._classes
        else:
            self._named = {}  # reached by name: a module's, never modified
            self._made = {}  # built by an opcode, or new from a call: the payload's
            self._seen = {}  # returned by a call, held elsewhere too: not the payload's
            self._classes = {}  # what this payload's class rebuilders returned
        self.rebuilders = {
            name: _guard(self, rebuilder) for name, rebuilder in _reconstruct.REBUILDERS.items()
        }
        self._rebuilder_ids = {id(guarded): guarded for guarded in self.rebuilders.values()}
        # Containers handed to a call (see no_module_in); depth of what was built.
        self._passed: dict[int, Any] = {} if _shared is None else _shared._passed
        self._depth: dict[int, tuple[Any, int]] = {} if _shared is None else _shared._depth
        # Partials that another partial calls (see partial_calls).
        self._called_partials: dict[int, Any] = {} if _shared is None else _shared._called_partials
        # What _own_or_copy returned (see note_copy).
        self._copies: dict[int, Any] = {} if _shared is None else _shared._copies
        # Containers an iterator reads (see _into).
        self._lazy_inputs: dict[int, Any] = {} if _shared is None else _shared._lazy_inputs

    # ------------------------------------------------------------ bookkeeping

    def named(self, obj: T, what: str, *, admitted: bool = False) -> T:
        """Admit ``obj``, reached by a name (``admitted``: the walk to it checked it
        already), and remember it is not the payload's to modify."""
        if not admitted:
            self.policy.admit(obj, what)
        if type(obj) not in _IMMUTABLE:
            self._no_subscript_code(obj, what)
            self._no_receivers_buffer(obj, what)
            self._named[id(obj)] = obj
        return obj

    def result(self, value: T, what: str) -> T:
        """Admit what a call returned; it is the payload's if nothing else holds it."""
        if type(value) in _IMMUTABLE:
            return value
        key = id(value)
        if self._named.get(key) is value or self._made.get(key) is value:
            return value  # checked when it was reached or made
        self.policy.admit(value, what, named=False)
        if isinstance(value, type):
            if self._classes.get(key) is not value:
                self._check_class_result(value, what)
            return value
        if self._seen.get(key) is not value and _refs(value) <= _FRESH_REFS:
            self._made[key] = value  # only this call's caller holds it: new
        else:
            # Something else holds it: the receiver's own, as if reached by name.
            self._no_subscript_code(value, what)
            self._no_receivers_buffer(value, what)
            self._seen[key] = value
            self.policy.check_callable(value, what)
        return value

    def _check_class_result(self, cls: type, what: str) -> None:
        """A class a call returned: a builtin type, one its metaclass's declared
        reducer rebuilds (``copyreg``), or one its module holds under its name.
        Anything else was made by the call (``type(name, bases, ns)``, an Enum's
        functional API): a claim on a module by a class no module made."""
        if not cls.__flags__ & (1 << 9) or type(cls) in copyreg.dispatch_table:
            return
        module = _type_module(cls)
        found: Any = sys.modules.get(module) if type(module) is str else None
        for step in _TYPE_QUALNAME.__get__(cls, type).split("."):
            namespace = getattr(found, "__dict__", None)
            mapping = isinstance(namespace, (dict, types.MappingProxyType))
            found = namespace.get(step) if mapping else None  # type: ignore[union-attr]
        if found is not cls:
            raise self.policy.refuse(
                what,
                None,
                f"the call made a class that claims module {module!r}, which does not "
                "hold it under its name (classes travel by reference, or by value "
                "through picklable's class rebuilder, which checks the claim)",
            )

    def note_copy(self, obj: Any) -> None:
        """Record what ``_own_or_copy`` returned: the objects a copy's links name."""
        self._copies[id(obj)] = obj

    def made_copy(self, obj: Any) -> bool:
        """Whether ``obj`` is what ``_own_or_copy`` returned in this load."""
        return self._copies.get(id(obj)) is obj

    def named_or_made(self, obj: Any) -> bool:
        """Whether ``obj`` was reached by name, or made by this payload."""
        key = id(obj)
        return self._named.get(key) is obj or self._made.get(key) is obj

    def built_class(self, cls: Any) -> bool:
        """Whether ``cls`` is a class this payload (or an earlier one) built."""
        return isinstance(cls, type) and (self._classes.get(id(cls)) is cls or _tracker.built(cls))

    def made(self, value: T) -> T:
        """Record a new object a rebuilder made for the payload (see ``made_for``)."""
        self._made[id(value)] = value
        return value

    def made_class(self, cls: T) -> T:
        """Record a class one of this payload's class rebuilders returned."""
        self._classes[id(cls)] = cls
        return cls

    def check_target(
        self,
        obj: Any,
        what: str,
        *,
        own_setstate: bool = False,
        classes: bool = False,
        through: bool = True,
    ) -> None:
        """Refuse to modify ``obj`` unless the payload made it (see the module doc).

        ``own_setstate``: ``obj``'s own ``__setstate__`` does the writing (its class
        decides what state means): an object a call returned is accepted even if
        something else holds it, but still no module, class or object reached by
        name. ``classes``: a picklable state rebuilder, which may set the state of
        classes this payload's class rebuilders returned (and leaves alone those
        that originate here); pickle's own opcodes never modify a class.
        ``through``: the write goes through ``obj`` if it is a proxy (a setattr),
        so what it wraps must be the payload's too.
        """
        for _ in range(8):
            key = id(obj)
            if isinstance(obj, types.ModuleType):
                raise self.policy.refuse(what, None, "a payload may not modify a module")
            if isinstance(obj, type):
                if not classes or self._classes.get(key) is not obj:
                    raise self.policy.refuse(
                        what, None, "a payload may only set the state of classes it builds"
                    )
                return
            if self._named.get(key) is obj:
                raise self.policy.refuse(
                    what, None, "it is an object of a module, reached by name: not the payload's"
                )
            if not own_setstate and self._made.get(key) is not obj:
                raise self.policy.refuse(
                    what,
                    None,
                    "the payload did not make it (a call returned an object that something "
                    "else holds: a member, a cached object, a module's)",
                )
            # Writes through a proxy, a memoryview or an array view land on what
            # it wraps.
            if not through:
                return
            numpy = sys.modules.get("numpy")
            if type(obj) is memoryview:
                obj = obj.obj
            elif numpy is not None and isinstance(obj, numpy.ndarray):
                # A view writes into its base's memory (a module's array, read
                # through operator.getitem): the base must be the payload's too.
                self._check_view_base(obj.base, what)
                return
            elif type(obj) is not getattr(obj, "__class__", type(obj)):
                obj = getattr(obj, "__wrapped__", None)
                if obj is None:
                    return
            else:
                return
        raise self.policy.refuse(what, None, "it wraps objects too deeply to check")

    def _check_view_base(self, link: Any, what: str) -> None:
        """An array view's base (``link``), followed to the object that owns the memory
        (through arrays' ``base`` and memoryviews' ``obj``: a view of a view of a
        memoryview of a module's array): no link is this process's own, and the
        owner is made by the payload or held by the chain alone (a masked
        array's data, made by its rebuilder)."""
        numpy = sys.modules.get("numpy")
        for _ in range(64):  # one name for each link: its reference count is read
            if link is None:
                return
            key = id(link)
            if self._named.get(key) is link or self._seen.get(key) is link:
                break
            if numpy is not None and isinstance(link, numpy.ndarray) and link.base is not None:
                link = link.base
            elif type(link) is memoryview:
                link = link.obj
            elif self._made.get(key) is link or _refs(link) <= _FRESH_REFS + 1:
                return  # the owner: the payload's, or held by the view alone
            else:
                break
        raise self.policy.refuse(
            what,
            None,
            "it is a view of an array the payload did not make (a module's, or held "
            "elsewhere): a write into it would change that array",
        )

    def _call(self, func: Any, args: Any, what: str, kwargs: Any = None) -> Any:
        """Call ``func`` (admitted: it is on the stack) once :meth:`check_call`
        allows it. What it returns around this process's memory is not the
        payload's (see :meth:`_lends_memory`)."""
        self.check_call(func, args, what, kwargs)
        value = func(*args) if kwargs is None else func(*args, **kwargs)
        if self._lends_memory(func, args, kwargs):
            self._seen[id(value)] = value  # result() reads it as held elsewhere
        return value

    def _lends_memory(self, func: Any, args: Any, kwargs: Any) -> bool:
        """Whether the call is handed memory of this process: an array, a
        memoryview or a bytearray reached by name or held elsewhere (or a view
        of one), itself or in a list, tuple or dict it is given. What it returns
        may write there (pandas' NumpyExtensionArray wraps the array it gets)."""
        values: list[Any] = [*args, *(kwargs or {}).values()]
        if type(func) is functools.partial:
            values += [*func.args, *func.keywords.values()]
        numpy = sys.modules.get("numpy")
        for _ in range(2):  # the arguments, then the containers among them
            inner: list[Any] = []
            for value in values:
                if type(value) in (list, tuple):
                    inner += value
                elif type(value) is dict:
                    inner += value.values()
                elif self._receivers_memory(value, numpy):
                    return True
            values = inner
        return False

    def _receivers_memory(self, link: Any, numpy: Any) -> bool:
        for _ in range(64):  # the buffer, then what it views
            key = id(link)
            if self._named.get(key) is link or self._seen.get(key) is link:
                return type(link) in (memoryview, bytearray) or (
                    numpy is not None and isinstance(link, numpy.ndarray)
                )
            if numpy is not None and isinstance(link, numpy.ndarray):
                link = link.base
            elif type(link) is memoryview:
                link = link.obj
            else:
                return False
        return True

    def check_call(self, func: Any, args: Any, what: str, kwargs: Any = None) -> None:
        """Refuse the call ``func(*args, **kwargs)`` unless it may run: a mutating
        builtin method's ``self`` must be the payload's to modify, no module is
        among the arguments, a class is called only as its instances are rebuilt,
        and no class that may not be is handed to what may call it (but for
        picklable's rebuilders, whose guards check their own arguments). Also
        what a rebuilder calls with what the payload gave it (a state setter,
        a copy's builder) is checked here, before the rebuilder runs."""
        t = type(func)
        if func is operator.getitem and args:
            self._check_subscript(args[0], what)
        if t in _DESCRIPTORS and issubclass(func.__objclass__, _MUTABLE_BUILTINS) and args:
            self.check_target(args[0], f"{func.__qualname__}(...) on an object")
        elif t in _BOUND_BUILTINS and isinstance(func.__self__, _MUTABLE_BUILTINS):
            self.check_target(func.__self__, f"{func.__qualname__}(...)")
        if self._rebuilder_ids.get(id(func)) is not func:
            arguments = [args, kwargs]
            target, given, keywords = func, args, kwargs
            if t is functools.partial:
                arguments += [func.args, func.keywords]
                target, given = func.func, (*func.args, *args)
                keywords = {**func.keywords, **(kwargs or {})}
            self.no_module_in(arguments, f"the arguments of {_name_of(func)}(...)", True)
            self._note_lazy_inputs(target, arguments)
            self._check_construction(target, given, keywords, what)
            self._check_class_argument(target, given, what)
            if target is functools.partial and given:
                # A partial binding arguments to a class is that call, made later
                # (by whatever calls the partial: a defaultdict, a map).
                self._check_construction(given[0], given[1:], keywords, what)
            if not self._stores_only(target):
                self.no_constructor_in(given, keywords, target, what)
            if isinstance(target, type) and issubclass(target, functools.partial) and given:
                self.partial_calls(given[0], None, what)

    def _check_class_argument(self, target: Any, given: Any, what: str) -> None:
        """A rebuild function that constructs the class it is handed
        (``_new_Index(cls, d)`` runs ``cls.__new__(cls, **d)``) is handed a
        class of the kind it rebuilds, never another (``numpy.memmap``, which
        would open the file ``d`` names)."""
        required = _capability.class_argument(target)
        if required is None:
            return
        index, base = required
        if len(given) <= index:
            return  # the function refuses too few arguments itself
        cls = given[index]
        if not (isinstance(cls, type) and isinstance(base, type) and issubclass(cls, base)):
            raise self.policy.refuse(
                what,
                None,
                f"{_name_of(target)} constructs the class it is handed, here "
                f"{_name_of(cls)}, which is not a {_name_of(base)}: it would run its "
                "constructor with the payload's arguments",
            )

    def _check_subscript(self, obj: Any, what: str) -> None:
        """``obj[key]`` runs ``obj``'s ``__getitem__`` and ``__missing__``: on an
        object the payload did not make, only those of C code that reads (a
        ``defaultdict``'s ``__missing__`` writes the key into the receiver's
        registry; ``numpy.r_``'s ``__getitem__`` evaluates a string in its
        caller's frame). A class is subscripted as ``list[int]`` is, and typing's
        special forms as ``Union[int, T]`` is (their reduction: typing's own code,
        which makes a new alias)."""
        if isinstance(obj, type) or self._made.get(id(obj)) is obj:
            return
        self._no_subscript_code(obj, what)

    def _no_receivers_buffer(self, obj: Any, what: str) -> None:
        """Refuse an array, memoryview or bytearray of this process (reached by
        name, or returned by a call while something else holds it): pickle never
        names one (it copies it), and an object of the payload holding it (a
        ``UserDict``'s ``data``, a ``ChainMap``'s maps) would write into it from
        its own Python code, where no check of this unpickler runs."""
        numpy = sys.modules.get("numpy")
        if type(obj) in (memoryview, bytearray) or (
            numpy is not None and isinstance(obj, numpy.ndarray)
        ):
            raise self.policy.refuse(
                what,
                None,
                f"it is a {_name_of(type(obj))} of this process: pickle copies arrays "
                "and buffers, never names them, and what holds one may write into it",
            )

    def _no_subscript_code(self, obj: Any, what: str) -> None:
        """Refuse ``obj``, an object of this process (reached by name, or returned
        by a call while something else holds it), if reading an item of it runs
        code: an itemgetter, a map or a ChainMap would subscript it later, past
        every check of ``operator.getitem`` (see :meth:`_check_subscript`)."""
        kind = type(obj)
        for _ in range(8):
            if isinstance(obj, type) or not _subscript_runs_code(kind):
                return
            # A proxy (wrapt's pure-Python one) hands the item read to what it
            # wraps: that object decides.
            if kind is getattr(obj, "__class__", kind):
                break
            obj = getattr(obj, "__wrapped__", None)
            if obj is None:
                return
            kind = type(obj)
        raise self.policy.refuse(
            what,
            None,
            f"it is a {_name_of(kind)} of this process, whose __getitem__ or "
            "__missing__ runs code when an item is read (and may write into it)",
        )

    def partial_calls(self, func: Any, holder: Any, what: str) -> None:
        """A partial (``holder``, or one being made) is to call ``func``: refuse a
        chain of partials deeper than :data:`MAX_PARTIAL_CHAIN` (calling it runs
        the chain in C without a recursion check: a crash, not an exception),
        and a partial that another partial already calls made to call a partial
        (a chain built from the outside in, whose depth no count would see)."""
        if _called_through(func) is None:
            return
        if holder is not None and self._called_partials.get(id(holder)) is holder:
            raise self.policy.refuse(
                what,
                None,
                "a partial that another partial calls is made to call a partial: a chain "
                "of partials is built from the inside out",
            )
        inner: Any = func
        depth = 0
        while (then := _called_through(inner)) is not None:
            depth += 1
            if inner is holder:
                raise self.policy.refuse(
                    what, None, "the partial would call itself (calling it would crash)"
                )
            if depth > MAX_PARTIAL_CHAIN:
                raise self.policy.refuse(
                    what,
                    None,
                    f"it makes a chain of more than {MAX_PARTIAL_CHAIN:,} partials, each "
                    "calling the next (calling it would overflow the C stack: a crash, "
                    "not an exception)",
                )
            inner = then
        self._called_partials[id(func)] = func

    def _stores_only(self, target: Any) -> bool:
        """Whether ``target`` never calls the classes it is given: a rebuild function
        or ``copyreg``'s reconstructors (their class is checked as constructed), a
        container type that stores its items, a subscription, ``getattr``."""
        if _is_implicit(target) and isinstance(target, type):
            return target in _STORING_TYPES
        if getattr(target, "__self__", None) is self:  # guarded getattr, setattr
            return True
        return (
            _capability.is_rebuild_function(target)
            or _is_constructor(target)
            or any(target is f for f in _STORING_FUNCTIONS)
        )

    def no_constructor_in(self, given: Any, keywords: Any, target: Any, what: str) -> None:
        """Refuse a class among the arguments of a call that may call it (``map``,
        ``sorted``'s key, a ``defaultdict``'s factory, ``itertools.starmap``, a
        ``GenericAlias``, ``MethodType``, the functional Enum API ...) if that class
        may not be called with arguments the payload chose (see
        :meth:`_check_class_call`): what calls it runs outside this unpickler's checks."""
        todo: list[Any] = [given, keywords]
        seen: set[int] = set()
        while todo:
            current = todo.pop()
            if id(current) in seen or current is None:
                continue
            seen.add(id(current))
            t = type(current)
            if t in _SCANNED:
                todo.extend(current.items() if t is dict else current)
            elif t is functools.partial:
                todo.extend((current.func, current.args, current.keywords))
            elif t in (types.MethodType, staticmethod, classmethod):
                todo.append(current.__func__)
            elif t is types.GenericAlias:
                todo.append(current.__origin__)
            elif _is_metaclass(current):
                raise self.policy.refuse(
                    what,
                    None,
                    f"{_name_of(current)} is handed to "
                    f"{target if type(target) is str else _name_of(target)}, which may call "
                    "it to make a class, past the checks of picklable's class rebuilders",
                )
            elif isinstance(current, type) and self._refuses_arguments(current):
                raise self.policy.refuse(
                    what,
                    None,
                    f"{_name_of(current)} is handed to "
                    f"{target if type(target) is str else _name_of(target)}, which may call "
                    "it with arguments the payload chose, and that is not how its instances "
                    "are rebuilt: its constructor would run on them (and may open files)",
                )

    def _check_construction(self, func: Any, args: Any, kwargs: Any, what: str) -> None:
        """A class called with arguments (directly, through its ``__new__``, a
        ``partial`` or ``copyreg``'s reconstructors) only as its instances are rebuilt;
        a metaclass never makes a class here (see :meth:`_no_class_made`)."""
        if _is_metaclass(func) and len(args) + len(kwargs or ()) > 1:
            self._no_class_made(func, what)
        if _is_constructor(func) and args and _is_metaclass(args[0]) and len(args) > 2:
            self._no_class_made(args[0], what)
        if isinstance(func, type):
            self._check_class_call(func, args, kwargs, what, initialized=True)
        elif func is copyreg.__newobj__ and args:  # type: ignore[attr-defined]
            self._check_class_call(args[0], args[1:], kwargs, what)
        elif func is copyreg.__newobj_ex__ and len(args) == 3:  # type: ignore[attr-defined]
            self._check_class_call(args[0], args[1], args[2], what)
        elif func is copyreg._reconstructor and len(args) == 3:  # type: ignore[attr-defined]
            base, state = args[1], args[2]
            if base is not object:
                # copyreg's own reductions name a builtin base (list, dict ...) here,
                # called as it is; an extension type's constructor is checked (its
                # __init__ runs, even on a None state).
                given = () if state is None else (state,)
                self._check_class_call(base, given, None, what, initialized=True)
        elif _is_constructor(func) and args:
            self._check_class_call(args[0], args[1:], kwargs, what)
            owner = _new_owner(func, args[0])
            if owner is None:
                raise self.policy.refuse(
                    what,
                    None,
                    f"{_name_of(func)} is called to make a {_name_of(args[0])}, which does not "
                    "derive from its class (pickle's own way calls a class's own __new__)",
                )
            if owner is not args[0]:
                self._check_class_call(owner, args[1:], kwargs, what)

    def _no_class_made(self, metaclass: Any, what: str) -> None:
        """Refuse a class made by calling a metaclass (``type(name, bases, ns)``):
        making it registers it with its bases and runs their hooks, before any
        check of its namespace could run. A payload's classes are made by
        picklable's class rebuilders, whose guard checks the namespace first."""
        raise self.policy.refuse(
            what,
            None,
            f"{_name_of(metaclass)} would make a class, past the checks of picklable's "
            "class rebuilders (a class made registers with its bases, and runs their "
            "hooks, as it is made)",
        )

    def _check_class_call(
        self, cls: Any, args: Any, kwargs: Any, what: str, *, initialized: bool = False
    ) -> None:
        """Refuse to run the constructor of ``cls`` with arguments the payload chose
        unless that is how its instances are rebuilt: it (or a base) declares a
        reduction (``__reduce__``, ``__reduce_ex__``, ``__getnewargs(_ex)__``,
        ``__getinitargs__``, a ``copyreg`` reducer). A class that declares none is
        rebuilt from its state, its constructor never called with arguments
        (``logging.FileHandler(path)`` would open a file), and so is one whose
        ``__new__`` overrides a builtin or extension base that declares the reduction
        (``numpy.memmap``: ``ndarray``'s names ``_reconstruct``). Extension types
        count as classes do (``_io.TextIOWrapper(buffer)`` would close the buffer it
        wraps when collected); only the types of ``builtins`` are called as they are.

        ``initialized``: the call runs ``__init__`` too (``cls()``, not
        ``cls.__new__(cls)``): refused even without arguments, since pickle
        never writes it for such a class (``SysLogHandler()`` opens a socket)."""
        if not args and not kwargs and not initialized:
            return
        if not self._refuses_arguments(cls):
            return
        if not args and not kwargs:
            raise self.policy.refuse(
                what,
                None,
                f"{_name_of(cls)} is called, and that is not how its instances are "
                "rebuilt (its classes declare no __reduce__ that would: pickle makes one "
                "with its __new__ alone): its constructor would run (and may open files "
                "or sockets)",
            )
        raise self.policy.refuse(
            what,
            None,
            f"{_name_of(cls)} is called with arguments the payload chose, and that is "
            "not how its instances are rebuilt (its classes declare no __reduce__, "
            "__getnewargs__ or __getinitargs__ that would, and copyreg has no reducer for "
            "it; a builtin base's reduction does not vouch for a __new__ below it): its "
            "constructor would run on them (and may open files or sockets)",
        )

    def _refuses_arguments(self, cls: Any) -> bool:
        """Whether ``cls`` may not be called with arguments the payload chose (see
        :meth:`_check_class_call`)."""
        if not isinstance(cls, type) or _is_implicit(cls) or _builtins_own(cls):
            return False
        if self._classes.get(id(cls)) is cls or _tracker.built(cls):
            # Built from payloads: its own __new__ and __init__ are by-value code
            # (admitted only with by_value_code); those it inherits are not, and
            # a class made to derive from one vouches for nothing.
            return any(
                self._refuses_arguments(owner) for owner in _constructors(cls) if owner is not cls
            )
        return not _declares_rebuild(cls)

    def no_module_in(self, values: Any, what: str, passed: bool = False) -> None:
        """Refuse a module among ``values`` and the containers inside them: a
        module handed to a function is a namespace it may write into
        (``functools.update_wrapper``, ``UserDict.__init__``). ``passed``: the
        containers are arguments of a call, which may keep them (a lazy ``map``):
        a module put into one later is refused too."""
        todo = [values]
        seen: set[int] = set()
        while todo:
            current = todo.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            if passed and type(current) in _MUTABLE_BUILTINS:
                self._passed[id(current)] = current
            items: Any = current.values() if type(current) is dict else current
            kinds = set(map(type, items))
            if any(issubclass(kind, types.ModuleType) for kind in kinds):
                module = next(i for i in items if isinstance(i, types.ModuleType))
                raise self.policy.refuse(
                    what,
                    None,
                    f"it holds the module {module.__name__!r}: a module is never an "
                    "argument of a call (a function may write into it)",
                )
            if type(current) is dict and not kinds.isdisjoint(_SCANNED):
                todo.extend(k for k in current if type(k) in _SCANNED)
            if not kinds.isdisjoint(_SCANNED):
                todo.extend(i for i in items if type(i) in _SCANNED)

    def _into(self, target: Any, values: Any, what: str) -> None:
        """Items put into ``target``: into a container a call was given, no
        module and no class that may not be called with the payload's arguments
        (what it was given to may call its items); into one an iterator reads
        (``map``, ``zip``...), nothing: what it makes when iterated, and how deep
        it goes in C, would escape every check made when it was made."""
        if self._passed.get(id(target)) is target:
            self.no_module_in(values, what, True)
            self.no_constructor_in(list(values), None, "what the container was given to", what)
        if self._lazy_inputs.get(id(target)) is target:
            raise self.policy.refuse(
                what,
                None,
                "the container is read by an iterator made before (map, zip, ...): "
                "what it holds is given before the iterator is made",
            )

    def _note_lazy_inputs(self, target: Any, values: Any) -> None:
        """Record the containers an iterator made by ``target`` reads (see _into)."""
        if not (target is iter or (isinstance(target, type) and hasattr(target, "__next__"))):
            return
        todo, seen = [values], set()
        while todo:
            current = todo.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            if type(current) in _MUTABLE_BUILTINS:
                self._lazy_inputs[id(current)] = current
            if type(current) in _SCANNED:
                todo.extend(current.values() if type(current) is dict else current)

    # ------------------------------------------------------------- opcodes

    def find_class(self, module: str, name: str) -> Any:
        if module == "picklable._reconstruct":
            guarded = self.rebuilders.get(name) if type(name) is str else None
            if guarded is None:
                raise self.policy.refuse(
                    f"{module}.{name}", None, "it is not a rebuilder payloads may name"
                )
            return guarded
        if (module, name) in (("builtins", "getattr"), ("builtins", "setattr")) or (
            (module, name) in (("__builtin__", "getattr"), ("__builtin__", "setattr"))
        ):
            return self.guarded_getattr if name == "getattr" else self.guarded_setattr
        if (module, name) in _UNION_REDUCE and not self.policy.names_exactly(
            f"{module.lstrip('_')}.{name}", f"_{module.lstrip('_')}.{name}"
        ):
            # Unless the list names it: then it is the function itself, checked as named.
            return self.guarded_union if name == "reduce" else _UNION_OR
        python2_names = self.fix_imports and getattr(self, "proto", 0) < 3
        found = self.policy.find_class(module, name, python2_names=python2_names)
        return self.named(found, name, admitted=True)

    def persistent_load(self, pid: Any) -> Any:
        receiver = self._receiver_persistent_load
        if receiver is None:
            raise self.policy.refuse(
                "a persistent id", None, "this unpickler resolves no persistent ids"
            )
        return self.named(receiver(pid), f"persistent id {_shown(pid)}")

    def get_extension(self, code: int) -> None:
        # copyreg's registry names a global; its cache (filled by any earlier load,
        # guarded or not) would bypass the check: never read it, never fill it.
        key = copyreg._inverted_registry.get(code)  # type: ignore[attr-defined]
        if not key:
            raise self.policy.refuse(
                f"extension code {code}", None, "no extension is registered under it"
            )
        self.append(self.find_class(*key))

    def load_reduce(self) -> None:
        stack = self.stack
        args = stack.pop()
        func = stack[-1]
        what = f"the result of {_name_of(func)}(...)"
        if type(args) is not tuple:
            raise pickle.UnpicklingError("REDUCE needs a tuple of arguments")
        # (No local holds the call's value: result() tells new objects by their references.)
        stack[-1] = self.result(self._emitted(func, self._call(func, args, what)), what)
        self._deeper(stack[-1], args)

    def _emitted(self, func: Any, value: T) -> T:
        """Record ``value`` as the payload's if a rebuild function that an allowed
        module's objects emit made it (see :func:`_emitted_rebuild`)."""
        if _emitted_rebuild(func, value):
            self._made[id(value)] = value
        return value

    dispatch[pickle.REDUCE[0]] = load_reduce

    def _instantiate(self, klass: Any, args: list[Any]) -> None:
        what = f"an instance of {_name_of(klass)}"
        if args or not isinstance(klass, type) or hasattr(klass, "__getinitargs__"):
            value = self._call(klass, tuple(args), what)
        else:
            new: Any = klass.__new__
            value = new(klass)
        self.append(self.result(value, what))
        self._deeper(self.stack[-1], args)

    def load_newobj(self) -> None:
        args = self.stack.pop()
        cls = self.stack.pop()
        self.append(self._new(cls, args, None))

    dispatch[pickle.NEWOBJ[0]] = load_newobj

    def load_newobj_ex(self) -> None:
        kwargs = self.stack.pop()
        args = self.stack.pop()
        cls = self.stack.pop()
        self.append(self._new(cls, args, kwargs))

    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex

    def _new(self, cls: Any, args: Any, kwargs: Any) -> Any:
        if not isinstance(cls, type) or type(args) is not tuple:
            raise pickle.UnpicklingError("NEWOBJ needs a class and a tuple of arguments")
        if kwargs is not None and type(kwargs) is not dict:
            raise pickle.UnpicklingError("NEWOBJ_EX needs a dict of keyword arguments")
        what = f"an instance of {_name_of(cls)}"
        self._check_class_call(cls, args, kwargs, what)
        if issubclass(cls, functools.partial) and args:
            # What it binds, as for partial(...) by REDUCE.
            self._check_construction(args[0], args[1:], kwargs, what)
            self.partial_calls(args[0], None, what)
        value = self.result(self._call(cls.__new__, (cls, *args), what, kwargs), what)
        self._deeper(value, args if kwargs is None else (*args, kwargs))
        return value

    def load_build(self) -> None:
        stack = self.stack
        state = stack.pop()
        inst = stack[-1]
        what = f"state set on {_name_of(type(inst))} object"
        if isinstance(inst, type):
            raise self.policy.refuse(what, None, "pickle's BUILD never sets a class's state")
        self.check_state(inst, state, what)
        self._grown(inst, (state,))
        # Its class's (pickle asks the instance: a payload could have set one there).
        setstate = _reconstruct.class_setstate(inst)
        if setstate is not None:
            # The object's own class decides what its state means (an allowed
            # module's class: numpy's cached dtypes are set so); still never on a
            # module, a class or an object reached by name, and a builtin or
            # implicit class's __setstate__ (partial's, an exception's) replaces
            # whatever it is given: only on objects the payload made.
            own = self._own_setstate(inst)
            self.check_target(inst, what, own_setstate=own)
            if own and self._made.get(id(inst)) is not inst and not _restates(inst, state):
                raise self.policy.refuse(
                    what,
                    None,
                    "a call returned an object that something else holds (the receiver's "
                    "own: a singleton, a cached object), and the state would change it",
                )
            setstate(state)
            return
        self.check_target(inst, what)
        slotstate = None
        if isinstance(state, tuple) and len(state) == 2:
            state, slotstate = state
        if state:
            inst_dict = self._instance_dict(inst, what)
            intern = sys.intern
            for k, v in state.items():
                if type(k) is str:
                    inst_dict[intern(k)] = v
                else:
                    inst_dict[k] = v
        if slotstate:
            for k, v in slotstate.items():
                setattr(inst, k, v)

    dispatch[pickle.BUILD[0]] = load_build

    def check_state(self, inst: Any, state: Any, what: str) -> None:
        """What BUILD and picklable's state rebuilders may set on ``inst``: no
        ``__dict__`` or ``__class__``; for a descriptor or a callable (a
        cached_property's func, a wrapper's function), which calls what its
        state gives it outside these checks, no class that may not be called
        with the payload's arguments; for a partial, the calls it will make."""
        no_attribute_swap(self, state, what)
        if not isinstance(inst, type):
            for part in state if type(state) is tuple else (state,):
                self.no_constructor_as_method(type(inst).__mro__, part, what)
        # (A class's attributes: only those Python calls, see _class_state.)
        if not isinstance(inst, type) and _calls_what_it_holds(type(inst)):
            self.no_constructor_in((state,), None, type(inst), what)
        if getattr(type(inst), "__setstate__", None) is _PARTIAL_SETSTATE:
            # A partial's state is the arguments of the calls it makes (BUILD's, or
            # the inner state _set_state_and_dict gives its __setstate__).
            self.no_module_in((state,), f"the arguments of {what}", True)
            inner = state[0] if type(state) is tuple and len(state) == 2 else None
            for candidate in (state, inner):
                if type(candidate) is tuple and len(candidate) == 4:
                    func, args, kwds = candidate[:3]
                    if type(args) is tuple and (kwds is None or type(kwds) is dict):
                        self._check_construction(func, args, kwds, what)
                    self.partial_calls(func, inst, what)

    def no_constructor_as_method(self, mro: Any, mapping: Any, what: str) -> None:
        """Refuse, in ``mapping`` (an object's state, a class's namespace), a class
        that may not be called with the payload's arguments set where a class of
        ``mro`` has a method: the class's own code calls it (``Logger.__repr__``
        calls ``self.getEffectiveLevel()``: ``SysLogHandler()``, a socket)."""
        if type(mapping) is not dict:
            return
        for key, value in mapping.items():
            if type(key) is not str or not isinstance(value, type):
                continue
            method = next((vars(k)[key] for k in mro if key in vars(k)), None)
            if method is not None and callable(method) and self._refuses_arguments(value):
                raise self.policy.refuse(
                    what,
                    None,
                    f"it sets {key} to {_name_of(value)}, where the class has a method: "
                    "its code would construct it with arguments no one chose (and it may "
                    "open files or sockets)",
                )

    def _own_setstate(self, inst: Any) -> bool:
        """Whether ``inst``'s ``__setstate__`` is an allowed module's own code."""
        for klass in _TYPE_MRO.__get__(type(inst), type):
            if "__setstate__" in vars(klass):
                module = _type_module(klass)
                return IMPLICIT_TYPES.get(id(klass)) is not klass and self.policy.allows(module)
        return False

    def _instance_dict(self, inst: Any, what: str) -> dict[Any, Any]:
        """``inst.__dict__``, where BUILD writes: never a dict the payload got otherwise.

        A class the payload makes can answer ``__dict__`` (a property, a
        ``__getattribute__``) with any object it holds: a module's dict a call
        returned, say. The object's real dict is one the payload never saw.
        """
        found: dict[Any, Any] = inst.__dict__
        self.check_own_dict(found, what)
        return found

    def check_own_dict(self, found: Any, what: str) -> None:
        """Refuse to write into ``found``, an object's ``__dict__``, unless it can be
        its own: a dict the payload never got otherwise, and no module's namespace."""
        key = id(found)
        if (
            type(found) is not dict
            or self._named.get(key) is found
            or self._seen.get(key) is found
            or _is_namespace(found)
        ):
            raise self.policy.refuse(
                what, None, "its __dict__ is not its own (a hook hands out another object)"
            )

    def check_written(self, obj: Any, how: str, what: str) -> None:
        """Check one write a picklable rebuilder declares (``Rebuilder.writes``)."""
        if how == "dict":
            self.check_own_dict(obj, what)
        else:
            self.check_target(obj, what, classes=True, through=how == "through")

    def load_append(self) -> None:
        target = self.stack[-2]
        self.check_target(target, "an item appended to an object")
        self._into(target, self.stack[-1:], "an item appended to an object")
        self._grown(target, self.stack[-1:])
        super().load_append()

    dispatch[pickle.APPEND[0]] = load_append

    def load_appends(self) -> None:
        target = self.metastack[-1][-1]
        self.check_target(target, "items appended to an object")
        self._into(target, self.stack, "items appended to an object")
        self._grown(target, self.stack)
        super().load_appends()

    dispatch[pickle.APPENDS[0]] = load_appends

    def load_setitem(self) -> None:
        target = self.stack[-3]
        self.check_target(target, "an item set on an object")
        self._into(target, self.stack[-2:], "an item set on an object")
        self._grown(target, self.stack[-2:])
        super().load_setitem()

    dispatch[pickle.SETITEM[0]] = load_setitem

    def load_setitems(self) -> None:
        target = self.metastack[-1][-1]
        self.check_target(target, "items set on an object")
        self._into(target, self.stack, "items set on an object")
        self._grown(target, self.stack)
        super().load_setitems()

    dispatch[pickle.SETITEMS[0]] = load_setitems

    def load_additems(self) -> None:
        target = self.metastack[-1][-1]
        self.check_target(target, "items added to an object")
        self._into(target, self.stack, "items added to an object")
        self._grown(target, self.stack)
        super().load_additems()

    dispatch[pickle.ADDITEMS[0]] = load_additems

    # ----------------------------------------------------------------- depth

    def _depth_of(self, obj: Any) -> int:
        entry = self._depth.get(id(obj))
        if entry is not None and entry[0] is obj:
            return entry[1]
        return 0 if type(obj) in _IMMUTABLE else 1

    def _deeper(self, obj: Any, inputs: Any, floor: int = 0) -> None:
        """Record that ``obj`` holds (or was built from) ``inputs``: one level deeper
        than the deepest of them; refuse it past :data:`MAX_DEPTH`."""
        if type(inputs) is dict:
            inputs = [*inputs.keys(), *inputs.values()]
        kinds = set(map(type, inputs))
        if kinds <= _IMMUTABLE:
            return
        deepest = max((self._depth_of(i) for i in inputs if type(i) not in _IMMUTABLE), default=0)
        depth = max(floor, deepest + 1)
        if depth <= 1 or (type(obj) in _IMMUTABLE):
            return
        if depth > MAX_DEPTH:
            raise self.policy.refuse(
                f"{_name_of(obj)} nested more than {MAX_DEPTH:,} deep",
                None,
                "deeper objects can overflow the C stack when hashed, compared or "
                "printed (a crash, not an exception)",
            )
        self._depth[id(obj)] = (obj, depth)

    def _grown(self, target: Any, items: Any) -> None:
        """Items added to ``target``: as deep as it was, or one deeper than they are."""
        self._deeper(target, items, self._depth_of(target))

    def load_tuple(self) -> None:
        super().load_tuple()
        self._deeper(self.stack[-1], self.stack[-1])

    dispatch[pickle.TUPLE[0]] = load_tuple

    def load_tuple1(self) -> None:
        super().load_tuple1()
        self._deeper(self.stack[-1], self.stack[-1])

    dispatch[pickle.TUPLE1[0]] = load_tuple1

    def load_tuple2(self) -> None:
        super().load_tuple2()
        self._deeper(self.stack[-1], self.stack[-1])

    dispatch[pickle.TUPLE2[0]] = load_tuple2

    def load_tuple3(self) -> None:
        super().load_tuple3()
        self._deeper(self.stack[-1], self.stack[-1])

    dispatch[pickle.TUPLE3[0]] = load_tuple3

    def load_frozenset(self) -> None:
        items = self.pop_mark()
        value = frozenset(items)
        self._deeper(value, items)
        self.append(value)

    dispatch[pickle.FROZENSET[0]] = load_frozenset

    def _made_here(self) -> None:
        obj = self.stack[-1]
        self._made[id(obj)] = obj

    def load_empty_dictionary(self) -> None:
        self.append({})
        self._made_here()

    dispatch[pickle.EMPTY_DICT[0]] = load_empty_dictionary

    def load_empty_list(self) -> None:
        self.append([])
        self._made_here()

    dispatch[pickle.EMPTY_LIST[0]] = load_empty_list

    def load_empty_set(self) -> None:
        self.append(set())
        self._made_here()

    dispatch[pickle.EMPTY_SET[0]] = load_empty_set

    def load_list(self) -> None:
        super().load_list()
        self._made_here()
        self._deeper(self.stack[-1], self.stack[-1])

    dispatch[pickle.LIST[0]] = load_list

    def load_dict(self) -> None:
        super().load_dict()
        self._made_here()
        self._deeper(self.stack[-1], self.stack[-1])

    dispatch[pickle.DICT[0]] = load_dict

    def load_bytearray8(self) -> None:
        # pickle's version allocates the announced size before reading it.
        (size,) = struct.unpack("<Q", self.read(8))
        data = self.read(size)
        if len(data) != size:
            raise pickle.UnpicklingError("pickle data was truncated")
        self.append(bytearray(data))
        self._made_here()

    dispatch[pickle.BYTEARRAY8[0]] = load_bytearray8

    def nested_load(self, data: bytes) -> Any:
        """Load a payload nested in this one (a copy to fall back on) under the same policy."""
        return GuardedUnpickler(io.BytesIO(data), self.policy, _shared=self).load()

    # ---------------------------------------------------- guarded builtins

    def guarded_getattr(self, obj: Any, name: str, *default: Any) -> Any:
        """``getattr`` for payloads: public attributes, a class's own and safe dunders."""
        what = f"getattr(<{type(obj).__name__}>, {name!r})"
        if type(name) is not str or isinstance(obj, types.ModuleType) or len(default) > 1:
            raise self.policy.refuse(what, None, "a payload reads no module attribute this way")
        if name.startswith("_"):
            if isinstance(obj, type) and not _dunder(name):
                # A class's declared rebuilder (zoneinfo.ZoneInfo._unpickle).
                found = getattr(obj, name, None)
                if found is not None and _capability.is_rebuild_function(found):
                    self._named[id(found)] = found  # of a class on the stack: admitted
                    return found
            if not (_dunder(name) and isinstance(obj, type)):
                raise self.policy.refuse(what, None, "the attribute is not public")
            self.policy._check_class_attribute(obj, name, what)
        found = getattr(obj, name, *default)
        # The name a user would list: the class's (or module's) and the attribute's.
        owner = _own_name(obj if isinstance(obj, type) else type(obj))
        self.policy.admit(found, what, names=(f"{owner}.{name}",))
        return self.named(found, what, admitted=True)

    def guarded_union(self, function: Any, members: Any) -> Any:
        """``functools.reduce(operator.or_, members)``, what copyreg's reducer of
        ``int | str`` names on Python 3.12-3.13: a union of the members, each a
        class, ``None`` or a typing construct this payload already admitted;
        ``reduce`` with any other function is refused."""
        what = "functools.reduce(...)"
        if function is not _UNION_OR or type(members) is not tuple or len(members) < 2:
            raise self.policy.refuse(what, None, "only operator.or_ over a union's members")
        for member in members:
            if not (member is None or isinstance(member, type) or _typing_construct(member)):
                raise self.policy.refuse(
                    what, None, f"a union's member is a type, not a {type(member).__name__}"
                )
        return functools.reduce(operator.or_, members)

    def guarded_setattr(self, obj: Any, name: str, value: Any) -> None:
        """``setattr`` for payloads: only fills closure cells the payload made."""
        what = f"setattr(<{type(obj).__name__}>, {name!r}, ...)"
        if type(obj) is not types.CellType or name != "cell_contents":
            raise self.policy.refuse(what, None, "it only fills closure cells")
        self.check_target(obj, what)
        self._grown(obj, (value,))  # a chain of cells frees recursively in C
        obj.cell_contents = value


# copyreg's reducer of types.UnionType (Python 3.12-3.13) names these two: the
# guarded unpickler reads them as one guarded call (GuardedUnpickler.guarded_union),
# operator.or_ as a marker that nothing else accepts.
_UNION_REDUCE = frozenset(
    {("functools", "reduce"), ("_functools", "reduce"), ("operator", "or_"), ("_operator", "or_")}
)


class _UnionOr:
    """``operator.or_`` as the guarded unpickler reads it: only an argument of
    :meth:`GuardedUnpickler.guarded_union`, never called on its own."""

    def __call__(self, *args: Any) -> Any:
        raise UnpicklingError(
            "Refusing to call operator.or_: under an allow-list it is read only in "
            "functools.reduce(operator.or_, members), the union copyreg pickles"
        )


_UNION_OR: Any = _UnionOr()


def _typing_construct(obj: Any) -> bool:
    """An object of typing's or types' own making (``list[int]``, ``T``, an alias)."""
    return type(obj).__module__ in ("typing", "types", "_typing")


def _exact_reader(read: Callable[[int], bytes]) -> Callable[[int], bytes]:
    def read_exactly(size: int) -> bytes:
        data = read(size)
        if len(data) != size and (data or size != 1):  # b"" for 1: EOFError, as in C
            raise pickle.UnpicklingError("pickle data was truncated")
        return data

    return read_exactly


def _line_reader(readline: Callable[[], bytes]) -> Callable[[], bytes]:
    def read_line() -> bytes:
        line = readline()
        if not line.endswith(b"\n"):
            raise pickle.UnpicklingError("pickle data was truncated")
        return line

    return read_line


_TYPE_QUALNAME = type.__dict__["__qualname__"]
# Types whose instances' names can be read without running any of their code.
_NAMED_INSTANCES = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    *_DESCRIPTORS,
)


# What a state may hold for _restates to compare it by value: no __eq__ of the
# payload's objects runs.
_PLAIN_STATE = (str, bytes, int, float, bool, type(None))


def _plain_equal(a: Any, b: Any, depth: int = 0) -> bool:
    """``a == b`` for plain data (tuples, lists, dicts of str, bytes, numbers),
    comparing only what runs no code of the payload's objects; False for
    anything else."""
    if depth > 16 or type(a) is not type(b):
        return False
    if type(a) in _PLAIN_STATE:
        return bool(a == b)
    if type(a) in (tuple, list):
        return len(a) == len(b) and all(_plain_equal(x, y, depth + 1) for x, y in zip(a, b))
    if type(a) is dict:
        return (
            len(a) == len(b)
            and all(type(k) in _PLAIN_STATE for k in a)
            and all(k in b and _plain_equal(v, b[k], depth + 1) for k, v in a.items())
        )
    return False


def _restates(inst: Any, state: Any) -> bool:
    """Whether ``state`` is the state ``inst`` already has, as its own reduction
    gives it (numpy's cached builtin dtypes, which every array's payload sets
    again): setting it changes nothing."""
    try:
        reduced = inst.__reduce_ex__(2)
    except Exception:
        return False
    if type(reduced) is not tuple or len(reduced) < 3:
        return False
    return _plain_equal(reduced[2], state)


def _name_of(obj: Any) -> str:
    """``module.qualname`` of ``obj`` for messages, read without looking anything
    up on an instance (its class's ``__getattr__`` could run, or recurse)."""
    if isinstance(obj, type):
        module, name = _type_module(obj), _TYPE_QUALNAME.__get__(obj, type)
    elif type(obj) in _NAMED_INSTANCES:
        name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", "?")
        module = getattr(obj, "__module__", None)
    else:
        t = type(obj)
        module, name = _type_module(t), f"{_TYPE_QUALNAME.__get__(t, type)} object"
    return f"{module}.{name}" if type(module) is str and module != "builtins" else str(name)


# -------------------------------------------------- guarded rebuilders

Guard = Callable[[GuardedUnpickler, _reconstruct.Rebuilder], Callable[..., Any]]


def _guard_import(load: GuardedUnpickler, rebuilder: _reconstruct.Rebuilder) -> Callable[..., Any]:
    """``_import`` and ``_resolve``: the module, every step of the path and the result."""
    function = rebuilder.function
    policy = load.policy

    def guarded(*args: Any) -> Any:
        arguments = _arguments(rebuilder, args)
        module = arguments.get("module")
        if type(module) is not str:
            # Its type alone: a payload's object could run code in repr().
            kind = type(module).__name__
            raise policy.refuse(f"a reference to a {kind}", None, "malformed reference")
        if "path" not in arguments:
            if not policy.allows(module):
                raise policy.refuse(f"import of {module!r}", module)
            return load.named(function(*args), f"module {module!r}")
        path = arguments["path"]
        if type(path) is not tuple:
            raise policy.refuse(
                f"reference {_shown(module)}:{_shown(path)}", None, "malformed reference"
            )
        where = format_path(module, path)
        if all(type(step) is str for step in path):
            implicit = policy.implicit(module, ".".join(path))
            if implicit is not None:
                return implicit
        return load.named(policy.walk(module, path, where), where, admitted=True)

    return guarded


def _function_name(arguments: dict[str, Any]) -> Any:
    """The name ``_make_function``'s arguments give: ``name``, or where None (the
    code's, not decoded here), the last step of a script function's origin."""
    name = arguments.get("name")
    origin = arguments.get("origin")
    if name is None and type(origin) is tuple and len(origin) == 4 and type(origin[1]) is tuple:
        return ".".join(map(str, origin[1]))
    return name


def _guard_code(load: GuardedUnpickler, rebuilder: _reconstruct.Rebuilder) -> Callable[..., Any]:
    """By-value code: refused without the opt-in; then it counts as the module its globals name."""
    function = rebuilder.function
    policy = load.policy

    def guarded(*args: Any) -> Any:
        arguments = _arguments(rebuilder, args)
        namespace = arguments.get("globals")
        if namespace is None:
            what = "a code object shipped by value"
            module = None
        else:
            module = namespace.get("__name__") if type(namespace) is dict else None
            what = f"function {_function_name(arguments)!r} shipped by value"
        if not policy.by_value_code or (namespace is not None and not policy.allows(module)):
            raise policy.refuse_code(what, module)
        return function(*args)

    return guarded


def _guard_hands_out(
    load: GuardedUnpickler, rebuilder: _reconstruct.Rebuilder
) -> Callable[..., Any]:
    """Never admitted: it would give a part of any object the payload names (a
    cell of a module's function, filled, changes the receiver's function), and
    no payload of picklable's needs it unless an object's reduction handed that
    part out (``_closure_cell``)."""

    def guarded(*args: Any) -> Any:
        raise load.policy.refuse(
            f"{rebuilder.name}: {rebuilder.label}", None, "never under an allow-list"
        )

    return guarded


def _guard_class(load: GuardedUnpickler, rebuilder: _reconstruct.Rebuilder) -> Callable[..., Any]:
    """A class by value counts as its ``__module__``; what its tracker id finds too."""
    function = rebuilder.function
    policy = load.policy
    origin_at = _ARGUMENTS[rebuilder.name].index("origin")

    def guarded(*args: Any) -> Any:
        arguments = _arguments(rebuilder, args)
        namespace = arguments.get("namespace")
        name = arguments.get("name")
        module = namespace.get("__module__") if type(namespace) is dict else None
        policy.by_value(module, f"class {name!r}")
        metaclass = arguments.get("metaclass")
        kind = enum.EnumType if rebuilder.name == "_make_enum" else type
        if not (isinstance(metaclass, type) and issubclass(metaclass, kind)):
            # The rebuilder calls it with (name, bases, namespace): any other
            # class would be constructed with them (a log handler opening a file).
            raise policy.refuse(
                f"class {name!r}",
                None,
                f"its metaclass {_name_of(metaclass)} is not a subclass of "
                f"{kind.__module__}.{kind.__qualname__}: it would be called with the "
                "class's name, bases and namespace as a constructor's arguments",
            )
        if issubclass(metaclass, enum.EnumType):
            # Making an Enum class makes its members: each value goes to its mixin
            # type's __new__, or to its __init__ (FileHandler's, with a path).
            for base in arguments.get("bases") or ():
                if isinstance(base, type) and load._refuses_arguments(base):
                    raise policy.refuse(
                        f"class {name!r}",
                        None,
                        f"its base {_name_of(base)} would make its members from the "
                        "payload's values, and that is not how its instances are rebuilt: "
                        "its constructor would run on them (and may open files)",
                    )
        qualname = namespace.get("__qualname__", name) if type(namespace) is dict else name
        refuse_taken_place(load, module, qualname, name, f"class {name!r}")
        if type(namespace) is dict and "__classdictcell__" in namespace:
            # Making the class fills this cell with its namespace (type() does).
            load.check_target(namespace["__classdictcell__"], f"class {name!r}'s namespace cell")
        withheld = _withheld_in((namespace, arguments.get("members")))
        if withheld is not None:
            raise policy.refuse_code(f"{withheld.name} in class {name!r}", None)
        if type(namespace) is dict:
            dunders = called_dunders(namespace)
            load.no_constructor_in(dunders, None, f"class {name!r}", f"class {name!r}")
            refuse_composed_dunder(load, dunders, f"class {name!r}")
            refuse_class_hooks(load, namespace, f"class {name!r}")
            bases = arguments.get("bases")
            for base in bases if type(bases) is tuple else ():
                if isinstance(base, type):
                    load.no_constructor_as_method(base.__mro__, namespace, f"class {name!r}")
        if not policy.allows("__main__") and len(args) > origin_at:
            # The receiver's own __main__ classes stay out of reach.
            args = (*args[:origin_at], None, *args[origin_at + 1 :])
        cls = function(*args)
        # A tracker id may name any class this process knows: check what it found.
        return load.made_class(policy.admit(cls, f"class {name!r}"))

    return guarded


def _guard_state(load: GuardedUnpickler, rebuilder: _reconstruct.Rebuilder) -> Callable[..., Any]:
    """Rebuilders that set state: only on objects the payload made (see ``check_target``)."""
    policy = load.policy
    function = rebuilder.function
    target_name = rebuilder.target
    state_name = rebuilder.state
    writes = rebuilder.writes
    check = STATE_CHECKS.get(rebuilder.name)

    def guarded(*args: Any) -> Any:
        arguments = _arguments(rebuilder, args)
        target = arguments.get(target_name)  # type: ignore[arg-type]
        state = None if state_name is None else arguments.get(state_name)
        if state_name is not None and not state:
            return function(*args)  # nothing to set
        what = f"state set on {_name_of(target)}"
        if isinstance(target, type) and _tracker.built(target):
            # First: a withheld name is by-value code, whatever else holds it.
            withheld = _withheld_in(state)
            if withheld is not None:
                raise policy.refuse_code(f"{withheld.name} set on class {_name_of(target)}", None)
        if check is not None:
            check(load, arguments, what)  # what it calls, and no __dict__ or __class__
        load.check_state(target, state, what)
        if writes is None:
            load.check_target(target, what, classes=True)
        else:
            try:
                written = list(writes(**arguments))
            except Exception as exc:  # a malformed state: the rebuilder would fail too
                raise policy.refuse(what, None, f"malformed state ({exc})") from exc
            for obj, how in written:
                if how != "dict" and load._named.get(id(obj)) is obj:
                    raise _state_on_named(policy, target, what)
                load.check_written(obj, how, what)
        if state is not None:
            # What it writes holds the state: one level deeper (a chain of cells
            # filled one in the next frees recursively in C).
            load._grown(target, (state,))
        return function(*args)

    return guarded


def _guard_origin(
    load: GuardedUnpickler, rebuilder: _reconstruct.Rebuilder, guard: Callable[..., Any]
) -> Callable[..., Any]:
    """A rebuilder that returns this process's own script object where it runs the
    sender's script (``Rebuilder.origin``): only with the script's module listed,
    its path checked as any name's; otherwise the copy, as its reach's ``guard``
    allows (or, for a reference alone, a refusal)."""
    function = rebuilder.function
    policy = load.policy
    at = _ARGUMENTS[rebuilder.name].index(rebuilder.origin or "origin")

    def guarded(*args: Any) -> Any:
        origin = args[at] if len(args) > at else None
        if origin is None:
            return guard(*args)
        if (
            type(origin) is not tuple
            or len(origin) != 4
            or type(origin[0]) is not str
            or type(origin[1]) is not tuple
        ):
            raise policy.refuse(f"a script reference {_shown(origin)}", None, "malformed reference")
        module, path, _, line = origin
        where = format_path(module, path)
        if policy.allows(module):
            try:
                found = _script_object(load, origin, where)
            except _Unnamed:
                # A function of the script the list does not name: never the
                # receiver's own; the copy, as by-value code (or the refusal).
                if rebuilder.reach == "import":
                    raise
                found = _tracker.MISSING
            if found is not _tracker.MISSING:
                return found  # the rebuilder would return it too, and build nothing
        elif rebuilder.reach == "import":
            raise policy.refuse(where, module)
        # Not this script, or not allowed: the copy (an origin that matches no script).
        copy_args = (*args[:at], (module, path, None, line), *args[at + 1 :])
        if rebuilder.reach == "import":
            return function(*copy_args)  # raises: no copy could travel
        return guard(*copy_args)

    return guarded


def _script_object(load: GuardedUnpickler, origin: Any, where: str) -> Any:
    """This process's own object for a script ``origin`` (or ``_MISSING``), its
    path walked with the policy's checks in every script module that could hold it."""
    _, path, filename, _ = origin
    walked: list[Any] = []
    for name in MAIN_MODULES:
        script = sys.modules.get(name)
        if script is None or filename is None or getattr(script, "__file__", None) != filename:
            continue
        try:
            walked.append(load.policy.walk(name, path, where))
        except _NotThere:
            continue  # another version of the script: the rebuilder finds nothing here
    found = _reconstruct.script_original(origin)
    if found is _tracker.MISSING:
        return found
    return load.named(found, where, admitted=any(found is w for w in walked))


def _state_on_named(policy: Policy, target: Any, what: str) -> UnpicklingError:
    """The refusal of state the sender carried to this process's own object."""
    return UnpicklingError(
        f"Refusing to load {what}: the payload carries state to set on this process's own "
        f"{_name_of(target)} (reached by name), and under an allow-list a payload never "
        "modifies an object of a module (allowed: "
        f"{', '.join(repr(n) for n in policy.names) or 'nothing'}). Fix: on the sending "
        "side, ship picklable.without_state(obj) (the reference alone), or load it "
        "without an allow-list.",
        reason=f"{what} not allowed",
        hint="ship picklable.without_state(obj), or load without an allow-list",
    )


def _guard_call(load: GuardedUnpickler, rebuilder: _reconstruct.Rebuilder) -> Callable[..., Any]:
    """Rebuilders that call or build from what the payload holds (all of it admitted
    already); the unpickler checks what they return like any call's result, but
    for a result declared made for one of the arguments (``made_for``): new, made
    by this process's own code for an admitted object, it is the payload's."""
    function = rebuilder.function
    made_for = rebuilder.made_for
    check = CALL_CHECKS.get(rebuilder.name)
    if made_for is None and check is None:
        return function  # it stores what it is given (a cell, a module in memory...)
    what = f"{rebuilder.name}(...)"

    def guarded(*args: Any) -> Any:
        arguments = _arguments(rebuilder, args)
        if check is not None:
            check(load, arguments, what)  # what it calls, binds or builds from them
        if made_for is None:
            made = function(*args)
            if rebuilder.name in _COPYING:
                load.note_copy(made)
            return made
        owner = arguments.get(made_for)
        if owner is None or type(owner) in _IMMUTABLE:
            raise load.policy.refuse(
                what, None, f"it is made for no object ({made_for}={_shown(owner)})"
            )
        return load.made(function(*args))

    return guarded


# Rebuilders whose result stands for an object of this process with the
# sender's state (its own, or a copy): what a copy's links may name.
_COPYING = frozenset({"_own_or_copy", "_with_state"})


def _guard(load: GuardedUnpickler, rebuilder: _reconstruct.Rebuilder) -> Callable[..., Any]:
    """The guarded ``rebuilder``: its reach's guard, behind its script origin's if any."""
    guard = _GUARDS[rebuilder.reach](load, rebuilder)
    return guard if rebuilder.origin is None else _guard_origin(load, rebuilder, guard)


# What each reach (declared with each rebuilder) is guarded by.
_GUARDS: dict[str, Guard] = {
    "import": _guard_import,
    "code": _guard_code,
    "class": _guard_class,
    "state": _guard_state,
    "call": _guard_call,
    "build": _guard_call,
    "hands out": _guard_hands_out,
}
assert set(_GUARDS) == set(_reconstruct.REACHES), "every reach has a guard"
