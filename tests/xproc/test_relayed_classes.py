"""A class built from a payload and passed on: whose attributes win.

A class copied by value mirrors the process that defined it (its home): each
payload the home makes sets its attributes again in a receiver that built it.
A process that only built it (a worker, a parent that got it from elsewhere)
passes it on with its attributes for a receiver that lacks the class, or that
only such processes fed, never over what the home sent: a task's change to a
class attribute in a worker does not travel back into its parent's class.
Three fresh interpreters: the home, a parent, the parent's spawn worker.
"""

from __future__ import annotations

import textwrap

from support.child import run_command

HOME = textwrap.dedent(
    """
    import picklable

    def make():
        class Counter:
            hits = 0

            def bump(self):
                type(self).hits += 1
                return self

        return Counter

    with open("counter.bin", "wb") as file:
        file.write(picklable.dumps(make()))
    """
)

PARENT = textwrap.dedent(
    """
    import picklable

    def bump(counter):
        return counter.bump()

    def hits(counter):
        return type(counter).hits

    if __name__ == "__main__":
        with open("counter.bin", "rb") as file:
            Counter = picklable.loads(file.read())
        Counter.hits = 100  # the parent's own change
        with picklable.Pool(1, context="spawn") as pool:
            back = pool.apply(bump, (Counter(),))
            print(Counter.hits, type(back) is Counter)
            Counter.hits = 200
            print(pool.apply(hits, (Counter(),)))
    """
)


def test_a_worker_s_change_to_a_relayed_class_stays_in_the_worker(tmp_path):
    """The worker bumps the class counter (101 there); its result comes home
    as the parent's class, whose counter stays 100. The parent's later change
    (200) still reaches the worker, which only the parent fed."""
    (tmp_path / "home.py").write_text(HOME)
    (tmp_path / "parent.py").write_text(PARENT)
    made = run_command(["home.py"], tmp_path)
    assert made.returncode == 0, made.stderr
    done = run_command(["parent.py"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["100", "True", "200"]
