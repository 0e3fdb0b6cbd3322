"""Attacks on `picklable._allow`: hand-made payloads, every opcode route and every rebuilder.

Each attack is a payload written opcode by opcode (``support.opcodes``) whose
goal is to run code (``os.system``, ``posix.system``, ``subprocess``,
``eval``, ``exec``), to reach a module outside the allow-list, or to modify a
module (its namespace, its classes, its functions, objects it holds). Under
``allowed=`` each must be refused with an UnpicklingError and leave every
watched module as it was. Without an allow-list most of them do reach their
goal (``TestTheAttacksAreReal``): they are real attacks, not typos.

A second, independent set written after the implementation lives in
``test_allow_heldout.py``.
"""

from __future__ import annotations

import copyreg
import dataclasses
import io
import json
import logging
import os
import pickle
import socketserver
import subprocess
import sys
import types
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

import picklable
from picklable import _allow, _code, _reconstruct, _tracker
from picklable_testpkg import api, modstate
from support.opcodes import (
    APPEND,
    FALSE,
    NONE,
    POP,
    additems,
    appends,
    binary,
    binpersid,
    build,
    call,
    dict_,
    ext,
    getattr_,
    global_,
    inst,
    integer,
    list_,
    newobj,
    newobj_ex,
    obj,
    payload,
    persid,
    rebuilder,
    setitems,
    slot_build,
    stack_global,
    text,
    tuple_,
)

MARKER_VARIABLE = "PICKLABLE_ATTACK_MARKER"
COMMAND = f'touch "${MARKER_VARIABLE}"'
CODE = f"open(__import__('os').environ[{MARKER_VARIABLE!r}], 'w').close()"
TESTPKG = ["picklable_testpkg"]
# A class this process sent by value once: its tracker id names it.
_tracker.track(socketserver.BaseServer, "attack-known-id")


@dataclasses.dataclass(frozen=True)
class Attack:
    """One hand-made payload, what it is after, and the list it is loaded under."""

    name: str
    routes: tuple[str, ...]  # opcodes and picklable rebuilders it goes through
    goal: str  # "run code", "reach", "modify"
    payload: bytes
    allowed: Any = ("json",)
    # Without an allow-list, how to tell from the result that the goal was reached
    # (for "run code": the marker file appears; None: not checked unguarded).
    reached: Callable[[Any], bool] | None = None
    # It may load, as long as its goal is not reached (a rebuilder that leaves
    # this process's own object alone, by its own rule).
    harmless: bool = False


def _runs(data: bytes) -> Callable[[Any], bool]:
    return lambda result: os.path.exists(os.environ[MARKER_VARIABLE])


def _is(target: Any) -> Callable[[Any], bool]:
    return lambda result: result is target


def _contains(target: Any) -> Callable[[Any], bool]:
    return lambda result: any(item is target for item in result)


def system(module: str = "os") -> bytes:
    return call(stack_global(module, "system"), text(COMMAND))


def _code_object() -> bytes:
    """_load_code(sealed bytes of a code object that runs CODE, this interpreter)."""
    from picklable import _code

    code = compile(CODE, "<attack>", "exec")
    import marshal

    return call(rebuilder("_load_code"), binary(_code.seal(marshal.dumps(code))), text(_code.HERE))


def _function_code() -> bytes:
    from picklable import _code

    def run():
        open(__import__("os").environ[MARKER_VARIABLE], "w").close()

    import marshal

    return binary(_code.seal(marshal.dumps(run.__code__)))


def _crafted_function(module: str) -> bytes:
    """_make_function(code, record, {'__name__': module, ...}, 'run', None, None)."""
    from picklable import _code

    return call(
        rebuilder("_make_function"),
        _function_code(),
        text(_code.HERE),
        dict_(__name__=text(module), MARKER_VARIABLE=text(MARKER_VARIABLE)),
        text("run"),
        NONE,
        NONE,
    )


def resolve(module: str, *path: Any) -> bytes:
    """_resolve(module, path): str steps are attributes, int indexes, 1-tuples keys."""
    steps = []
    for step in path:
        if type(step) is str:
            steps.append(text(step))
        elif type(step) is int:
            steps.append(integer(step))
        else:
            steps.append(tuple_(text(step[0])))
    return call(rebuilder("_resolve"), text(module), tuple_(*steps))


def import_(module: str) -> bytes:
    return call(rebuilder("_import"), text(module))


# A script this process runs as a spawn worker would (as __mp_main__): what a
# script reference can reach through it (installed by the `script` fixture).
MAIN_FILE = "/attack/script.py"
SCRIPT = types.ModuleType("__mp_main__")
SCRIPT.__file__ = MAIN_FILE
SCRIPT.os = os
SCRIPT.json = json
SCRIPT.dumps = json.dumps


def script_origin(*path: str, filename: str | None = MAIN_FILE) -> bytes:
    """A script object's origin ``(module, path, file, first line)``."""
    return tuple_(
        text("__main__"), tuple_(*map(text, path)), text(filename) if filename else NONE, NONE
    )


def _attacks() -> list[Attack]:
    return [
        # ------------------------------------------------ GLOBAL / STACK_GLOBAL
        Attack(
            "os.system by GLOBAL",
            ("GLOBAL", "REDUCE"),
            "run code",
            payload(call(global_("os", "system"), text(COMMAND)), protocol=2),
            reached=_runs(b""),
        ),
        Attack(
            "posix.system by STACK_GLOBAL",
            ("STACK_GLOBAL", "REDUCE"),
            "run code",
            payload(system("posix")),
            reached=_runs(b""),
        ),
        Attack(
            "builtins.eval",
            ("STACK_GLOBAL", "REDUCE"),
            "run code",
            payload(call(stack_global("builtins", "eval"), text(CODE))),
            reached=_runs(b""),
        ),
        Attack(
            "builtins.exec",
            ("STACK_GLOBAL", "REDUCE"),
            "run code",
            payload(call(stack_global("builtins", "exec"), text(CODE))),
            reached=_runs(b""),
        ),
        Attack(
            "__builtin__.eval (Python 2 name)",
            ("GLOBAL", "REDUCE"),
            "run code",
            payload(call(global_("__builtin__", "eval"), text(CODE)), protocol=2),
            reached=_runs(b""),
        ),
        Attack(
            "subprocess.check_call",
            ("STACK_GLOBAL", "REDUCE"),
            "run code",
            payload(
                call(
                    stack_global("subprocess", "check_call"),
                    list_(text("sh"), text("-c"), text(COMMAND)),
                )
            ),
            reached=_runs(b""),
        ),
        Attack(
            "a module imported by an allowed one",
            ("GLOBAL",),
            "reach",
            payload(global_("json", "codecs"), protocol=2),
            reached=_is(sys.modules["codecs"]),
        ),
        Attack(
            "os through a module step in between",
            ("STACK_GLOBAL",),
            "reach",
            payload(stack_global("json", "decoder.re.enum.sys")),
            reached=_is(sys),
        ),
        Attack(
            "collections._sys.modules",
            ("STACK_GLOBAL",),
            "reach",
            payload(stack_global("collections", "_sys.modules")),
            ("collections",),
            reached=_is(sys.modules),
        ),
        Attack(
            "a function's __globals__",
            ("STACK_GLOBAL",),
            "reach",
            payload(stack_global("json", "dumps.__globals__")),
            reached=_is(vars(json)),
        ),
        Attack(
            "a method's __globals__",
            ("STACK_GLOBAL",),
            "reach",
            payload(stack_global("json", "JSONDecoder.__init__.__globals__")),
            reached=_is(vars(json.decoder)),
        ),
        Attack(
            "a class's __subclasses__",
            ("STACK_GLOBAL", "REDUCE"),
            "reach",
            payload(call(stack_global("json", "JSONDecoder.__base__.__subclasses__"))),
            reached=_contains(subprocess.Popen),
        ),
        Attack(
            "a class's __class__ (type)",
            ("STACK_GLOBAL",),
            "reach",
            payload(stack_global("json", "JSONDecoder.__init__.__class__")),
            reached=_is(type(json.dumps)),
        ),
        Attack(
            "ctypes through numpy.ctypeslib",
            ("STACK_GLOBAL", "REDUCE"),
            "run code",
            payload(call(stack_global("numpy", "ctypeslib.ctypes.CDLL"), NONE)),
            ("numpy",),
            reached=lambda result: type(result).__name__ == "CDLL",
        ),
        Attack(
            "a module's dict by name",
            ("STACK_GLOBAL",),
            "reach",
            payload(stack_global("picklable_testpkg.modstate", "REGISTRY")),
            TESTPKG,
            reached=_is(modstate.REGISTRY),
        ),
        Attack(
            "another module by a name of an allowed one",
            ("STACK_GLOBAL",),
            "reach",
            payload(stack_global("picklable_testpkg.modstate", "MODULE_ALIAS")),
            TESTPKG,
            reached=_is(sys.modules["socketserver"]),
        ),
        Attack(
            "picklable's own unguarded rebuilders",
            ("STACK_GLOBAL", "REDUCE"),
            "run code",
            payload(call(stack_global("picklable", "_reconstruct._make_function"))),
            ("picklable",),
        ),
        Attack(
            "picklable._code.load under allowed=['picklable']",
            ("STACK_GLOBAL",),
            "run code",
            payload(stack_global("picklable._code", "load")),
            ("picklable",),
            reached=callable,
        ),
        # ------------------------------------------------------------ INST / OBJ
        Attack(
            "os.system by INST",
            ("INST",),
            "run code",
            payload(inst("os", "system", text(COMMAND)), protocol=2),
            reached=_runs(b""),
        ),
        Attack(
            "eval by INST",
            ("INST",),
            "run code",
            payload(inst("builtins", "eval", text(CODE)), protocol=2),
            reached=_runs(b""),
        ),
        Attack(
            "subprocess.Popen by OBJ",
            ("OBJ",),
            "run code",
            payload(
                obj(
                    stack_global("subprocess", "Popen"),
                    list_(text("sh"), text("-c"), text(COMMAND)),
                )
            ),
            reached=lambda result: result.wait() == 0 and _runs(b"")(None),
        ),
        Attack(
            "type() of a foreign metaclass by OBJ",
            ("OBJ",),
            "reach",
            payload(
                obj(stack_global("builtins", "type"), stack_global("collections", "abc.Sequence"))
            ),
            ("collections",),
            reached=lambda result: result.__module__ == "abc",
        ),
        # --------------------------------------------------------- NEWOBJ(_EX)
        Attack(
            "subprocess.Popen by NEWOBJ",
            ("NEWOBJ",),
            "run code",
            payload(newobj(stack_global("subprocess", "Popen"), list_(text("true")))),
        ),
        Attack(
            "a function from a code object by NEWOBJ",
            ("NEWOBJ", "_load_code"),
            "run code",
            payload(call(newobj(stack_global("types", "FunctionType"), _code_object(), dict_()))),
            reached=_runs(b""),
        ),
        Attack(
            "a function by NEWOBJ_EX",
            ("NEWOBJ_EX", "_load_code"),
            "run code",
            payload(
                call(
                    newobj_ex(
                        stack_global("types", "FunctionType"),
                        tuple_(_code_object(), dict_()),
                        dict_(),
                    )
                )
            ),
            reached=_runs(b""),
        ),
        Attack(
            "a module object by NEWOBJ",
            ("NEWOBJ",),
            "reach",
            payload(newobj(stack_global("types", "ModuleType"), text("os"))),
        ),
        Attack(
            "a class whose base is foreign, by NEWOBJ of type",
            ("NEWOBJ",),
            "run code",
            payload(
                newobj(
                    stack_global("builtins", "type"),
                    text("X"),
                    tuple_(stack_global("subprocess", "Popen")),
                    dict_(),
                )
            ),
        ),
        # ---------------------------------------------------------------- EXT
        Attack(
            "os.system by EXT1 (cached by an earlier load)",
            ("EXT1", "REDUCE"),
            "run code",
            payload(call(ext(0xF1), text(COMMAND)), protocol=2),
            reached=_runs(b""),
        ),
        Attack(
            "posix.system by EXT2",
            ("EXT2", "REDUCE"),
            "run code",
            payload(call(ext(0x1F2), text(COMMAND)), protocol=2),
            reached=_runs(b""),
        ),
        Attack(
            "eval by EXT4",
            ("EXT4", "REDUCE"),
            "run code",
            payload(call(ext(0x7FF3F3), text(CODE)), protocol=2),
            reached=_runs(b""),
        ),
        # -------------------------------------------------------------- PERSID
        Attack(
            "os.system by PERSID (a receiver's persistent_load)",
            ("PERSID", "REDUCE"),
            "run code",
            payload(call(persid("system"), text(COMMAND)), protocol=2),
        ),
        Attack(
            "BINPERSID without a persistent_load",
            ("BINPERSID",),
            "reach",
            payload(binpersid(text("system"))),
        ),
        # ------------------------------------------------------- REDUCE results
        Attack(
            "itemgetter('system') of os.__dict__",
            ("REDUCE", "_resolve"),
            "run code",
            payload(
                call(
                    call(stack_global("operator", "itemgetter"), text("system")),
                    resolve("json", "decoder", "re", "enum", "sys", "modules", ("os",), "__dict__"),
                )
            ),
            reached=lambda result: result is os.system,
        ),
        Attack(
            "itemgetter of a call's result holding foreign classes",
            ("REDUCE",),
            "run code",
            payload(
                call(
                    call(stack_global("operator", "itemgetter"), integer(2)),
                    call(getattr_(stack_global("picklable_testpkg.modstate", "Server"), "mro")),
                )
            ),
            TESTPKG,
            reached=lambda result: result is sys.modules["socketserver"].TCPServer,
        ),
        Attack(
            "type() of a class returns a foreign metaclass",
            ("REDUCE",),
            "reach",
            payload(
                call(stack_global("builtins", "type"), stack_global("collections", "abc.Sequence"))
            ),
            ("collections",),
            reached=lambda result: result.__module__ == "abc",
        ),
        Attack(
            "getattr of a function's __globals__",
            ("REDUCE", "getattr"),
            "reach",
            payload(getattr_(stack_global("json", "dumps"), "__globals__")),
            reached=_is(vars(json)),
        ),
        Attack(
            "getattr of a module attribute",
            ("REDUCE", "getattr"),
            "reach",
            payload(getattr_(import_("json"), "codecs")),
            reached=_is(sys.modules["codecs"]),
        ),
        Attack(
            "getattr of object.__subclasses__",
            ("REDUCE", "getattr"),
            "reach",
            payload(call(getattr_(stack_global("builtins", "object"), "__subclasses__"))),
            reached=_contains(subprocess.Popen),
        ),
        Attack(
            "getattr of __reduce_ex__ of an allowed object (its __dict__)",
            ("REDUCE", "getattr"),
            "reach",
            payload(
                call(
                    getattr_(call(stack_global("json", "JSONDecoder")), "__reduce_ex__"), integer(2)
                )
            ),
            reached=lambda result: result[0] is copyreg.__newobj__,
        ),
        Attack(
            "partial(eval)",
            ("REDUCE",),
            "run code",
            payload(
                call(
                    call(stack_global("functools", "partial"), stack_global("builtins", "eval")),
                    text(CODE),
                )
            ),
            reached=_runs(b""),
        ),
        Attack(
            "map(eval, ...)",
            ("REDUCE",),
            "run code",
            payload(
                call(
                    stack_global("builtins", "list"),
                    call(
                        stack_global("builtins", "map"),
                        stack_global("builtins", "eval"),
                        list_(text(CODE)),
                    ),
                )
            ),
            reached=_runs(b""),
        ),
        Attack(
            "copyreg._reconstructor of a foreign class",
            ("REDUCE",),
            "run code",
            payload(
                call(
                    stack_global("copyreg", "_reconstructor"),
                    stack_global("subprocess", "Popen"),
                    stack_global("builtins", "object"),
                    NONE,
                )
            ),
        ),
        Attack(
            "copyreg.__newobj__ of a module type",
            ("REDUCE",),
            "reach",
            payload(
                call(
                    stack_global("copyreg", "__newobj__"),
                    stack_global("types", "ModuleType"),
                    text("os"),
                )
            ),
        ),
        Attack(
            "an enum member's state replaced through a call",
            ("REDUCE", "BUILD"),
            "modify",
            payload(
                build(
                    call(stack_global("picklable_testpkg.modstate", "Level"), integer(1)),
                    dict_(_value_=integer(99)),
                )
            ),
            TESTPKG,
            reached=lambda result: modstate.Level.LOW._value_ == 99,
        ),
        Attack(
            "a module's dict returned by a call, items set",
            ("REDUCE", "SETITEMS"),
            "modify",
            payload(
                setitems(
                    call(stack_global("picklable_testpkg.modstate", "registry")),
                    (text("mode"), text("pwned")),
                )
            ),
            TESTPKG,
            reached=lambda result: modstate.REGISTRY["mode"] == "pwned",
        ),
        Attack(
            "a module's list returned by a call, items appended",
            ("REDUCE", "APPENDS"),
            "modify",
            payload(
                appends(call(stack_global("picklable_testpkg.modstate", "names")), text("pwned"))
            ),
            TESTPKG,
            reached=lambda result: "pwned" in modstate.NAMES,
        ),
        Attack(
            "a module's list, one item appended",
            ("REDUCE", "APPEND"),
            "modify",
            payload(
                call(stack_global("picklable_testpkg.modstate", "names")) + text("pwned") + APPEND
            ),
            TESTPKG,
            reached=lambda result: "pwned" in modstate.NAMES,
        ),
        Attack(
            "a module's set returned by a call, items added",
            ("REDUCE", "ADDITEMS"),
            "modify",
            payload(
                additems(call(stack_global("picklable_testpkg.modstate", "tags")), text("pwned"))
            ),
            TESTPKG,
            reached=lambda result: "pwned" in modstate.TAGS,
        ),
        Attack(
            "a module's dict updated by dict.update",
            ("REDUCE", "getattr"),
            "modify",
            payload(
                call(
                    getattr_(stack_global("builtins", "dict"), "update"),
                    call(stack_global("picklable_testpkg.modstate", "registry")),
                    dict_(mode=text("pwned")),
                )
            ),
            TESTPKG,
            reached=lambda result: modstate.REGISTRY["mode"] == "pwned",
        ),
        Attack(
            "a module's bytearray written through a memoryview",
            ("REDUCE", "SETITEMS"),
            "modify",
            payload(
                setitems(
                    call(
                        stack_global("builtins", "memoryview"),
                        call(stack_global("picklable_testpkg.modstate", "buffer")),
                    ),
                    (integer(0), integer(ord("P"))),
                )
            ),
            TESTPKG,
            reached=lambda result: bytearray(b"Plean") == modstate.BUFFER,
        ),
        Attack(
            "a singleton returned by a call, its attributes set",
            ("REDUCE", "BUILD"),
            "modify",
            payload(
                build(
                    call(stack_global("picklable_testpkg.modstate", "Settings.current")),
                    dict_(mode=text("pwned")),
                )
            ),
            TESTPKG,
            reached=lambda result: modstate.CURRENT.mode == "pwned",
        ),
        # ---------------------------------------------------------------- BUILD
        Attack(
            "BUILD on a module (json.loads = json.dumps)",
            ("BUILD", "_import"),
            "modify",
            payload(build(import_("json"), dict_(loads=stack_global("json", "dumps")))),
            reached=lambda result: json.loads is json.dumps,
        ),
        Attack(
            "BUILD on a submodule named as an attribute",
            ("BUILD", "STACK_GLOBAL"),
            "modify",
            payload(build(stack_global("json", "decoder"), dict_(PWNED=integer(1)))),
            reached=lambda result: hasattr(json.decoder, "PWNED"),
        ),
        Attack(
            "BUILD on sys.modules' os",
            ("BUILD", "_resolve"),
            "modify",
            payload(
                build(resolve("collections", "_sys", "modules", ("os",)), dict_(PWNED=integer(1)))
            ),
            ("collections",),
            reached=lambda result: hasattr(os, "PWNED"),
        ),
        Attack(
            "BUILD replacing a method of an allowed class",
            ("BUILD",),
            "modify",
            payload(
                slot_build(
                    stack_global("json", "JSONDecoder"), decode=stack_global("json", "dumps")
                )
            ),
            reached=lambda result: json.JSONDecoder.decode is json.dumps,
        ),
        Attack(
            "BUILD on a function's defaults",
            ("BUILD",),
            "modify",
            payload(
                slot_build(stack_global("json", "dumps"), __kwdefaults__=dict_(indent=integer(9)))
            ),
            reached=lambda result: json.dumps.__kwdefaults__ == {"indent": 9},
        ),
        Attack(
            "BUILD on a named object (logging.root)",
            ("BUILD",),
            "modify",
            payload(build(stack_global("logging", "root"), dict_(disabled=b"\x88"))),
            ("logging",),
            reached=lambda result: logging.root.disabled is True,
        ),
        Attack(
            "BUILD through __setstate__ of a named object",
            ("BUILD",),
            "modify",
            payload(
                build(stack_global("picklable_testpkg.api", "Color.RED"), dict_(_value_=integer(7)))
            ),
            TESTPKG,
            reached=lambda result: api.Color.RED._value_ == 7,
        ),
        # ----------------------------------------------------------- rebuilders
        Attack(
            "_import of a module outside the list",
            ("_import",),
            "reach",
            payload(import_("os")),
            reached=_is(os),
        ),
        Attack(
            "_import of picklable's internals",
            ("_import",),
            "reach",
            payload(import_("picklable._code")),
            ("picklable",),
        ),
        Attack(
            "_resolve through a module's __dict__",
            ("_resolve",),
            "reach",
            payload(resolve("json", "__dict__")),
            reached=_is(vars(json)),
        ),
        Attack(
            "_resolve through a module step, then __dict__",
            ("_resolve",),
            "run code",
            payload(
                call(
                    resolve(
                        "json",
                        "decoder",
                        "__dict__",
                        ("re",),
                        "enum",
                        "sys",
                        "modules",
                        ("os",),
                        "system",
                    ),
                    text(COMMAND),
                )
            ),
            reached=_runs(b""),
        ),
        Attack(
            "_resolve to __builtins__",
            ("_resolve",),
            "run code",
            payload(call(resolve("json", "decoder", "__builtins__", ("eval",)), text(CODE))),
            reached=_runs(b""),
        ),
        Attack(
            "_resolve to a function's __globals__",
            ("_resolve",),
            "reach",
            payload(resolve("json", "dumps", "__globals__")),
            reached=_is(vars(json)),
        ),
        Attack(
            "_resolve to picklable's unguarded _make_function",
            ("_resolve",),
            "run code",
            payload(resolve("picklable", "_reconstruct", "_make_function")),
            ("picklable",),
            reached=_is(_reconstruct._make_function),
        ),
        Attack(
            "_resolve to a non-implicit object of an implicit module",
            ("_resolve",),
            "reach",
            payload(resolve("types", "ModuleType")),
            reached=lambda result: result is type(os),
        ),
        Attack(
            "_resolve to a closure cell, then setattr",
            ("_resolve", "setattr"),
            "modify",
            payload(
                call(
                    stack_global("builtins", "setattr"),
                    resolve("picklable_testpkg.api", "add", "__closure__", 0),
                    text("cell_contents"),
                    integer(1000),
                )
            ),
            TESTPKG,
            reached=lambda result: api.add.__closure__[0].cell_contents == 1000,
        ),
        Attack(
            "_load_code: a bare code object run by exec",
            ("_load_code",),
            "run code",
            payload(call(stack_global("builtins", "exec"), _code_object())),
            reached=_runs(b""),
        ),
        Attack(
            "_make_function claiming an allowed module (issue 20)",
            ("_make_function",),
            "run code",
            payload(call(_crafted_function("json"))),
            reached=_runs(b""),
        ),
        Attack(
            "_make_function outside the list, even with by-value code allowed",
            ("_make_function",),
            "run code",
            payload(call(_crafted_function("os"))),
            _allow.Policy(["json"], by_value_code=True),
            reached=_runs(b""),
        ),
        Attack(
            "_make_cell holding a module outside the list",
            ("_make_cell", "_import"),
            "reach",
            payload(call(rebuilder("_make_cell"), import_("os"))),
        ),
        Attack(
            "_make_module named as an allowed module, then BUILD",
            ("_make_module", "BUILD"),
            "modify",
            payload(
                build(
                    call(rebuilder("_make_module"), text("json"), dict_()),
                    dict_(loads=stack_global("json", "dumps")),
                )
            ),
        ),
        Attack(
            "_make_module of a module outside the list",
            ("_make_module",),
            "reach",
            payload(call(rebuilder("_make_module"), text("os"), dict_())),
        ),
        Attack(
            "_make_class: a tracker id of a foreign class",
            ("_make_class",),
            "reach",
            payload(
                call(
                    rebuilder("_make_class"),
                    stack_global("builtins", "type"),
                    text("X"),
                    tuple_(),
                    dict_(__module__=text("json")),
                    text("attack-known-id"),
                    NONE,
                )
            ),
            reached=_is(socketserver.BaseServer),
        ),
        Attack(
            "_make_class with a foreign base",
            ("_make_class",),
            "run code",
            payload(
                call(
                    rebuilder("_make_class"),
                    stack_global("builtins", "type"),
                    text("X"),
                    tuple_(stack_global("subprocess", "Popen")),
                    dict_(__module__=text("json")),
                    text("attack-new-id"),
                    NONE,
                )
            ),
        ),
        Attack(
            "_make_class claiming a module outside the list",
            ("_make_class",),
            "reach",
            payload(
                call(
                    rebuilder("_make_class"),
                    stack_global("builtins", "type"),
                    text("X"),
                    tuple_(),
                    dict_(__module__=text("os")),
                    text("attack-id-2"),
                    NONE,
                )
            ),
        ),
        Attack(
            "_make_enum with a foreign metaclass",
            ("_make_enum",),
            "reach",
            payload(
                call(
                    rebuilder("_make_enum"),
                    stack_global("abc", "ABCMeta"),
                    text("E"),
                    tuple_(),
                    dict_(__module__=text("json")),
                    dict_(),
                    text("attack-id-3"),
                    NONE,
                )
            ),
        ),
        Attack(
            "_make_enum claiming a module outside the list",
            ("_make_enum",),
            "reach",
            payload(
                call(
                    rebuilder("_make_enum"),
                    stack_global("enum", "EnumType"),
                    text("E"),
                    tuple_(stack_global("enum", "Enum")),
                    dict_(__module__=text("os")),
                    dict_(A=integer(1)),
                    text("attack-id-4"),
                    NONE,
                )
            ),
        ),
        Attack(
            "_class_setstate on an allowed class",
            ("_class_setstate",),
            "modify",
            payload(
                call(
                    rebuilder("_class_setstate"),
                    stack_global("json", "JSONDecoder"),
                    tuple_(dict_(decode=stack_global("json", "dumps")), list_()),
                )
            ),
        ),
        Attack(
            "_bind_descriptor: type() bound to a class with a foreign metaclass",
            ("_bind_descriptor", "REDUCE"),
            "reach",
            payload(
                call(
                    call(
                        rebuilder("_bind_descriptor"),
                        call(
                            stack_global("builtins", "classmethod"),
                            stack_global("builtins", "type"),
                        ),
                        NONE,
                        stack_global("collections", "abc.Sequence"),
                    )
                )
            ),
            ("collections",),
            reached=lambda result: result.__module__ == "abc",
        ),
        Attack(
            "_bind_descriptor of function.__globals__",
            ("_bind_descriptor", "_resolve"),
            "reach",
            payload(
                call(
                    rebuilder("_bind_descriptor"),
                    resolve("types", "FunctionType", "__dict__", ("__globals__",)),
                    stack_global("json", "dumps"),
                    NONE,
                )
            ),
            reached=_is(vars(json)),
        ),
        Attack(
            "_set_proxy_state on a module (its own dict)",
            ("_set_proxy_state",),
            "modify",
            payload(
                call(
                    rebuilder("_set_proxy_state"),
                    import_("json"),
                    tuple_(dict_(loads=stack_global("json", "dumps")), NONE),
                )
            ),
            reached=lambda result: json.loads is json.dumps,
        ),
        Attack(
            "_set_proxy_state forwarded through a proxy to a module",
            ("_make_wrapt_proxy", "_set_proxy_state"),
            "modify",
            payload(
                call(
                    rebuilder("_set_proxy_state"),
                    call(
                        rebuilder("_make_wrapt_proxy"),
                        stack_global("wrapt", "ObjectProxy"),
                        import_("json"),
                    ),
                    tuple_(NONE, dict_(loads=stack_global("json", "dumps"))),
                )
            ),
            ("json", "wrapt"),
            reached=lambda result: json.loads is json.dumps,
        ),
        Attack(
            "_make_wrapt_proxy around a foreign callable",
            ("_make_wrapt_proxy",),
            "run code",
            payload(
                call(
                    call(
                        rebuilder("_make_wrapt_proxy"),
                        stack_global("wrapt", "CallableObjectProxy"),
                        stack_global("os", "system"),
                    ),
                    text(COMMAND),
                )
            ),
            ("json", "wrapt"),
            reached=_runs(b""),
        ),
        Attack(
            "_make_wrapt_function_wrapper calling eval",
            ("_make_wrapt_function_wrapper",),
            "run code",
            payload(
                call(
                    rebuilder("_make_wrapt_function_wrapper"),
                    stack_global("wrapt", "FunctionWrapper"),
                    stack_global("json", "dumps"),
                    dict_(wrapper=stack_global("builtins", "eval")),
                )
            ),
            ("json", "wrapt"),
        ),
        Attack(
            "_make_lru_cache around eval",
            ("_make_lru_cache",),
            "run code",
            payload(
                call(
                    call(
                        rebuilder("_make_lru_cache"),
                        stack_global("builtins", "eval"),
                        NONE,
                        b"\x89",
                    ),
                    text(CODE),
                )
            ),
            reached=_runs(b""),
        ),
        Attack(
            "_make_recursive_repr around eval",
            ("_make_recursive_repr",),
            "run code",
            payload(
                call(
                    call(
                        rebuilder("_make_recursive_repr"),
                        stack_global("builtins", "eval"),
                        text("..."),
                    ),
                    text(CODE),
                )
            ),
            reached=_runs(b""),
        ),
        Attack(
            "_make_partialmethod around os.system",
            ("_make_partialmethod", "STACK_GLOBAL"),
            "reach",
            payload(
                call(
                    rebuilder("_make_partialmethod"),
                    stack_global("os", "system"),
                    tuple_(text(CODE)),
                    dict_(),
                )
            ),
            reached=lambda result: result.func is os.system,
        ),
        Attack(
            "_make_partialmethod made for no object",
            ("_make_partialmethod",),
            "reach",
            payload(call(rebuilder("_make_partialmethod"), integer(1), tuple_(), dict_())),
        ),
        Attack(
            "_make_dataclass_annotate for a foreign class",
            ("_make_dataclass_annotate",),
            "reach",
            payload(
                call(
                    rebuilder("_make_dataclass_annotate"),
                    stack_global("subprocess", "Popen"),
                    text("__init__"),
                    tuple_(text("args")),
                    NONE,
                )
            ),
        ),
        Attack(
            "_make_dataclass_annotate made for no object",
            ("_make_dataclass_annotate",),
            "reach",
            payload(
                call(
                    rebuilder("_make_dataclass_annotate"),
                    text("json"),
                    text("__init__"),
                    tuple_(),
                    NONE,
                )
            ),
        ),
        Attack(
            "_make_cached_property of a foreign class",
            ("_make_cached_property",),
            "run code",
            payload(
                call(
                    rebuilder("_make_cached_property"), stack_global("subprocess", "Popen"), b"\x89"
                )
            ),
        ),
        Attack(
            "_make_property with a foreign getter",
            ("_make_property",),
            "run code",
            payload(
                call(
                    rebuilder("_make_property"),
                    stack_global("builtins", "property"),
                    stack_global("os", "system"),
                    NONE,
                    NONE,
                    NONE,
                )
            ),
        ),
        Attack(
            "_make_singledispatch of eval",
            ("_make_singledispatch",),
            "run code",
            payload(
                call(
                    call(
                        rebuilder("_make_singledispatch"), stack_global("builtins", "eval"), list_()
                    ),
                    text(CODE),
                )
            ),
            reached=_runs(b""),
        ),
        Attack(
            "_with_state on a module",
            ("_with_state", "_import"),
            "modify",
            payload(
                call(
                    rebuilder("_with_state"),
                    import_("json"),
                    dict_(loads=stack_global("json", "dumps")),
                )
            ),
            # Since issue 27 it never writes: a module cannot be copied, so it is
            # refused, guarded or not.
            harmless=True,
        ),
        Attack(
            "_with_state on a named function",
            ("_with_state",),
            "modify",
            payload(
                call(
                    rebuilder("_with_state"),
                    stack_global("json", "dumps"),
                    dict_(__kwdefaults__=dict_(indent=integer(9))),
                )
            ),
            harmless=True,  # a copy of json.dumps, json's own left alone (issue 27)
        ),
        Attack(
            "_with_state on a named class",
            ("_with_state",),
            "modify",
            payload(
                call(
                    rebuilder("_with_state"),
                    stack_global("json", "JSONDecoder"),
                    dict_(decode=stack_global("json", "dumps")),
                )
            ),
            harmless=True,  # a class cannot be copied: refused (issue 27)
        ),
        Attack(
            "_make_traceback, then its frame's builtins",
            ("_make_traceback", "getattr"),
            "run code",
            payload(
                call(
                    call(stack_global("operator", "itemgetter"), text("eval")),
                    getattr_(
                        getattr_(
                            call(
                                rebuilder("_make_traceback"),
                                tuple_(
                                    tuple_(
                                        text("f.py"),
                                        text("f"),
                                        NONE,
                                        NONE,
                                        integer(1),
                                        NONE,
                                        NONE,
                                        NONE,
                                        NONE,
                                    )
                                ),
                            ),
                            "tb_frame",
                        ),
                        "f_builtins",
                    ),
                )
            ),
            reached=lambda result: result is eval,
        ),
        Attack(
            "_exception_setstate on a module",
            ("_exception_setstate", "_import"),
            "modify",
            payload(
                call(
                    rebuilder("_exception_setstate"),
                    import_("json"),
                    tuple_(NONE, NONE, dict_(loads=stack_global("json", "dumps"))),
                )
            ),
            reached=lambda result: json.loads is json.dumps,
        ),
        Attack(
            "_exception_setstate with a foreign setter",
            ("_exception_setstate",),
            "run code",
            payload(
                call(
                    rebuilder("_exception_setstate"),
                    call(stack_global("builtins", "ValueError")),
                    tuple_(text(COMMAND), stack_global("os", "system"), dict_()),
                )
            ),
        ),
        Attack(
            "_main_object walking from the script into a module outside the list",
            ("_main_object",),
            "reach",
            payload(call(rebuilder("_main_object"), script_origin("os"), text("why"))),
            ("__main__",),
            reached=_is(os),
        ),
        Attack(
            "_main_object with __main__ not listed",
            ("_main_object",),
            "reach",
            payload(call(rebuilder("_main_object"), script_origin("dumps"), text("why"))),
            reached=_is(json.dumps),
        ),
        Attack(
            "_script_or_build walking from the script to os",
            ("_script_or_build",),
            "reach",
            payload(
                call(
                    rebuilder("_script_or_build"),
                    script_origin("os", "system"),
                    stack_global("builtins", "list"),
                    tuple_(),
                )
            ),
            ("__main__",),
        ),
        Attack(
            "_script_or_build building with eval",
            ("_script_or_build",),
            "run code",
            payload(
                call(
                    rebuilder("_script_or_build"),
                    script_origin("nowhere", filename=None),
                    stack_global("builtins", "eval"),
                    tuple_(text(CODE)),
                )
            ),
            ("__main__",),
            reached=_runs(b""),
        ),
        Attack(
            "_built_setstate carrying state to an allowed module's function",
            ("_built_setstate",),
            "modify",
            payload(
                call(
                    rebuilder("_built_setstate"),
                    stack_global("json", "dumps"),
                    tuple_(NONE, NONE, dict_(__kwdefaults__=dict_(indent=integer(9)))),
                )
            ),
            harmless=True,  # refused: never written on this process's own (issue 27)
        ),
        Attack(
            "_own_or_copy with state for an allowed module's function",
            ("_own_or_copy",),
            "modify",
            payload(
                call(
                    rebuilder("_own_or_copy"),
                    stack_global("json", "dumps"),
                    dict_(__kwdefaults__=dict_(indent=integer(9))),
                )
            ),
            harmless=True,  # a copy carries it; json's own is left as it is
        ),
        Attack(
            "_own_or_copy with state for a module",
            ("_own_or_copy", "_import"),
            "modify",
            payload(
                call(
                    rebuilder("_own_or_copy"),
                    import_("json"),
                    dict_(loads=stack_global("json", "dumps")),
                )
            ),
            harmless=True,  # no copy of a module is made: refused
        ),
        Attack(
            "_built_setstate with nothing to carry (this process's own object, left alone)",
            ("_built_setstate",),
            "modify",
            payload(
                call(
                    rebuilder("_built_setstate"),
                    stack_global("json", "dumps"),
                    tuple_(dict_(__kwdefaults__=dict_(indent=integer(9))), NONE, NONE),
                )
            ),
            harmless=True,
        ),
        Attack(
            "_built_setstate with a setter that writes a module's dict",
            ("_built_setstate", "_script_or_build"),
            "modify",
            payload(
                call(
                    rebuilder("_built_setstate"),
                    call(
                        rebuilder("_script_or_build"),
                        script_origin("nowhere", filename=None),
                        stack_global("builtins", "dict"),
                        tuple_(),
                    ),
                    tuple_(
                        call(stack_global("picklable_testpkg.modstate", "registry")),
                        getattr_(stack_global("builtins", "dict"), "update"),
                        NONE,
                    ),
                )
            ),
            TESTPKG,
        ),
        Attack(
            "_set_state_and_dict on a named object",
            ("_set_state_and_dict",),
            "modify",
            payload(
                call(
                    rebuilder("_set_state_and_dict"),
                    stack_global("logging", "root"),
                    tuple_(NONE, dict_(disabled=b"\x88")),
                )
            ),
            ("logging",),
            reached=lambda result: logging.root.disabled is True,
        ),
        Attack(
            "_set_instance_state on a named object",
            ("_set_instance_state",),
            "modify",
            payload(
                call(
                    rebuilder("_set_instance_state"),
                    stack_global("logging", "root"),
                    dict_(disabled=b"\x88"),
                )
            ),
            ("logging",),
            reached=lambda result: logging.root.disabled is True,
        ),
        Attack(
            "_set_instance_state on an enum member a call returned",
            ("_set_instance_state",),
            "modify",
            payload(
                call(
                    rebuilder("_set_instance_state"),
                    call(stack_global("picklable_testpkg.modstate", "Level"), integer(1)),
                    dict_(_value_=integer(99)),
                )
            ),
            TESTPKG,
            reached=lambda result: modstate.Level.LOW._value_ == 99,
        ),
        Attack(
            "_update_globals on a module's dict a call returned",
            ("_update_globals",),
            "modify",
            payload(
                call(
                    rebuilder("_update_globals"),
                    call(stack_global("picklable_testpkg.modstate", "registry")),
                    dict_(mode=text("pwned")),
                )
            ),
            TESTPKG,
            reached=lambda result: modstate.REGISTRY["mode"] == "pwned",
        ),
        Attack(
            "_fill_cell on a closure cell of a module's function",
            ("_fill_cell", "_resolve"),
            "modify",
            payload(
                call(
                    rebuilder("_fill_cell"),
                    resolve("picklable_testpkg.api", "add", "__closure__", 0),
                    integer(1000),
                )
            ),
            TESTPKG,
            reached=lambda result: api.add.__closure__[0].cell_contents == 1000,
        ),
        Attack(
            "_fill_cell on a module function's cell handed out by _closure_cell",
            ("_fill_cell", "_closure_cell", "STACK_GLOBAL"),
            "modify",
            payload(
                call(
                    rebuilder("_fill_cell"),
                    call(
                        rebuilder("_closure_cell"),
                        stack_global("picklable_testpkg.api", "add"),
                        integer(0),
                    ),
                    integer(1000),
                )
            ),
            TESTPKG,
            reached=lambda result: api.add.__closure__[0].cell_contents == 1000,
        ),
        Attack(
            "_first passing a module's dict on to _update_globals",
            ("_first", "_update_globals"),
            "modify",
            payload(
                call(
                    rebuilder("_update_globals"),
                    call(
                        rebuilder("_first"),
                        call(stack_global("picklable_testpkg.modstate", "registry")),
                    ),
                    dict_(mode=text("pwned")),
                )
            ),
            TESTPKG,
        ),
        Attack(
            "_update_globals on a module's namespace",
            ("_update_globals", "_resolve"),
            "modify",
            payload(
                call(
                    rebuilder("_update_globals"),
                    resolve("json", "dumps", "__globals__"),
                    dict_(loads=stack_global("json", "dumps")),
                )
            ),
            reached=lambda result: json.loads is json.dumps,
        ),
        Attack(
            "_check_interpreter passed, then os.system: the check admits nothing after it",
            ("_check_interpreter", "STACK_GLOBAL"),
            "run code",
            payload(tuple_(call(rebuilder("_check_interpreter"), text(_code.HERE)), system())),
            reached=_runs(b""),
        ),
        Attack(
            "_make_dict_view of sys.modules",
            ("_make_dict_view", "STACK_GLOBAL"),
            "reach",
            payload(
                call(rebuilder("_make_dict_view"), stack_global("sys", "modules"), text("values"))
            ),
            allowed=("sys",),
            reached=lambda result: any(module is os for module in result),
        ),
        Attack(
            "_make_dict_view asked for a method that writes",
            ("_make_dict_view",),
            "modify",
            payload(call(rebuilder("_make_dict_view"), dict_(a=integer(1)), text("clear"))),
        ),
        Attack(
            "_make_memoryview over sys.modules' keys",
            ("_make_memoryview", "STACK_GLOBAL"),
            "reach",
            payload(
                call(
                    rebuilder("_make_memoryview"),
                    stack_global("sys", "modules"),
                    text("B"),
                    tuple_(),
                )
            ),
            allowed=("sys",),
        ),
        Attack(
            "_make_typevar with os.system as the factory",
            ("_make_typevar", "STACK_GLOBAL"),
            "run code",
            payload(
                call(
                    rebuilder("_make_typevar"),
                    stack_global("os", "system"),
                    text(COMMAND),
                    tuple_(),
                    dict_(),
                    NONE,
                    text("attack"),
                )
            ),
        ),
        Attack(
            "_make_typevar with an allowed callable as the factory",
            ("_make_typevar", "STACK_GLOBAL"),
            "run code",
            payload(
                call(
                    rebuilder("_make_typevar"),
                    stack_global("json", "loads"),
                    text("[1]"),
                    tuple_(),
                    dict_(),
                    NONE,
                    text("attack"),
                )
            ),
        ),
        Attack(
            "_make_lazy_import of a module not allowed",
            ("_make_lazy_import",),
            "reach",
            payload(call(rebuilder("_make_lazy_import"), text("os"), NONE, NONE)),
        ),
        Attack(
            "_make_lazy_import with statements in its module's name",
            ("_make_lazy_import",),
            "run code",
            payload(
                call(rebuilder("_make_lazy_import"), text(f"json.x\n{CODE}\nimport os"), NONE, NONE)
            ),
        ),
        Attack(
            "_make_type_alias with statements in its name",
            ("_make_type_alias",),
            "run code",
            payload(
                call(
                    rebuilder("_make_type_alias"),
                    text(f"X = 1\n{CODE}\ntype Y"),
                    tuple_(),
                    text("json"),
                    NONE,
                    text("attack"),
                    list_(),
                )
            ),
        ),
        Attack(
            "_make_type_alias with statements in a parameter's name",
            ("_make_type_alias",),
            "run code",
            payload(
                call(
                    rebuilder("_make_type_alias"),
                    text("X"),
                    tuple_(
                        tuple_(
                            text("TypeVar"),
                            text(f"T] = 1\n{CODE}\ntype Y[T"),
                            integer(0),
                            FALSE,
                            text("attack-param"),
                        )
                    ),
                    text("json"),
                    NONE,
                    text("attack"),
                    list_(),
                )
            ),
        ),
        Attack(
            "_make_type_alias with statements in its qualname",
            ("_make_type_alias",),
            "run code",
            payload(
                call(
                    rebuilder("_make_type_alias"),
                    text("X"),
                    tuple_(),
                    text("json"),
                    text(f"f():\n    {CODE}\nf()\ndef g.<locals>.X"),
                    text("attack"),
                    list_(),
                )
            ),
        ),
        Attack(
            "_fill_type_alias writing into sys.path",
            ("_fill_type_alias", "STACK_GLOBAL"),
            "modify",
            payload(
                call(
                    rebuilder("_fill_type_alias"),
                    NONE,
                    tuple_(stack_global("sys", "path"), list_(text("/attack"))),
                )
            ),
            allowed=("sys",),
        ),
        Attack(
            "a name of picklable._reconstruct that is no rebuilder",
            ("STACK_GLOBAL",),
            "run code",
            payload(stack_global("picklable._reconstruct", "_code")),
        ),
    ]


ATTACKS = _attacks()


@pytest.fixture
def marker(tmp_path, monkeypatch):
    path = tmp_path / "pwned"
    monkeypatch.setenv(MARKER_VARIABLE, str(path))
    monkeypatch.setitem(sys.modules, "__mp_main__", SCRIPT)
    return path


def _watched() -> dict[str, Any]:
    """What no attack may change: namespaces, classes, functions, objects of modules."""
    # A module makes its __annotations__ on first read (wrapt's pure-Python
    # ObjectProxy reads its wrapped object's): a read, not a modification.
    _ = json.__annotations__, json.decoder.__annotations__
    return {
        "json": dict(vars(json)),
        "json.decoder": dict(vars(json.decoder)),
        "os": set(vars(os)),
        "json.JSONDecoder": dict(vars(json.JSONDecoder)),
        "json.dumps": (json.dumps.__kwdefaults__, json.dumps.__defaults__, dict(vars(json.dumps))),
        "logging.root": dict(vars(logging.root)),
        "modstate": (
            dict(modstate.REGISTRY),
            list(modstate.NAMES),
            set(modstate.TAGS),
            bytearray(modstate.BUFFER),
            dict(vars(modstate.CURRENT)),
            {m: dict(vars(m)) for m in modstate.Level},
        ),
        "api": (api.add.__closure__[0].cell_contents, {m: dict(vars(m)) for m in api.Color}),
    }


def _restore(before: dict[str, Any]) -> None:
    """Put back what an unguarded attack changed (TestTheAttacksAreReal)."""
    for module in (json, json.decoder):
        namespace, saved = vars(module), before[module.__name__]
        for name in set(namespace) - set(saved):
            del namespace[name]
        for name, value in saved.items():
            if namespace.get(name) is not value:
                namespace[name] = value
    for name in set(vars(os)) - before["os"]:
        delattr(os, name)
    for name in set(vars(json.JSONDecoder)) - set(before["json.JSONDecoder"]):
        delattr(json.JSONDecoder, name)  # copyreg caches __slotnames__ there
    for name, value in before["json.JSONDecoder"].items():
        if (
            name not in ("__dict__", "__weakref__", "__doc__")
            and vars(json.JSONDecoder).get(name) is not value
        ):
            setattr(json.JSONDecoder, name, value)
    json.dumps.__kwdefaults__, json.dumps.__defaults__, _ = before["json.dumps"]
    vars(logging.root).update(before["logging.root"])
    registry, names, tags, buffer, current, levels = before["modstate"]
    modstate.REGISTRY.clear(), modstate.REGISTRY.update(registry)
    modstate.NAMES[:] = names
    modstate.TAGS.clear(), modstate.TAGS.update(tags)
    modstate.BUFFER[:] = buffer
    vars(modstate.CURRENT).update(current)
    for member, state in levels.items():
        vars(member).update(state)
    api.add.__closure__[0].cell_contents = before["api"][0]
    for member, state in before["api"][1].items():
        vars(member).update(state)


@pytest.fixture
def extensions():
    """copyreg extension codes for os.system, posix.system and eval, their cache warm."""
    codes = [("os", "system", 0xF1), ("posix", "system", 0x1F2), ("builtins", "eval", 0x7FF3F3)]
    for module, name, code in codes:
        copyreg.add_extension(module, name, code)
        pickle.loads(payload(ext(code) + POP + NONE, protocol=2))  # fills copyreg's cache
    yield
    for module, name, code in codes:
        copyreg.remove_extension(module, name, code)


class _Persistent(picklable.Unpickler):
    def persistent_load(self, pid):
        return os.system


def _load(attack: Attack) -> Any:
    if any(route.startswith("EXT") for route in attack.routes):
        pass  # the extensions fixture is active
    if "PERSID" in attack.routes:
        return _Persistent(io.BytesIO(attack.payload), allowed=attack.allowed).load()
    allowed = attack.allowed
    return picklable.loads(
        attack.payload, allowed=list(allowed) if type(allowed) is tuple else allowed
    )


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_refused(attack, marker, extensions):
    """Refused with an UnpicklingError, nothing run, no module reached or modified."""
    before = _watched()
    refused = None
    try:
        try:
            _load(attack)
        except picklable.UnpicklingError as exc:
            refused = exc
    finally:
        after = _watched()
        if after != before:
            _restore(before)
    if not attack.harmless:
        assert refused is not None, f"{attack.name}: loaded"
        assert str(refused).startswith(("Refusing to load", "Cannot load")), str(refused)
    assert not marker.exists(), f"{attack.name}: its code ran"
    assert after == before, f"{attack.name}: a module was modified"


class TestTheAttacksAreReal:
    """Without an allow-list the same payloads reach their goal (as with plain pickle)."""

    REAL: ClassVar[list[Attack]] = [a for a in ATTACKS if a.reached is not None]

    @pytest.mark.parametrize("attack", REAL, ids=[a.name for a in REAL])
    def test_reaches_its_goal_unguarded(self, attack, marker, extensions):
        before = _watched()
        try:
            result = pickle.loads(attack.payload)
            assert attack.reached(result), attack.name
        finally:
            _restore(before)
        assert _watched() == before


class TestCoverage:
    def test_every_rebuilder_is_attacked(self):
        """Each rebuilder picklable declares is the route of at least one attack."""
        attacked = {route for attack in ATTACKS for route in attack.routes}
        assert set(_reconstruct.REBUILDERS) <= attacked, set(_reconstruct.REBUILDERS) - attacked

    def test_every_opcode_route_is_attacked(self):
        """GLOBAL, STACK_GLOBAL, INST, OBJ, NEWOBJ(_EX), EXT*, PERSID, REDUCE, BUILD, setitems..."""
        routes = {route for attack in ATTACKS for route in attack.routes}
        opcodes = {
            "GLOBAL",
            "STACK_GLOBAL",
            "INST",
            "OBJ",
            "NEWOBJ",
            "NEWOBJ_EX",
            "EXT1",
            "EXT2",
            "EXT4",
            "PERSID",
            "BINPERSID",
            "REDUCE",
            "BUILD",
            "SETITEMS",
            "APPEND",
            "APPENDS",
            "ADDITEMS",
        }
        assert opcodes <= routes, opcodes - routes

    def test_every_reach_has_a_guard(self):
        """A new reach cannot be declared without a guard deciding what it may do."""
        assert set(_allow._GUARDS) == set(_reconstruct.REACHES)
        for declared in _reconstruct.REBUILDERS.values():
            assert declared.reach in _allow._GUARDS
            if declared.reach == "state":
                assert declared.target in _allow._ARGUMENTS[declared.name]

    def test_every_goal(self):
        assert {a.goal for a in ATTACKS} == {"run code", "reach", "modify"}
