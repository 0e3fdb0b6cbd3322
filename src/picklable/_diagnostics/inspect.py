"""``picklable inspect FILE``: what a payload imports and calls when loaded.

The payload is never loaded. Its opcodes are read with
:func:`pickletools.genops` and played on a symbolic stack: ``GLOBAL`` and
``STACK_GLOBAL`` become the names they would import, ``REDUCE``, ``NEWOBJ``,
``INST`` and ``OBJ`` the calls they would make, ``BUILD`` the state they would
set. Nothing from the payload is imported, called or built -- with one
exception, stated here: the bytecode of functions shipped by value
(``picklable._reconstruct._make_function`` and ``_load_code`` arguments) is
decoded with :func:`marshal.loads` to show the functions' names, files and the
globals they read. ``marshal.loads`` builds a code object and runs none of it;
it is only used when the payload says its code was compiled by this very
interpreter (implementation and minor version), and ``decode_code=False``
(``--no-code`` on the command line) turns it off. marshal is not hardened
against maliciously crafted bytes, so do not decode payloads you distrust.
"""

from __future__ import annotations

import dataclasses
import io
import json
import marshal
import pickletools
import types
from collections import Counter
from typing import Any

from .._code import HERE as _HERE
from .._code import instruction_names
from .._compat import CLASSDICT_GLOBAL_OP
from .._paths import format_path
from .._reconstruct import REBUILDERS

__all__ = ["PayloadReport", "inspect_payload"]

_RECONSTRUCT = "picklable._reconstruct"
# Callables that run arbitrary code or touch the system when a payload calls them.
_DANGEROUS = {
    ("builtins", "eval"),
    ("builtins", "exec"),
    ("builtins", "compile"),
    ("builtins", "__import__"),
    ("builtins", "open"),
    ("builtins", "breakpoint"),
    ("os", "system"),
    ("os", "popen"),
    ("os", "remove"),
    ("os", "unlink"),
    ("os", "rmdir"),
    ("posix", "system"),
    ("nt", "system"),
    ("shutil", "rmtree"),
    ("importlib", "import_module"),
    ("pickle", "loads"),
    ("_pickle", "loads"),
    ("marshal", "loads"),
    ("ctypes", "CDLL"),
    ("pty", "spawn"),
}
_DANGEROUS_MODULES = ("subprocess", "runpy", "code", "socket", "webbrowser")
_DANGEROUS_PREFIXES = (("os", "exec"), ("os", "spawn"), ("posix", "exec"), ("posix", "spawn"))


# ---------------------------------------------------------- symbolic values


class _Mark:
    pass


_MARK = _Mark()


@dataclasses.dataclass(eq=False)
class Global:
    """A name the loader imports: ``module.name``."""

    module: str
    name: str

    def __str__(self) -> str:
        return f"{self.module}.{self.name}"


@dataclasses.dataclass(eq=False)
class Call:
    """A call the loader makes: ``func(*args)``, then BUILD with ``state``."""

    func: Any
    args: Any
    kind: str
    position: int
    state: list[Any] = dataclasses.field(default_factory=list)
    label: str = ""  # what the call builds, when known (a class by value)


@dataclasses.dataclass(eq=False)
class _Opaque:
    what: str


# ------------------------------------------------------------------- report


@dataclasses.dataclass
class Function:
    """A function carried by value (its bytecode travels in the payload)."""

    name: str
    qualname: str = ""
    module: str = ""
    filename: str = ""
    line: int = 0
    reads: tuple[str, ...] = ()
    compiled_by: str = ""
    decoded: bool = False
    # A function of the sender's script: built only where the receiver does not
    # run that script (see picklable._reduce.scripts).
    script_copy: bool = False


@dataclasses.dataclass
class PayloadReport:
    """What one or more pickles in a file import and call when loaded.

    Attributes
    ----------
    size:
        Bytes read.
    pickles:
        Number of pickles found one after the other.
    protocol:
        Highest protocol among them.
    modules:
        Modules the loader imports (their top-level code runs).
    names:
        ``module.name`` loaded by reference, with how many times each.
    calls:
        Callables called at load, with how many times each.
    references:
        ``module:path`` objects reached through a located path.
    functions:
        Functions carried by value.
    classes:
        ``module.qualname`` of classes carried by value.
    buffers:
        Out-of-band buffers the payload expects (protocol 5).
    flags:
        What deserves attention (by-value code, dangerous callables).
    error:
        Why reading stopped early (a damaged payload), or ``""``.
    """

    size: int = 0
    pickles: int = 0
    protocol: int = 0
    modules: list[str] = dataclasses.field(default_factory=list)
    names: dict[str, int] = dataclasses.field(default_factory=dict)
    calls: dict[str, int] = dataclasses.field(default_factory=dict)
    references: list[str] = dataclasses.field(default_factory=list)
    functions: list[Function] = dataclasses.field(default_factory=list)
    classes: list[str] = dataclasses.field(default_factory=list)
    buffers: int = 0
    flags: list[str] = dataclasses.field(default_factory=list)
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        return dataclasses.asdict(self)

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as a JSON string."""
        return json.dumps(self.to_dict(), indent=indent)

    def render(self, source: str = "payload") -> str:
        """The report as text, as ``picklable inspect`` prints it."""
        lines = [
            f"{source}: {self.pickles} pickle{'s' if self.pickles != 1 else ''}, {self.size:,} "
            "bytes, "
            f"protocol {self.protocol}"
            + (
                f", {self.buffers} out-of-band buffer{'s' if self.buffers != 1 else ''}"
                if self.buffers
                else ""
            )
        ]
        if self.error:
            lines.append(f"error: {self.error}")
        lines.append("")
        lines.append("Modules imported when loaded (their top-level code runs):")
        lines.extend(f"  {m}" for m in self.modules or ["(none)"])
        lines.append("")
        lines.append("Called when loaded:")
        if not self.calls:
            lines.append("  (nothing)")
        for name, count in sorted(self.calls.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  {count:>4} x  {name}{_ROLE.get(name, '')}")
        plain = sorted(n for n in self.names if n not in self.calls)
        if plain:
            lines.append("")
            lines.append("Loaded by reference (not called):")
            lines.extend(f"  {n}" for n in plain)
        if self.references:
            lines.append("")
            lines.append("Reached through located paths:")
            lines.extend(f"  {r}" for r in self.references)
        if self.functions or self.classes:
            lines.append("")
            lines.append(
                "By-value code (bytecode from the sender; runs in this process when called):"
            )
            for fn in self.functions:
                where = f"{fn.filename}:{fn.line}" if fn.filename else ""
                label = fn.qualname or fn.name
                parts = [f"  function {fn.module + '.' if fn.module else ''}{label}"]
                if where:
                    parts.append(f"({where})")
                if fn.reads:
                    parts.append(f"reads globals: {', '.join(fn.reads)}")
                if not fn.decoded and fn.compiled_by:
                    parts.append(f"[compiled by {fn.compiled_by}; not decoded]")
                if fn.script_copy:
                    parts.append("[copy, built only where the sender's script does not run]")
                lines.append("  ".join(parts))
            lines.extend(f"  class {c}" for c in self.classes)
        if self.flags:
            lines.append("")
            lines.append("Flags:")
            lines.extend(f"  ! {f}" for f in self.flags)
        return "\n".join(lines) + "\n"


# What each rebuilder does, as its declaration says (picklable._reconstruct).
_ROLE = {
    f"{_RECONSTRUCT}.{name}": f"  ({rebuilder.label})" for name, rebuilder in REBUILDERS.items()
}


# ------------------------------------------------------------- the machine


def _literal(value: Any) -> Any:
    """The plain Python value of a symbolic one, or None if it is not plain."""
    if isinstance(value, (str, bytes, int, float, bool, type(None))):
        return value
    if isinstance(value, tuple):
        return tuple(_literal(v) for v in value)
    return None


class _Machine:
    def __init__(self, report: PayloadReport, decode_code: bool) -> None:
        self.report = report
        self.decode_code = decode_code
        self.modules: dict[str, None] = {}
        self.names: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.references: dict[str, None] = {}
        self.classes: dict[str, None] = {}

    def run(self, stream: io.BytesIO) -> None:
        stack: list[Any] = []
        memo: dict[int, Any] = {}

        def pop_mark() -> list[Any]:
            for i in range(len(stack) - 1, -1, -1):
                if stack[i] is _MARK:
                    items = stack[i + 1 :]
                    del stack[i:]
                    return items
            raise ValueError("MARK expected on the stack")

        for opcode, raw_arg, raw_position in pickletools.genops(stream):
            arg: Any = raw_arg
            position = raw_position or 0
            name = opcode.name
            if name == "PROTO":
                self.report.protocol = max(self.report.protocol, arg)
            elif name in ("FRAME", "READONLY_BUFFER"):
                pass
            elif name == "MARK":
                stack.append(_MARK)
            elif name == "STOP":
                return
            elif name == "POP":
                stack.pop()
            elif name == "POP_MARK":
                pop_mark()
            elif name == "DUP":
                stack.append(stack[-1])
            elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[arg] = stack[-1]
            elif name == "MEMOIZE":
                memo[len(memo)] = stack[-1]
            elif name in ("GET", "BINGET", "LONG_BINGET"):
                stack.append(memo[arg])
            elif name == "NONE":
                stack.append(None)
            elif name in ("NEWTRUE", "NEWFALSE"):
                stack.append(name == "NEWTRUE")
            elif name == "EMPTY_LIST":
                stack.append([])
            elif name == "EMPTY_DICT":
                stack.append({})
            elif name == "EMPTY_TUPLE":
                stack.append(())
            elif name == "EMPTY_SET":
                stack.append([])  # symbolic members may not be hashable
            elif name == "LIST":
                stack.append(pop_mark())
            elif name == "TUPLE" or name == "FROZENSET":
                stack.append(tuple(pop_mark()))
            elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
                n = int(name[-1])
                top = tuple(stack[-n:])
                del stack[-n:]
                stack.append(top)
            elif name == "DICT":
                items = pop_mark()
                stack.append(self._dict(items))
            elif name == "APPEND":
                value = stack.pop()
                self._extend(stack[-1], [value])
            elif name == "APPENDS" or name == "ADDITEMS":
                items = pop_mark()
                self._extend(stack[-1], items)
            elif name == "SETITEM":
                value = stack.pop()
                key = stack.pop()
                self._setitems(stack[-1], [key, value])
            elif name == "SETITEMS":
                items = pop_mark()
                self._setitems(stack[-1], items)
            elif name == "GLOBAL":
                module, _, attr = arg.partition(" ")
                stack.append(self._global(module, attr))
            elif name == "STACK_GLOBAL":
                attr = stack.pop()
                module = stack.pop()
                stack.append(self._global(str(module), str(attr)))
            elif name in ("EXT1", "EXT2", "EXT4"):
                import copyreg

                key = copyreg._inverted_registry.get(arg)  # type: ignore[attr-defined]
                stack.append(self._global(*key) if key else _Opaque(f"extension code {arg}"))
            elif name == "REDUCE":
                args = stack.pop()
                func = stack.pop()
                stack.append(self._call(func, args, "REDUCE", position))
            elif name == "NEWOBJ":
                args = stack.pop()
                cls = stack.pop()
                stack.append(self._call(cls, args, "NEWOBJ", position))
            elif name == "NEWOBJ_EX":
                stack.pop()  # keyword arguments
                args = stack.pop()
                cls = stack.pop()
                stack.append(self._call(cls, args, "NEWOBJ", position))
            elif name == "INST":
                module, _, attr = arg.partition(" ")
                args = tuple(pop_mark())
                stack.append(self._call(self._global(module, attr), args, "INST", position))
            elif name == "OBJ":
                items = pop_mark()
                stack.append(self._call(items[0], tuple(items[1:]), "OBJ", position))
            elif name == "BUILD":
                state = stack.pop()
                target = stack[-1]
                if isinstance(target, Call):
                    target.state.append(state)
                    self._built(target, state)
            elif name in ("PERSID", "BINPERSID"):
                if name == "BINPERSID":
                    stack.pop()
                stack.append(_Opaque("persistent id"))
            elif name == "NEXT_BUFFER":
                self.report.buffers += 1
                stack.append(_Opaque("out-of-band buffer"))
            elif opcode.arg is not None:
                stack.append(arg)  # a literal: int, float, str, bytes...
            else:
                raise ValueError(f"unknown opcode {name}")

    # -- effects

    def _dict(self, items: list[Any]) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        self._setitems(out, items)
        return out

    def _extend(self, target: Any, items: list[Any]) -> None:
        if isinstance(target, list):
            target.extend(items)

    def _setitems(self, target: Any, items: list[Any]) -> None:
        if not isinstance(target, dict):
            return
        for i in range(0, len(items) - 1, 2):
            key = items[i]
            try:
                target[key] = items[i + 1]
            except TypeError:
                target[repr(key)] = items[i + 1]

    def _global(self, module: str, attr: str) -> Global:
        self.modules[module] = None
        self.names[f"{module}.{attr}"] += 1
        return Global(module, attr)

    def _call(self, func: Any, args: Any, kind: str, position: int) -> Call:
        call = Call(func, args, kind, position)
        suffix = ".__new__" if kind == "NEWOBJ" else ""
        if isinstance(func, Global):
            self.calls[str(func) + suffix] += 1
            if func.module == _RECONSTRUCT:
                call.label = self._reconstruct(func.name, args if isinstance(args, tuple) else ())
        else:
            self.calls[_callable_name(func) + suffix] += 1
        return call

    def _reconstruct(self, name: str, args: tuple[Any, ...]) -> str:
        if name == "_make_function" and len(args) >= 4:
            module = ""
            if isinstance(args[2], dict):
                module = str(args[2].get("__name__", ""))
            # None: the code's name (a script's function; decoded below).
            self._function(args[0], args[1], "" if args[3] is None else str(args[3]), module)
            if len(args) >= 8 and self._script_origin(args[7]):
                fn = self.report.functions[-1]
                fn.script_copy = True
                path = _literal(args[7])[1]
                if not fn.name and path:  # not decoded: the name its script has it under
                    fn.name = str(path[-1])
        elif name == "_load_code" and len(args) >= 2:
            self._function(args[0], args[1], "", "")
        elif name in ("_make_class", "_make_enum") and len(args) >= 4:
            namespace = args[3] if isinstance(args[3], dict) else {}
            module = namespace.get("__module__", "?")
            qualname = namespace.get("__qualname__", args[1])
            self.classes[f"{module}.{qualname}"] = None
            return f"{module}.{qualname} (class by value)"
        elif name == "_resolve" and len(args) >= 2:
            module, path = args[0], _literal(args[1])
            if isinstance(module, str):
                self.modules[module] = None
                if isinstance(path, tuple):
                    self.references[format_path(module, path)] = None
        elif name == "_import" and args and isinstance(args[0], str):
            self.modules[args[0]] = None
        elif name in ("_main_object", "_script_or_build") and args:
            self._script_origin(args[0])
        elif name == "_make_lazy_import" and args and isinstance(args[0], str):
            # Imported by the function that first uses it, not when loaded.
            what = args[0] if not args[1] or len(args) < 3 else f"{args[0]}.{args[2]}"
            self.references[f"{what} (a lazy import: imported where first used)"] = None
        elif name == "_make_type_alias" and len(args) >= 7:
            self._script_origin(args[6])
        return ""

    def _script_origin(self, value: Any) -> bool:
        """Record an object of the sender's script (see picklable._reduce.scripts)."""
        origin = _literal(value)
        if not (isinstance(origin, tuple) and len(origin) == 4 and isinstance(origin[1], tuple)):
            return False
        module, path, filename = origin[0], origin[1], origin[2]
        self.references[f"{format_path(str(module), path)} (the sender's script {filename})"] = None
        return True

    def _built(self, target: Call, state: Any) -> None:
        """A by-value function's state names its real qualname and module."""
        func = target.func
        if not (
            isinstance(func, Global)
            and func.module == _RECONSTRUCT
            and func.name == "_make_function"
        ):
            return
        slots = state[1] if isinstance(state, tuple) and len(state) == 2 else None
        if not isinstance(slots, dict) or not self.report.functions:
            return
        fn = self.report.functions[-1]
        module = slots.get("__module__")
        if isinstance(module, str):
            fn.module = module
        qualname = slots.get("__qualname__")
        if isinstance(qualname, Call):  # _first(qualname, effects...)
            inner = qualname.args[0] if isinstance(qualname.args, tuple) and qualname.args else None
            # Before 0.2.0: itemgetter(0)((qualname, effects...)).
            qualname = inner[0] if isinstance(inner, tuple) and inner else inner
        if isinstance(qualname, str):
            fn.qualname = qualname

    def _function(self, data: Any, record: Any, name: str, module: str) -> None:
        fn = Function(name=name, module=module, compiled_by=str(record))
        filename = None
        if isinstance(data, tuple) and len(data) == 2 and isinstance(data[1], str):
            data, filename = data  # bytes without their file name, and the name
        if (
            self.decode_code
            and isinstance(data, bytes)
            and isinstance(record, str)
            and record == _HERE
        ):
            try:
                code = marshal.loads(data)  # builds a code object; runs nothing
            except Exception:
                code = None
            if isinstance(code, types.CodeType):
                fn.decoded = True
                fn.name = fn.name or code.co_name
                fn.qualname = getattr(code, "co_qualname", code.co_name)
                fn.filename = code.co_filename if filename is None else filename
                fn.line = code.co_firstlineno
                fn.reads = tuple(_global_names(code))
        self.report.functions.append(fn)

    def finish(self) -> None:
        report = self.report
        report.modules = sorted(self.modules)
        report.names = dict(sorted(self.names.items()))
        report.calls = dict(sorted(self.calls.items()))
        report.references = list(self.references)
        report.classes = list(self.classes)
        if report.functions or report.classes:
            report.flags.append(
                f"by-value code: {len(report.functions)} function(s), {len(report.classes)} "
                "class(es); "
                "their bytecode comes from the sender and runs here when called (class creation "
                "runs metaclass code at load)"
            )
        for name in report.calls:
            module, _, attr = name.rpartition(".")
            top = module.partition(".")[0]
            if (
                (module, attr) in _DANGEROUS
                or top in _DANGEROUS_MODULES
                or any(module == m and attr.startswith(p) for m, p in _DANGEROUS_PREFIXES)
            ):
                report.flags.append(
                    f"{name} is called at load: it can run code or touch the system"
                )


def _callable_name(func: Any) -> str:
    if isinstance(func, Global):
        return str(func)
    if isinstance(func, Call):
        return func.label or f"{_callable_name(func.func)}(...)"
    return type(func).__name__


_GLOBAL_OPS = frozenset(
    {"LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL", CLASSDICT_GLOBAL_OP}
)


def _global_names(code: types.CodeType) -> list[str]:
    """Globals the code (and the code nested in it) reads or writes.

    Read from the instructions (decoded, never run): ``co_names``
    alone mixes globals with attribute names.
    """
    return list(instruction_names(code, _GLOBAL_OPS))


def inspect_payload(data: bytes, *, decode_code: bool = True) -> PayloadReport:
    """Tell what loading ``data`` would import and call, without loading it.

    Parameters
    ----------
    data:
        One pickle, or several one after the other (as ``pickle.dump`` writes
        them to one file).
    decode_code:
        Decode the bytecode of by-value functions with :func:`marshal.loads`
        (builds code objects, runs none) to show their names and files; only
        done for code compiled by this interpreter.

    Returns
    -------
    PayloadReport
        Modules, names, calls, by-value code and flags. A damaged payload is
        reported in ``error`` with what was read before the damage.
    """
    report = PayloadReport(size=len(data))
    machine = _Machine(report, decode_code)
    stream = io.BytesIO(data)
    while stream.tell() < len(data):
        start = stream.tell()
        try:
            machine.run(stream)
        except Exception as exc:  # genops raises ValueError on damage; the stack may underflow
            report.error = f"not a valid pickle after byte {start}: {type(exc).__name__}: {exc}"
            break
        report.pickles += 1
        if stream.tell() == start:
            break
    machine.finish()
    return report
