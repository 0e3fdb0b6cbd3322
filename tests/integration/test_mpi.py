"""mpi4py with picklable: two real MPI ranks (``mpiexec -n 2``) exchange ``__main__`` objects.

mpi4py pickles Python objects with stdlib pickle unless told otherwise;
``MPI.pickle.__init__(picklable.dumps, picklable.loads)`` swaps in picklable for
every lowercase communication call (``send``/``recv``, ``sendrecv``, ``bcast``,
``gather``, ...). The script runs as ``__main__`` on both ranks; each makes a
closure and an instance of a ``__main__`` class, sends them to the other rank,
and calls what it received.

Needs an MPI runtime: on Debian, ``apt-get install -y openmpi-bin libopenmpi-dev``
(scripts/test installs it when missing).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

from support.child import child_env

SCRIPT = textwrap.dedent(
    """
    import json
    from mpi4py import MPI
    import picklable

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    other = 1 - rank


    def make_scale(k):
        def scale(x):
            return x * k
        return scale


    class Counter:
        def __init__(self, start):
            self.count = start

        def bump(self):
            self.count += 1
            return self.count


    class JobError(Exception):
        def __init__(self, job, *, rank):
            super().__init__(f"job {job} failed on rank {rank}")
            self.job, self.rank = job, rank


    # mpi4py's default (stdlib pickle) refuses a local closure.
    try:
        MPI.pickle.dumps(make_scale(1))
        default = "shipped"
    except Exception as exc:
        default = type(exc).__name__

    MPI.pickle.__init__(picklable.dumps, picklable.loads)

    scale, counter, error = comm.sendrecv(
        (make_scale(rank + 10), Counter(100 * rank), JobError(rank, rank=rank)),
        dest=other,
        source=other,
    )
    report = {
        "rank": rank,
        "default": default,
        "scaled": scale(2),
        "qualname": scale.__qualname__,
        "bumped": counter.bump(),
        "counter_is_main_class": type(counter) is Counter,
        "error": [type(error) is JobError, error.job, error.rank, str(error)],
    }
    reports = comm.gather(report, root=0)
    if rank == 0:
        print(json.dumps(reports))
    """
)


class TestMpiExchange:
    """MPI.pickle set to picklable: __main__ closures, classes and exceptions cross ranks."""

    def test_two_ranks_exchange_main_objects(self, tmp_path):
        """Each rank calls the closure, the object and the exception the other rank sent."""
        mpiexec = shutil.which("mpiexec")
        assert mpiexec, "mpiexec not found: apt-get install -y openmpi-bin libopenmpi-dev"
        script = tmp_path / "exchange.py"
        script.write_text(SCRIPT)
        command = [mpiexec, "-n", "2", "--allow-run-as-root", "--oversubscribe"]
        done = subprocess.run(
            [*command, sys.executable, str(script)],
            capture_output=True,
            text=True,
            timeout=120,
            env=child_env(),
            cwd=tmp_path,
        )
        assert done.returncode == 0, f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
        reports = json.loads(done.stdout.strip().splitlines()[-1])
        assert [r["rank"] for r in reports] == [0, 1]
        for report in reports:
            sender = 1 - report["rank"]
            assert report["default"] in ("AttributeError", "PicklingError")
            assert report["scaled"] == 2 * (sender + 10)
            assert report["qualname"] == "make_scale.<locals>.scale"
            assert report["bumped"] == 100 * sender + 1
            assert report["counter_is_main_class"] is True
            assert report["error"] == [
                True,
                sender,
                sender,
                f"job {sender} failed on rank {sender}",
            ]
