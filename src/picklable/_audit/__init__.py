"""Audit: does a package's public API ship? (``picklable audit PACKAGE``)

Every public callable of the targets (see :mod:`.collect` for what counts) is
dumped here, in the auditing process, by each serializer (picklable; pickle,
cloudpickle and dill when installed), and loaded in fresh interpreters started
for the audit (not forks: nothing of this process leaks into them). There each
loaded object is classified against the original:

identity
    The loaded object *is* the object found at the same dotted name in that
    interpreter (``loaded is home``). For lookups that build a new object on
    every access (``cls.a_classmethod`` gives a new bound method each time)
    identity cannot exist; there it means the same ``__self__`` and
    ``__func__`` (or ``==`` for other such objects).
exact copy
    Not that object (or the name does not resolve in the child), but the same
    type (``type(obj)``, which proxies cannot fake), ``__name__``,
    ``__qualname__``, ``__module__`` and ``inspect.signature`` (addresses such
    as ``at 0x7f..`` removed from reprs) as the original.
wrong
    Loads, is not the object at its name, and differs from the original in at
    least one of those five fields. For example cloudpickle gives back the
    plain inner function of a wrapt-decorated method: the wrapper, and what it
    does, silently gone.
dump fails
    The serializer raised in the auditing process (first line of the error;
    for picklable, its hint).
load fails
    Loading raised in the child (first line; picklable's hint for its own
    payloads).
crash
    The child died while loading this payload (a native crash, ``os._exit``).
hang
    The child gave no result within the timeout and was killed.

A crash or a hang costs one payload: the child's results are streamed one
payload at a time, so the payload in flight is the culprit, and the rest of
its batch is loaded by a new child.

Not covered: a dump that crashes or hangs the auditing process itself (dumps
run here so that picklable's diagnostics see the real objects).
"""

from __future__ import annotations

import math
import os
import platform
import time
import warnings
from collections.abc import Callable, Iterable, Sequence

from .._progress import PhasedProgress
from . import serializers as _serializers
from .collect import Collected, Target, TargetError, collect, resolve
from .compare import fingerprint
from .model import FAILURES, PROPERTY, Entry, Outcome, Problem, Report, Result
from .runner import ChildError, LoadJob, run_loads
from .wire import first_line

__all__ = [
    "FAILURES",
    "PROPERTY",
    "ChildError",
    "Collected",
    "Entry",
    "Outcome",
    "Problem",
    "Report",
    "Result",
    "TargetError",
    "audit",
    "audit_objects",
    "collect",
    "default_jobs",
    "resolve",
]

#: progress(phase, done, total): phase is "dump" or "load"; both count objects.
Progress = Callable[[str, int, int], None]

_PHASES = {"dump": "picklable audit: dumping", "load": "picklable audit: loading"}


def progress_bar() -> PhasedProgress:
    """The bar of ``progress=True``: one unit (objects), a count and ETA per phase,
    erased at the end (the summary follows)."""
    return PhasedProgress(_PHASES, unit="objects", leave=False)


def default_jobs() -> int:
    """Loading children by default: one per core, at most 4."""
    return max(1, min(os.cpu_count() or 1, 4))


# A child costs an interpreter start plus the audited imports (0.7 s for pandas);
# loading costs about 0.5 ms a payload. Another child pays off past this many.
_PAYLOADS_PER_CHILD = 1000


def _auto_jobs(payloads: int) -> int:
    return max(1, min(default_jobs(), math.ceil(payloads / _PAYLOADS_PER_CHILD)))


def _serializer_names(requested: Iterable[str] | None) -> list[str]:
    installed = _serializers.available()
    if requested is None:
        names = installed
    else:
        names = []
        for name in requested:
            if name not in _serializers.KNOWN:
                raise ValueError(
                    f"unknown serializer {name!r}; choose from {', '.join(_serializers.KNOWN)}"
                )
            if name not in installed:
                raise ValueError(f"serializer {name!r} is not installed in this environment")
            if name not in names:
                names.append(name)
    # picklable is the subject of the audit: always measured, always first.
    return ["picklable", *(n for n in names if n != "picklable")]


def audit(
    targets: Sequence[str],
    *,
    private: bool = False,
    recursive: bool = False,
    members: bool = True,
    properties: bool = True,
    ignore: Sequence[str] = (),
    serializers: Iterable[str] | None = None,
    jobs: int | None = None,
    timeout: float = 30.0,
    progress: bool | Progress | None = None,
) -> Report:
    """Round-trip every public callable of ``targets`` and classify the results.

    Parameters
    ----------
    targets:
        Dotted names of modules (``json``), classes (``pandas.Series``) or
        other objects.
    private:
        Also audit ``_private`` names.
    recursive:
        Also audit the submodules of packages.
    members:
        Audit the members of classes found in modules (classes named in
        ``targets`` always have their members audited).
    properties:
        Audit the property objects of classes (counted apart in the reports).
    ignore:
        :func:`fnmatch.fnmatchcase` patterns of dotted names to leave out (an
        object is left out when any of its names matches; a class takes its
        members along). They are listed in :attr:`Report.ignored`.
    serializers:
        Names among ``picklable``, ``pickle``, ``cloudpickle``, ``dill``;
        default: all installed. picklable is always included.
    jobs:
        Loading interpreters run at the same time (default: one per 1000
        payloads, at most :func:`default_jobs`).
    timeout:
        Seconds one load may take before it counts as a hang.
    progress:
        True: draw a progress bar on stderr (see :mod:`picklable._progress`);
        a callable: called as ``progress(phase, done, total)``.

    Returns
    -------
    Report

    Raises
    ------
    TargetError
        A target cannot be imported or found.
    ValueError
        An unknown or uninstalled serializer.
    ChildError
        No loading interpreter could be started.
    """
    start = time.perf_counter()
    names = _serializer_names(serializers)
    with warnings.catch_warnings():
        # Deprecated attributes warn when read; an audit only looks.
        warnings.simplefilter("ignore")
        found = collect(
            targets,
            private=private,
            recursive=recursive,
            members=members,
            properties=properties,
            ignore=ignore,
        )
    report = audit_objects(found.targets, names, jobs=jobs, timeout=timeout, progress=progress)
    report.targets = list(targets)
    report.problems = found.problems
    report.ignored = found.ignored
    report.notes = found.notes
    report.seconds = time.perf_counter() - start
    return report


def audit_objects(
    found: Sequence[Target],
    serializers: Sequence[str],
    *,
    jobs: int | None = None,
    timeout: float = 30.0,
    progress: bool | Progress | None = None,
) -> Report:
    """Audit already collected targets (see :func:`audit`)."""
    if progress is True:
        bar = progress_bar()
        try:
            return audit_objects(found, serializers, jobs=jobs, timeout=timeout, progress=bar)
        finally:
            bar.close()
    report_progress = progress or None
    start = time.perf_counter()
    dumps = {name: _serializers.dumper(name) for name in serializers}
    report = Report(
        targets=[],
        serializers={name: _serializers.version(name) for name in serializers},
        python=platform.python_version(),
    )
    entries = [Entry(t.name, t.module, t.path, t.kind, list(t.aliases)) for t in found]
    report.entries = entries
    partial: list[dict[str, Result]] = [{} for _ in found]
    load_jobs: list[LoadJob] = []
    job_entry: list[int] = []  # load job index -> entry index
    loads_left = [0] * len(found)  # per entry: payloads still to load
    total = len(found) * len(serializers)
    if report_progress is not None and found:
        # Drawn before warnings are silenced: the bar's hook that prints warnings
        # above it must not be undone when catch_warnings restores its own.
        report_progress("dump", 0, len(found))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, target in enumerate(found):
            expected = fingerprint(target.obj)
            for name in serializers:
                try:
                    payload = dumps[name](target.obj)
                except BaseException as exc:
                    if isinstance(exc, KeyboardInterrupt):
                        raise
                    hint = str(getattr(exc, "hint", "") or "")
                    partial[i][name] = Result(Outcome.DUMP, first_line(exc), hint)
                    continue
                job_entry.append(i)
                loads_left[i] += 1
                load_jobs.append(
                    LoadJob(
                        len(load_jobs),
                        name,
                        payload,
                        target.module,
                        target.path,
                        target.stable,
                        expected,
                    )
                )
            if report_progress is not None:
                report_progress("dump", i + 1, len(found))
    # Loading counts objects too (all of an object's payloads loaded), so that
    # both phases have one unit; objects that no serializer could dump are done.
    done = [loads_left.count(0)]
    if report_progress is not None and found:
        report_progress("load", done[0], len(found))

    def on_result(job: LoadJob, result: Result) -> None:
        i = job_entry[job.index]
        partial[i][job.serializer] = result
        loads_left[i] -= 1
        if loads_left[i] == 0:
            done[0] += 1
            if report_progress is not None:
                report_progress("load", done[0], len(found))

    run_loads(
        load_jobs,
        processes=jobs or _auto_jobs(len(load_jobs)),
        timeout=timeout,
        on_result=on_result,
    )
    for entry, results in zip(entries, partial):
        entry.results = {name: results[name] for name in serializers if name in results}
    assert sum(len(e.results) for e in entries) == total
    report.seconds = time.perf_counter() - start
    return report
