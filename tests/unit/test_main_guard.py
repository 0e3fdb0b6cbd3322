"""What a script's main guard binds, read from its source (``_reduce.main_guard``)."""

from __future__ import annotations

import os
import textwrap

import pytest

from picklable._reduce.main_guard import guard_bindings


def bindings(tmp_path, source, namespace=None):
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(source))
    return guard_bindings(str(path), {"os": os} if namespace is None else namespace)


def test_names_the_guard_assigns_defines_imports_and_changes(tmp_path):
    found = bindings(
        tmp_path,
        """
        CONFIG = {}
        if __name__ == "__main__":
            scale = make(10)
            a, (b, *c) = 1, (2, 3)
            CONFIG["k"] = 1
            Model.default.size = 3
            setattr(handler, "level", 2)
            del OLD
            import json
            from pathlib import Path as P
            def run(): global X; X = 1
            class Job: field = 1
            for i in range(3): pass
            with open("f") as fh: pass
            try: pass
            except ValueError as err: pass
            SETTINGS.update(k=7)
            os.makedirs("out")
        """,
    )
    assert found == {
        "scale", "a", "b", "c", "CONFIG", "Model", "handler", "OLD", "json", "P",
        "run", "Job", "i", "fh", "err", "SETTINGS",
    }  # fmt: skip


def test_the_reversed_and_negated_forms_of_the_guard(tmp_path):
    assert bindings(tmp_path, 'if "__main__" == __name__:\n    a = 1\n') == {"a"}
    assert bindings(tmp_path, 'if __name__ != "__main__":\n    b = 1\nelse:\n    c = 1\n') == {"c"}


def test_a_script_without_a_guard_binds_nothing(tmp_path):
    assert bindings(tmp_path, "x = 1\nif DEBUG:\n    y = 2\n") == frozenset()


def test_function_bodies_and_lambdas_are_other_scopes(tmp_path):
    source = """
    if __name__ == "__main__":
        def main():
            inner = 1
            CONFIG["k"] = 2
        f = lambda: CONFIG.clear()
    """
    assert bindings(tmp_path, source) == {"main", "f"}


def test_reading_globals_is_trusted_writing_is_not(tmp_path):
    reads = """
    if __name__ == "__main__":
        f = globals()["name"]
        g = globals().get("name")
        h = "name" in globals()
    """
    assert bindings(tmp_path, reads) == {"f", "g", "h"}
    for write in (
        'globals()["x"] = 1',
        "globals().update(x=1)",
        "vars().setdefault('x', 1)",
        "namespace = globals()",
        "exec('x = 1')",
        "eval('f()')",
        "from os.path import *",
    ):
        source = f'if __name__ == "__main__":\n    {write}\n'
        assert bindings(tmp_path, source) is None, write


@pytest.mark.parametrize("source", ["if __name__ == '__main__':\n  x = (\n", "\x00"])
def test_a_script_that_cannot_be_parsed_answers_none(tmp_path, source):
    assert bindings(tmp_path, source) is None


def test_a_missing_file_answers_none(tmp_path):
    assert guard_bindings(str(tmp_path / "gone.py"), {}) is None


def test_the_answer_follows_the_file_when_it_changes(tmp_path):
    assert bindings(tmp_path, 'if __name__ == "__main__":\n    a = 1\n') == {"a"}
    assert bindings(tmp_path, 'if __name__ == "__main__":\n    bb = 1\n') == {"bb"}


def test_what_the_functions_the_guard_calls_set(tmp_path):
    source = """
    CONFIG, CACHE, MODE, LOCK = {}, {}, "import", None

    def main():
        global MODE
        MODE = "sender"
        options = {}
        options["x"] = 1          # its own: not the module's
        configure()
        with pool(initializer=init) as p:
            p.map(work, [])

    def configure(prefix="a"):
        CONFIG.update(k=1)
        CACHE[prefix] = 2

    def init():
        global LOCK
        LOCK = make_lock()

    def work(x):
        return x

    if __name__ == "__main__":
        main()
    """
    # init is handed to the pool, not called here: a worker runs it too.
    assert bindings(tmp_path, source) == {"MODE", "CONFIG", "CACHE"}


def test_a_called_function_that_rebinds_out_of_sight(tmp_path):
    source = """
    def main():
        exec("X = 1")

    if __name__ == "__main__":
        main()
    """
    assert bindings(tmp_path, source) is None
