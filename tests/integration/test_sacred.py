"""sacred for real (issue 3): Experiments shipped with picklable run in spawn-pool workers.

The Experiment is defined once in an importable module
(``picklable_testpkg.experiment``) and once in a script run as ``__main__``. Each
is dumped with ``picklable.dumps``, loaded in 4 freshly spawned workers and run
there with a different config; a FileStorageObserver shipped inside the
Experiment writes one run directory per run.

What failed before picklable (stdlib pickle, cloudpickle, dill): every captured
function is a wrapt ``FunctionWrapper`` ("object proxy must define
__reduce_ex__()"); and once the proxies are taken apart, sacred's own commands
(``print_config``...) are importable functions on which the Experiment had set
``signature``/``config`` attributes: shipped by name, that state stayed behind
(``AttributeError: 'function' object has no attribute 'signature'`` in the
worker). A copied proxy now carries the state it shows (``docs/state-policy.md``).
"""

from __future__ import annotations

import json
import multiprocessing
import pickle
import textwrap
from pathlib import Path

import pytest
from sacred.observers import FileStorageObserver

import picklable
from picklable._diagnostics.culprit import state_left_behind
from picklable_testpkg import experiment as E
from support import sacred_runs, wrapper_checks
from support.child import run_script

TASKS = sacred_runs.TASKS
EXPECTED = sacred_runs.EXPECTED


def run_in_spawn_pool(payload: bytes) -> list[dict]:
    """Run the 4 tasks in 4 distinct spawned workers (a barrier holds each until all started)."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(len(TASKS))
    with context.Pool(len(TASKS), initializer=sacred_runs.init_worker, initargs=(barrier,)) as pool:
        return pool.starmap(
            sacred_runs.run_shipped, [(payload, updates, named) for updates, named in TASKS]
        )


def check_runs(results: list[dict], runs: Path) -> None:
    """Right result per config, 4 workers, one observer directory per run with that config."""
    assert [r["result"] for r in results] == EXPECTED
    assert len({r["pid"] for r in results}) == len(TASKS)
    run_dirs = sorted(p for p in runs.iterdir() if p.name.isdigit())
    assert [p.name for p in run_dirs] == ["1", "2", "3", "4"]
    by_id = {str(r["run_id"]): r for r in results}
    assert set(by_id) == {"1", "2", "3", "4"}
    for run_dir in run_dirs:
        result = by_id[run_dir.name]
        task = EXPECTED.index(result["result"])
        updates, _ = TASKS[task]
        config = json.loads((run_dir / "config.json").read_text())
        for key, value in updates.items():
            assert config[key] == value
        info = json.loads((run_dir / "run.json").read_text())
        assert info["status"] == "COMPLETED"
        assert info["result"] == result["result"]
        metrics = json.loads((run_dir / "metrics.json").read_text())
        assert metrics["a"]["values"] == [config["a"]]


class TestStdlibFails:
    """The problem, as stdlib pickle shows it."""

    def test_stdlib_pickle_fails_on_captured_function(self):
        """stdlib pickle refuses a captured function: it is a wrapt proxy."""
        with pytest.raises(NotImplementedError, match="object proxy must define __reduce"):
            pickle.dumps(E.scaled)

    def test_stdlib_pickle_fails_on_experiment(self):
        """stdlib pickle refuses the Experiment (its CLI options are not what their names hold)."""
        with pytest.raises((pickle.PicklingError, NotImplementedError)):
            pickle.dumps(E.ex)


class TestImportableExperiment:
    """The Experiment of an importable module."""

    def test_runs_in_four_spawn_workers(self, tmp_path):
        """dumps(ex) works; each of 4 spawned workers loads it and runs its own config."""
        observer = FileStorageObserver(str(tmp_path / "runs"))
        E.ex.observers.append(observer)
        try:
            payload = picklable.dumps(E.ex)
        finally:
            E.ex.observers.remove(observer)
        check_runs(run_in_spawn_pool(payload), tmp_path / "runs")

    def test_runs_after_a_local_run(self, child):
        """After ex.run() here, each captured function carries this run's config:
        the receiver copies them (its own keep theirs), and the copy of main calls
        the copy of scaled that the worker's run configures, not its own scaled
        (which would miss its config: MissingConfigError)."""
        E.ex.run(options={"--loglevel": "ERROR", "--capture": "sys"})
        E.ex.current_run = None
        for captured in E.ex.captured_functions:
            captured.run = None
        assert E.scaled.config
        payload = picklable.dumps(E.ex)
        assert child.run(sacred_runs.run_command, payload, "main", {"a": 1, "b": 5}) == {
            "value": 15,
            "label": "base",
        }
        assert child.run(sacred_runs.module_state, E.__name__, "scaled", "config") == {}

    def test_command_runs_after_loading(self, child):
        """A command of the shipped Experiment runs in a fresh interpreter."""
        assert (
            child.run(sacred_runs.run_command, picklable.dumps(E.ex), "summary", {"a": 4})
            == "a=4 b=3"
        )


class TestCapturedFunctionPolicy:
    """A captured function shipped alone follows docs/state-policy.md."""

    def test_importable_carries_its_config(self, child):
        """By default the sender's config travels (a wrapt proxy found by reference
        carries what the program set), on a copy: the receiver's own captured
        function keeps its own config; with the config it has, its own function."""
        before = E.scaled.config
        E.scaled.config = {"a": 99, "b": 99}
        try:
            payload = picklable.dumps(E.scaled)
            assert "config" not in state_left_behind(E.scaled)
        finally:
            E.scaled.config = before
        assert not child.run(
            wrapper_checks.loaded_is, payload, "picklable_testpkg.experiment", "scaled"
        )
        assert child.run(wrapper_checks.state_after_load, payload, ["config"]) == {
            "config": {"a": 99, "b": 99}
        }
        own = picklable.dumps(picklable.without_state(E.scaled))
        assert child.run(wrapper_checks.state_after_load, own, ["config"]) != {
            "config": {"a": 99, "b": 99}
        }

    def test_without_state_leaves_config(self, child):
        """without_state(captured): the receiver keeps its own config."""
        before = E.scaled.config
        E.scaled.config = {"a": 5, "b": 5}
        try:
            payload = picklable.dumps(picklable.without_state(E.scaled))
        finally:
            E.scaled.config = before
        assert child.run(wrapper_checks.state_after_load, payload, ["config"]) != {
            "config": {"a": 5, "b": 5}
        }

    def test_with_state_carries_config(self, child):
        """with_state(captured) carries the sender's config, on a copy of the
        receiver's own function (which keeps its own)."""
        before = E.scaled.config
        E.scaled.config = {"a": 7, "b": 1}  # what a run sets
        try:
            payload = picklable.dumps(picklable.with_state(E.scaled))
        finally:
            E.scaled.config = before
        assert child.run(sacred_runs.call_loaded, payload) == 71
        assert not child.run(
            wrapper_checks.loaded_is, payload, "picklable_testpkg.experiment", "scaled"
        )

    def test_after_a_run_error_names_the_path(self):
        """A finished run holds its heartbeat thread: carrying it fails with what, where and
        the reset (the Run is the culprit, not the thread inside it)."""
        E.ex.run(options={"--loglevel": "ERROR", "--capture": "sys"})
        try:
            with pytest.raises(picklable.PicklingError) as info:
                picklable.dumps(picklable.with_state(E.scaled))
        finally:
            E.ex.current_run = None
            for captured in E.ex.captured_functions:
                captured.run = None
        assert info.value.path == "obj.run"
        assert info.value.type_name == "sacred.run.Run"
        assert "heartbeat thread" in info.value.reason
        assert "ex.current_run = None" in info.value.hint

    def test_after_a_run_the_run_stays_behind(self, child):
        """By default the finished run (its heartbeat thread) stays in the sender;
        the rest of the state travels (on a copy: the receiver's own is left alone)."""
        E.ex.run(options={"--loglevel": "ERROR", "--capture": "sys"})
        try:
            assert "run" in state_left_behind(E.scaled)
            payload = picklable.dumps(E.scaled)
        finally:
            E.ex.current_run = None
            for captured in E.ex.captured_functions:
                captured.run = None
        assert not child.run(
            wrapper_checks.loaded_is, payload, "picklable_testpkg.experiment", "scaled"
        )


class TestCommandlineOptions:
    """Every function of sacred.commandline_options ships by identity."""

    def test_all_by_identity(self, child):
        """Functions, CLI option objects and classes load as the child's own objects."""
        import sacred.commandline_options as options

        names = sorted(
            name
            for name, obj in vars(options).items()
            if callable(obj) and getattr(obj, "__module__", None) == options.__name__
        )
        assert len(names) >= 15
        payloads = {name: picklable.dumps(getattr(options, name)) for name in names}
        assert child.run(sacred_runs.all_identity, payloads, options.__name__) == dict.fromkeys(
            names, True
        )


MAIN_SCRIPT = (
    textwrap.dedent(
        """
        import json, multiprocessing, sys
        import picklable
        from sacred import Experiment
        from sacred.observers import FileStorageObserver
        from support import sacred_runs
        from support.child import Child

        ex = Experiment("main_experiment", save_git_info=False)
        """
    )
    + sacred_runs.EXPERIMENT_BODY
    + textwrap.dedent(
        """
        @ex.command
        def summary(a, b):
            return f"a={a} b={b}"

        if __name__ == "__main__":
            ex.observers.append(FileStorageObserver(sys.argv[1]))
            tasks = json.loads(sys.argv[2])
            payload = picklable.dumps(ex)
            context = multiprocessing.get_context("spawn")
            barrier = context.Barrier(len(tasks))
            with context.Pool(len(tasks), initializer=sacred_runs.init_worker, initargs=(barrier,)) as pool:
                results = pool.starmap(sacred_runs.run_shipped, [(payload, u, n) for u, n in tasks])
            # A copied captured function carries its state (policy, case 2).
            scaled.config = {"a": 5, "b": 4}
            alone = picklable.dumps(scaled)
            child = Child()
            try:
                from support import checks
                copy_result = child.run(checks.call, alone)
            finally:
                child.close()
            print(json.dumps({"results": results, "copy_result": copy_result}))
        """
    )
)


class TestMainExperiment:
    """The same Experiment defined in a script run as __main__."""

    def test_runs_in_four_spawn_workers(self, tmp_path):
        """From a __main__ script: 4 spawned workers each load and run their config."""
        runs = tmp_path / "runs"
        out = run_script(MAIN_SCRIPT, tmp_path, args=(str(runs), json.dumps(TASKS)), timeout=240)
        report = json.loads(out.strip().splitlines()[-1])
        check_runs(report["results"], runs)
        assert {r["experiment"] for r in report["results"]} == {"main_experiment"}
        assert report["copy_result"] == 54
