from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent
for path in (TESTS / "testpkg", TESTS):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from support.child import Child, child_env  # noqa: E402

# Every Ray the suite starts (tests/integration/test_ray.py, docs/ray.md's examples,
# scripts they run) inherits these: no usage statistics sent anywhere (the suite is
# offline), no token-authentication banner on stderr.
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")


@pytest.fixture(scope="session", autouse=True)
def _guard_store(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The store of main-guard answers (picklable._reduce.guard_store) of this run:
    its own directory, inherited by every child, so no test reads an entry another
    run (or the user) left, and none writes to the user's cache."""
    os.environ["PICKLABLE_CACHE_DIR"] = str(tmp_path_factory.mktemp("picklable-cache"))


@pytest.fixture(scope="session")
def spark_driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The run's one Spark (``local-cluster[2,1,1024]``): a driver that runs scripts.

    Started by the first test that asks (17-40 s), shared by the pytest-xdist
    workers of the run (tests/support/spark_driver.py), stopped after the last.
    Its executors' Python workers import picklable and the tests' helper packages.
    """
    from support.engines import require

    require("pyspark")  # skips where PySpark does not support this Python
    from support import spark_driver as driver

    base = tmp_path_factory.getbasetemp()
    # pytest-xdist workers have basetemps of their own under one shared directory.
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    env = child_env()  # PYTHONPATH absolute: the workers run in directories of their own
    env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    handle = driver.connect(shared / "spark-driver", env)
    yield handle
    handle.close()


@pytest.fixture(scope="module")
def child() -> Iterator[Child]:
    """A fresh interpreter (not a fork) for the tests of one module."""
    handle = Child()
    yield handle
    handle.close()


@pytest.fixture(scope="module")
def reference() -> Iterator[Child]:
    """Another fresh interpreter beside ``child``: where the facts of objects are read
    as their module makes them, to compare a copy loaded in ``child`` with."""
    handle = Child()
    yield handle
    handle.close()


# Test files written in a newer Python's syntax (``test_*_py312.py`` ...) cannot even
# be compiled before it: on an older Python each is one test, skipped with the reason.
_NEWER_SYNTAX = re.compile(r"_py3(\d+)\.py$")
_NEW_IN = {
    12: "type statements and type parameters (PEP 695)",
    13: "type parameter defaults (PEP 696)",
    14: "deferred annotations and template strings (PEP 649, 750)",
    15: "lazy imports (PEP 810) and the sentinel and frozendict builtins",
}


class _NewerSyntax(pytest.File):
    """A test file of a newer Python: one item, skipped here with the reason."""

    def collect(self) -> Iterator[pytest.Item]:
        match = _NEWER_SYNTAX.search(self.path.name)
        assert match is not None
        minor = int(match[1])
        here = f"Python {sys.version_info[0]}.{sys.version_info[1]}"
        reason = f"{here} lacks {_NEW_IN.get(minor, 'its syntax')}, new in Python 3.{minor}"
        item = _SkippedFile.from_parent(self, name=self.path.stem)
        item.add_marker(pytest.mark.skip(reason=reason))
        yield item


class _SkippedFile(pytest.Item):
    def runtest(self) -> None:  # pragma: no cover - always skipped
        raise AssertionError("a file of a newer Python's syntax ran")

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, self.name


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.File | None:
    match = _NEWER_SYNTAX.search(module_path.name)
    if match is not None and sys.version_info < (3, int(match[1])):
        return _NewerSyntax.from_parent(parent, path=module_path)
    return None
