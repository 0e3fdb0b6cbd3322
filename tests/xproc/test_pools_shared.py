"""Large values of a pool's functions travel apart, once per worker (issue 18).

A real ``__main__`` script with a module-level array read by its task function:
its workers import the script, so nothing large travels while the parent's array
is what the script made; once the parent changes it (rebound, or in place), each
worker gets the parent's value once, and never reads its own stale one.
"""

from __future__ import annotations

import pytest

from support.child import run_script

SCRIPT = """
import sys
import numpy as np
import picklable

SIZE = 2 * 2**20                  # over SHARE_MIN_BYTES: travels apart
DATA = np.zeros(SIZE // 8)
BLOB = bytes(SIZE)
SETUP = None


def work(i):
    return float(DATA[i])


def blob_len(i):
    return len(BLOB) + i


def setup():
    global DATA
    DATA = np.full(SIZE // 8, 7.0)  # the worker's own state, as with pickle


def make_reader(array):
    def read(i):
        return float(array[i])
    return read


def main(method):
    global DATA
    with picklable.Pool(2, context=method) as pool:
        core = pool._core

        def sent():
            return core.sent_bytes

        assert pool.map(work, range(4)) == [0.0] * 4
        assert pool.map(blob_len, range(2)) == [SIZE, SIZE + 1]
        assert sent() < SIZE, sent()  # each worker's own array and bytes were the same

        before = sent()
        DATA[:] = 1.0  # changed in place: the parent's content travels, once per worker
        assert pool.map(work, range(4), chunksize=1) == [1.0] * 4
        moved = sent() - before
        assert 2 * SIZE <= moved < 2 * SIZE + SIZE // 2, moved

        before = sent()
        assert pool.map(work, range(4)) == [1.0] * 4  # kept by digest
        assert pool.map(lambda i: float(DATA[i]) + 0.5, range(2)) == [1.5, 1.5]
        assert sent() - before < SIZE, sent() - before

        before = sent()
        DATA = np.full(SIZE // 8, 2.0)  # rebound in the parent
        assert pool.map(work, range(4), chunksize=1) == [2.0] * 4
        assert 2 * SIZE <= sent() - before < 2 * SIZE + SIZE // 2, sent() - before

        before = sent()
        array = np.arange(SIZE // 8, dtype=np.float64)
        assert pool.map(make_reader(array), [3, 5]) == [3.0, 5.0]  # a closure's array
        assert sent() - before < 2 * SIZE + SIZE // 2, sent() - before

    DATA = np.zeros(SIZE // 8)
    with picklable.Pool(2, context=method, initializer=setup) as pool:
        assert pool.map(work, range(2)) == [7.0, 7.0]
    print("ok", method)


if __name__ == "__main__":
    main(sys.argv[1])
"""


class TestSharedGlobals:
    @pytest.mark.parametrize("method", ["spawn", "fork"])
    def test_large_globals(self, tmp_path, method):
        """Unchanged: nothing large travels; changed: the parent's value, once per worker."""
        assert run_script(SCRIPT, tmp_path, args=(method,)).strip() == f"ok {method}"
