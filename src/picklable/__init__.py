"""picklable: ship any Python callable to another process.

Identity first (the same object where it can be imported), value second (an
exact copy where it cannot), never a wrong one. Not meant for long-term storage:
by-value code only loads on the Python minor version that made it.
"""

from __future__ import annotations

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any

from ._caches import clear_caches
from ._loading import load, loads
from ._unpickler import Unpickler
from .exceptions import PicklingError, UnpicklingError

__all__ = [
    "DEFAULT_PROTOCOL",
    "BrokenPoolError",
    "Envelope",
    "Explanation",
    "Pickler",
    "PicklingError",
    "Policy",
    "Pool",
    "ProcessPoolExecutor",
    "RemoteError",
    "RemoteTraceback",
    "TaskTimeoutError",
    "Unpickler",
    "UnpicklingError",
    "WorkerDiedError",
    "Wrapper",
    "clear_caches",
    "decorator",
    "dump",
    "dumps",
    "explain",
    "list_registry_by_value",
    "list_registry_pickle_by_value",
    "load",
    "loads",
    "new_key",
    "register_by_value",
    "register_pickle_by_value",
    "ship",
    "state_left_behind",
    "unregister_by_value",
    "unregister_pickle_by_value",
    "with_state",
    "without_state",
    "worker_index",
]

# The rest loads on first use, the pickler too: a process that only loads
# payloads (a pool worker until a result needs the pickler) imports the
# loading side alone (issue 29: a worker's start-up).
if TYPE_CHECKING:  # the lazy names, for type checkers
    from ._allow import Policy
    from ._api import dump, dumps
    from ._decorators import Wrapper, decorator
    from ._diagnostics.culprit import state_left_behind
    from ._diagnostics.explain import Explanation, explain
    from ._envelope import Envelope, ship
    from ._pickler import DEFAULT_PROTOCOL, Pickler
    from ._reduce.registry import (
        list_registry_by_value,
        list_registry_pickle_by_value,
        register_by_value,
        register_pickle_by_value,
        unregister_by_value,
        unregister_pickle_by_value,
    )
    from ._reduce.wrappers import with_state, without_state
    from ._signing import new_key
    from .executors import (
        BrokenPoolError,
        Pool,
        ProcessPoolExecutor,
        RemoteError,
        RemoteTraceback,
        TaskTimeoutError,
        WorkerDiedError,
        worker_index,
    )

_LAZY: dict[str, str] = {
    "dump": "._api",
    "dumps": "._api",
    "DEFAULT_PROTOCOL": "._pickler",
    "Pickler": "._pickler",
    "list_registry_by_value": "._reduce.registry",
    "list_registry_pickle_by_value": "._reduce.registry",
    "register_by_value": "._reduce.registry",
    "register_pickle_by_value": "._reduce.registry",
    "unregister_by_value": "._reduce.registry",
    "unregister_pickle_by_value": "._reduce.registry",
    "Policy": "._allow",
    "Explanation": "._diagnostics.explain",
    "explain": "._diagnostics.explain",
    "Wrapper": "._decorators",
    "state_left_behind": "._diagnostics.culprit",
    "decorator": "._decorators",
    "with_state": "._reduce.wrappers",
    "without_state": "._reduce.wrappers",
    "new_key": "._signing",
    "Envelope": "._envelope",
    "ship": "._envelope",
    "BrokenPoolError": ".executors",
    "Pool": ".executors",
    "ProcessPoolExecutor": ".executors",
    "RemoteError": ".executors",
    "RemoteTraceback": ".executors",
    "TaskTimeoutError": ".executors",
    "WorkerDiedError": ".executors",
    "worker_index": ".executors",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'picklable' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(__all__) | set(_LAZY))
