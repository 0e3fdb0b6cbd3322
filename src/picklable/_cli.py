"""Command line: ``picklable COMMAND ...`` and ``python -m picklable COMMAND ...``.

The parser is built in :func:`_parser`; each subcommand has one function that
adds its parser (``_add_<name>(subparsers)``) and sets ``handler`` to the
function that runs it (``_run_<name>(args) -> exit status``). To add a
subcommand, write those two functions and list the first in ``_SUBCOMMANDS``.

Exit status: 0 success, 1 findings (``audit``: picklable has an outcome named
by ``--fail-on``), 2 usage or fatal errors (nothing to audit, no child
interpreter). Reports go to stdout, summaries and errors to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import linecache
import os
import re
import runpy
import sys
import traceback
import types
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2


def _fatal(message: str) -> NoReturn:
    """Print ``picklable: error: message`` to stderr and exit with status 2."""
    print(f"picklable: error: {message}", file=sys.stderr)
    raise SystemExit(EXIT_ERROR)


def _csv(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


# audit ------------------------------------------------------------------------


def _fail_on(value: str) -> list[str]:
    from ._audit.model import FAILURES

    names = _csv(value)
    allowed = [o.value for o in FAILURES]
    if names == ["none"]:
        return []
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"expected 'none' or a comma-separated list of {', '.join(allowed)}; got {value!r}"
        )
    return names


def _serializer_list(value: str) -> list[str]:
    from ._audit.serializers import KNOWN

    names = _csv(value)
    unknown = [n for n in names if n not in KNOWN]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated list of {', '.join(KNOWN)}; got {value!r}"
        )
    return names


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}")
    return number


def _positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = 0.0
    if not number > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {value!r}")
    return number


def _add_audit(subparsers: Any) -> None:
    from ._format.table import SHOW_CHOICES

    parser = subparsers.add_parser(
        "audit",
        help="round-trip every public callable of packages into fresh interpreters",
        description=(
            "Dump every public callable of the TARGETs with picklable (and pickle, "
            "cloudpickle, dill when installed), load each in a freshly started "
            "interpreter, and classify it: identity, exact copy, wrong, dump fails, "
            "load fails, crash or hang. Settings may also come from [tool.picklable] "
            "of the nearest pyproject.toml (from the current directory upward); an option "
            "given here wins, and --ignore adds to the file's ignore list."
        ),
        epilog=(
            "Exit status: 0 when picklable has no outcome listed by --fail-on, 1 when it "
            "has, 2 on errors. The report goes to stdout (what fails and why, then the "
            "totals; the per-object table with --table), the summary to stderr."
        ),
    )
    parser.add_argument(
        "targets",
        nargs="*",
        metavar="TARGET",
        help="module or package (json, pandas), or a class or other object (pandas.Series); "
        "default: targets of [tool.picklable]",
    )
    parser.add_argument(
        "--private", action="store_true", default=None, help="also audit _private names"
    )
    parser.add_argument(
        "--recursive",
        action="store_true",
        default=None,
        help="also audit submodules of packages",
    )
    parser.add_argument(
        "--no-members",
        dest="members",
        action="store_false",
        default=None,
        help="audit classes found in modules, not their methods "
        "(name a class as a TARGET to audit its members)",
    )
    parser.add_argument(
        "--no-properties",
        dest="properties",
        action="store_false",
        default=None,
        help="leave property objects out (they are counted apart otherwise)",
    )
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="PATTERN",
        help="leave out objects whose dotted name (or an alias) matches this fnmatch "
        "pattern, e.g. 'mypackage.legacy.*'; repeatable",
    )
    parser.add_argument(
        "--serializers",
        type=_serializer_list,
        metavar="LIST",
        help=(
            "comma-separated, among picklable,pickle,cloudpickle,dill "
            "(default: all installed; picklable always)"
        ),
    )
    parser.add_argument(
        "--jobs",
        "-j",
        type=_positive_int,
        metavar="N",
        help=(
            "loading interpreters at a time "
            "(default: one per 1000 payloads, at most one per core and 4)"
        ),
    )
    parser.add_argument(
        "--timeout",
        type=_positive_float,
        default=None,
        metavar="SECONDS",
        help="time one load may take before it counts as a hang (default: 30)",
    )
    parser.add_argument(
        "--table",
        action="store_true",
        help="also print the per-object table (rows chosen by --show)",
    )
    parser.add_argument(
        "--show",
        choices=SHOW_CHOICES,
        default=None,
        help="rows of the table (implies --table): objects where any serializer is short "
        "of identity (default), picklable's failures, or all",
    )
    for flag, what in (
        ("--json", "the JSON report"),
        ("--html", "the self-contained HTML report"),
        ("--junit", "JUnit XML, one test case per object (CI test reports)"),
        ("--markdown", "a Markdown summary (CI job summaries)"),
    ):
        parser.add_argument(
            flag,
            metavar="FILE",
            help=f"write {what} to FILE ('-': stdout, instead of the terminal report)",
        )
    parser.add_argument(
        "--fail-on",
        type=_fail_on,
        default=None,
        metavar="LIST",
        help="picklable outcomes that make the exit status 1: 'none' or a comma-separated list "
        "of wrong,dump,load,crash,hang (default: all five)",
    )
    parser.add_argument(
        "--no-config",
        dest="config",
        action="store_false",
        help="do not read [tool.picklable] of pyproject.toml",
    )
    parser.add_argument(
        "--no-progress",
        dest="progress",
        action="store_false",
        help="no progress bar on stderr (drawn only on a terminal anyway)",
    )
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="color the table (auto: when stdout is a terminal and NO_COLOR is unset)",
    )
    parser.set_defaults(handler=_run_audit)


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        _fatal(f"cannot write {path}: {exc.strerror or exc}")


_OUTPUTS = ("json", "html", "junit", "markdown")


def _audit_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The audit's keyword arguments: the command line over [tool.picklable] over defaults."""
    from ._audit import config as audit_config

    try:
        found = audit_config.load(audit_config.find() if args.config else None)
    except audit_config.ConfigError as exc:
        _fatal(str(exc))
    settings: dict[str, Any] = {
        "targets": [],
        "private": False,
        "recursive": False,
        "members": True,
        "properties": True,
        "serializers": None,
        "jobs": None,
        "timeout": 30.0,
        "fail_on": None,
        **found.options(*audit_config.KEYS),
    }
    for key in ("private", "recursive", "members", "properties", "serializers", "jobs"):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    if args.timeout is not None:
        settings["timeout"] = args.timeout
    if args.fail_on is not None:
        settings["fail_on"] = args.fail_on
    if args.targets:
        settings["targets"] = args.targets
    settings["ignore"] = [*(found.ignore or []), *args.ignore]
    settings["config"] = found.path
    return settings


def _run_audit(args: argparse.Namespace) -> int:
    from ._audit import ChildError, TargetError, audit
    from ._audit.model import FAILURES, Outcome
    from ._format import (
        HtmlFormat,
        JsonFormat,
        JunitFormat,
        MarkdownFormat,
        TableFormat,
        summary,
    )
    from ._progress import interactive

    to_stdout_flags = [f"--{name}" for name in _OUTPUTS if getattr(args, name) == "-"]
    if len(to_stdout_flags) > 1:
        _fatal(f"only one of {', '.join(to_stdout_flags)} can write to stdout ('-')")
    settings = _audit_settings(args)
    if not settings["targets"]:
        where = f" of {settings['config']}" if settings["config"] else ""
        _fatal(
            "nothing to audit: name a TARGET (e.g. picklable audit mypackage), or set "
            f"targets = [...] in [tool.picklable]{where or ' of pyproject.toml'}"
        )
    fail_on = (
        [Outcome(name) for name in settings["fail_on"]]
        if settings["fail_on"] is not None
        else list(FAILURES)
    )
    try:
        report = audit(
            settings["targets"],
            private=settings["private"],
            recursive=settings["recursive"],
            members=settings["members"],
            properties=settings["properties"],
            ignore=settings["ignore"],
            serializers=settings["serializers"],
            jobs=settings["jobs"],
            timeout=settings["timeout"],
            progress=bool(args.progress and interactive(sys.stderr)),
        )
    except (TargetError, ValueError, ChildError) as exc:
        _fatal(str(exc))
    to_stdout = None
    formats = {
        "json": JsonFormat(),
        "html": HtmlFormat(),
        "junit": JunitFormat(fail_on),
        "markdown": MarkdownFormat(fail_on),
    }
    for name, formatter in formats.items():
        target = getattr(args, name)
        if not target:
            continue
        text = formatter.format(report)
        if target == "-":
            to_stdout = text
        else:
            _write(target, text)
    if to_stdout is None:
        color = args.color == "always" or (
            args.color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        )
        show = args.show or ("differences" if args.table else None)
        to_stdout = TableFormat(show, fail_on, color=color).format(report)
    sys.stdout.write(to_stdout)
    sys.stdout.flush()
    verdict, failed = summary(report, fail_on)
    sys.stderr.write(verdict)
    return EXIT_FINDINGS if failed else EXIT_OK


# explain and inspect -----------------------------------------------------------


def _import_target(target: str) -> Any:
    """The object named ``module:attr.path`` (or ``module.attr``, or a module)."""
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # like python -m: modules of the current directory
    module_name, colon, path = target.partition(":")
    if not colon:
        # module.attr: the longest importable prefix is the module.
        parts = target.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            module_name, path = ".".join(parts[:cut]), ".".join(parts[cut:])
            break
        else:
            _fatal(f"cannot import {target!r}: no importable module in it")
    try:
        obj = importlib.import_module(module_name)
    except Exception as exc:
        _fatal(f"cannot import module {module_name!r}: {type(exc).__name__}: {exc}")
    return _walk(obj, path, f"{module_name}:{path}", f"module {module_name!r}")


def _walk(obj: Any, path: str, target: str, where: str) -> Any:
    """``obj.a.b`` for ``path`` ``a.b``, or a fatal error naming the missing step."""
    for step in path.split(".") if path else ():
        try:
            obj = getattr(obj, step)
        except AttributeError:
            names = sorted(n for n in dir(obj) if not n.startswith("_") and _offered(obj, n))
            known = f" (it has: {', '.join(names[:12])}{', ...' if len(names) > 12 else ''})"
            _fatal(f"{target}: {where} has no {step!r}{known if names else ''}")
    return obj


def _offered(obj: Any, name: str) -> bool:
    """Worth naming among what ``obj`` has: not an imported module or a
    ``from __future__`` feature."""
    value = getattr(obj, name, None)
    return not isinstance(value, types.ModuleType) and type(value).__name__ != "_Feature"


def _is_script_target(target: str) -> bool:
    """``FILE.py:NAME``, ``./FILE.py:NAME``, ``dir/FILE:NAME``: a file, not a module."""
    file_part = target.rpartition(":")[0] if ":" in target else target
    return file_part.endswith(".py") or "/" in file_part or os.sep in file_part


_MAIN_GUARD = re.compile(r"""^if\s+__name__\s*==\s*["']__main__["']\s*:""", re.MULTILINE)


@contextlib.contextmanager
def _spawn_worker_view(path: Path) -> Iterator[None]:
    """While loading a script as a spawn worker does: its directory first on
    ``sys.path`` (as ``python FILE.py`` has it); ``sys.modules['__mp_main__']``
    and ``['__main__']`` put back afterwards."""
    names = ("__mp_main__", "__main__")
    saved = {name: sys.modules.get(name) for name in names}
    saved_path = list(sys.path)
    sys.path.insert(0, str(path.parent))
    try:
        yield
    finally:
        sys.path[:] = saved_path
        for name, previous in saved.items():
            if previous is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = previous


def _run_as_mp_main(path: Path) -> types.ModuleType:
    """Run the script at ``path`` as a spawn worker of it does: as the module
    ``__mp_main__`` (``if __name__ == "__main__":`` blocks do not run), which is
    also ``__main__`` there."""
    module = types.ModuleType("__mp_main__")
    module.__file__ = str(path)
    sys.modules["__mp_main__"] = module
    # run_path runs the code in a module of its own registered under this name,
    # so that the script's functions and classes say __module__ == "__mp_main__",
    # and returns its namespace: what multiprocessing's spawn does.
    namespace = runpy.run_path(str(path), run_name="__mp_main__")
    module.__dict__.update(namespace)
    sys.modules["__main__"] = module
    return module


def _script_failure(shown: str, path: Path, exc: BaseException) -> str:
    """``FILE.py raised ...`` with the line of the script where it happened."""
    # Line numbers from the traceback and lines from the file: traceback's
    # summaries would hand linecache the namespace run_path made, whose
    # __spec__ None makes Python 3.15 warn (the script is not __main__).
    lines = [
        n
        for frame, n in traceback.walk_tb(exc.__traceback__)
        if frame.f_code.co_filename == str(path)
    ]
    where = (
        f" (line {lines[-1]}: {linecache.getline(str(path), lines[-1]).strip()})" if lines else ""
    )
    kind = type(exc).__name__
    words = f"{kind}: {exc}" if str(exc) else kind
    return (
        f"{shown} raised {words}{where} while loading as __mp_main__, the way a spawn "
        'worker runs it (its `if __name__ == "__main__":` block does not run)'
    )


def _add_explain(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="tell how an object ships: by reference, by value, taken apart, or not at all",
        description=(
            "Load TARGET and tell how each part of it ships (by reference via which "
            "module:path, by value and why, taken apart as a wrapper, or not at all and how to "
            "fix it), the state that stays behind, and the bytes each part adds, largest first. "
            "A TARGET in a script file (FILE.py:NAME) is explained as it is when the file runs "
            "as a script: the file is loaded as a spawn worker loads it, as the module "
            "__mp_main__, without running its `if __name__ == '__main__':` block."
        ),
        epilog="Exit status: 0 when it ships, 1 when something in it cannot ship, 2 on errors.",
    )
    parser.add_argument(
        "target",
        metavar="TARGET",
        help="module:attr.path (or module.attr) of an importable object, or FILE.py:NAME "
        "(also ./FILE.py:NAME, dir/FILE.py:NAME) of an object of a script",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--max-nodes",
        type=_positive_int,
        default=2000,
        metavar="N",
        help="parts examined one by one (default: 2000)",
    )
    parser.set_defaults(handler=_run_explain)


def _explained(args: argparse.Namespace, obj: Any, name: str, heading: str) -> int:
    from ._diagnostics.explain import explain

    report = explain(obj, name=name if name.isidentifier() else None, max_nodes=args.max_nodes)
    if args.json:
        if heading:
            print(heading, file=sys.stderr)
        sys.stdout.write(report.to_json() + "\n")
    else:
        sys.stdout.write((heading + "\n" if heading else "") + report.render())
    return EXIT_OK if report.ships else EXIT_FINDINGS


def _run_explain(args: argparse.Namespace) -> int:
    target: str = args.target
    if _is_script_target(target):
        return _explain_script(args, target)
    obj = _import_target(target)
    name = target.replace(":", ".").rpartition(".")[2] or target
    return _explained(args, obj, name, _script_note(target))


def _script_note(target: str) -> str:
    """For ``script:NAME`` where ``script.py`` is a script of the current directory:
    what is explained (the importable module), and how to see the script's view."""
    module_name, _, attr = target.partition(":")
    module = sys.modules.get(module_name)
    file = getattr(module, "__file__", None)
    if not (isinstance(file, str) and "." not in module_name and attr):
        return ""
    path = Path(file)
    if path.parent != Path.cwd() or path.suffix != ".py":
        return ""
    try:
        is_script = _MAIN_GUARD.search(path.read_text(encoding="utf-8")) is not None
    except (OSError, UnicodeDecodeError):
        return ""
    if not is_script:
        return ""
    return (
        f"note: {attr} of the importable module {module_name!r} ({path.name} imported as "
        f"`import {module_name}`); run as a script (python {path.name}), its objects live in "
        f"__main__ and may ship otherwise: picklable explain {path.name}:{attr}"
    )


def _explain_script(args: argparse.Namespace, target: str) -> int:
    file_part, colon, attr = target.rpartition(":")
    if not colon or not file_part:
        _fatal(f"{target}: name the object in the script: {target}:NAME (e.g. {target}:work)")
    path = Path(file_part)
    if not path.is_file():
        what = "a directory, not a script" if path.is_dir() else "no such file"
        _fatal(f"{file_part}: {what}")
    path = path.resolve()
    if not attr or not all(part.isidentifier() for part in attr.split(".")):
        _fatal(f"{target}: {attr!r} is not a name (FILE.py:NAME or FILE.py:Class.method)")
    with _spawn_worker_view(path):
        try:
            module = _run_as_mp_main(path)
        except (Exception, SystemExit) as exc:  # its import failed, or it exits on import
            _fatal(_script_failure(file_part, path, exc))
        obj = _walk(module, attr, target, f"{file_part} (run as __mp_main__)")
        heading = (
            f"{file_part}:{attr}, loaded as a spawn worker sees it: {path.name} run as the "
            'module __mp_main__ (its `if __name__ == "__main__":` block not run)'
        )
        return _explained(args, obj, attr.rpartition(".")[2], heading)


def _add_inspect(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "inspect",
        help="tell what a payload imports and calls when loaded, without loading it",
        description=(
            "Read the pickle opcodes of FILE (never loading it) and print the modules it "
            "imports, the callables it calls, the objects it reaches by reference, and the "
            "code it carries by value (function names decoded with marshal.loads, which builds "
            "code objects without running them; --no-code skips that)."
        ),
        epilog=(
            "Exit status: 0 nothing flagged, 1 by-value code, a dangerous call or a damaged "
            "payload, 2 on errors."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="a payload file ('-': standard input)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--no-code",
        dest="decode_code",
        action="store_false",
        help="do not decode by-value bytecode",
    )
    parser.set_defaults(handler=_run_inspect)


def _run_inspect(args: argparse.Namespace) -> int:
    from ._diagnostics.inspect import inspect_payload

    try:
        data = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as exc:
        _fatal(f"cannot read {args.file}: {exc.strerror or exc}")
    report = inspect_payload(data, decode_code=args.decode_code)
    sys.stdout.write(report.to_json() + "\n" if args.json else report.render(args.file))
    return EXIT_FINDINGS if report.flags or report.error else EXIT_OK


# parser -----------------------------------------------------------------------

_SUBCOMMANDS: list[Callable[[Any], None]] = [_add_audit, _add_explain, _add_inspect]


def _parser() -> argparse.ArgumentParser:
    """The ``picklable`` parser with one subparser per entry of ``_SUBCOMMANDS``."""
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="picklable",
        description=(
            "Ship any Python callable to another process; prove that a package's API ships."
        ),
    )
    parser.add_argument("--version", action="version", version=f"picklable {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in _SUBCOMMANDS:
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status.

    Parameters
    ----------
    argv:
        Arguments without the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 success, 1 findings, 2 errors (argparse usage errors exit 2 too).
    """
    args = _parser().parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    return handler(args)
