"""What a name *is*, for the allow-list: data, a rebuild function, or a capability.

An allow-list names modules, and a module holds two kinds of things: what its
payloads are made of (its classes, and the functions its objects' reductions
name to rebuild them: numpy's ``_reconstruct``, pandas' ``_new_Index``), and
what its users call to act on the world (``numpy.fromfile``, ``pandas.read_csv``,
``logging.config.dictConfig``). :mod:`picklable._allow` admits the first kind
with the module, the second only when the allow-list names it exactly, and a
name that can run code (:data:`RUNS_CODE`) only with ``Policy(..., unsafe=True)``.

Rebuild functions are recognised by what they are:

* **Declared by construction**: Cython generates ``__pyx_unpickle_<Class>`` for
  each ``cdef`` class it pickles, beside the class (``<Class>`` is a class of the
  same module);
* **Declared here** (:data:`REBUILD_FUNCTIONS`): the functions that the
  reductions of these libraries' types emit. Python cannot make an instance of
  every type of a module without running its constructors (a C type's
  ``tp_new`` called without arguments can crash the interpreter), so the list is
  derived once from real objects and checked on every test run:
  ``tests/unit/test_allow_capabilities.py`` reduces arrays of every dtype,
  DataFrames of many kinds and stdlib values under every protocol, and requires
  each function their payloads name to be listed here, and each entry here to be
  named by one of them (an entry that no reduction emits is removed).

Names are matched by identity once their module is imported (never importing
anything to check): an object is a rebuild function if it *is* the object one
of these names leads to in ``sys.modules``.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = [
    "CLASS_ARGUMENTS",
    "EMITTED_BY",
    "REBUILD_FUNCTIONS",
    "RUNS_CODE",
    "class_argument",
    "is_rebuild_function",
    "runs_code",
]

REBUILD_FUNCTIONS: frozenset[tuple[str, str]] = frozenset(
    {
        # numpy: arrays (protocols 2-4; 5 with out-of-band buffers), scalars, masked
        # arrays, and the random generators' state.
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy._core.numeric", "_frombuffer"),
        ("numpy.ma.core", "_mareconstruct"),
        ("numpy.random._pickle", "__bit_generator_ctor"),
        ("numpy.random._pickle", "__generator_ctor"),
        ("numpy.random._pickle", "__randomstate_ctor"),
        # pandas: indexes, blocks, timestamps and timedeltas, NaT.
        ("pandas.core.indexes.base", "_new_Index"),
        ("pandas.core.indexes.datetimes", "_new_DatetimeIndex"),
        ("pandas.core.indexes.interval", "_new_IntervalIndex"),
        ("pandas.core.indexes.timedeltas", "_new_TimedeltaIndex"),
        ("pandas._libs.internals", "_unpickle_block"),
        ("pandas._libs.tslibs.nattype", "_nat_unpickle"),
        ("pandas._libs.tslibs.timedeltas", "_timedelta_unpickle"),
        ("pandas._libs.tslibs.timestamps", "_unpickle_timestamp"),
        # pyarrow: its arrays, which pandas' Arrow-backed strings hold.
        ("pyarrow.lib", "_restore_array"),
        ("pyarrow.lib", "py_buffer"),
        ("pyarrow.lib", "type_for_alias"),
        # stdlib: array.array, compiled patterns, loggers by name, time zones.
        ("array", "_array_reconstructor"),
        ("re", "_compile"),
        ("logging", "getLogger"),
        ("zoneinfo", "ZoneInfo._unpickle"),
    }
)
"""(module, qualname) of functions that reductions of these modules' objects name."""

CLASS_ARGUMENTS: dict[tuple[str, str], tuple[int, tuple[str, str]]] = {
    ("pandas.core.indexes.base", "_new_Index"): (0, ("pandas.core.indexes.base", "Index")),
    ("pandas.core.indexes.datetimes", "_new_DatetimeIndex"): (
        0,
        ("pandas.core.indexes.datetimes", "DatetimeIndex"),
    ),
    ("pandas.core.indexes.interval", "_new_IntervalIndex"): (
        0,
        ("pandas.core.indexes.interval", "IntervalIndex"),
    ),
    ("pandas.core.indexes.timedeltas", "_new_TimedeltaIndex"): (
        0,
        ("pandas.core.indexes.timedeltas", "TimedeltaIndex"),
    ),
    ("numpy.ma.core", "_mareconstruct"): (0, ("numpy.ma.core", "MaskedArray")),
}
"""Rebuild functions that construct a class they are handed (``cls.__new__(cls,
**d)``): the argument that names it, and the class it must derive from, the kind
the function rebuilds (``_new_DatetimeIndex`` handed ``numpy.memmap`` would open
the file its state names)."""

EMITTED_BY: dict[tuple[str, str], tuple[str, ...]] = {
    # pandas 3's strings are Arrow arrays: a DataFrame's payload names these.
    ("pyarrow.lib", "_restore_array"): ("pandas",),
    ("pyarrow.lib", "py_buffer"): ("pandas",),
    ("pyarrow.lib", "type_for_alias"): ("pandas",),
}
"""Rebuild functions that another module's objects emit: admitted with that module
too (``allowed=["pandas"]`` loads a DataFrame of Arrow-backed strings; it admits
no other name of pyarrow)."""

RUNS_CODE: frozenset[str] = frozenset(
    {
        # Evaluating text, building or loading code, importing.
        "builtins.eval",
        "builtins.exec",
        "builtins.compile",
        "builtins.__import__",
        "builtins.__build_class__",
        "builtins.breakpoint",
        "builtins.open",
        "builtins.input",
        "builtins.globals",
        "builtins.locals",
        "builtins.vars",
        "builtins.delattr",
        "builtins.exit",
        "builtins.quit",
        "builtins.help",
        "importlib",
        "_imp",
        "_frozen_importlib",
        "_frozen_importlib_external",
        "zipimport",
        "pkgutil",
        "runpy",
        "code",
        "codeop",
        "types.CodeType",
        "marshal",
        "timeit",
        "pdb",
        # Processes, the process's own state, files, libraries, sockets.
        "os",
        "posix",
        "nt",
        # sys: what sets the process's hooks, limits and frames (its standard
        # streams and version records are data; every function needs its name).
        *(
            f"sys.{name}"
            for name in (
                "_getframe",
                "_current_frames",
                "addaudithook",
                "breakpointhook",
                "call_tracing",
                "exit",
                "modules",
                "remote_exec",
                "set_asyncgen_hooks",
                "set_coroutine_origin_tracking_depth",
                "set_int_max_str_digits",
                "setdlopenflags",
                "setprofile",
                "setrecursionlimit",
                "setswitchinterval",
                "settrace",
                "activate_stack_trampoline",
                "monitoring",
            )
        ),
        "subprocess",
        "_posixsubprocess",
        "pty",
        "signal",
        "_signal",
        "multiprocessing",
        "_multiprocessing",
        "ctypes",
        "_ctypes",
        "socket",
        "_socket",
        "shutil",
        "tempfile",
        "io.open",
        "io.open_code",
        "io.FileIO",
        "_io.open",
        "_io.open_code",
        "_io.FileIO",
        # Stream wrappers own the stream they wrap, and flush and close it when
        # collected (TextIOWrapper(sys.stdout.buffer) closes the receiver's
        # standard output). Python 3.12's give them a __reduce__ that only refuses,
        # which the class rule would read as a declared rebuild.
        *(
            f"{module}.{name}"
            for module in ("io", "_io")
            for name in (
                "TextIOWrapper",
                "BufferedReader",
                "BufferedWriter",
                "BufferedRandom",
                "BufferedRWPair",
            )
        ),
        "webbrowser",
        # Calls any method of any object it is given, by a name the payload chooses
        # (``getattr`` and a call, which payloads get only guarded).
        "operator.methodcaller",
        "_operator.methodcaller",
        # Empties the process's cache of time zones (ZoneInfo("UTC") is no longer
        # the object it was): a classmethod of an always-admitted class.
        "zoneinfo.ZoneInfo.clear_cache",
        # Configuration that builds objects from factories it names.
        "logging.config",
        # Loaders that unpickle without an allow-list, and pickle itself.
        "pickle",
        "_pickle",
        "shelve",
        "copyreg.add_extension",
        "dill",
        "cloudpickle",
        "joblib",
        "numpy.load",
        "numpy.lib.npyio",
        "numpy.lib._npyio_impl",
        "numpy.lib.format",
        "numpy.ctypeslib",
        "numpy.f2py",
        "numpy.distutils",
        "numpy.testing",
        "pandas.read_pickle",
        "pandas.io.pickle",
        "pandas.eval",
        "pandas.core.computation",
        "torch.load",
    }
)
"""Names that can run code, or act as the process (files, processes, libraries,
its global state): refused even when an allow-list names them, unless
``Policy(..., unsafe=True)``. A name covers what is inside it (``"os"`` covers
``os.system``, ``os.path.exists``; ``"numpy.f2py"`` its ``__main__``)."""


def runs_code(name: Any) -> bool:
    """Whether the dotted ``name`` (a module, or ``module.qualname``) is one of
    :data:`RUNS_CODE` or inside one, or names a program's entry point (a
    ``__main__`` submodule, which runs its program when imported)."""
    if type(name) is not str:
        return False
    parts = name.split(".")
    if "__main__" in parts[1:]:
        return True
    return any(".".join(parts[:i]) in RUNS_CODE for i in range(1, len(parts) + 1))


_resolved: dict[int, Any] = {}
_resolved_classes: dict[int, tuple[Any, int, Any]] = {}
_resolved_for = -1


def _lookup(module: str, qualname: str) -> Any:
    obj = sys.modules.get(module)
    for step in qualname.split("."):
        obj = getattr(obj, step, None) if obj is not None else None
    return obj


def _rebuild_function_ids() -> dict[int, Any]:
    """id -> object for the declared rebuild functions whose module is imported
    (rebuilt when ``sys.modules`` grows or shrinks)."""
    global _resolved, _resolved_classes, _resolved_for
    if len(sys.modules) == _resolved_for:
        return _resolved
    found: dict[int, Any] = {}
    for module, qualname in REBUILD_FUNCTIONS:
        obj = _lookup(module, qualname)
        if obj is not None:
            found[id(obj)] = obj
    classes: dict[int, tuple[Any, int, Any]] = {}
    for (module, qualname), (index, base) in CLASS_ARGUMENTS.items():
        obj = _lookup(module, qualname)
        if obj is not None:
            # The base unresolved (its module half imported): nothing derives from None.
            classes[id(obj)] = (obj, index, _lookup(*base))
    _resolved, _resolved_classes, _resolved_for = found, classes, len(sys.modules)
    return found


def class_argument(obj: Any) -> tuple[int, Any] | None:
    """``(index, base)`` if ``obj`` is a rebuild function that constructs the
    class its argument ``index`` names, which must derive from ``base`` (see
    :data:`CLASS_ARGUMENTS`); else None."""
    _rebuild_function_ids()
    entry = _resolved_classes.get(id(obj))
    if entry is None or entry[0] is not obj:
        return None
    return entry[1], entry[2]


def is_rebuild_function(obj: Any) -> bool:
    """Whether ``obj`` is a function that reductions of its module's objects name
    (numpy 1.x names such as ``numpy.core.multiarray._reconstruct`` lead to the
    same objects)."""
    if _rebuild_function_ids().get(id(obj), _resolved) is obj:
        return True
    owner = getattr(obj, "__self__", None)
    if isinstance(owner, type) and callable(obj):
        # A classmethod, bound anew on every access: its class's and its own name.
        name = getattr(obj, "__name__", None)
        key = (owner.__module__, f"{owner.__qualname__}.{name}")
        return key in REBUILD_FUNCTIONS and getattr(owner, str(name), None) == obj
    name = getattr(type(obj), "__name__", "")
    if name not in ("cython_function_or_method", "builtin_function_or_method", "function"):
        return False
    own = getattr(obj, "__name__", None)
    if type(own) is not str or not own.startswith("__pyx_unpickle_"):
        return False
    # Cython's rebuilder of a cdef class, beside the class in the same module.
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    target = getattr(module, own[len("__pyx_unpickle_") :], None)
    return isinstance(target, type) and getattr(module, own, None) is obj
