"""picklable riding other engines: ``ship()`` and ``LOKY_PICKLER=picklable`` (issue 6).

Each case is a real script: the objects that matter live in ``__main__`` or are
the kind cloudpickle copies wrongly (a factory-made method set on a class,
which must arrive as the receiver's very object). Workers check identity and
report how often they loaded the shipped payload.
"""

from __future__ import annotations

from support.child import run_script

STDLIB = """
import concurrent.futures
import multiprocessing
import picklable
from picklable_testpkg import api, pool_tasks

def main():
    spawn = multiprocessing.get_context("spawn")
    offset = 10
    with spawn.Pool(2) as pool:
        assert pool.map(picklable.ship(lambda x: x + offset), range(4)) == [10, 11, 12, 13]
        # Loaded once per worker, then taken from the cache by digest.
        counted = picklable.ship(pool_tasks.CountsLoads())
        loads = {n for _, n in pool.map(counted, range(40), chunksize=1)}
        assert loads == {1}, loads
        # An envelope arrives sealed; a shipped function's envelope arguments are opened.
        mean = picklable.ship(api.Frame.mean)
        same_as_frame_mean = picklable.ship(pool_tasks.same_as_frame_mean)
        assert pool.apply(same_as_frame_mean, (mean,)) is True
        assert pool.apply(pool_tasks.same_as_frame_mean, (mean,)) is False
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=spawn) as ex:
        assert ex.submit(picklable.ship(lambda: "from main")).result() == "from main"
        assert ex.submit(same_as_frame_mean, mean).result() is True
    print("ok")

if __name__ == "__main__":
    main()
"""

LOKY = """
import os
import sys
if sys.argv[1] == "picklable":
    os.environ["LOKY_PICKLER"] = "picklable"
import loky
import picklable
from picklable_testpkg import api, pool_tasks

class Point:
    def __init__(self, x):
        self.x = x

def main(mode):
    ex = loky.get_reusable_executor(2)
    if mode == "picklable":
        # loky imports the module named by LOKY_PICKLER and uses its Pickler.
        from loky.backend.reduction import get_loky_pickler_name
        assert get_loky_pickler_name() == "picklable"
        assert ex.submit(pool_tasks.same_as_frame_mean, api.Frame.mean).result() is True
        assert type(ex.submit(lambda x: Point(x), 2).result()) is Point
    else:
        # cloudpickle copies the method by value: a different object over there.
        assert ex.submit(pool_tasks.same_as_frame_mean, api.Frame.mean).result() is False
    same_as_frame_mean = picklable.ship(pool_tasks.same_as_frame_mean)
    assert ex.submit(same_as_frame_mean, picklable.ship(api.Frame.mean)).result() is True
    counted = picklable.ship(pool_tasks.CountsLoads())
    assert {n for _, n in ex.map(counted, range(20))} == {1}
    ex.shutdown(wait=True)
    print("ok", mode)

if __name__ == "__main__":
    main(sys.argv[1])
"""

JOBLIB = """
import os
import sys
if sys.argv[1] == "picklable":
    os.environ["LOKY_PICKLER"] = "picklable"
from joblib import Parallel, delayed
import picklable
from picklable_testpkg import api, pool_tasks

def main(mode):
    parallel = Parallel(n_jobs=2)
    offset = 5
    scaled = picklable.ship(lambda x: x * offset)
    assert parallel(delayed(scaled)(i) for i in range(6)) == [0, 5, 10, 15, 20, 25]
    check = delayed(picklable.ship(pool_tasks.same_as_frame_mean))
    same = parallel(check(picklable.ship(api.Frame.mean)) for _ in range(4))
    assert same == [True] * 4, same
    if mode == "picklable":
        assert parallel(check(api.Frame.mean) for _ in range(2)) == [True, True]
    # n_jobs=1 runs in this process: the envelope is called as the object.
    negate = picklable.ship(lambda x: -x)
    assert Parallel(n_jobs=1)(delayed(negate)(i) for i in range(3)) == [0, -1, -2]
    print("ok", mode)

if __name__ == "__main__":
    main(sys.argv[1])
"""


def test_envelope_through_stdlib_pools(tmp_path):
    """multiprocessing and concurrent.futures carry ship() envelopes, loaded once per worker."""
    assert run_script(STDLIB, tmp_path).split() == ["ok"]


def test_loky_with_picklable_pickler(tmp_path):
    """LOKY_PICKLER=picklable: loky ships with picklable.Pickler (identity kept)."""
    assert run_script(LOKY, tmp_path, args=("picklable",)).split() == ["ok", "picklable"]


def test_loky_with_envelope(tmp_path):
    """With loky's default cloudpickle, ship() still delivers the very object."""
    assert run_script(LOKY, tmp_path, args=("cloudpickle",)).split() == ["ok", "cloudpickle"]


def test_joblib_parallel(tmp_path):
    """joblib.Parallel carries envelopes, with its default pickler and LOKY_PICKLER=picklable."""
    assert run_script(JOBLIB, tmp_path, args=("default",)).split() == ["ok", "default"]
    assert run_script(JOBLIB, tmp_path, args=("picklable",)).split() == ["ok", "picklable"]
