"""A sacred Experiment as users write one: config scope, named config, captured
functions, a main function and a command. Observers are attached by the tests."""

from __future__ import annotations

from sacred import Experiment

ex = Experiment("picklable_testpkg_experiment", save_git_info=False)


@ex.config
def config():
    a = 2  # noqa: F841 - sacred reads the scope's locals
    b = 3  # noqa: F841
    label = "base"  # noqa: F841


@ex.named_config
def large():
    a = 1000  # noqa: F841
    label = "large"  # noqa: F841


@ex.capture
def scaled(a, b, factor=10):
    """A captured function: a and b come from the config."""
    return a * factor + b


@ex.main
def main(a, label, _run):
    _run.log_scalar("a", a)
    return {"value": scaled(), "label": label}


@ex.command
def summary(a, b):
    return f"a={a} b={b}"
