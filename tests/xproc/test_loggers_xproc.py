"""Loggers reached from a script's function, loaded where the script does not
run (issue 27, item 4).

A logger is process configuration: which sinks, which format. What a copy of a
script function logs to follows from how the logger itself pickles, as with
pickle and cloudpickle:

- the stdlib's ``logging.Logger`` pickles as its name (``getLogger(name)``):
  the receiver's own logger, with the receiver's handlers;
- loguru's ``Logger`` pickles as a copy with its handlers (loguru's own
  ``__getstate__``, the design its ``enqueue=True`` sinks rely on to send a
  child's records back to the parent): ``@logger.catch`` binds the sender's
  logger when the script runs, so the copy of the function logs through a
  copy of the sender's configuration, and the receiver's logger is left
  exactly as it was. A function that reaches the logger through its module
  when it runs (``loguru.logger.catch()`` in its body, or any function of an
  importable module, which goes by reference) logs through the receiver's.

docs/state-policy.md ("Loggers and other process configuration") says the same.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from support.child import child_env, run_script

pytest.importorskip("loguru")

SCRIPT = textwrap.dedent(
    """
    import logging
    import pathlib
    import sys

    import cloudpickle
    import loguru
    from loguru import logger

    import picklable

    logger.remove()
    logger.add(sys.stderr, format="SENDER {message}")
    jobs = logging.getLogger("jobs")


    @logger.catch(default=-1)
    def caught(x):
        return 1 / x


    def through_module(x):
        with loguru.logger.catch():
            return 1 / x
        return -1


    def logged(x):
        jobs.warning("job %s", x)
        return x


    out = pathlib.Path(sys.argv[1])
    for fn in (caught, through_module, logged):
        (out / f"{fn.__name__}.picklable").write_bytes(picklable.dumps(fn))
        (out / f"{fn.__name__}.cloudpickle").write_bytes(cloudpickle.dumps(fn))
    print("ok")
    """
)

RECEIVER = textwrap.dedent(
    """
    import json
    import logging
    import pathlib
    import pickle
    import sys

    from loguru import logger

    seen = []
    logger.remove()
    logger.add(lambda m: seen.append(str(m).strip()), format="RECV {message}")


    class Seen(logging.Handler):
        def emit(self, record):
            seen.append("STD " + record.getMessage())


    logging.getLogger("jobs").addHandler(Seen())
    handlers = dict(logger._core.handlers)

    out = pathlib.Path(sys.argv[1])
    results = {}
    for name, arg in (("caught", 0), ("through_module", 0), ("logged", 1)):
        for kind in ("picklable", "cloudpickle"):
            fn = pickle.loads((out / f"{name}.{kind}").read_bytes())
            seen.clear()
            value = fn(arg)
            results[f"{name}.{kind}"] = {
                "value": value,
                "seen": [line.splitlines()[0] for line in seen],
            }
    results["own handlers kept"] = dict(logger._core.handlers) == handlers
    print(json.dumps(results))
    """
)


def test_loggers_reached_from_a_script_function(tmp_path):
    assert run_script(SCRIPT, tmp_path, args=(str(tmp_path),)).strip() == "ok"
    receiver = tmp_path / "elsewhere"
    receiver.mkdir()
    (receiver / "receiver.py").write_text(RECEIVER)
    done = subprocess.run(
        [sys.executable, "receiver.py", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(),
        cwd=receiver,
        check=True,
    )
    results = json.loads(done.stdout)
    for kind in ("picklable", "cloudpickle"):
        # The stdlib's logger by its name: the receiver's own, its handlers.
        assert results[f"logged.{kind}"] == {"value": 1, "seen": ["STD job 1"]}
        # Reached through its module when the function runs: the receiver's.
        through = results[f"through_module.{kind}"]
        assert through["value"] == -1
        assert through["seen"] == [through["seen"][0]]
        assert through["seen"][0].startswith("RECV An error has been caught")
        # Bound when the sender's script ran: a copy of the sender's logger,
        # as loguru pickles it; the receiver's sinks see nothing.
        assert results[f"caught.{kind}"] == {"value": -1, "seen": []}
    assert done.stderr.count("SENDER An error has been caught") == 2
    assert results["own handlers kept"] is True
