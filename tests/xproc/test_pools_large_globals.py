"""A pool's task function that reads a large global of the script (issue 18).

A real ``__main__`` script with a module-level array read by its task function:
its workers import the script (spawn) or inherit it (fork), so the function goes
by reference alone and its array does not travel. Where a worker might not hold
what the function reads (the guard rebinds it, a function sets it at run time,
the workers do not import the script), the function travels as before: a copy
with the parent's values, sent once per worker that runs it while its bytes stay
the same.
"""

from __future__ import annotations

import pytest

from support.child import run_script

SCRIPT = """
import sys
import numpy as np
import picklable

SIZE = 2 * 2**20
DATA = np.zeros(SIZE // 8)
REBOUND = np.zeros(4)


def work(i):
    return float(DATA[i])


def rebound(i):
    return float(REBOUND[i])


def late(i):
    return float(LATE[i])


def setup():
    global DATA
    DATA = np.full(SIZE // 8, 7.0)  # the worker's own state, as with pickle


def main(method):
    global LATE
    LATE = np.full(SIZE // 8, 3.0)  # set at run time only: a worker has none
    with picklable.Pool(2, context=method) as pool:
        core = pool._core
        for _ in range(3):
            assert pool.map(work, range(4)) == [0.0] * 4
        assert core.sent_bytes < SIZE // 4, core.sent_bytes  # the array stayed home

        before = core.sent_bytes
        assert pool.map(rebound, range(4)) == [5.0] * 4  # the guard's value, copied
        assert pool.map(late, range(2)) == [3.0, 3.0]  # copied, the worker has none
        assert core.sent_bytes - before >= SIZE, core.sent_bytes - before

        # A lambda is a copy: its frame goes once to each worker that runs it, not
        # once per map (a worker still starting is handed nothing, so that may be
        # one worker or both).
        before = core.sent_bytes
        ran = set()
        for _ in range(2):
            done = pool.map(
                lambda i: (float(DATA[i]) + 0.5, picklable.worker_index()), range(4), chunksize=1
            )
            assert [value for value, _ in done] == [0.5] * 4
            ran |= {index for _, index in done}
        sent = core.sent_bytes - before
        assert len(ran) * SIZE <= sent < (len(ran) + 1) * SIZE, (sent, ran)

    with picklable.Pool(2, context=method, initializer=setup) as pool:
        assert pool.map(work, range(2)) == [7.0, 7.0]  # the worker's own global
    print("ok", method)


if __name__ == "__main__":
    REBOUND = np.full(4, 5.0)
    main(sys.argv[1])
"""

WITHOUT_IMPORT = """
import numpy as np
import picklable

DATA = np.arange(8.0)


def work(i):
    return float(DATA[i])


if __name__ == "__main__":
    with picklable.Pool(1, import_main=False) as pool:
        assert pool.map(work, range(3)) == [0.0, 1.0, 2.0]  # a copy: no script there
    print("ok")
"""


class TestLargeGlobals:
    @pytest.mark.parametrize("method", ["spawn", "fork"])
    def test_the_workers_own_function_goes_by_reference(self, tmp_path, method):
        """Unchanged globals stay home; rebound or late ones travel as the parent's."""
        assert run_script(SCRIPT, tmp_path, args=(method,)).strip() == f"ok {method}"

    def test_workers_that_do_not_import_the_script_get_a_copy(self, tmp_path):
        """import_main=False: the function travels as a copy, with its globals."""
        assert run_script(WITHOUT_IMPORT, tmp_path).strip() == "ok"
