"""Cells that the interactive tests type into a kernel or an IPython shell.

Everything here is source text: it runs in the session, where ``__main__`` is
IPython's user namespace, so each definition is one a worker cannot import.
Cells have no blank lines inside a statement (the shell's simple prompt would
end the statement there).
"""

from __future__ import annotations

# One of each kind the issue names.
DEFINITIONS = """
import dataclasses, os, sys, traceback
import wrapt
import picklable
def add_thousand(fn):  # a decorator that forgot functools.wraps
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) + 1000
    return wrapper
@add_thousand
def nowraps(x):
    return x * 2
class Tagged:  # a class-based decorator: the name now holds an instance
    def __init__(self, fn):
        self.fn = fn
    def __call__(self, *args):
        return ["tagged", self.fn(*args)]
@Tagged
def class_decorated(x):
    return x + 1
@wrapt.decorator
def negate(wrapped, instance, args, kwargs):
    return -wrapped(*args, **kwargs)
@negate
def wrapt_decorated(x):
    return x * 3
square = lambda x: x ** 2
def make_adder(n):
    def add(x):
        return x + n
    return add
add_ten = make_adder(10)
@dataclasses.dataclass
class Point:
    x: int
    y: int = 0
    def norm1(self):
        return abs(self.x) + abs(self.y)
class JobError(Exception):
    def __init__(self, job, *, attempt):
        super().__init__(f"job {job} failed")
        self.job = job
        self.attempt = attempt
def fails(job):
    raise JobError(job, attempt=2)
def worker_pid(_):
    return os.getpid()
"""

# name -> (expression mapped with KIND, expected value)
CASES: dict[str, tuple[str, object]] = {
    "decorator without wraps": ("mapped(KIND, nowraps, [0, 1, 2])", [1000, 1002, 1004]),
    "class-based decorator": (
        "mapped(KIND, class_decorated, [0, 1, 2])",
        [["tagged", 1], ["tagged", 2], ["tagged", 3]],
    ),
    "wrapt decorator": ("mapped(KIND, wrapt_decorated, [0, 1, 2])", [0, -3, -6]),
    "lambda": ("mapped(KIND, square, [0, 1, 2])", [0, 1, 4]),
    "closure": ("mapped(KIND, add_ten, [0, 1, 2])", [10, 11, 12]),
    # The class itself mapped (instances built in workers come back as the
    # session's own class), and a method mapped over instances sent there.
    "dataclass": (
        (
            "[(type(p) is Point, p.x, p.y) for p in mapped(KIND, Point, [0, 1, 2])]"
            " + mapped(KIND, Point.norm1, [Point(1, -2), Point(-4)])"
        ),
        [(True, 0, 0), (True, 1, 0), (True, 2, 0), 3, 4],
    ),
}

# What the session knows about an exception that a task raised; mapped(KIND, ...)
# must raise it as the session's own JobError.
CATCH = """
def catch(kind):
    try:
        mapped(kind, fails, [5])
    except JobError as exc:
        cause = exc.__cause__
        return {
            "type": type(exc).__qualname__,
            "same class": type(exc) is JobError,
            "job": exc.job,
            "attempt": exc.attempt,
            "message": str(exc),
            "cause": type(cause).__name__ if cause is not None else None,
            "cause text": getattr(cause, "text", ""),
            "formatted": "".join(traceback.format_exception(exc)),
        }
    except BaseException as exc:
        formatted = "".join(traceback.format_exception(exc))
        return {"type": type(exc).__qualname__, "formatted": formatted}
    return {"type": None}
"""

# The session's map over each executor: KIND is "pool", "executor" or "dask".
POOLS = '''
pool = picklable.Pool(2)
executor = picklable.ProcessPoolExecutor(2)
def mapped(kind, fn, items):
    if kind == "pool":
        return pool.map(fn, items)
    if kind == "executor":
        return list(executor.map(fn, items))
    if kind == "dask":
        return client.gather(client.map(fn, items))
    raise ValueError(kind)
def everywhere(kind, fn, workers=2):
    """Map fn(item) -> (pid, value) until every worker ran it; the values seen."""
    pids, values = set(), set()
    for round in range(100):
        for pid, value in mapped(kind, fn, range(round * 4, round * 4 + 4)):
            pids.add(pid)
            values.add(value)
        if len(pids) >= workers:
            return sorted(values)
    raise RuntimeError(f"tasks reached {len(pids)} of {workers} workers")
'''

# A Dask LocalCluster of 2 worker processes and a picklable.dask.Client on it.
DASK = """
import logging
import distributed
import picklable.dask
cluster = distributed.LocalCluster(
    n_workers=2,
    threads_per_worker=1,
    processes=True,
    dashboard_address=":0",  # any free port: 8787 may be taken
    silence_logs=logging.CRITICAL,
)
client = picklable.dask.Client(cluster)
client.wait_for_workers(2)
"""

# Closes what POOLS and DASK started, whatever of it exists.
CLOSE_POOLS = """
try:
    if "pool" in globals():
        pool.terminate()
        pool.join()
finally:
    try:
        if "executor" in globals():
            executor.shutdown(wait=True, cancel_futures=True)
    finally:
        try:
            if "client" in globals():
                client.close()
        finally:
            if "cluster" in globals():
                cluster.close()
"""
