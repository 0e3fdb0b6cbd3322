"""Run one of dill's test files as dill's own runner does (``python
test_x.py``: the file is ``__main__``), recording each test its main block calls.

    python runner.py TEST_FILE RECORD_JSON

dill's test files are scripts: their ``if __name__ == "__main__":`` block calls
the tests one after another, and the first failure ends the file. Here each
statement of that block that calls a function named ``test...`` is wrapped so
that its failure is recorded and the next test still runs; nothing else of the
file changes (its code is compiled under its own file name, so line numbers and
tracebacks are the file's). A failure outside those calls (the module's own
code) is recorded as ``(module)``, and so is a file of module-level checks
that calls no test (passed, when it runs to its end). The record is a JSON list of
``{"name", "outcome", "exception", "message", "line"}``.
"""

from __future__ import annotations

import ast
import builtins
import json
import os
import sys
import traceback
import types
from typing import Any

_results: list[dict[str, Any]] = []
_names: dict[str, int] = {}


def _name(called: str) -> str:
    count = _names[called] = _names.get(called, 0) + 1
    return called if count == 1 else f"{called}#{count}"


class _Recorder:
    """What the wrapped statements call (reached as a builtin, so the test
    module's namespace gains no name)."""

    def passed(self, called: str) -> None:
        _results.append({"name": _name(called), "outcome": "passed"})

    def failed(self, called: str, error: BaseException) -> None:
        if isinstance(error, SystemExit) and error.code in (None, 0):
            self.passed(called)
        else:
            _results.append(_failure(_name(called), error))


def _failure(name: str, error: BaseException) -> dict[str, Any]:
    frames = traceback.extract_tb(error.__traceback__)
    in_test = [f for f in frames if os.path.basename(f.filename).startswith("test_")]
    where = (in_test or frames or [None])[-1]
    return {
        "name": name,
        "outcome": "failed",
        "exception": f"{type(error).__module__}.{type(error).__qualname__}",
        "message": str(error)[:500],
        "line": f"{os.path.basename(where.filename)}:{where.lineno}" if where else "?",
        "traceback": "".join(traceback.format_exception(error))[-4000:],
    }


def _is_main_test(test: ast.expr) -> bool:
    """``__name__ == '__main__'``, alone or first of an ``and``."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        test = test.values[0]
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


class _WrapTests(ast.NodeTransformer):
    """``test_x(...)`` as a statement becomes ``try: test_x(...)`` with its
    outcome recorded (an exception, or ``sys.exit`` with a failure status, fails it)."""

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        call = node.value
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id.startswith("test")
        ):
            return node
        name = ast.Constant(call.func.id)
        recorder = ast.Name("__dill_suite__", ast.Load())
        caught = ast.Tuple(
            [ast.Name("Exception", ast.Load()), ast.Name("SystemExit", ast.Load())], ast.Load()
        )
        handler = ast.ExceptHandler(
            type=caught,
            name="__dill_suite_error__",
            body=[
                ast.Expr(
                    ast.Call(
                        ast.Attribute(recorder, "failed", ast.Load()),
                        [name, ast.Name("__dill_suite_error__", ast.Load())],
                        [],
                    )
                )
            ],
        )
        passed = ast.Expr(ast.Call(ast.Attribute(recorder, "passed", ast.Load()), [name], []))
        wrapped = ast.Try(body=[node], handlers=[handler], orelse=[passed], finalbody=[])
        return ast.copy_location(wrapped, node)


def _transformed(path: str) -> types.CodeType:
    with open(path, encoding="utf-8") as source:
        tree = ast.parse(source.read(), path)
    for statement in tree.body:
        if isinstance(statement, ast.If) and _is_main_test(statement.test):
            statement.body = [_WrapTests().visit(s) for s in statement.body]
    return compile(ast.fix_missing_locations(tree), path, "exec")


def main() -> None:
    path, record = os.path.abspath(sys.argv[1]), sys.argv[2]
    code = _transformed(path)
    builtins.__dill_suite__ = _Recorder()  # type: ignore[attr-defined]
    # As `python test_x.py` makes it: the file is __main__, its directory first on the path.
    module = types.ModuleType("__main__")
    module.__file__ = path
    module.__cached__ = None  # type: ignore[attr-defined]
    module.__builtins__ = builtins  # type: ignore[attr-defined]
    sys.modules["__main__"] = module
    sys.argv = [path]
    sys.path[0] = os.path.dirname(path)
    try:
        exec(code, module.__dict__)
        if not _results:  # a file of checks at module level (test_registered.py)
            _results.append({"name": "(module)", "outcome": "passed"})
    except Exception as error:
        _results.append(_failure("(module)", error))
    except SystemExit as exit_:
        if exit_.code not in (None, 0):
            _results.append(_failure("(module)", exit_))
    finally:
        with open(record, "w", encoding="utf-8") as out:
            json.dump(_results, out, indent=1)


if __name__ == "__main__":
    main()
