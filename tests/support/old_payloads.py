"""Checks of the frozen payloads in ``tests/old_payloads`` (shipped by reference).

A payload's expectations are Python expressions over ``obj``, the loaded object,
each with the ``repr`` of its value on the original object when the payload was
written (``manifest.json``, made by ``generate_old_payloads.py``, which
evaluates them with :func:`evaluate` too). :func:`load_and_check` runs in a fresh
child interpreter: it loads one payload file and evaluates its expressions in
order (some have effects, e.g. a call that fills a cache, and later ones see them).
"""

from __future__ import annotations

import importlib
import pickle
import pickletools
import sys
from pathlib import Path
from typing import Any

import picklable

# Stdlib modules every expression may name, besides ``obj`` and the builtins.
STDLIB = ("abc", "dataclasses", "enum", "functools", "inspect", "os", "sys", "traceback", "types")

GENERATOR = "generate_old_payloads.py"
# How a signed payload starts, and the bytes before its pickle (picklable._signing).
SIGNED_MAGIC = b"\x00PKS"
SIGNED_HEADER = 49


def namespace(obj: Any, imports: list[str]) -> dict[str, Any]:
    """Globals for the expressions: ``obj``, the stdlib modules above, ``imports``."""
    names: dict[str, Any] = {"obj": obj}
    for module in (*STDLIB, *imports):
        importlib.import_module(module)
        top = module.partition(".")[0]
        names[top] = sys.modules[top]
    return names


def evaluate(expression: str, names: dict[str, Any]) -> str:
    """``repr`` of the expression's value, or ``raises <type>: <message>``."""
    try:
        value = eval(expression, names)
    except Exception as exc:
        return f"raises {type(exc).__name__}: {exc}"
    return repr(value)


class Decoy:
    """Planted in the receiver's ``__main__`` under a name of the generator's.

    Code shipped by value must read its globals from the namespace it came with;
    code that finds one of these read the receiver's ``__main__`` instead.
    """

    def __init__(self, name: str) -> None:
        self.decoy_for = name

    def __getattr__(self, attribute: str) -> Any:
        raise AssertionError(f"read __main__.{self.decoy_for}.{attribute} of the receiver")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"called __main__.{self.decoy_for} of the receiver")

    def __repr__(self) -> str:
        return f"<decoy for __main__.{self.decoy_for}>"


def named_globals(data: bytes) -> list[str]:
    """``module:qualname`` of every global a payload names (STACK_GLOBAL, GLOBAL).

    A signed payload's pickle follows its header. Only what pickle's opcodes name:
    the payload inside an envelope is a bytes object here.
    """
    if data[: len(SIGNED_MAGIC)] == SIGNED_MAGIC:
        data = data[SIGNED_HEADER:]
    memo: dict[int, Any] = {}
    pushed: list[Any] = []  # the last values pushed, strings or None
    names: set[str] = set()
    for opcode, arg, _ in pickletools.genops(data):
        if opcode.name in ("SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"):
            pushed.append(arg)
        elif opcode.name == "MEMOIZE":
            memo[len(memo)] = pushed[-1] if pushed else None
        elif opcode.name in ("BINGET", "LONG_BINGET", "GET"):
            pushed.append(memo.get(int(arg)))
        elif opcode.name == "STACK_GLOBAL":
            names.add(f"{pushed[-2]}:{pushed[-1]}")
            pushed.append(None)
        elif opcode.name == "GLOBAL":
            names.add(arg.replace(" ", ":"))
            pushed.append(None)
        else:
            pushed.append(None)
    return sorted(names)


# The rebuilders of code shipped by value (frozen names of the format): a payload
# that names one carries the interpreter record of the Python that wrote it.
CODE_REBUILDERS = ("picklable._reconstruct:_make_function", "picklable._reconstruct:_load_code")


def carries_code(data: bytes) -> bool:
    """Whether a payload carries code by value: it names a code rebuilder, or
    holds a payload that does (an envelope's bytes, a signed payload's pickle)."""
    if data[: len(SIGNED_MAGIC)] == SIGNED_MAGIC:
        data = data[SIGNED_HEADER:]
    if set(CODE_REBUILDERS) & set(named_globals(data)):
        return True
    return any(
        opcode.name.startswith(("SHORT_BINBYTES", "BINBYTES"))
        and arg[:1] == pickle.PROTO
        and carries_code(arg)
        for opcode, arg, _ in pickletools.genops(data)
    )


def read_buffers(directory: Path, entry: dict[str, Any]) -> list[bytearray] | None:
    """The out-of-band buffers saved beside a payload, writable as they were made."""
    if not entry["buffers"]:
        return None
    return [bytearray((directory / name).read_bytes()) for name in entry["buffers"]]


def load_and_check(
    directory: str,
    name: str,
    entry: dict[str, Any],
    main_names: list[str],
    loader: str,
    key: bytes | None = None,
) -> dict[str, Any]:
    """Load ``directory/name`` with ``loader`` ("picklable" or "pickle") and check it.

    Returns the value of each expression (as :func:`evaluate` renders it), and
    whether the generator script was ever imported in this process.
    """
    folder = Path(directory)
    data = (folder / name).read_bytes()
    buffers = read_buffers(folder, entry)
    main = sys.modules["__main__"]
    planted = [n for n in main_names if n not in vars(main)]
    for planted_name in planted:
        setattr(main, planted_name, Decoy(planted_name))
    try:
        if loader == "picklable":
            obj = picklable.loads(data, buffers=buffers, key=key)
        elif loader == "pickle":
            obj = pickle.loads(data, buffers=buffers)
        else:
            raise ValueError(f"unknown loader {loader!r}")
        names = namespace(obj, entry["imports"])
        results = [[expression, evaluate(expression, names)] for expression, _ in entry["checks"]]
    finally:
        for planted_name in planted:
            delattr(main, planted_name)
    generator_seen = any(
        Path(getattr(module, "__file__", None) or "").name == GENERATOR
        for module in list(sys.modules.values())
    )
    return {"checks": results, "generator_imported": generator_seen}


def load_failure(
    path: str, loader: str, key: bytes | None = None, buffers: list[str] | None = None
) -> str | None:
    """How loading the file at ``path`` (with the ``buffers`` files saved beside
    it) fails, or None if it loads."""
    folder = Path(path).parent
    data = Path(path).read_bytes()
    read = read_buffers(folder, {"buffers": buffers or []})
    try:
        if loader == "picklable":
            picklable.loads(data, buffers=read, key=key)
        else:
            pickle.loads(data, buffers=read)
    except Exception as exc:
        return f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}"
    return None
