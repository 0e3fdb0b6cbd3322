"""picklable.dask and picklable.ray without their engine: an import error that says so.

Each case runs in a fresh interpreter where the engine cannot be imported
(``sys.modules[name] = None``, which import reports as that module missing), as
on a Python the engine publishes no wheel for: Ray on Python 3.15.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from support.child import child_env

PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"

PROBE = """
import json, sys
for name in sys.argv[2:]:
    sys.modules[name] = None
try:
    __import__(sys.argv[1])
except ImportError as exc:
    print(json.dumps([type(exc).__name__, exc.name, str(exc)]))
else:
    print(json.dumps(None))
"""


def import_without(module: str, *blocked: str) -> list[str] | None:
    """Import ``module`` in a fresh interpreter where ``blocked`` cannot be imported."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, module, *blocked],
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(),
        check=True,
    )
    result: list[str] | None = json.loads(done.stdout)
    return result


class TestMissingEngine:
    """The engine's absence is named, with the extra to install."""

    def test_ray(self):
        """picklable.ray without Ray says it needs Ray, how to install it, and what else runs."""
        assert import_without("picklable.ray", "ray") == [
            "ModuleNotFoundError",
            "ray",
            (
                f"picklable.ray needs Ray, which is not installed for this Python ({PYTHON}). "
                "Fix: pip install 'picklable[ray]'. Ray publishes wheels for some Python "
                "versions only (none for 3.15 as of Ray 2.60, see docs/ray.md); where pip "
                "finds none, picklable.dask and picklable's pools run the same functions."
            ),
        ]

    @pytest.mark.parametrize("engine", ["distributed", "dask"])
    def test_dask(self, engine):
        """picklable.dask without distributed (or dask) names it and the extra to install."""
        assert import_without("picklable.dask", engine) == [
            "ModuleNotFoundError",
            engine,
            (
                "picklable.dask needs Dask's distributed scheduler, which is not installed for "
                f"this Python ({PYTHON}). Fix: pip install 'picklable[dask]'."
            ),
        ]

    def test_engine_missing_a_dependency_raises_its_own_error(self):
        """An installed engine that fails to import a module of its own raises that error."""
        assert import_without("picklable.dask", "yaml") == [
            "ModuleNotFoundError",
            "yaml",
            "import of yaml halted; None in sys.modules",
        ]
