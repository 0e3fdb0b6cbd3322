"""Closures of a real ``__main__`` script in one payload (issue 18).

A payload of many closures reads the table of the script's index once (not a
locator probe per closure); a closure the script's namespace holds still travels
with its origin, so a spawn worker that imports the script gets its own.
"""

from __future__ import annotations

from support.child import run_script

SCRIPT = """
import sys
import picklable


def make(n):
    def add(x):
        return x + n
    return add


handler = make(1)  # held by the module level: the worker's import makes its own


def own(functions):
    here = sys.modules["__mp_main__"]
    return [f is here.handler for f in functions], [f(1) for f in functions]


if __name__ == "__main__":
    strays = [make(i) for i in range(100)]
    with picklable.Pool(1) as pool:
        flags, values = pool.apply(own, ([*strays, handler],))
    assert flags == [False] * 100 + [True], flags
    assert values == [*range(1, 101), 2], values
    print("ok")
"""


def test_a_held_closure_among_strays_is_the_workers_own(tmp_path):
    """100 stray closures copied, the module-level one resolved to the worker's own."""
    assert run_script(SCRIPT, tmp_path).strip() == "ok"
