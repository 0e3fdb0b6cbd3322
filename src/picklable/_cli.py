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
import os
import sys
from collections.abc import Callable, Sequence
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
            "load fails, crash or hang."
        ),
        epilog=(
            "Exit status: 0 when picklable has no outcome listed by --fail-on, 1 when it "
            "has, 2 on errors. The table goes to stdout, the summary to stderr."
        ),
    )
    parser.add_argument(
        "targets",
        nargs="+",
        metavar="TARGET",
        help="module or package (json, pandas), or a class or other object (pandas.Series)",
    )
    parser.add_argument("--private", action="store_true", help="also audit _private names")
    parser.add_argument(
        "--recursive", action="store_true", help="also audit submodules of packages"
    )
    parser.add_argument(
        "--no-members",
        dest="members",
        action="store_false",
        help="audit classes found in modules, not their methods "
        "(name a class as a TARGET to audit its members)",
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
        default=30.0,
        metavar="SECONDS",
        help="time one load may take before it counts as a hang (default: 30)",
    )
    parser.add_argument(
        "--json",
        metavar="FILE",
        help="write the JSON report to FILE ('-': stdout, instead of the table)",
    )
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="write the self-contained HTML report to FILE ('-': stdout, not the table)",
    )
    parser.add_argument(
        "--show",
        choices=SHOW_CHOICES,
        default="differences",
        help="table rows: objects where any serializer is short of identity (default), "
        "picklable's failures, or all",
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
        "--no-progress", dest="progress", action="store_false", help="no progress bar on stderr"
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


def _run_audit(args: argparse.Namespace) -> int:
    from ._audit import ChildError, TargetError, audit
    from ._audit.model import FAILURES, Outcome
    from ._format import HtmlFormat, JsonFormat, ProgressBar, TableFormat, summary

    if args.json == "-" and args.html == "-":
        _fatal("only one of --json and --html can write to stdout ('-')")
    fail_on = (
        [Outcome(name) for name in args.fail_on] if args.fail_on is not None else list(FAILURES)
    )
    bar = ProgressBar(enabled=None if args.progress else False)
    try:
        report = audit(
            args.targets,
            private=args.private,
            recursive=args.recursive,
            members=args.members,
            serializers=args.serializers,
            jobs=args.jobs,
            timeout=args.timeout,
            progress=bar,
        )
    except (TargetError, ValueError, ChildError) as exc:
        bar.close()
        _fatal(str(exc))
    bar.close()
    to_stdout = None
    if args.json:
        text = JsonFormat().format(report)
        if args.json == "-":
            to_stdout = text
        else:
            _write(args.json, text)
    if args.html:
        text = HtmlFormat().format(report)
        if args.html == "-":
            to_stdout = text
        else:
            _write(args.html, text)
    if to_stdout is None:
        color = args.color == "always" or (
            args.color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        )
        to_stdout = TableFormat(args.show, fail_on, color=color).format(report)
    sys.stdout.write(to_stdout)
    sys.stdout.flush()
    verdict, failed = summary(report, fail_on)
    sys.stderr.write(verdict)
    return EXIT_FINDINGS if failed else EXIT_OK


# explain and inspect -----------------------------------------------------------


def _import_target(target: str) -> Any:
    """The object named ``module:attr.path`` (or ``module.attr``, or a module)."""
    import importlib

    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # like python -m: modules of the current directory
    module_name, colon, path = target.partition(":")
    if not colon:
        # module.attr: the longest importable prefix is the module.
        parts = target.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
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
    for step in path.split(".") if path else ():
        try:
            obj = getattr(obj, step)
        except AttributeError:
            _fatal(f"{module_name}:{path}: {step!r} not found")
    return obj


def _add_explain(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="tell how an object ships: by reference, by value, taken apart, or not at all",
        description=(
            "Import TARGET and tell how each part of it ships (by reference via which "
            "module:path, by value and why, taken apart as a wrapper, or not at all and how to "
            "fix it), the state that stays behind, and the bytes each part adds, largest first."
        ),
        epilog="Exit status: 0 when it ships, 1 when something in it cannot ship, 2 on errors.",
    )
    parser.add_argument(
        "target", metavar="TARGET", help="module:attr.path (or module.attr) of the object"
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


def _run_explain(args: argparse.Namespace) -> int:
    from ._explain import explain

    obj = _import_target(args.target)
    name = args.target.replace(":", ".").rpartition(".")[2] or args.target
    report = explain(obj, name=name if name.isidentifier() else None, max_nodes=args.max_nodes)
    sys.stdout.write(report.to_json() + "\n" if args.json else report.render())
    return EXIT_OK if report.ships else EXIT_FINDINGS


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
    from ._inspect import inspect_payload

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
