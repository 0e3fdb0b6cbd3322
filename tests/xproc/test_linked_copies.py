"""Copies of a receiver's own objects reference each other (issue 27).

A load never writes the sender's state onto the receiver's objects: where the
state differs, the receiver gets a copy. Copies made of its own functions run
with its module's globals, so a copy whose code calls another object of the
payload by its global name (sacred's ``main`` calling the captured ``scaled``)
would call the receiver's original, unconfigured, while the payload hands out a
configured copy of it: one graph split in two. The copies read what the payload
loaded instead, and an object whose code reads a copy is copied too.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import picklable
from picklable_testpkg import linked
from support import linked_checks


@pytest.fixture
def configs() -> Iterator[None]:
    """Restore the sender's own configurations after a test."""
    before = linked.states()
    yield
    linked.inner.config, linked.outer.config = before


def test_copies_call_the_copies(child, configs):
    """Both configured: the child's copy of outer calls the copy of inner that
    the payload carries (2 * 10 + 1), its own objects are left as they were."""
    linked.inner.config = {"scale": 10}
    linked.outer.config = {"offset": 1}
    assert linked.outer(2) == 21
    report = child.run(linked_checks.call_outer, picklable.dumps([linked.inner, linked.outer]))
    assert report == {
        "result": 21,
        "own_outer": False,
        "calls_own_inner": False,
        "calls_loaded": [True],
        "own_states": ({}, {}),
    }


def test_what_a_copy_calls_travels_with_it(child, configs):
    """outer shipped alone: inner, which it calls, travels with it."""
    linked.inner.config = {"scale": 10}
    linked.outer.config = {"offset": 1}
    report = child.run(linked_checks.call_outer, picklable.dumps(linked.outer))
    assert (report["result"], report["calls_own_inner"], report["own_states"]) == (
        21,
        False,
        ({}, {}),
    )


def test_own_object_that_calls_a_copy_is_copied(child, configs):
    """Only inner configured: the child's own outer would call its own inner,
    so outer is a copy (with the child's state) that calls inner's copy."""
    linked.inner.config = {"scale": 10}
    report = child.run(linked_checks.call_outer, picklable.dumps([linked.inner, linked.outer]))
    assert report == {
        "result": 20,
        "own_outer": False,
        "calls_own_inner": False,
        "calls_loaded": [True],
        "own_states": ({}, {}),
    }


def test_same_state_keeps_identity(child):
    """Nothing configured: the child's own objects, as before."""
    report = child.run(linked_checks.call_outer, picklable.dumps([linked.inner, linked.outer]))
    assert report == {
        "result": 2,
        "own_outer": True,
        "calls_own_inner": True,
        "calls_loaded": [True],
        "own_states": ({}, {}),
    }
