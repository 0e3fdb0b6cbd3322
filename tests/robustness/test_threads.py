"""8 threads dumping (and loading) at once: every payload is what one thread alone writes."""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any

import pytest

import picklable
from picklable_testpkg import api

THREADS = 8
ROUNDS = 300
KEY = b"threads-test-key-0123456789abcdef"

_SOURCE = """
OFFSET = 10

def make_closure(n):
    def add(x):
        return x + n + OFFSET
    return add

class Shape:
    sides = 4
    def __init__(self, size):
        self.size = size
    def area(self):
        return self.size ** 2

def failing():
    raise ValueError("from a thread")
"""


def _script() -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(_SOURCE, "<threads>", "exec"), namespace)
    return namespace


def _objects() -> dict[str, Any]:
    ns = _script()
    try:
        ns["failing"]()
    except ValueError as exc:
        error = exc
    return {
        "closure": ns["make_closure"](1),
        "lambda": lambda x: [x, {"k": x}],
        "class": ns["Shape"],
        "instance": ns["Shape"](3),
        "error": error,
        "by name": [api.plain, api.add, api.Frame.mean],
        "partial": functools.partial(ns["make_closure"], 2),
        "data": {"a": list(range(50)), "b": {"x", "y"}, "c": (1.5, b"z")},
    }


def _check(name: str, back: Any, objects: dict[str, Any]) -> None:
    if name == "closure":
        assert back(1) == 12
    elif name == "lambda":
        assert back(2) == [2, {"k": 2}]
    elif name == "class":
        assert back is objects["class"]
    elif name == "instance":
        assert type(back) is objects["class"] and back.area() == 9
    elif name == "error":
        assert type(back) is ValueError and back.__traceback__ is not None
    elif name == "by name":
        assert back == objects["by name"]
    elif name == "partial":
        assert back()(1) == 13
    else:
        assert back == objects["data"]


@pytest.mark.timeout(120)
def test_eight_threads():
    """Concurrent dumps give the single-threaded bytes; concurrent loads give working objects."""
    previous = sys.getswitchinterval()
    objects = _objects()
    # Warm up first: pickling an instance caches __slotnames__ on its class.
    for obj in objects.values():
        picklable.dumps(obj)
    expected = {name: picklable.dumps(obj) for name, obj in objects.items()}
    expected_det = {name: picklable.dumps(obj, deterministic=True) for name, obj in objects.items()}
    # A closure's cells travel as their contents where nothing else holds them,
    # as cells where something does: another thread's dump of that closure, at
    # that moment. One thread alone writes the one or the other.
    held = [cell for obj in objects.values() for cell in getattr(obj, "__closure__", None) or ()]
    picklable.clear_caches()  # the payloads kept by the dumps above: made afresh
    expected_held = {name: picklable.dumps(obj) for name, obj in objects.items()}
    assert held and expected_held["closure"] != expected["closure"]
    del held
    barrier = threading.Barrier(THREADS)
    errors: list[BaseException] = []
    counts = [0] * THREADS

    def work(index: int) -> None:
        try:
            barrier.wait()
            for round_ in range(ROUNDS):
                for name, obj in objects.items():
                    mode = (index + round_) % 4
                    if mode == 0:
                        payload = picklable.dumps(obj)
                        assert payload in (expected[name], expected_held[name]), name
                        back = picklable.loads(payload)
                    elif mode == 1:
                        back = picklable.loads(picklable.dumps(obj, key=KEY), key=KEY)
                    elif mode == 2 and round_ % 10 == 0:  # the pure-Python pickler: slow
                        payload = picklable.dumps(obj, deterministic=True)
                        assert payload == expected_det[name], name
                        back = picklable.loads(payload)
                    else:
                        back = picklable.loads(expected[name])
                    _check(name, back, objects)
                    counts[index] += 1
                # classes made while other threads dump: each comes back as itself
                fresh = _script()["Shape"]
                assert picklable.loads(picklable.dumps(fresh)) is fresh
        except BaseException as exc:  # reported below with the thread's traceback
            errors.append(exc)

    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=100)
    finally:
        sys.setswitchinterval(previous)
    assert not any(thread.is_alive() for thread in threads)
    if errors:
        raise errors[0]
    assert counts == [ROUNDS * len(objects)] * THREADS
