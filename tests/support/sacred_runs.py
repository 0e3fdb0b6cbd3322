"""Runners for sacred Experiments shipped with picklable (importable, so a spawn
pool's workers can run them)."""

from __future__ import annotations

import os
import threading
from typing import Any

import picklable

_barrier: Any = None


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
