"""What the engines' tests need from the Python they run on.

Ray has no wheel for every Python the project supports: the test extra leaves
it out there (pyproject.toml's environment marker), and the modules and pages
that need it are skipped by :func:`require`, saying which Python lacks it.
"""

from __future__ import annotations

import importlib
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"


def _left_out() -> dict[str, str]:
    """Import name -> why, for the test extra's requirements not installed on this Python."""
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    reasons = {}
    for line in extras["test"]:
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate():
            name = requirement.name.lower().replace("-", "_")
            # The extra leaves a package out where it publishes no wheel (its comment says so).
            reasons[name] = f"{requirement.name.capitalize()} has no wheel for Python {PYTHON}"
    return reasons


LEFT_OUT = _left_out()


def skip_reason(module: str) -> str | None:
    """Why ``module`` cannot be tested on this Python, or None: it must import."""
    return LEFT_OUT.get(module.partition(".")[0])


def require(module: str) -> ModuleType:
    """``module``, or a skip of the calling test module where the test extra leaves it out.

    Where the extra installs it, a missing module is an error, as any missing
    test dependency is.
    """
    reason = skip_reason(module)
    if reason is not None:
        pytest.skip(reason, allow_module_level=True)
    return importlib.import_module(module)
