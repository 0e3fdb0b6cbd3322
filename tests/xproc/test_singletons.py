"""A class whose ``__new__`` hands out one shared instance (a singleton).

A callable object of a module goes by reference with the state the sender set
on it: where the receiver's own has another state, the payload builds a copy.
For a singleton, the class's ``__new__`` hands back the receiver's own object;
the copy is then made past it, so the sender's state never lands on the
receiver's object. Instances shipped as pickle ships them are made as pickle
makes them: a ``__new__`` that registers each instance registers the loaded
one. Each receiver is a fresh interpreter.
"""

from __future__ import annotations

import textwrap

from support.child import run_command

SINGLETONS = textwrap.dedent(
    """
    class Scorer:
        _instance = None

        def __new__(cls):
            if cls._instance is None:
                cls._instance = super().__new__(cls)
                cls._instance.threshold = 0.5
            return cls._instance

        def __call__(self, x):
            return x > self.threshold


    REGISTRY = []


    class Registered:
        def __new__(cls):
            made = super().__new__(cls)
            REGISTRY.append(made)
            return made


    score = Scorer()
    """
)

SEND = """
import picklable
import singletons
singletons.score.threshold = 0.9
registered = singletons.Registered()
registered.x = 4
with open("payload.bin", "wb") as file:
    file.write(picklable.dumps([singletons.score, registered]))
"""

RECEIVE = """
import picklable
import singletons
own_score = singletons.score
with open("payload.bin", "rb") as file:
    score, registered = picklable.loads(file.read())
print(own_score.threshold, score.threshold, score is own_score, score(0.7))
print(singletons.REGISTRY == [registered], registered.x)
"""


def test_a_callable_singleton_s_copy_is_made_past_its_new(tmp_path):
    """The sender tuned its module's scorer: the receiver gets a copy with the
    sender's threshold, and its own scorer keeps 0.5 (the copy made by the
    class's ``__new__`` would have been the receiver's own, then changed)."""
    (tmp_path / "singletons.py").write_text(SINGLETONS)
    (tmp_path / "send.py").write_text(SEND)
    (tmp_path / "receive.py").write_text(RECEIVE)
    sent = run_command(["send.py"], tmp_path)
    assert sent.returncode == 0, sent.stderr
    received = run_command(["receive.py"], tmp_path)
    assert received.returncode == 0, received.stderr
    own, registry = received.stdout.strip().splitlines()
    assert own == "0.5 0.9 False False"
    assert registry == "True 4"
