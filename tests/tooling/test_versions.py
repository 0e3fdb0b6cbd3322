"""The supported Pythons are said once and agree everywhere: pyproject.toml's
``requires-python`` and classifiers, scripts/matrix, scripts/test and the docs."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import re
import sys
import tomllib
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def classified() -> list[tuple[int, int]]:
    found = []
    for classifier in project()["classifiers"]:
        match = re.fullmatch(r"Programming Language :: Python :: 3\.(\d+)", classifier)
        if match:
            found.append((3, int(match.group(1))))
    return sorted(found)


def matrix_script() -> ModuleType:
    """scripts/matrix, imported as a module (it has no .py suffix)."""
    path = ROOT / "scripts" / "matrix"
    loader = importlib.machinery.SourceFileLoader("picklable_matrix_script", str(path))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


class TestSupportedVersions:
    """One list of supported Pythons, read by every tool."""

    def test_classifiers_are_consecutive_minor_versions(self):
        """3.11, 3.12, ... with no gap, the running version among them."""
        versions = classified()
        assert versions == [(3, minor) for minor in range(versions[0][1], versions[-1][1] + 1)]
        assert (3, 11) in versions and (3, 15) in versions
        assert sys.version_info[:2] in versions

    def test_requires_python_is_the_oldest_classifier(self):
        """pip on an older Python refuses the install; nothing supported is refused."""
        oldest = classified()[0]
        assert project()["requires-python"] == f">={oldest[0]}.{oldest[1]}"

    def test_matrix_reads_a_module_skip_reason(self, tmp_path):
        """A module skipped whole keeps its reason in JUnit's legacy text; the skip check
        reads it there, so a reason naming the version passes and "collection skipped"
        alone would not."""
        junit = tmp_path / "junit.xml"
        junit.write_text(
            '<testsuites><testsuite tests="2" failures="0" errors="0" skipped="2">'
            '<testcase name="a"><skipped message="collection skipped">'
            "('x.py', 65, 'Skipped: Ray has no wheel for Python 3.15')</skipped></testcase>"
            '<testcase name="b"><skipped message="collection skipped">'
            "('y.py', 3, 'Skipped: no reason')</skipped></testcase>"
            "</testsuite></testsuites>"
        )
        matrix = matrix_script()
        counts = matrix.junit_counts(junit)
        assert counts["skip_reasons"] == {
            "Ray has no wheel for Python 3.15": 1,
            "no reason": 1,
        }
        assert matrix.check_counts("3.15", counts, None) == [
            "1 skipped without a version reason: 'no reason'"
        ]

    def test_matrix_reads_the_classifiers(self):
        """scripts/matrix runs exactly the classified versions; Debian's are among them."""
        matrix = matrix_script()
        supported = matrix.supported_versions()
        assert supported == [f"{major}.{minor}" for major, minor in classified()]
        assert set(matrix.DEBIAN_VERSIONS) <= set(supported)

    def test_ci_runs_the_matrix(self):
        """scripts/test (what .ci/run execs) runs scripts/matrix with 3.11's run as reference."""
        script = (ROOT / "scripts" / "test").read_text()
        assert re.search(r"scripts/matrix\b.*--reference", script)

    def test_docs_name_every_version_and_the_command(self):
        """README and CONTRIBUTING say which versions, and how to run them all."""
        for name in ("README.md", "CONTRIBUTING.md"):
            text = (ROOT / name).read_text()
            assert "scripts/matrix" in text, f"{name} does not name scripts/matrix"
            assert "3.11" in text and "3.15" in text, f"{name} does not name 3.11 to 3.15"
