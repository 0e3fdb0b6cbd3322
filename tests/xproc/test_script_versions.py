"""A script's objects decided once per version of the script, never stale (issue 29).

What depends on the script alone (its file's version, what its main guard
changes, each object's decision) is kept between dumps; each test makes the
kept answer wrong if it were not checked again, and asserts what a spawn worker,
which imports the script's file, computes with the payload.
"""

from __future__ import annotations

import textwrap

from support.child import run_command, run_script

REBOUND_BETWEEN_DUMPS = textwrap.dedent(
    """
    import multiprocessing
    import picklable

    CONFIG = 1

    def plain():
        return 0

    def reader():
        return CONFIG

    helper = plain

    def work():
        return helper()

    def call(payload):
        return picklable.loads(payload)()

    if __name__ == "__main__":
        FIRST = picklable.dumps(work)  # reads helper, which the worker holds rebound
        SECOND = picklable.dumps(work)

    helper = reader  # between two guards: both processes hold it when the second runs

    if __name__ == "__main__":
        CONFIG = 2
        THIRD = picklable.dumps(work)  # now reads CONFIG through helper: a copy
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            print(pool.map(call, [FIRST, SECOND, THIRD]))
    """
)


def test_a_rebinding_between_dumps_is_noticed(tmp_path):
    """A function whose reads change between two dumps (a helper rebound at module
    level) is decided again: the worker computes with the sender's values."""
    out = run_script(REBOUND_BETWEEN_DUMPS, tmp_path)
    # The first two: copies with the sender's helper, plain (the worker's own
    # work would call reader: its import ran ``helper = reader``). The third:
    # both have run that statement, and the guard changed CONFIG: a copy again,
    # decided anew, with the sender's 2.
    assert out.strip() == "[0, 0, 2]"


EDITED_WHILE_RUNNING = textwrap.dedent(
    """
    import multiprocessing, time
    import picklable

    def work(x):
        return x + 1

    def call(payload, x):
        return picklable.loads(payload)(x)

    if __name__ == "__main__":
        picklable.dumps(work)  # the script's version is read here
        with open(__file__) as f:
            source = f.read()
        with open(__file__, "w") as f:  # same first line of work, another body
            f.write(source.replace("return x + 1", "return x + 1000"))
        {run}
    """
)

# Continuation lines as the dedented script has them.
_STDLIB_POOL = """time.sleep(0.3)
    payload = picklable.dumps(work)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        print(pool.apply(call, (payload, 1)))"""
_PICKLABLE_POOL = """with picklable.Pool(1, context="spawn") as pool:
        payload = picklable.dumps(work)
        print(pool.apply(work, (1,)), pool.apply(call, (payload, 1)))"""


def test_an_edited_script_ships_copies(tmp_path):
    """The file changed on disk (a worker imports the edited version): once the
    sender has looked again (0.1 s), its functions travel as copies, not as
    references to what the worker's import defines under the same name."""
    source = EDITED_WHILE_RUNNING.format(run=_STDLIB_POOL)
    assert run_script(source, tmp_path).strip() == "2"


def test_a_pool_start_looks_at_the_script_again(tmp_path):
    """A picklable pool looks at the script's file when it starts workers: a
    payload made after the start, with no wait, is a copy."""
    source = EDITED_WHILE_RUNNING.format(run=_PICKLABLE_POOL)
    assert run_script(source, tmp_path).strip() == "2 2"


MODULE_REBOUND_TO_AN_OBJECT = textwrap.dedent(
    """
    import multiprocessing
    import json as target  # a module: the guard's call of its method changes no name
    import picklable

    class Box:
        def __init__(self):
            self.value = 1

        def bump(self):
            self.value = 2

    def work():
        return getattr(target, "value", 0)

    def call(payload):
        return picklable.loads(payload)()

    if __name__ == "__main__":
        target.dumps({})
        FIRST = picklable.dumps(work)  # target is rebound ahead: a copy with json

    target = Box()  # between two guards: both hold it when the second runs

    if __name__ == "__main__":
        target.bump()  # now a call that changes what target holds
        SECOND = picklable.dumps(work)  # must be decided again: a copy, with value 2
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            print(pool.map(call, [FIRST, SECOND]))
    """
)


def test_a_name_the_guard_calls_a_method_of_rebound_between_dumps(tmp_path):
    """The names whose methods the guard calls are checked by identity at each
    dump: one rebound from a module to an object (whose method the guard then
    calls) makes the functions reading it copies, with the sender's state (the
    first, made before the rebinding ran in the sender, reads its json: 0)."""
    out = run_script(MODULE_REBOUND_TO_AN_OBJECT, tmp_path)
    assert out.strip() == "[0, 2]"


FROM_STDIN = textwrap.dedent(
    """
    import subprocess, sys
    import picklable

    CONFIG = {"scale": 3}

    def work(x):
        return x * CONFIG["scale"]

    payloads = [picklable.dumps(work) for _ in range(3)]  # decided, then kept
    CONFIG["scale"] = 5
    payloads.append(picklable.dumps(work))
    loader = (
        "import picklable, sys\\n"
        "for p in picklable.loads(sys.stdin.buffer.read()):\\n"
        "    f = picklable.loads(p)\\n"
        "    print(f.__module__, f(2))\\n"
    )
    done = subprocess.run([sys.executable, "-c", loader], input=picklable.dumps(payloads),
                          capture_output=True, check=True)
    print(done.stdout.decode().strip())
    """
)


def test_a_script_read_from_stdin_ships_copies(tmp_path):
    """``python - < script.py``: its ``__file__`` is ``"<stdin>"``, a file no worker
    can import, so every dump of its functions is a copy that carries the sender's
    globals, the thousandth as the first (no kept origin, no reference)."""
    done = run_command(["-"], tmp_path, input=FROM_STDIN)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:4] == ["__main__ 6"] * 3 + ["__main__ 10"]
