"""Tests for `picklable._diagnostics.hints`: reasons and fixes that help the person who
reads them.

The kinds of tests/unit/test_diagnose.py are asserted there with whole messages;
these are the hints added for what users met: a sacred Run left by `ex.run()`,
a built-in function whose name does not lead back to it, a closed in-memory
stream, and no advice to change the interpreter's own types.
"""

from __future__ import annotations

import io
import math
import pickle
import sys
from collections.abc import Iterator

import pytest

import picklable
from picklable._diagnostics import hints as _hints
from picklable_testpkg import experiment


class _ByMissingModule:
    """Reduces to a global name in a module that does not exist."""

    __module__ = "no_such_module_for_hints"

    def __reduce__(self) -> str:
        return "gone"


RESET = (
    "ship the Experiment before running it here, or reset the finished run first: "
    "ex.current_run = None, and f.run = None for each f in ex.captured_functions"
)


@pytest.fixture
def finished_run() -> Iterator[object]:
    """picklable_testpkg.experiment's Experiment after a smoke ex.run(), reset after."""
    ex = experiment.ex
    run = ex.run(options={"--loglevel": "ERROR", "--capture": "no"})
    try:
        yield run
    finally:
        ex.current_run = None
        for captured in ex.captured_functions:
            captured.run = None


class TestSacredRun:
    def test_run_is_the_culprit_with_the_reset(self, finished_run: object) -> None:
        """A Run left on the Experiment: one problem, the Run, with what it holds and
        the reset of docs/state-policy.md."""
        with pytest.raises(picklable.PicklingError) as info:
            picklable.dumps(finished_run)
        err = info.value
        assert err.type_name == "sacred.run.Run"
        assert err.reason == (
            "a sacred Run belongs to a run of this process: its heartbeat thread, stop "
            "event, metrics queue and captured output"
        )
        assert err.hint == RESET

    def test_state_of_a_captured_function(self, finished_run: object) -> None:
        """Carrying a captured function's state after a run stops at its .run."""
        with pytest.raises(picklable.PicklingError) as info:
            picklable.dumps(picklable.with_state(experiment.scaled))
        assert info.value.path.endswith(".run")
        assert info.value.hint == RESET

    def test_explain_says_the_same(self, finished_run: object) -> None:
        """explain finds the Run and gives the same fix."""
        report = picklable.explain(experiment.ex.current_run, name="run")
        (problem,) = report.problems
        assert (problem.path, problem.fix) == ("run", RESET)

    def test_after_the_reset_it_ships(self, finished_run: object) -> None:
        """The fix works: after the reset the captured function's state travels."""
        experiment.ex.current_run = None
        for captured in experiment.ex.captured_functions:
            captured.run = None
        payload = picklable.dumps(picklable.with_state(experiment.scaled))
        assert picklable.loads(payload) is experiment.scaled


class TestByName:
    def test_builtin_whose_name_is_gone(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A built-in function ships by name: when the name is gone, say so and what to do,
        not "change builtin_function_or_method.__reduce__"."""
        sqrt = math.sqrt
        monkeypatch.delattr(math, "sqrt")
        with pytest.raises(picklable.PicklingError) as info:
            picklable.dumps(sqrt)
        assert info.value.reason == (
            "a built-in function ships by its name, and here math.sqrt does not exist"
        )
        assert info.value.hint == (
            "make it reachable under its own __module__ and __qualname__ (an extension that "
            "sets them wrongly, or a name deleted or rebound after import), or ship a "
            "module-level function that calls it"
        )
        assert "__reduce__" not in str(info.value)

    @pytest.mark.parametrize("pure_python", [False, True])
    def test_module_that_cannot_be_imported(self, pure_python: bool) -> None:
        """The name's module is missing: said in every version's and pickler's words."""
        dumps = pickle._dumps if pure_python else pickle.dumps  # type: ignore[attr-defined]
        with pytest.raises(pickle.PicklingError) as info:
            dumps(_ByMissingModule())
        reason, _ = _hints.explain_failure(_ByMissingModule(), info.value)
        if pure_python and sys.version_info < (3, 14):  # "it's not found as M.N"
            assert reason.endswith(", and here no_such_module_for_hints.gone does not exist")
        else:  # 3.14: "No module named 'M'"; before, "import of module 'M' failed"
            assert reason.endswith(
                ", and here its module 'no_such_module_for_hints' cannot be imported"
            )

    def test_interpreter_types_are_not_to_be_changed(self) -> None:
        """'or change K.__reduce__' is offered for the user's classes only."""

        class Refuses:
            def __reduce__(self):  # type: ignore[no-untyped-def]
                raise RuntimeError("no")

        assert _hints._changeable(Refuses.__qualname__, Refuses())
        assert not _hints._changeable("builtin_function_or_method", len)
        assert not _hints._changeable("StringIO", io.StringIO())


class TestClosedStream:
    def test_closed_string_io(self) -> None:
        """A closed StringIO (sacred's captured output after a run): ship its text instead."""
        buffer = io.StringIO("log")
        buffer.close()
        with pytest.raises(picklable.PicklingError) as info:
            picklable.dumps({"output": buffer})
        assert info.value.reason == "a closed StringIO has no contents left to ship"
        assert info.value.hint == (
            "ship its contents (getvalue() before it is closed), or leave it out"
        )

    def test_open_string_io_ships(self) -> None:
        """An open one is plain data and ships."""
        assert picklable.loads(picklable.dumps(io.StringIO("x"))).getvalue() == "x"


class _StdlibRefuses:
    """Reduces to a call the standard library refuses (a layout conflict)."""

    def __reduce__(self) -> tuple[object, ...]:
        import types

        return (types.new_class, ("X", (int, str)))


class TestStandardLibraryRefusal:
    def test_no_package_version_is_blamed(self) -> None:
        """The standard library is this Python's: the error names the Python and
        asks for a report, never "install the sender's version of 'types'"
        (issue 27: a script's TypedDict was refused so)."""
        with pytest.raises(picklable.UnpicklingError) as info:
            picklable.loads(pickle.dumps(_StdlibRefuses()))
        here = f"Python {sys.version_info.major}.{sys.version_info.minor}"
        assert "sender's version" not in str(info.value)
        assert f"{here}'s standard library refused" in str(info.value)
        assert info.value.hint == "report it: the standard library (types) refused picklable's copy"
