"""Tests for `picklable._reads`: the globals a script's object reads."""

from __future__ import annotations

from picklable import _reads

SOURCE = """
def helper():
    return 1

def reads_y():
    return Y

def work():
    return helper() + X
"""


def _script() -> dict[str, object]:
    namespace: dict[str, object] = {"__name__": "scriptmod"}
    exec(SOURCE, namespace)
    return namespace


class TestMissingGlobals:
    def test_a_name_defined_later_is_seen(self):
        """A kept complete answer is not given again once a name it read is deleted."""
        namespace = _script()
        work = namespace["work"]
        assert _reads.missing_globals(work, {"scriptmod"}) == {"X"}
        namespace["X"] = 2
        assert _reads.missing_globals(work, {"scriptmod"}) == set()
        assert _reads.missing_globals(work, {"scriptmod"}) == set()  # kept
        del namespace["X"]
        assert _reads.missing_globals(work, {"scriptmod"}) == {"X"}

    def test_a_function_rebound_along_the_reads_is_seen(self):
        """A helper rebound to one that reads an undefined name: asked again, not kept."""
        namespace = _script()
        namespace["X"] = 2
        work = namespace["work"]
        assert _reads.missing_globals(work, {"scriptmod"}) == set()
        namespace["helper"] = namespace["reads_y"]
        assert _reads.missing_globals(work, {"scriptmod"}) == {"Y"}

    def test_a_new_code_is_seen(self):
        """The function's own __code__ replaced: its reads are read again."""
        namespace = _script()
        namespace["X"] = 2
        work = namespace["work"]
        assert _reads.missing_globals(work, {"scriptmod"}) == set()
        work.__code__ = namespace["reads_y"].__code__  # type: ignore[attr-defined]
        assert _reads.missing_globals(work, {"scriptmod"}) == {"Y"}
