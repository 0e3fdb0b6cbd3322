"""picklable's pools in place of the stdlib's, in every process of a stdlib test run.

Used by ``scripts/stdlib-suites`` only: it copies this file into the
site-packages of a throw-away virtual environment whose ``.pth`` file calls
:func:`install` at the start of every interpreter that environment runs. The
test process itself, the interpreters the tests start with
``script_helper.assert_python_ok`` (``-I``: no environment variables, but
``.pth`` files still run), multiprocessing's children and the pools' workers
all get the same swap, since they all run ``sys.executable``.

``python -m stdlib_swap MODULE PATTERN... --json FILE`` runs the unittest
module ``MODULE`` (tests whose id contains one of the patterns, as
``unittest -k``) and writes each test's outcome to ``FILE``.
"""

from __future__ import annotations

import faulthandler
import json
import os
import site
import sys
import time
import unittest

# One test may take this long before the run is stopped with every thread's traceback.
TEST_TIMEOUT = 300


def install(project_site: str, test_home: str) -> None:
    """Make the project importable and swap picklable's pools in.

    Parameters
    ----------
    project_site:
        The project's own site-packages (picklable installed in develop mode, and
        what it needs).
    test_home:
        A directory holding a ``test`` package to use instead of the
        interpreter's own (empty: keep the interpreter's).
    """
    site.addsitedir(project_site)
    if test_home:
        sys.path.insert(0, test_home)
    import concurrent.futures
    import concurrent.futures.process
    import multiprocessing
    import multiprocessing.pool

    import picklable

    concurrent.futures.ProcessPoolExecutor = picklable.ProcessPoolExecutor  # type: ignore[misc]
    multiprocessing.Pool = picklable.Pool  # type: ignore[assignment]
    # The tests compare the class of a task exception's __cause__ with the stdlib's own
    # (multiprocessing.pool.RemoteTraceback, concurrent.futures.process._RemoteTraceback):
    # picklable's pools attach picklable.RemoteTraceback, with the same .tb.
    multiprocessing.pool.RemoteTraceback = picklable.RemoteTraceback  # type: ignore[misc]
    concurrent.futures.process._RemoteTraceback = picklable.RemoteTraceback  # type: ignore[attr-defined]


class _Recorder(unittest.TextTestResult):
    """Keeps each test's outcome and arms a watchdog per test."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.outcomes: dict[str, dict[str, object]] = {}
        self._started = 0.0

    def startTest(self, test: unittest.TestCase) -> None:
        self._started = time.monotonic()
        faulthandler.dump_traceback_later(TEST_TIMEOUT, exit=True)
        super().startTest(test)

    def stopTest(self, test: unittest.TestCase) -> None:
        faulthandler.cancel_dump_traceback_later()
        super().stopTest(test)

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
    loader = unittest.TestLoader()
    loader.testNamePatterns = [f"*{p}*" for p in patterns]
    suite = loader.loadTestsFromName(module)
    runner = unittest.TextTestRunner(stream=sys.stderr, verbosity=2, resultclass=_Recorder)
    result = runner.run(suite)
    assert isinstance(result, _Recorder)
    # setUpModule/setUpClass errors are not tied to one test: keep them too.
    for test, text in result.errors:
        name = test.id() if isinstance(test, unittest.TestCase) else str(test)
        result.outcomes.setdefault(name, {"outcome": "error", "detail": text, "seconds": 0})
    with open(json_path, "w") as out:
        json.dump(result.outcomes, out, indent=1)
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    json_at = args.index("--json")
    target = args[json_at + 1]
    del args[json_at : json_at + 2]
    code = run(args[0], args[1:], target)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # as regrtest does: no wait for leftovers of a test at exit
