"""Per-worker state for the pool tests of issue 19: what an initializer keeps.

Importable in every worker, so the initializer and the tasks share this
module's globals there (functions shipped by value would each carry their own).
"""

from __future__ import annotations

from typing import Any

import picklable

KEPT: tuple[Any, ...] = ()


def keep(*objects: Any) -> None:
    """The initializer: keep what it was given."""
    global KEPT
    KEPT = objects


def use_shared(x: int) -> int:
    """Use the queue, lock, event, semaphore, value and array kept by :func:`keep`."""
    queue, lock, event, semaphore, value, array = KEPT
    with lock, semaphore:
        value.value += x
        array[x] = x * 10
    queue.put(("done", x))
    event.set()
    return x


def put_worker_index() -> None:
    """Put this worker's index on the queue kept by :func:`keep`."""
    KEPT[0].put(picklable.worker_index())
