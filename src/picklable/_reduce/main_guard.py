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

The guard is every block that runs on a comparison of ``__name__`` with
``"__main__"`` (see :func:`_split`); a name the module level binds again after
the last guard counts too: a worker holds the last value on import, the sender
an earlier one while its guards run. One bound again between two guards counts
while the sender's module level has not reached it (:func:`between`).

The answer comes from the script's source (parsed once per file, with
:mod:`ast`; nothing runs). A guard that rebinds names out of sight
(``globals()``, ``exec``, ``vars()``, the module object itself through
``sys.modules`` or ``import __main__``, or a name the module level binds to
either: ``G = globals()``), or a file that cannot be read or parsed, answers
None: every name may differ.

Most questions need less (issue 29): whether the guard touches one name (the
one a lambda is bound to, the globals it reads). :func:`guard_index` answers
them from the running script's own code object, without parsing the file: a
name none of the instructions from the first ``"__main__"`` test on mentions,
nor any function they may call (followed by name through the code objects,
generously), is not the guard's. Where a function that may be called does
mention it, that function alone is parsed (from its ``def`` statement's span)
and read as above. Anything else answers "maybe", and the caller reads the
whole answer: the index never answers "no" where the parse would say "yes".
"""

from __future__ import annotations

import ast
import dis
import os
import re
import types
from collections.abc import Iterator
from typing import Any

from .. import _caches
from .script_position import Between, module_frame

__all__ = [
    "Between",
    "GuardIndex",
    "answers",
    "between",
    "guard_answer",
    "guard_bindings",
    "guard_index",
    "worker_bindings",
]

# Calls through which a guard may rebind any name of the module.
_DYNAMIC = frozenset({"exec", "eval"})
# The module's namespace itself: read from it (``globals()[name]``,
# ``globals().get(name)``) and nothing changes; anything else may.
_NAMESPACE = frozenset({"globals", "vars", "locals"})
_READS = frozenset({"get", "items", "keys", "values", "copy", "__getitem__", "__contains__"})
# Names through which code reaches the module object itself (``sys.modules``,
# ``import __main__``): what it sets there, the index cannot see.
_MODULE_OBJECT = frozenset({"modules", "__main__"})
# Calls that change an attribute of their first argument.
_SETTERS = frozenset({"setattr", "delattr"})

# (names bound or changed, names whose methods are called), or None: cannot tell.
_Answer = tuple[frozenset[str], frozenset[str]] | None
# filename -> [(mtime_ns, size), the guard's answer, its Between, the names the
# module level binds outside the guard or None, or _LATER until asked];
# bounded by the scripts a process sees.
_answers: dict[str, list[Any]] = {}
_caches.register("main_guard.answers", _answers.clear)
# The second answer is read when first asked (a pool sending functions by
# reference asks; a dump does not): a parse of the file again then.
_LATER: Any = object()


def _read(
    filename: str, *, unguarded: bool = False, source: bytes | None = None
) -> tuple[_Answer, frozenset[str] | None, Between]:
    """The answers for the script ``filename``, parsed once per version of the
    file (from ``source``, its bytes, if the caller read them): the guard's,
    what the module level binds outside it (only with ``unguarded``, else
    None), and what it binds again between guards."""
    try:
        stat = os.stat(filename)
    except OSError:
        return None, None, ()
    key = (stat.st_mtime_ns, stat.st_size)
    known = _answers.get(filename)
    tree: ast.Module | Any | None = _LATER
    if known is None or known[0] != key:
        tree = _parse(filename, source)
        answer, between = (None, ()) if tree is None else _bindings(tree)
        known = _answers[filename] = [key, answer, between, _LATER]
    if not unguarded:
        return known[1], None, known[2]
    if known[3] is _LATER:
        if tree is _LATER:  # not parsed above: the first answer was known
            tree = _parse(filename, source)
        known[3] = None if tree is None else _unguarded_bindings(tree)
    return known[1], known[3], known[2]


def _parse(filename: str, source: bytes | None = None) -> ast.Module | None:
    try:
        if source is None:
            with open(filename, "rb") as file:
                source = file.read()
        return ast.parse(source, filename)
    except (OSError, SyntaxError, ValueError):
        return None


def worker_bindings(filename: str) -> frozenset[str] | None:
    """The top-level names that the script ``filename`` binds outside its main
    guard: what a process that imports it (a spawn worker) defines for sure.

    A name a function sets (``global``) is not among them: the function may only
    run under the guard. None if it cannot be told (a star import, ``exec``).
    """
    return _read(filename, unguarded=True)[1]


def guard_answer(filename: str, source: bytes | None = None) -> _Answer:
    """``(names the main guard of the script ``filename`` binds or changes, names
    it calls a method of)``, as the file is now (or of ``source``, its bytes as
    the caller read them); None if it cannot be told. (What
    :func:`guard_bindings` reads against a namespace; :mod:`.scripts` keeps it
    per version of the script, and :mod:`.guard_store` on disk.)"""
    return _read(filename, source=source)[0]


def answers(
    filename: str, source: bytes | None = None
) -> tuple[_Answer, frozenset[str] | None, Between]:
    """:func:`guard_answer`, :func:`worker_bindings` and :func:`between` of the
    script ``filename`` (or of ``source``, its bytes), from one parse: what
    :mod:`.guard_store` keeps."""
    return _read(filename, unguarded=True, source=source)


def between(filename: str) -> Between:
    """The statements of the script ``filename``'s module level, between its
    first guard and its last, that bind a name again (one the module level
    bound before) or call a method of one (not of a module): ``(first line,
    names)`` for each, in order.

    What they bind differs between the sender and a worker while the sender
    runs an earlier guard (the worker ran the whole module level on import),
    and no more once it has run them (a pool's initializer setting a global
    first bound there, in a later guard, is the pattern). Which holds depends
    on where the module level is at the dump (:mod:`.script_position`).
    """
    return _read(filename)[2]


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


def _has_main_test(node: ast.AST) -> bool:
    """Whether ``node`` compares ``__name__`` with ``"__main__"`` anywhere in it,
    or matches ``__name__`` against patterns (``match __name__:``), functions
    and classes defined in it aside (their bodies run when called)."""
    todo: list[Any] = [node]
    while todo:
        current = todo.pop()
        if isinstance(current, ast.Compare) and (
            _is_main_test(current, ast.Eq) or _is_main_test(current, ast.NotEq)
        ):
            return True
        if (
            isinstance(current, ast.Match)
            and isinstance(current.subject, ast.Name)
            and current.subject.id == "__name__"
        ):
            return True
        if not isinstance(current, _SCOPES):
            _push_children(current, todo)
    return False


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_IMPORTS = (ast.Import, ast.ImportFrom)
# Statements a guard may sit in whose blocks run as the module level's own.
_TRY = tuple(t for t in (ast.Try, getattr(ast, "TryStar", None)) if t is not None)


def _split(body: list[ast.stmt]) -> tuple[list[ast.AST], list[ast.AST], list[ast.AST]]:
    """The module level's statements sorted: ``(guarded, unguarded, after)``.

    Guarded runs in the sender alone: an ``if __name__ == "__main__":`` block
    (``!=``: its ``else``), at the top or in an ``if`` or ``try`` block;
    both branches of an ``if`` whose test mixes that comparison with others
    (``and debug``: which branch runs in which process depends on more than
    the name); any other statement that makes the comparison (``x = 1 if
    __name__ == "__main__" else 2``, a guard in a loop or a ``with`` block:
    unguarded too, read generously). Unguarded runs on import too. After:
    the statements that follow the last guard, which a worker runs on import
    and the sender only once every guard is done (unguarded too; what runs
    between two guards has run in the sender by the time the later one runs).
    """
    guarded: list[ast.AST] = []
    unguarded: list[ast.AST] = []
    after: list[ast.AST] = []
    for node in body:
        if isinstance(node, _SCOPES) or not _has_main_test(node):
            unguarded.append(node)
            if guarded:
                after.append(node)
            continue
        after = []  # a guard: what follows the last one counts
        if isinstance(node, ast.If):
            if _is_main_test(node.test, ast.Eq):
                guarded.extend(node.body)
                unguarded.extend(node.orelse)
                continue
            if _is_main_test(node.test, ast.NotEq):
                guarded.extend(node.orelse)
                unguarded.extend(node.body)
                continue
            if _has_main_test(node.test):
                guarded.extend([node.test, *node.body, *node.orelse])
                continue
            parts = [_split(node.body), _split(node.orelse)]
            unguarded.append(node.test)
        elif isinstance(node, _TRY):
            parts = [_split(node.body), _split(node.orelse), _split(node.finalbody)]
            for handler in node.handlers:
                parts.append(_split(handler.body))
                if handler.type is not None:
                    unguarded.append(handler.type)
                if handler.name:
                    unguarded.append(ast.Name(id=handler.name, ctx=ast.Store()))
        else:
            # A statement that makes the comparison, or a loop, ``with`` or
            # ``match`` block with a guard inside: all it binds may differ, and
            # (read generously) a worker binds it.
            guarded.append(node)
            unguarded.append(node)
            continue
        for part in parts:
            guarded.extend(part[0])
            unguarded.extend(part[1])
            after.extend(part[2])
    return guarded, unguarded, after


def _between_guards(body: list[ast.stmt]) -> list[ast.stmt]:
    """The module level's top statements after its first guard and before its
    last that hold none."""
    guards = [i for i, node in enumerate(body) if _is_guard_statement(node)]
    if len(guards) < 2:
        return []
    return [node for node in body[guards[0] + 1 : guards[-1]] if not _is_guard_statement(node)]


def _is_guard_statement(node: ast.stmt) -> bool:
    return not isinstance(node, _SCOPES) and _has_main_test(node)


def _first_line(node: ast.stmt) -> int:
    """A statement's first line, its decorators' included."""
    decorators = getattr(node, "decorator_list", None)
    return min([node.lineno, *(d.lineno for d in decorators)]) if decorators else node.lineno


def _bindings(tree: ast.Module) -> tuple[_Answer, Between]:
    guarded, unguarded, after = _split(tree.body)
    middle = _between_guards(tree.body)
    # A name that what follows the last guard binds again (the module level
    # bound it before): a worker holds the last value (it runs the whole module
    # on import), the sender an earlier one while its guards run. (A name first
    # bound there, a helper defined after the guard, is the worker's alone: the
    # sender has nothing else to send.) What the statements between two guards
    # bind again is kept apart with their lines (see between()).
    rebound: set[str] = set()
    between_guards: list[tuple[int, frozenset[str]]] = []
    if after or middle:
        late = {id(statement) for statement in after}
        inside = {id(statement) for statement in middle}
        modules = _modules(unguarded)  # (a method of a module changes no name)
        bound_so_far: set[str] = set()
        for statement in unguarded:  # in the order they run
            bound: set[str] = set()
            touched: set[str] = set()
            if not _collect(statement, bound, touched, set(), frozenset()):
                return None, ()
            if not isinstance(statement, _IMPORTS):  # (an import again: the same module)
                if id(statement) in late:
                    rebound |= bound & bound_so_far
                elif id(statement) in inside:
                    # Bound again, or changed in place (``CONFIG.update(...)``).
                    changed = (bound | (touched - modules)) & bound_so_far
                    if changed:
                        between_guards.append((_first_line(statement), frozenset(changed)))  # type: ignore[arg-type]
            bound_so_far |= bound
    middle_answer = tuple(between_guards)
    if not guarded and not rebound:
        return (frozenset(), frozenset()), middle_answer
    # The script's functions, by the name they are defined under (the guard's own
    # definitions last: they win, as at run time).
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {
        node.name: node
        for node in [*unguarded, *guarded]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    names: set[str] = set(rebound)
    called: set[str] = set()
    calls: set[str] = set()
    for statement in guarded:
        if not _collect(statement, names, called, calls, frozenset()):
            return None, ()
    # What the guard calls runs in the sender only: ``main()`` setting a global
    # (``global CONFIG``) or changing one in place is the guard's doing too. So
    # do the functions registered on an object it calls (``@app.command()``
    # under ``app()``, ``@cli.command()`` under ``cli()``): the library the
    # object belongs to dispatches to them.
    registered = _registered(functions.values(), _modules(unguarded))
    followed: set[str] = set()
    dispatched: set[str] = set()
    todo = list(calls)
    while todo:
        while todo:
            name = todo.pop()
            calls.add(name)
            function = functions.get(name)
            if function is None or name in followed:
                continue
            followed.add(name)
            local = _local_names(function)
            inner: set[str] = set()
            for statement in function.body:
                if not _collect(statement, names, called, inner, local):
                    return None, ()
            todo.extend(inner)
        for root in (calls | called) & registered.keys() - dispatched:
            dispatched.add(root)
            todo.extend(registered[root])
    if not (names | called).isdisjoint(_module_aliases([*unguarded, *guarded])):
        # ``__main__.X = ...``, ``G["X"] = ...`` after ``G = globals()``: the
        # module itself, changed by another name.
        return None, ()
    return (frozenset(names), frozenset(called - names)), middle_answer


def _registered(functions: Any, modules: set[str]) -> dict[str, list[str]]:
    """name -> the functions whose decorators start with it (``@app.command()``:
    ``app``), among the script's top-level functions; not a module's name
    (``@functools.cache``: a module dispatches to nothing it is called for)."""
    registered: dict[str, list[str]] = {}
    for function in functions:
        for decorator in function.decorator_list:
            root = _base_name(decorator.func if isinstance(decorator, ast.Call) else decorator)
            if root is not None and root not in modules:
                registered.setdefault(root, []).append(function.name)
    return registered


def _block_statements(statements: list[ast.AST]) -> Iterator[ast.AST]:
    """``statements`` and the statements of the blocks in them (``try:``,
    ``if``, ``with``, ``match``...), functions and classes aside (their
    bodies are other scopes)."""
    todo: list[Any] = list(statements)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.ExceptHandler, ast.match_case)):
            todo.extend(node.body)
            continue
        yield node
        if isinstance(node, ast.stmt) and not isinstance(node, _SCOPES):
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                todo.extend(getattr(node, field, ()))


def _imports(statements: list[ast.AST]) -> Iterator[ast.Import]:
    """The ``import`` statements among ``statements`` and the blocks in them
    (``try: import x``), functions and classes aside."""
    return (node for node in _block_statements(statements) if isinstance(node, ast.Import))


def _modules(statements: list[ast.AST]) -> set[str]:
    """The names ``import`` statements bind at module level: modules."""
    return {
        alias.asname or alias.name.partition(".")[0]
        for node in _imports(statements)
        for alias in node.names
    }


def _module_aliases(statements: list[ast.AST]) -> set[str]:
    """The names the module level binds to the module itself or its namespace:
    ``import __main__``, ``G = globals()``, ``this = sys.modules[__name__]``
    (see :func:`_names_module`), in blocks too, functions and classes aside."""
    aliases = {
        alias.asname or alias.name
        for node in _imports(statements)
        for alias in node.names
        if alias.name == "__main__"
    }
    found = _SysNames(statements)
    aliases |= found.modules or set()  # from sys import modules as mods: mods[__name__]
    for node in _block_statements(statements):
        if (
            isinstance(node, (ast.Assign, ast.AnnAssign))
            and node.value is not None
            and _names_module(node.value, found)
        ):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            aliases.update(
                n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)
            )
    return aliases


class _SysNames:
    """The names the module level gives ``sys`` (``import sys as s``) and
    ``sys.modules`` (``from sys import modules as mods``); None where not
    known (a function's body: any name may be)."""

    def __init__(self, statements: list[ast.AST] | None) -> None:
        self.sys: set[str] | None = None
        self.modules: set[str] | None = None
        if statements is None:
            return
        self.sys = {
            alias.asname or alias.name
            for node in _imports(statements)
            for alias in node.names
            if alias.name == "sys"
        }
        self.modules = {
            alias.asname or alias.name
            for node in _block_statements(statements)
            if isinstance(node, ast.ImportFrom) and node.module == "sys"
            for alias in node.names
            if alias.name == "modules"
        }

    def is_modules(self, node: ast.expr) -> bool:
        """``sys.modules`` (the dict) by one of these names."""
        if isinstance(node, ast.Attribute) and node.attr == "modules":
            base = node.value
            return isinstance(base, ast.Name) and (self.sys is None or base.id in self.sys)
        if isinstance(node, ast.Name):
            return node.id in self.modules if self.modules is not None else node.id == "modules"
        return False


_ANY_SYS = _SysNames(None)


def _this_module(key: ast.expr | None) -> bool:
    """Whether ``key``, an item's key in ``sys.modules``, may name this module:
    ``__name__``, ``"__main__"``, anything not a constant string."""
    if isinstance(key, ast.Constant):
        return key.value == "__main__"
    return True


def _names_module(value: ast.expr, names: _SysNames) -> bool:
    """Whether ``value`` may be the module or its namespace: ``globals()``,
    ``vars()`` (``vars(obj)`` where obj is), ``sys.modules`` or its item for
    this module (``[__name__]``, ``.get("__main__")``),
    ``importlib.import_module(__name__)``, ``__main__`` (either branch of a
    conditional, any operand of ``or``); an item read from one
    (``globals()["f"]``), another module (``sys.modules["json"]``) is not."""
    todo = [value]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.IfExp):
            todo += [node.body, node.orelse]
        elif isinstance(node, ast.BoolOp):
            todo += node.values
        elif isinstance(node, ast.NamedExpr):
            todo.append(node.value)
        elif isinstance(node, ast.Call):
            func = node.func
            first = node.args[0] if node.args else None
            if isinstance(func, ast.Name) and func.id in _NAMESPACE:
                if first is None:
                    return True  # globals(), vars()
                todo.append(first)  # vars(obj): the module's if obj is it
            elif isinstance(func, ast.Attribute) and names.is_modules(func.value):
                if _this_module(first):
                    return True  # sys.modules.get(__name__)
            elif (
                (isinstance(func, ast.Attribute) and func.attr == "import_module")
                or (isinstance(func, ast.Name) and func.id == "import_module")
            ) and _this_module(first):
                return True  # importlib.import_module(__name__)
        elif isinstance(node, ast.Subscript):
            if names.is_modules(node.value) and _this_module(node.slice):
                return True  # sys.modules[__name__]
        elif names.is_modules(node) or (isinstance(node, ast.Name) and node.id == "__main__"):
            return True
    return False


def _unguarded_bindings(tree: ast.Module) -> frozenset[str] | None:
    """Names the module level binds in the statements that run on import (all but
    the guard's own block; its ``else`` runs). Read generously (``X.a = 1`` binds
    ``X`` too): a name counted here that is not bound would fail, never mislead."""
    names: set[str] = set()
    called: set[str] = set()
    for statement in _split(tree.body)[1]:
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
        if type(node) not in _BINDING_NODES:
            _push_children(node, todo)  # most nodes: a number, a read, an operator
            continue
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
            if _through_modules(node):
                return False  # sys.modules[__name__].X = ...: the module, by another name
            base = _base_name(node)
            if module_level(base):
                names.add(base)  # type: ignore[arg-type]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*" or (alias.name == "__main__" and local):
                    return False  # a function's own name for the module
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
                    if not (node.args or node.keywords) or _names_module(node, _ANY_SYS):
                        return False  # the module's namespace (vars(sys.modules[__name__]))
                    # vars(obj): obj's own __dict__, not the module's; changed
                    # through it, obj is (``vars(Model)["x"] = 1``).
                    for argument in node.args:
                        base = _base_name(argument)
                        if module_level(base):
                            names.add(base)  # type: ignore[arg-type]
            if name in _SETTERS and node.args:
                if _through_modules(node.args[0]):
                    return False
                base = _base_name(node.args[0])
                if module_level(base):
                    names.add(base)  # type: ignore[arg-type]
            elif module_level(name):
                calls.add(name)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if _through_modules(node.func.value):
                return False  # sys.modules[__name__].__dict__.update(...)
            base = _base_name(node.func)
            if module_level(base):
                called.add(base)  # type: ignore[arg-type]
        _push_children(node, todo)
    return True


# The nodes _collect looks at; it only walks through the others.
_BINDING_NODES = frozenset(
    {
        ast.FunctionDef,
        ast.AsyncFunctionDef,
        ast.ClassDef,
        ast.Lambda,
        ast.Name,
        ast.Attribute,
        ast.Subscript,
        ast.Import,
        ast.ImportFrom,
        ast.ExceptHandler,
        ast.MatchAs,
        ast.MatchStar,
        ast.MatchMapping,
        ast.Call,
    }
)
# Fields that hold no node a walk looks at: expression contexts and operators
# (the parser's singletons), comments, a constant's kind.
_LEAF_FIELDS = frozenset({"ctx", "op", "ops", "kind", "type_comment", "type_ignores"})
# node type -> the fields a walk goes through (empty for a str or None that a
# list field holds: ``global a, b``, ``{**rest}``).
_walked_fields: dict[type, tuple[str, ...]] = {}


def _push_children(node: Any, todo: list[Any]) -> None:
    """Add the child nodes of ``node`` to ``todo``: :func:`ast.iter_child_nodes`
    without the leaves that match nothing (a third of a parse's nodes), and
    without a generator per node (the walks are most of a parse's cost)."""
    kind = type(node)
    fields = _walked_fields.get(kind)
    if fields is None:
        fields = _walked_fields[kind] = tuple(
            f for f in getattr(kind, "_fields", ()) if f not in _LEAF_FIELDS
        )
    for field in fields:
        value = getattr(node, field, None)
        if type(value) is list:
            todo.extend(value)
        elif isinstance(value, ast.AST):
            todo.append(value)


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
        if type(node) not in _LOCAL_NODES:
            _push_children(node, todo)
            continue
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
        _push_children(node, todo)
    return frozenset(local - declared)


# The nodes _local_names looks at.
_LOCAL_NODES = frozenset(
    {
        ast.FunctionDef,
        ast.AsyncFunctionDef,
        ast.ClassDef,
        ast.Lambda,
        ast.Global,
        ast.Name,
        ast.Import,
        ast.ImportFrom,
        ast.ExceptHandler,
        ast.MatchAs,
        ast.MatchStar,
    }
)


def _base_name(node: ast.expr) -> str | None:
    """``X`` of ``X.a.b``, ``X[k].a``, ``X``; None for anything else."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _through_modules(node: ast.expr) -> bool:
    """Whether ``node`` reaches an item of a ``modules`` attribute on its way
    (``sys.modules[__name__].X``, ``sys.modules["__main__"].__dict__``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "modules"
        ):
            return True
        node = node.value
    return False


def _only_read(call: ast.Call, parent: ast.AST | None) -> bool:
    """Whether the namespace ``call`` returns (``globals()``) is only read from."""
    if isinstance(parent, ast.Subscript) and parent.value is call:
        return isinstance(parent.ctx, ast.Load)
    if isinstance(parent, ast.Attribute) and parent.value is call:
        return parent.attr in _READS
    if isinstance(parent, ast.Compare) and call in parent.comparators:
        return all(isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops)
    return False


def _running_code(filename: str, namespace: dict[str, Any]) -> types.CodeType | None:
    """The code object of the script ``filename`` whose module level runs with
    the globals ``namespace`` on this thread's stack or the main thread's (a
    script that dumps while its guard runs); None if it is on neither."""
    frame = module_frame(namespace)
    if frame is None or frame.f_code.co_filename != filename:
        return None
    return frame.f_code


def guard_index(filename: str, namespace: dict[str, Any]) -> GuardIndex | None:
    """What the running script ``filename`` (its module level running with the
    globals ``namespace``) tells of its guard without a parse; None if its code
    is not on the stack (ask :func:`guard_answer`)."""
    code = _running_code(filename, namespace)
    return None if code is None else GuardIndex(filename, code)


_DEF = re.compile(rb"(?:async[ \t]+)?def[ \t]")
# Every name a code object (and those made inside it) mentions, per code object.
_Names = frozenset[str]


def _mentioned(code: types.CodeType) -> _Names:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _mentioned(const)
    return frozenset(names)


class GuardIndex:
    """The main guard of a running script, read from its module's code object:
    :meth:`may_touch` says whether the guard (with the functions it may call)
    may bind, change or call a method of any of some names."""

    __slots__ = ("filename", "code", "_guard", "_functions", "_spans", "_maybe", "_lines", "_read")

    def __init__(self, filename: str, code: types.CodeType) -> None:
        self.filename = filename
        self.code = code
        # The names the guard's own instructions (those from its first line
        # on, the code made there included) mention; None: any name (cannot
        # be placed). Empty: no guard.
        self._guard: _Names | None = frozenset()
        # name -> the names each code object of that name mentions.
        self._functions: dict[str, list[_Names]] = {}
        # name -> the spans (first, last line) of its top-level ``def`` statements.
        self._spans: dict[str, list[tuple[int, int]]] = {}
        # Names that the functions the guard may call mention (the guard's own
        # included); None: any name.
        self._maybe: _Names | None = frozenset()
        self._lines: list[bytes] | None = None
        # name of a parsed function -> what it binds or calls a method of, or
        # None: it may rebind out of sight, or its source could not be placed.
        self._read: dict[str, _Names | None] = {}
        if "__main__" in code.co_consts:
            self._index()

    def _index(self) -> None:
        code = self.code
        instructions = list(dis.get_instructions(code))
        starts = []
        for instruction in instructions:
            if instruction.argval == "__main__" and instruction.opname != "LOAD_ATTR":
                p = instruction.positions
                if p is None or p.lineno is None:
                    self._guard = self._maybe = None
                    return
                starts.append(p.lineno)
        if not starts:
            self._guard = self._maybe = None  # "__main__" is loaded some other way
            return
        start = min(starts)
        guard: set[str] = set()
        # name -> what the statement defining a function under it reads before
        # the function is made (its decorators, its defaults): the functions
        # an object the guard names may dispatch to (``@app.command()``).
        decorated: dict[str, set[str]] = {}
        pending: set[str] = set()
        made = False
        for instruction in instructions:
            p = instruction.positions
            argval = instruction.argval
            if isinstance(argval, types.CodeType):
                made = True
            elif instruction.opname.startswith("STORE_"):
                if made and isinstance(argval, str):
                    decorated.setdefault(argval, set()).update(pending)
                pending, made = set(), False
            elif isinstance(argval, str) and instruction.opname != "LOAD_CONST":
                pending.add(argval)
            if p is None or p.lineno is None or p.lineno >= start:
                if isinstance(argval, str) and instruction.opname != "LOAD_CONST":
                    guard.add(argval)
                elif isinstance(argval, types.CodeType):
                    guard |= _mentioned(argval)
            elif instruction.opname.startswith("STORE_") and p.col_offset == 0:
                self._spans.setdefault(instruction.argval, []).append(
                    (p.lineno, p.end_lineno or p.lineno)
                )
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                self._functions.setdefault(const.co_name, []).append(_mentioned(const))
        # The functions the guard may call: any code object named by a name
        # mentioned (a name read, passed on or called), and so on.
        maybe = set(guard)
        todo = list(guard)
        while todo:
            while todo:
                for mentioned in self._functions.get(todo.pop(), ()):
                    new = mentioned - maybe
                    maybe |= new
                    todo.extend(new)
            for name, read in decorated.items():
                if name not in maybe and not read.isdisjoint(maybe):
                    maybe.add(name)
                    todo.append(name)
        self._guard = frozenset(guard)
        self._maybe = frozenset(maybe)
        if not maybe.isdisjoint(_DYNAMIC | _NAMESPACE | _MODULE_OBJECT) or not set(
            code.co_names
        ).isdisjoint(_NAMESPACE | _MODULE_OBJECT):
            # The guard may rebind out of sight, or the module level may have
            # named the module itself (``G = globals()``): read the whole answer.
            self._guard = self._maybe = None

    def may_touch(self, names: frozenset[str] | set[str]) -> bool:
        """Whether the guard may bind, change or call a method of one of
        ``names`` (False: it surely does not; True: read :func:`guard_answer`)."""
        guard, maybe = self._guard, self._maybe
        if guard is None or maybe is None or not guard.isdisjoint(names):
            return True
        asked = names & maybe
        if not asked:
            return False
        # A function the guard may call mentions one: does it bind it, change
        # it or call a method of it, or only read it?
        for function, mentioned in self._functions.items():
            if function in maybe and any(not asked.isdisjoint(m) for m in mentioned):
                touched = self._function_touches(function)
                if touched is None or not touched.isdisjoint(asked):
                    return True
        return False

    def _function_touches(self, name: str) -> _Names | None:
        """What the script's top-level functions named ``name`` bind or call a
        method of (their own bodies, as :func:`_bindings` reads them); None if
        one may rebind out of sight or cannot be placed in the file."""
        if name in self._read:
            return self._read[name]
        touched: set[str] | None = set()
        spans = self._spans.get(name, [])
        try:
            lines = self._source_lines()
            for first, last in spans:
                if _DEF.match(lines[first - 1]) is None and not lines[first - 1].startswith(b"@"):
                    continue  # ``name = ...``, ``class name``: no function to follow
                tree = ast.parse(b"".join(lines[first - 1 : last]))
                node = tree.body[0] if len(tree.body) == 1 else None
                if (
                    not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                    or node.name != name
                    or node.end_lineno != last - first + 1
                ):
                    raise ValueError(name)
                local = _local_names(node)
                names: set[str] = set()
                called: set[str] = set()
                for statement in node.body:
                    if not _collect(statement, names, called, set(), local):
                        raise ValueError(name)
                touched |= names | called  # type: ignore[operator]
        except (OSError, SyntaxError, ValueError, IndexError, RecursionError, MemoryError):
            touched = None
        self._read[name] = None if touched is None else frozenset(touched)
        return self._read[name]

    def _source_lines(self) -> list[bytes]:
        if self._lines is None:
            with open(self.filename, "rb") as source:
                lines = source.read().splitlines(keepends=True)
            if any(b"coding" in line for line in lines[:2]):
                raise ValueError("an encoding declaration")  # a slice would lose it
            self._lines = lines
        return self._lines
