"""Dask and Ray as the tests start them: a cluster of their own, whatever runs here.

A machine may already run a Ray (``ray start --head`` writes its address where
a bare ``ray.init()`` finds and joins it; so does ``RAY_ADDRESS``) or a Dask
scheduler on Dask's default port 8786. The tests' clusters never join those:
Ray starts with ``address="local"``, without ``RAY_ADDRESS`` in the environment
its workers and scripts inherit; Dask's schedulers and dashboards take free
ports. tests/integration/test_dask.py and test_ray.py prove it with a scheduler
and a Ray head of their own already running.

Ray has no wheel for some of the Pythons the project supports: the test extra leaves
it out there (pyproject.toml's environment marker), and the modules and pages
that need it are skipped by :func:`require`, saying which Python lacks it.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"


_WHY = {
    # No closing parenthesis at the end: JUnit's legacy text of a module skip is read
    # back up to it (scripts/matrix), which would cut it off and split the tally.
    "pyspark": f"PySpark 4 does not support Python {PYTHON}: its releases list 3.11 to 3.14",
}


def _left_out() -> dict[str, str]:
    """Import name -> why, for the test extra's requirements not installed on this Python."""
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    reasons = {}
    for line in extras["test"]:
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate():
            name = requirement.name.lower().replace("-", "_")
            # The extra leaves a package out where it publishes no wheel (its comment says
            # so), or where it does not support this Python (PySpark: the versions its
            # release lists).
            reasons[name] = _WHY.get(
                name, f"{requirement.name.capitalize()} has no wheel for Python {PYTHON}"
            )
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


# ------------------------------------------------------------------- Ray

# Quiet, fast and offline: no token banner, no usage-stats prompt or upload.
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def init_ray() -> str:
    """Start a local Ray of 2 CPUs of this process's own; return its GCS address.

    ``address="local"``: ``ray.init()`` would join a Ray that ``ray start``
    runs on this machine, or the one ``RAY_ADDRESS`` names (and then refuse
    ``num_cpus``).
    """
    import ray

    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,  # failing tasks print their tracebacks from the workers
        configure_logging=False,
    )
    address: str = ray.get_runtime_context().gcs_address
    return address


@contextmanager
def ray_environment(pythonpath: list[str]) -> Iterator[None]:
    """The environment a test Ray's workers and scripts inherit, restored afterwards.

    Quiet and offline (:data:`RAY_ENV`), ``pythonpath`` in front of
    ``PYTHONPATH``, and no ``RAY_ADDRESS``: a script or ``ray`` command run by
    a test connects to the address it is given, not to another Ray.
    """
    saved = {k: os.environ.get(k) for k in [*RAY_ENV, "PYTHONPATH", "RAY_ADDRESS"]}
    os.environ.update(RAY_ENV)
    os.environ.pop("RAY_ADDRESS", None)
    os.environ["PYTHONPATH"] = os.pathsep.join([*pythonpath, *filter(None, [saved["PYTHONPATH"]])])
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# ------------------------------------------------------------------ Dask


def local_cluster(**options: Any) -> Any:
    """A ``distributed.LocalCluster`` on free ports, its logs silenced; ``options`` on top.

    Its scheduler and dashboard take free ports: a scheduler of another
    program may listen on Dask's default 8786 (dashboard 8787).
    """
    import distributed

    settings: dict[str, Any] = {
        "scheduler_port": 0,
        "dashboard_address": "127.0.0.1:0",
        "silence_logs": logging.CRITICAL,  # failing tasks log errors
    }
    return distributed.LocalCluster(**{**settings, **options})
