"""What a script's main guard binds: the names a worker's copy of the script
does not share with the sender.

A spawn worker imports the sender's script as ``__mp_main__``, without its
``if __name__ == "__main__":`` block. Everything the module level makes is
made the same way there; what the guard binds is not: a name it sets
(``CONFIG = parse_args()``), rebinds (``scale = make_scale(10)``) or changes
the attributes or items of (``Model.default = ...``, ``REGISTRY["x"] = ...``)
holds another object in the worker, or none; so may an object the guard calls
a method of (``CONFIG.update(...)``), unless it is a module (``os.makedirs``
changes no name). An object found under such a name, or a function that reads
one, is not the worker's own: it travels as a copy (see :mod:`.scripts`).
The script's functions that the guard calls by name (``main()``), and those they
call in turn, run in the sender only: the globals they declare ``global`` or
change in place count as the guard's. A function the guard only passes on
(a pool's ``initializer``) is not followed: a worker runs it too.

The answer comes from the script's source (parsed once per file, with
:mod:`ast`; nothing runs). A guard that rebinds names out of sight
(``globals()``, ``exec``, ``vars()``), or a file that cannot be read or parsed,
answers None: every name may differ.
"""

from __future__ import annotations

import ast
import os
import types
from typing import Any

from .. import _caches

__all__ = ["guard_answer", "guard_bindings", "worker_bindings"]

# Calls through which a guard may rebind any name of the module.
_DYNAMIC = frozenset({"exec", "eval"})
# The module's namespace itself: read from it (``globals()[name]``,
# ``globals().get(name)``) and nothing changes; anything else may.
_NAMESPACE = frozenset({"globals", "vars", "locals"})
_READS = frozenset({"get", "items", "keys", "values", "copy", "__getitem__", "__contains__"})
# Calls that change an attribute of their first argument.
_SETTERS = frozenset({"setattr", "delattr"})

# (names bound or changed, names whose methods are called), or None: cannot tell.
_Answer = tuple[frozenset[str], frozenset[str]] | None
# filename -> [(mtime_ns, size), the guard's answer, the names the module level
# binds outside the guard or None, or _LATER until asked]; bounded by the
# scripts a process sees.
_answers: dict[str, list[Any]] = {}
_caches.register("main_guard.answers", _answers.clear)
# The second answer is read when first asked (a pool sending functions by
# reference asks; a dump does not): a parse of the file again then.
_LATER: Any = object()


def _read(filename: str, *, unguarded: bool = False) -> tuple[_Answer, frozenset[str] | None]:
    """The answers for the script ``filename``, parsed once per version of the
    file; the second only with ``unguarded`` (else None)."""
    try:
        stat = os.stat(filename)
    except OSError:
        return None, None
    key = (stat.st_mtime_ns, stat.st_size)
    known = _answers.get(filename)
    if known is None or known[0] != key:
        tree = _parse(filename)
        known = _answers[filename] = [key, None if tree is None else _bindings(tree), _LATER]
    if not unguarded:
        return known[1], None
    if known[2] is _LATER:
        tree = _parse(filename)
        known[2] = None if tree is None else _unguarded_bindings(tree)
    return known[1], known[2]


def _parse(filename: str) -> ast.Module | None:
    try:
        with open(filename, "rb") as source:
            return ast.parse(source.read(), filename)
    except (OSError, SyntaxError, ValueError):
        return None


def worker_bindings(filename: str) -> frozenset[str] | None:
    """The top-level names that the script ``filename`` binds outside its main
    guard: what a process that imports it (a spawn worker) defines for sure.

    A name a function sets (``global``) is not among them: the function may only
    run under the guard. None if it cannot be told (a star import, ``exec``).
    """
    return _read(filename, unguarded=True)[1]


def guard_answer(filename: str) -> _Answer:
    """``(names the main guard of the script ``filename`` binds or changes, names
    it calls a method of)``, as the file is now; None if it cannot be told. (What
    :func:`guard_bindings` reads against a namespace; :mod:`.scripts` keeps it
    per version of the script.)"""
    return _read(filename)[0]


def guard_bindings(filename: str, namespace: dict[str, Any]) -> frozenset[str] | None:
    """The top-level names that the main guard of the script ``filename`` binds
    or changes, read against the script's ``namespace``; None if it cannot be
    told (then any name may differ)."""
    answer = _read(filename)[0]
    if answer is None:
        return None
    bound, called = answer
    changed = {n for n in called if not isinstance(namespace.get(n), types.ModuleType)}
    return bound | changed if changed else bound


def _is_main_test(test: ast.expr, op: type[ast.cmpop]) -> bool:
    """``__name__ == "__main__"`` (either way round) with the operator ``op``."""
    if not isinstance(test, ast.Compare) or len(test.ops) != 1 or type(test.ops[0]) is not op:
        return False
    sides = [test.left, test.comparators[0]]
    names = [s.id for s in sides if isinstance(s, ast.Name)]
    texts = [s.value for s in sides if isinstance(s, ast.Constant)]
    return names == ["__name__"] and texts == ["__main__"]


def _bindings(tree: ast.Module) -> _Answer:
    guarded: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.If):
            if _is_main_test(node.test, ast.Eq):
                guarded.extend(node.body)
            elif _is_main_test(node.test, ast.NotEq):
                guarded.extend(node.orelse)
    if not guarded:
        return frozenset(), frozenset()
    # The script's functions, by the name they are defined under (the guard's own
    # definitions last: they win, as at run time).
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {
        node.name: node
        for node in [*tree.body, *guarded]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    names: set[str] = set()
    called: set[str] = set()
    calls: set[str] = set()
    for statement in guarded:
        if not _collect(statement, names, called, calls, frozenset()):
            return None
    # What the guard calls runs in the sender only: ``main()`` setting a global
    # (``global CONFIG``) or changing one in place is the guard's doing too.
    followed: set[str] = set()
    todo = list(calls)
    while todo:
        name = todo.pop()
        function = functions.get(name)
        if function is None or name in followed:
            continue
        followed.add(name)
        local = _local_names(function)
        inner: set[str] = set()
        for statement in function.body:
            if not _collect(statement, names, called, inner, local):
                return None
        todo.extend(inner)
    return frozenset(names), frozenset(called - names)


def _unguarded_bindings(tree: ast.Module) -> frozenset[str] | None:
    """Names the module level binds in the statements that run on import (all but
    the guard's own block; its ``else`` runs). Read generously (``X.a = 1`` binds
    ``X`` too): a name counted here that is not bound would fail, never mislead."""
    names: set[str] = set()
    called: set[str] = set()
    for node in tree.body:
        run: list[ast.stmt] = [node]
        if isinstance(node, ast.If):
            if _is_main_test(node.test, ast.Eq):
                run = node.orelse
            elif _is_main_test(node.test, ast.NotEq):
                run = node.body
        for statement in run:
            if not _collect(statement, names, called, set(), frozenset()):
                return None
    return frozenset(names)


def _collect(
    root: ast.AST, names: set[str], called: set[str], calls: set[str], local: frozenset[str]
) -> bool:
    """Add the module-level names ``root`` binds or changes to ``names``, those
    it calls a method of to ``called``, the functions it calls by name to
    ``calls``; names in ``local`` are a function's own and not the module's.
    False if it may rebind names out of sight."""
    # Parents, for the rare call of globals() or vars(): made when first needed
    # (a walk of the whole statement: most of the parse's cost when made always).
    parents: dict[int, ast.AST] | None = None
    todo: list[Any] = [root]

    def module_level(name: str | None) -> bool:
        return name is not None and name not in local

    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if module_level(node.name):
                names.add(node.name)  # its body is another scope: not followed
            todo.extend(node.decorator_list)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            if module_level(node.id):
                names.add(node.id)
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(
            node.ctx, (ast.Store, ast.Del)
        ):
            base = _base_name(node)
            if module_level(base):
                names.add(base)  # type: ignore[arg-type]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return False
                bound = alias.asname or alias.name.partition(".")[0]
                if module_level(bound):
                    names.add(bound)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            if module_level(node.name):
                names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            if module_level(node.rest):
                names.add(node.rest)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name in _DYNAMIC:
                return False
            if name in _NAMESPACE:
                if parents is None:
                    parents = {
                        id(child): parent
                        for parent in ast.walk(root)
                        for child in ast.iter_child_nodes(parent)
                    }
                if not _only_read(node, parents.get(id(node))):
                    return False
            if name in _SETTERS and node.args:
                base = _base_name(node.args[0])
                if module_level(base):
                    names.add(base)  # type: ignore[arg-type]
            elif module_level(name):
                calls.add(name)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            base = _base_name(node.func)
            if module_level(base):
                called.add(base)  # type: ignore[arg-type]
        todo.extend(ast.iter_child_nodes(node))
    return True


def _local_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """The names ``function`` binds in its own scope (parameters included): all
    it assigns, defines or imports, but those it declares ``global``."""
    arguments = function.args
    local = {
        a.arg
        for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        + [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    }
    declared: set[str] = set()
    todo: list[ast.AST] = list(function.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            local.add(node.name)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Global):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            local.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            local.update(a.asname or a.name.partition(".")[0] for a in node.names)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            local.add(node.name)
        todo.extend(ast.iter_child_nodes(node))
    return frozenset(local - declared)


def _base_name(node: ast.expr) -> str | None:
    """``X`` of ``X.a.b``, ``X[k].a``, ``X``; None for anything else."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _only_read(call: ast.Call, parent: ast.AST | None) -> bool:
    """Whether the namespace ``call`` returns (``globals()``) is only read from."""
    if isinstance(parent, ast.Subscript) and parent.value is call:
        return isinstance(parent.ctx, ast.Load)
    if isinstance(parent, ast.Attribute) and parent.value is call:
        return parent.attr in _READS
    if isinstance(parent, ast.Compare) and call in parent.comparators:
        return all(isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops)
    return False
