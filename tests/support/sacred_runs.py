"""Runners for sacred Experiments shipped with picklable (importable, so a spawn
pool's workers can run them)."""

from __future__ import annotations

import os
import threading
from typing import Any

import picklable

_barrier: Any = None

# The Experiment the sacred tests define where users define theirs: in a script
# run as __main__, in notebook cells. Those must hold the code itself (sacred
# reads config scopes from source), so they share this text, after a line that
# makes ``ex``. picklable_testpkg.experiment is the same Experiment, importable.
EXPERIMENT_BODY = """
@ex.config
def config():
    a = 2
    b = 3
    label = "base"

@ex.named_config
def large():
    a = 1000
    label = "large"

@ex.capture
def scaled(a, b, factor=10):
    return a * factor + b

@ex.main
def main(a, label, _run):
    _run.log_scalar("a", a)
    return {"value": scaled(), "label": label}
"""

# (config_updates, named_configs) of the four runs, and what each returns.
TASKS: list[tuple[dict[str, int], list[str]]] = [
    ({"a": 1, "b": 5}, []),
    ({"a": 2, "b": 6}, []),
    ({"a": 3, "b": 7}, []),
    ({"b": 8}, ["large"]),
]
EXPECTED = [
    {"value": 15, "label": "base"},
    {"value": 26, "label": "base"},
    {"value": 37, "label": "base"},
    {"value": 10008, "label": "large"},
]


def init_worker(barrier: Any) -> None:
    """Pool initializer: keep the barrier that makes each task wait for the others."""
    global _barrier
    _barrier = barrier


def run_shipped(
    payload: bytes, config_updates: dict[str, Any], named_configs: list[str]
) -> dict[str, Any]:
    """Load an Experiment from picklable bytes and run it with ``config_updates``.

    Waits on the pool's barrier first, so that N tasks run in N distinct workers.
    """
    if _barrier is not None:
        _barrier.wait(timeout=120)
    ex = picklable.loads(payload)
    run = ex.run(
        config_updates=config_updates,
        named_configs=named_configs,
        options={"--loglevel": "ERROR", "--capture": "sys"},
    )
    return {
        "result": run.result,
        "run_id": run._id,
        "pid": os.getpid(),
        "threads": threading.active_count(),
        "experiment": ex.path,
    }


def run_command(payload: bytes, command: str, updates: dict[str, Any]) -> Any:
    """Load an Experiment and run one of its commands."""
    ex = picklable.loads(payload)
    return ex.run(
        command, config_updates=updates, options={"--loglevel": "ERROR", "--capture": "sys"}
    ).result


def call_loaded(payload: bytes) -> Any:
    """Load a callable and call it without arguments (a captured function)."""
    return picklable.loads(payload)()


def all_identity(payloads: dict[str, bytes], module: str) -> dict[str, bool]:
    """For each name, whether loading yields ``module.name`` itself."""
    import importlib

    home = importlib.import_module(module)
    return {name: picklable.loads(data) is getattr(home, name) for name, data in payloads.items()}


def module_state(module: str, name: str, attribute: str) -> Any:
    """An attribute of an object of an imported module, as this process has it."""
    import importlib

    return getattr(getattr(importlib.import_module(module), name), attribute)
