"""The main guard's answer kept on disk between runs of a script (issue 29).

Each test runs a real script in fresh interpreters, as a user runs it again:
the second run reads what the first kept (``picklable._reduce.guard_store``)
instead of parsing the script, and decides as the first did; an edit of the
script is never answered from the entry of its earlier version. A spawn
worker says whether what it loaded is its own function and what it computes.
"""

from __future__ import annotations

import os
import textwrap

from support.child import run_script

SCRIPT = textwrap.dedent(
    """
    import multiprocessing, sys
    import picklable

    CONFIG = 1

    def work():
        return CONFIG

    def call(payload):
        import __mp_main__
        fn = picklable.loads(payload)
        return fn is __mp_main__.work, fn()

    if __name__ == "__main__":
        {guard}
        payload = picklable.dumps(work)
        parsed = "picklable._reduce.main_guard" in sys.modules
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            print(parsed, pool.apply(call, (payload,)))
    """
)


def test_a_second_run_reads_the_kept_answer(tmp_path):
    """The first run parses the guard and keeps the answer; the second does not
    load the parser, and the worker uses its own function both times."""
    source = SCRIPT.format(guard="print('starting')")
    first = run_script(source, tmp_path).splitlines()
    second = run_script(source, tmp_path).splitlines()
    assert first == ["starting", "True (True, 1)"]
    assert second == ["starting", "False (True, 1)"]
    assert len(os.listdir(os.path.join(os.environ["PICKLABLE_CACHE_DIR"], "guard"))) >= 1


def test_an_edited_guard_is_read_again(tmp_path):
    """The script is edited between runs so that its guard now changes what
    ``work`` reads: the kept answer is not this version's, the guard is read
    again, and ``work`` travels as a copy (the worker computes with 2, where
    its own function would read 1)."""
    assert run_script(SCRIPT.format(guard="pass"), tmp_path).strip() == "True (True, 1)"
    assert run_script(SCRIPT.format(guard="pass"), tmp_path).strip() == "False (True, 1)"
    edited = SCRIPT.format(guard="CONFIG = 2")
    assert run_script(edited, tmp_path).strip() == "True (False, 2)"
    assert run_script(edited, tmp_path).strip() == "False (False, 2)"


def test_without_a_store_every_run_reads_the_guard(tmp_path, monkeypatch):
    """PICKLABLE_CACHE_DIR set and empty: nothing kept, the same decisions."""
    monkeypatch.setenv("PICKLABLE_CACHE_DIR", "")
    source = SCRIPT.format(guard="pass")
    assert run_script(source, tmp_path).strip() == "True (True, 1)"
    assert run_script(source, tmp_path).strip() == "True (True, 1)"


POOL_SCRIPT = textwrap.dedent(
    """
    import sys
    import picklable

    TABLE = {"scale": 3}

    def work(x):
        return x * TABLE["scale"]

    if __name__ == "__main__":
        with picklable.Pool(1) as pool:
            print(pool.map(work, [1, 2]), "picklable._reduce.main_guard" in sys.modules)
    """
)


def test_a_pools_second_run_reads_what_workers_define_from_the_store(tmp_path):
    """A picklable pool sends a script function by reference when every global
    it reads is bound outside the guard (what the module level binds: the
    second question the store answers). The second run parses nothing."""
    assert run_script(POOL_SCRIPT, tmp_path).strip() == "[3, 6] True"
    assert run_script(POOL_SCRIPT, tmp_path).strip() == "[3, 6] False"
