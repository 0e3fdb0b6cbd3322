"""Runs a stdlib test module for ``scripts/stdlib-suites``, in its swapped environment.

``stdlib_runner.main([MODULE, PATTERN..., "--json", FILE])`` runs the unittest
module ``MODULE`` (tests whose id contains one of the patterns, as
``unittest -k``) and writes each test's outcome to ``FILE``. The pools are
already swapped in by ``stdlib_swap`` (the environment's ``.pth`` file).
"""

from __future__ import annotations

import faulthandler
import fnmatch
import gc
import json
import os
import sys
import time
import traceback
import unittest

from stdlib_swap import swap_remote_traceback

# One test may take this long before the run is stopped with every thread's traceback.
TEST_TIMEOUT = 300


def _arm_watchdog() -> None:
    # Always the interpreter's own stderr: sys.stderr may be a test's StringIO,
    # which has no file descriptor for faulthandler to write to.
    faulthandler.dump_traceback_later(TEST_TIMEOUT, exit=True, file=sys.__stderr__)


class _Recorder(unittest.TextTestResult):
    """Keeps each test's outcome and arms a watchdog per test."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.outcomes: dict[str, dict[str, object]] = {}
        self._started = 0.0
        self._streams = (sys.stdout, sys.stderr)

    def startTest(self, test: unittest.TestCase) -> None:
        # As regrtest restores them after each test: a test may leave them replaced
        # (test_concurrent_futures' ErrorAtUnpickle sets sys.stderr to a StringIO in
        # whichever thread unpickles it, which can be before it captures stderr).
        sys.stdout, sys.stderr = self._streams
        self._started = time.monotonic()
        _arm_watchdog()
        super().startTest(test)

    def stopTest(self, test: unittest.TestCase) -> None:
        super().stopTest(test)
        # A test that failed before its executor's shutdown leaves it to the
        # garbage collector (the stdlib pools and picklable's stop their workers
        # then): collect now, or its workers outlive the module, whose cleanup
        # (multiprocessing.util._cleanup_tests) waits for them without a limit.
        gc.collect()
        # Between tests (class and module set-up and clean-up) the same limit holds.
        # A pool's thread may have replaced sys.stderr after the test ended
        # (ErrorAtUnpickle in the result handler): restore it here too.
        sys.stdout, sys.stderr = self._streams
        _arm_watchdog()

    def _record(self, test: unittest.TestCase, outcome: str, detail: str = "") -> None:
        self.outcomes[test.id()] = {
            "outcome": outcome,
            "detail": detail,
            "seconds": round(time.monotonic() - self._started, 2),
        }

    def addSuccess(self, test: unittest.TestCase) -> None:
        super().addSuccess(test)
        self._record(test, "passed")

    def addFailure(self, test: unittest.TestCase, err: object) -> None:
        super().addFailure(test, err)  # type: ignore[arg-type]
        self._record(test, "failed", self.failures[-1][1])

    def addError(self, test: unittest.TestCase, err: object) -> None:
        super().addError(test, err)  # type: ignore[arg-type]
        self._record(test, "error", self.errors[-1][1])

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        super().addSkip(test, reason)
        self._record(test, "skipped", reason)

    def addExpectedFailure(self, test: unittest.TestCase, err: object) -> None:
        super().addExpectedFailure(test, err)  # type: ignore[arg-type]
        self._record(test, "passed", "expected failure")

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        super().addUnexpectedSuccess(test)
        self._record(test, "failed", "unexpected success")


def run(module: str, patterns: list[str], json_path: str) -> int:
    """Run the tests of ``module`` matching ``patterns``; write outcomes to ``json_path``."""
    swap_remote_traceback()
    loader = unittest.TestLoader()
    loader.testNamePatterns = [f"*{p}*" for p in patterns]
    suite = loader.loadTestsFromName(module)
    not_run = json.loads(os.environ.get("STDLIB_NOT_RUN", "{}"))
    left_out: dict[str, str] = {}
    suite = unittest.TestSuite(_without(suite, not_run, left_out))
    runner = unittest.TextTestRunner(stream=sys.stderr, verbosity=2, resultclass=_Recorder)
    try:
        result = runner.run(suite)
    except BaseException:
        traceback.print_exc(file=sys.__stderr__)
        raise
    finally:
        faulthandler.cancel_dump_traceback_later()
    assert isinstance(result, _Recorder)
    # setUpModule/setUpClass errors are not tied to one test: keep them too.
    for test, text in result.errors:
        name = test.id() if isinstance(test, unittest.TestCase) else str(test)
        result.outcomes.setdefault(name, {"outcome": "error", "detail": text, "seconds": 0})
    for name, reason in left_out.items():
        result.outcomes[name] = {"outcome": "skipped", "detail": f"not run: {reason}", "seconds": 0}
    with open(json_path, "w") as out:
        json.dump(result.outcomes, out, indent=1)
    return 0


def _without(
    suite: unittest.TestSuite, not_run: dict[str, str], left_out: dict[str, str]
) -> list[unittest.TestCase]:
    """The tests of ``suite``, flat (class and module fixtures still run once
    each), but those whose id ends with a ``not_run`` pattern: tests that would
    hang here (see the [not-run] section of scripts/stdlib-differences.toml)."""
    kept: list[unittest.TestCase] = []
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            kept.extend(_without(test, not_run, left_out))
            continue
        for pattern, reason in not_run.items():
            if fnmatch.fnmatch(test.id(), "*." + pattern):
                left_out[test.id()] = reason
                break
        else:
            kept.append(test)
    return kept


def main(args: list[str]) -> None:
    """``MODULE PATTERN... --json FILE``: run, record, and exit at once."""
    json_at = args.index("--json")
    target = args[json_at + 1]
    del args[json_at : json_at + 2]
    code = run(args[0], args[1:], target)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # as regrtest does: no wait for leftovers of a test at exit
