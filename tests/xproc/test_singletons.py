"""A class whose ``__new__`` hands out one shared instance (a singleton): loading a
copy with the sender's state never writes it onto the receiver's own instance.

pickle's NEWOBJ calls ``cls.__new__(cls)``, which returns the receiver's own
object, and BUILD then writes the payload's state onto it (pickle and
cloudpickle do so). picklable sends an instance its module holds by
reference with its state (the receiver's own where it has that state, else a
copy), and makes a copy past a ``__new__`` that hands out the receiver's own
object. Each receiver is a fresh interpreter.
"""

from __future__ import annotations

import textwrap

from support.child import run_command, run_script

SINGLETONS = textwrap.dedent(
    """
    class Settings:
        _instance = None

        def __new__(cls):
            if cls._instance is None:
                cls._instance = super().__new__(cls)
                cls._instance.level = 1
            return cls._instance


    class Scorer:
        _instance = None

        def __new__(cls):
            if cls._instance is None:
                cls._instance = super().__new__(cls)
                cls._instance.threshold = 0.5
            return cls._instance

        def __call__(self, x):
            return x > self.threshold


    class Plain:
        def __new__(cls, *args):
            made = super().__new__(cls)
            made.made_by_new = True
            return made


    REGISTRY = []


    class Registered:
        def __new__(cls):
            made = super().__new__(cls)
            REGISTRY.append(made)
            return made


    class _NoDefault:
        _instance = None

        def __new__(cls):
            if cls._instance is None:
                cls._instance = super().__new__(cls)
            return cls._instance


    SETTINGS = Settings()
    score = Scorer()
    NO_DEFAULT = _NoDefault()
    """
)

SEND = """
import picklable
import singletons
singletons.SETTINGS.level = 5
singletons.score.threshold = 0.9
plain = singletons.Plain()
plain.x = 3
registered = singletons.Registered()
registered.x = 4
with open("payload.bin", "wb") as file:
    file.write(
        picklable.dumps(
            [singletons.SETTINGS, singletons.score, plain, registered, singletons.NO_DEFAULT]
        )
    )
"""

RECEIVE = """
import picklable
import singletons
own_settings, own_score = singletons.SETTINGS, singletons.score
with open("payload.bin", "rb") as file:
    settings, score, plain, registered, no_default = picklable.loads(file.read())
print(own_settings.level, own_score.threshold, settings.level, score.threshold)
print(settings is own_settings, score is own_score, type(settings).__name__, score(0.7))
print(plain.x, plain.made_by_new, type(plain).__name__)
print(singletons.REGISTRY == [registered], registered.x, no_default is singletons.NO_DEFAULT)
"""


def test_a_singleton_of_an_importable_module_keeps_its_state(tmp_path):
    """The sender changed its singletons (a plain one, and a callable one that
    travels by reference with its state): the receiver gets copies with the
    sender's state, and its own singletons keep theirs. An ordinary class with
    a ``__new__`` of its own is made by it, as pickle makes it (a registry its
    ``__new__`` fills holds the loaded object), and a sentinel is the
    receiver's own."""
    (tmp_path / "singletons.py").write_text(SINGLETONS)
    (tmp_path / "send.py").write_text(SEND)
    (tmp_path / "receive.py").write_text(RECEIVE)
    sent = run_command([str(tmp_path / "send.py")], tmp_path)
    assert sent.returncode == 0, sent.stderr
    received = run_command([str(tmp_path / "receive.py")], tmp_path)
    assert received.returncode == 0, received.stderr
    own, identity, plain, as_pickle = received.stdout.strip().splitlines()
    assert own == "1 0.5 5 0.9"
    assert identity == "False False Settings False"
    assert plain == "3 True Plain"
    # Where __new__ makes a new object (it registers it), or the shared one has
    # no state to change (a sentinel), what pickle gives.
    assert as_pickle == "True 4 True"


def test_pickle_writes_onto_the_receiver_s_singleton(tmp_path):
    """The oracle: plain pickle's NEWOBJ + BUILD changes the receiver's own."""
    (tmp_path / "singletons.py").write_text(SINGLETONS)
    code = (
        "import pickle, sys, singletons\n"
        "singletons.SETTINGS.level = 5\n"
        "data = pickle.dumps(singletons.SETTINGS)\n"
        "singletons.SETTINGS.level = 1\n"
        "print(pickle.loads(data) is singletons.SETTINGS, singletons.SETTINGS.level)\n"
    )
    done = run_command(["-c", code], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "5"]


SCRIPT = """
import picklable

class Settings:
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
            cls._instance.level = 1
        return cls._instance

SETTINGS = Settings()

def inspect(settings):
    import sys
    own = sys.modules["__mp_main__"].SETTINGS  # the worker's (a copy of this function reads the sender's)
    return settings is own, settings.level, own.level

if __name__ == "__main__":
    SETTINGS.level = 5
    with picklable.Pool(1, context="spawn") as pool:
        print(pool.apply(inspect, (SETTINGS,)))
"""


def test_a_script_singleton_the_guard_changed_in_a_spawn_worker(tmp_path):
    """The guard changed the script's singleton: the worker gets a copy with the
    sender's level, and its own singleton keeps its import-time one."""
    assert run_script(SCRIPT, tmp_path).strip() == "(False, 5, 1)"
