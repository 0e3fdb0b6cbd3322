"""Shipping checks for test suites: :func:`assert_ships` and :func:`assert_audit`.

Both really round-trip: the object is dumped with picklable here and loaded in
a freshly started interpreter (``python -m picklable._audit._child``, which
imports from this process's ``sys.path``), where it is compared with the
object found at the same name. See :mod:`picklable._audit` for what identity,
exact copy and wrong mean. The pytest plugin (:mod:`picklable.pytest_plugin`)
offers both as a fixture and a marker.
"""

from __future__ import annotations

import ast
import fnmatch
import linecache
import sys
import types
from collections.abc import Iterable, Sequence
from typing import Any

from ._audit.compare import fingerprint
from ._audit.model import FAILURES, Outcome, Report, Result

__all__ = ["assert_audit", "assert_ships", "audit_failures"]


Home = tuple[str, tuple[Any, ...], bool]


def _home(obj: Any, expression: str | None = None, frame: Any = None) -> Home | None:
    """(module, path, stable) where ``obj`` can be imported, or None.

    Found by picklable's locator, or by the name the caller wrote
    (``assert_ships(mod.square)``), or as an attribute of the module of what it
    wraps: a module-level ``functools.partial`` is nothing the locator looks
    for (pickle ships a partial as its function and arguments), yet it has a name.
    """
    found = _located(obj)
    if found is None and expression is not None and frame is not None:
        found = _named(obj, expression, frame)
    if found is None:
        found = _module_attribute(obj)
    return found


def _located(obj: Any) -> Home | None:
    from ._locator import importable_by_own_name, locate

    if isinstance(obj, types.MethodType):
        # A new bound method on every access: its home is its __self__'s plus the name.
        owner = obj.__self__
        name = _attribute_name(owner, obj)
        if name is not None and isinstance(owner, (type, types.ModuleType)):
            found = _located(owner) if isinstance(owner, type) else (owner.__name__, (), True)
            if found is not None:
                return found[0], (*found[1], name), False
        return None
    try:
        if importable_by_own_name(obj):
            return obj.__module__, tuple(obj.__qualname__.split(".")), True
        located = locate(obj)
    except Exception:
        return None
    if located is None:
        return None
    return located[0], tuple(located[1]), True


def _named(obj: Any, expression: str, frame: Any) -> Home | None:
    """``mod.attr.path`` as written by the caller, when ``mod`` is a module there
    and the path leads back to ``obj`` itself."""
    head, *rest = expression.split(".")
    if not rest or not all(part.isidentifier() for part in (head, *rest)):
        return None
    root = frame.f_locals.get(head, frame.f_globals.get(head))
    if not isinstance(root, types.ModuleType):
        return None
    module = root.__name__
    # The longest module prefix: pkg.sub.name where pkg.sub is a module.
    for cut in range(len(rest), -1, -1):
        name = ".".join([module, *rest[:cut]])
        if cut and not isinstance(sys.modules.get(name), types.ModuleType):
            continue
        target: Any = sys.modules.get(name, root)
        try:
            for step in rest[cut:]:
                target = getattr(target, step)
        except AttributeError:
            return None
        if target is obj and rest[cut:]:
            return name, tuple(rest[cut:]), True
        return None
    return None  # pragma: no cover - cut == 0 always returns


def _module_attribute(obj: Any) -> Home | None:
    """A module-level name of ``obj`` in the module of what it wraps (``func`` of a
    partial, ``__wrapped__``), checked by identity."""
    for inner in (getattr(obj, "func", None), getattr(obj, "__wrapped__", None)):
        module_name = getattr(inner, "__module__", None)
        module = sys.modules.get(module_name) if isinstance(module_name, str) else None
        if module is None:
            continue
        try:
            names = [n for n, v in vars(module).items() if v is obj and isinstance(n, str)]
        except TypeError:
            continue
        if names:
            return module_name, (names[0],), True  # type: ignore[return-value]
    return None


def _call_argument(frame: Any, function: str) -> str | None:
    """The source text of the first argument of the ``function(...)`` call being
    run in ``frame`` (``mod.handler`` for ``assert_ships(mod.handler)``), or None."""
    try:
        lines = linecache.getlines(frame.f_code.co_filename, frame.f_globals)
        tree = ast.parse("".join(lines))
    except (SyntaxError, ValueError, MemoryError):
        return None
    lineno = frame.f_lineno
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        called = node.func
        name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", None)
        end = getattr(node, "end_lineno", None) or node.lineno
        if name == function and node.lineno <= lineno <= end:
            text = ast.get_source_segment("".join(lines), node.args[0])
            return " ".join(text.split()) if text else None
    return None


def _user_name(obj: Any, frame: Any) -> str:
    """What the caller called ``obj``: the argument's expression when it is a name
    or an attribute path, else the object's ``__name__``, else ``obj``."""
    expression = _call_argument(frame, "assert_ships") if frame is not None else None
    if expression is not None and all(part.isidentifier() for part in expression.split(".")):
        return expression
    name = getattr(obj, "__name__", None)
    return name if isinstance(name, str) and name.isidentifier() else "obj"


def _rooted(exc: Any, obj: Any, name: str) -> tuple[str, str]:
    """The error's message and path with the path starting at ``name``."""
    message, path = str(exc), str(getattr(exc, "path", "") or "")
    own = getattr(obj, "__name__", None)
    for root in (own, "obj"):
        if isinstance(root, str) and (path == root or path.startswith((root + ".", root + "["))):
            renamed = name + path[len(root) :]
            return message.replace(f" - at {path}", f" - at {renamed}", 1), renamed
    return message, path


def _attribute_name(owner: Any, method: types.MethodType) -> str | None:
    """The name under which ``owner`` gives ``method`` (a decorator may have
    renamed the function, so ``__name__`` is only the first guess)."""
    guess = getattr(method.__func__, "__name__", None)
    names = [guess] if isinstance(guess, str) else []
    try:
        names += dir(owner)
    except Exception:
        pass
    for name in names:
        try:
            candidate = getattr(owner, name)
        except Exception:
            continue
        if isinstance(candidate, types.MethodType) and candidate.__func__ is method.__func__:
            return name
    return None


def _describe(obj: Any, home: tuple[str, tuple[Any, ...], bool] | None) -> str:
    if home is not None:
        module, path, _ = home
        if all(type(step) is str for step in path):
            return ".".join([module, *path])
        from ._paths import format_path

        return format_path(module, path)
    text = repr(obj)
    return text if len(text) <= 100 else text[:97] + "..."


def assert_ships(obj: Any, identity: bool = True, *, timeout: float = 60.0) -> Result:
    """Assert that ``obj`` ships to a fresh interpreter with picklable.

    Parameters
    ----------
    obj:
        Any object; typically a function, class, method or decorator product.
    identity:
        Require that it loads as the very object found at its importable name
        over there. With ``False`` an exact copy (same type, names and
        signature) is accepted too, for objects that have no importable name
        (closures, lambdas made in a function, instances).
    timeout:
        Seconds the load may take before it counts as a hang.

    Returns
    -------
    Result
        The outcome (identity or exact copy), payload size, details.

    Raises
    ------
    AssertionError
        When it does not ship as asked, with what happened, the first error
        line and picklable's hint.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this function
    from . import dumps
    from ._audit.runner import LoadJob, run_loads
    from .exceptions import PicklingError

    caller = sys._getframe(1)
    name = _user_name(obj, caller)
    home = _home(obj, name, caller)
    what = _describe(obj, home)
    if home is None and name != "obj" and name != getattr(obj, "__name__", None):
        what = f"{name} = {what}"
    try:
        payload = dumps(obj)
    except PicklingError as exc:
        message, where = _rooted(exc, obj, name)
        lines = [f"{what} does not ship: picklable.dumps failed", f"  error: {message}"]
        if where:
            lines.append(f"  where: {where}")
        if exc.hint:
            lines.append(f"  hint:  {exc.hint}")
        raise AssertionError("\n".join(lines)) from None
    if identity and home is None:
        raise AssertionError(
            f"{what} cannot be checked for identity: picklable finds no importable name "
            "for it (a module attribute, a class attribute, or a path its locator knows), "
            "so the receiving interpreter has no such object to compare with. Define it "
            "at module level, or accept an exact copy with assert_ships(obj, identity=False)."
        )
    module, path, stable = home if home is not None else ("", (), True)
    job = LoadJob(0, "picklable", payload, module, path, stable, fingerprint(obj))
    results: list[Result] = []
    run_loads(
        [job], processes=1, timeout=timeout, on_result=lambda _job, result: results.append(result)
    )
    result = results[0]
    wanted = (Outcome.IDENTITY,) if identity else (Outcome.IDENTITY, Outcome.COPY)
    if result.outcome in wanted:
        return result
    expected = "identity" if identity else "identity or an exact copy"
    lines = [
        f"{what} did not ship as expected ({expected}) into a fresh interpreter",
        f"  outcome: {result.outcome.label}",
    ]
    for label, text in (("error", result.error), ("detail", result.detail), ("hint", result.hint)):
        if text:
            lines.append(f"  {label + ':':<8} {text}")
    if result.outcome is Outcome.COPY:
        lines.append(
            "  (it has a name, but picklable ships it as a copy of its value, as pickle "
            "does for this kind; pass identity=False to accept an exact copy)"
        )
    raise AssertionError("\n".join(lines))


def audit_failures(
    report: Report,
    fail_on: Iterable[Outcome | str] = FAILURES,
    allow: Iterable[str] = (),
) -> str | None:
    """Readable text of picklable's failures in ``report``, or None if none.

    Parameters
    ----------
    report:
        A finished audit.
    fail_on:
        Outcomes that count as failures.
    allow:
        ``fnmatch`` patterns of names (or aliases) whose failures are accepted.
    """
    wanted = {Outcome(o) for o in fail_on}
    patterns = list(allow)

    def allowed(names: Sequence[str]) -> bool:
        return any(fnmatch.fnmatchcase(n, p) for n in names for p in patterns)

    failing = [e for e in report.failing("picklable", wanted) if not allowed([e.name, *e.aliases])]
    if not failing:
        return None
    lines = [
        (
            f"picklable audit of {', '.join(report.targets)}: {len(failing)} of "
            f"{len(report.entries)} objects do not ship with picklable"
        )
    ]
    for entry in failing:
        result = entry.results["picklable"]
        lines.append(f"  {entry.name} ({entry.kind}): {result.outcome.label}")
        lines.extend(f"      {text}" for text in (result.error, result.detail) if text)
        if result.hint:
            lines.append(f"      hint: {result.hint}")
    lines.append(
        f"(failing outcomes: {', '.join(sorted(o.value for o in wanted))}; "
        "accept known ones with allow=['name-pattern', ...])"
    )
    return "\n".join(lines)


def assert_audit(
    *targets: str,
    private: bool = False,
    recursive: bool = False,
    members: bool = True,
    properties: bool = True,
    serializers: Iterable[str] = ("picklable",),
    fail_on: Iterable[Outcome | str] = FAILURES,
    allow: Iterable[str] = (),
    ignore: Iterable[str] = (),
    jobs: int | None = None,
    timeout: float = 30.0,
) -> Report:
    """Audit ``targets`` and assert that picklable ships every object.

    Parameters
    ----------
    targets:
        Dotted names of modules, classes or objects (as for ``picklable audit``).
    private, recursive, members, properties, serializers, jobs, timeout:
        As for :func:`picklable._audit.audit`; only picklable is measured by
        default, which is what a test needs and the fastest.
    fail_on:
        picklable outcomes that fail the assertion (default: wrong, dump,
        load, crash, hang).
    allow:
        ``fnmatch`` patterns of object names whose failures are accepted (they
        are audited).
    ignore:
        ``fnmatch`` patterns of object names left out of the audit (as
        ``picklable audit --ignore``).

    Returns
    -------
    Report
        For further checks.

    Raises
    ------
    AssertionError
        Listing each failing object with its outcome, first error line and hint.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this function
    from ._audit import audit

    if not targets:
        raise TypeError("assert_audit() needs at least one target, e.g. assert_audit('mypackage')")
    report = audit(
        list(targets),
        private=private,
        recursive=recursive,
        members=members,
        properties=properties,
        ignore=list(ignore),
        serializers=serializers,
        jobs=jobs,
        timeout=timeout,
    )
    text = audit_failures(report, fail_on, allow)
    if text is not None:
        raise AssertionError(text)
    return report
