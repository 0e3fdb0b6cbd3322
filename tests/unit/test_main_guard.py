"""What a script's main guard binds, read from its source (``_reduce.main_guard``)."""

from __future__ import annotations

import ast
import inspect
import os
import textwrap
import types
from typing import Any, ClassVar

import pytest

from picklable._reduce import main_guard
from picklable._reduce.main_guard import (
    GuardIndex,
    guard_answer,
    guard_bindings,
    guard_index,
    worker_bindings,
)


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


def test_names_bound_beside_the_leaves_the_walk_skips(tmp_path):
    # The walk skips contexts, operators and comparison operators (issue 29):
    # what sits next to them is still read.
    found = bindings(
        tmp_path,
        """
        if __name__ == "__main__":
            total += 1
            if (hit := probe()) == 1 and not (miss := probe()) in ():
                pass
            rows = [row for row in data if (kept := row) > -1]
            mapping = {**extra, "k": (inner := 2)}
            match command:
                case {"go": where, **rest} if (seen := where):
                    pass
            def counted():
                global calls, errors
                calls = errors = 0
            counted()
        """,
    )
    assert found == {
        "total", "hit", "miss", "rows", "kept", "mapping", "inner", "where", "rest",
        "seen", "counted", "calls", "errors",
        "row",  # generous: a comprehension's own variable counts too (a copy, never wrong)
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


@pytest.mark.parametrize(
    "statement",
    [
        "first = modules[0]",
        "json_module = sys.modules.get('json')",
        "json_module = sys.modules['json']",
        "layers = net.modules",
        "args = vars(parser.parse_args())",
        "snapshot = dict(vars(Model))",
    ],
)
def test_what_only_looks_like_the_module_is_read(tmp_path, statement):
    """A list named ``modules``, another module's entry in ``sys.modules``, an
    object's ``vars``: the guard stays readable (every script object a copy
    would break a pool initializer's globals)."""
    source = f'import sys\nif __name__ == "__main__":\n    {statement}\n'
    found = bindings(tmp_path, source)
    assert found is not None, statement


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


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('if __name__ == "__main__" and DEBUG:\n    A = 1\nelse:\n    Z = 2\n', {"A", "Z"}),
        ('try:\n    if __name__ == "__main__":\n        B = 1\nexcept Exception:\n    pass\n', {"B"}),
        ('E = 1\nif __name__ == "__main__":\n    main()\nE = 10\n', {"E"}),
        ('X = 1 if __name__ == "__main__" else 2\n', {"X"}),
        ('with lock:\n    if __name__ == "__main__":\n        W = 1\n', {"W"}),
        ('import sys\nif __name__ == "__main__":\n    sys.modules[__name__].C = 1\n', None),
        ('import sys\nif __name__ == "__main__":\n    setattr(sys.modules["__main__"], "C", 1)\n', None),
        ('import sys\nif __name__ == "__main__":\n    sys.modules[__name__].__dict__.update(C=1)\n', None),
        ('import __main__ as me\nif __name__ == "__main__":\n    me.D = 1\n', None),
        ('try:\n    import __main__ as me\nexcept ImportError:\n    pass\nif __name__ == "__main__":\n    me.D = 1\n', None),
        ('if __name__ == "__main__":\n    import __main__\n    __main__.D = 1\n', None),
        ('def run():\n    import __main__\n    __main__.D = 1\nif __name__ == "__main__":\n    run()\n', None),
        ('import __main__\nif __name__ == "__main__":\n    __main__.__dict__.update(D=1)\n', None),
        ('G = globals()\nif __name__ == "__main__":\n    G["D"] = 1\n', None),
        (('import sys\ntry:\n    this = sys.modules[__name__]\nexcept KeyError:\n    pass\n'
          'if __name__ == "__main__":\n    this.D = 1\n'), None),
        (('from sys import modules\nme: object = modules.get("__main__")\n'
          'if __name__ == "__main__":\n    setattr(me, "D", 1)\n'), None),
        ('ns = vars()\ndef main():\n    ns["D"] = 1\nif __name__ == "__main__":\n    main()\n', None),
        ('match __name__:\n    case "__main__":\n        M = 1\n    case _:\n        N = 1\n', {"M", "N"}),
        ('import sys\nif __name__ == "__main__":\n    vars(sys.modules[__name__])["D"] = 1\n', None),
        (('import importlib\nif __name__ == "__main__":\n'
          '    this = importlib.import_module(__name__)\n    this.D = 1\n'), None),
        ('from sys import modules as mods\nif __name__ == "__main__":\n    mods[__name__].D = 1\n', None),
    ],
    ids=["and", "try", "after", "expression", "with", "sys.modules", "setattr", "update",
         "import as", "import in a block", "import", "in a function", "a method of __main__",
         "globals() by another name", "sys.modules item by another name",
         "modules.get by another name", "vars() by another name in a function", "match",
         "vars of the module", "import_module", "sys.modules imported by another name"],
)  # fmt: skip
def test_guards_in_other_shapes_and_the_module_by_other_names(tmp_path, source, expected):
    """A guard test mixed with others, a guard in a block, an expression or a
    ``match``, what follows the guard (a worker runs it on import), and writes
    through the module object itself, by any name the module level gives it
    (cannot be told: None)."""
    found = bindings(tmp_path, source)
    assert found == expected if expected is None else found >= expected


def test_what_the_commands_an_object_dispatches_to_set(tmp_path):
    """Functions registered on an object the guard calls (``@app.command()`` under
    ``app()``, ``@cli.command()`` under ``cli.main()``) count as the guard's; those
    registered on an object it does not call do not."""
    found = bindings(
        tmp_path,
        """
        @app.command()
        def run(scale: int = 1):
            global SCALE
            SCALE = scale

        @cli.command
        def other():
            global OTHER
            OTHER = 1

        @elsewhere.command()
        def unused():
            global UNUSED
            UNUSED = 1

        if __name__ == "__main__":
            app()
            cli.main(standalone_mode=False)
        """,
    )
    assert found is not None and {"SCALE", "OTHER"} <= found and "UNUSED" not in found


def test_what_follows_the_guard_counts_where_it_binds_a_name_again(tmp_path):
    """A name bound before the guard and again after it (a worker holds the later
    value) counts; one first bound after it (a helper, a global an initializer
    sets later) is the worker's alone, and does not."""
    found = bindings(
        tmp_path,
        """
        import os
        if __name__ == "__main__":
            os.environ.setdefault("START", "spawn")
        SCALE = 1
        FACTOR = None
        def helper(): pass
        task = logged(helper)  # between two guards: both hold it by the later one
        if __name__ == "__main__":
            main()
        SCALE = 10
        import os  # again: the same module
        def later(): pass
        """,
    )
    assert found is not None and "SCALE" in found
    assert not found & {"FACTOR", "helper", "later", "task", "os"}


def test_a_module_s_decorator_dispatches_nothing(tmp_path):
    """``@functools.cache`` under a guard that calls ``functools.partial``: a
    module is no app, and the cached function is not the guard's."""
    found = bindings(
        tmp_path,
        """
        try:
            import functools
        except ImportError:
            raise
        @functools.cache
        def setup():
            global FACTOR
            FACTOR = 3
        if __name__ == "__main__":
            run(functools.partial(setup))
        """,
    )
    assert found is not None and "FACTOR" not in found


def test_what_a_worker_binds_beside_guards_in_blocks(tmp_path):
    """A guard in a ``try`` block keeps its names from a worker's; the rest of
    the block, and what follows the guard, a worker binds."""
    path = tmp_path / "script.py"
    path.write_text(
        textwrap.dedent(
            """
            try:
                import fast
                if __name__ == "__main__":
                    GUARDED = 1
            except ImportError as err:
                fast = None
            if __name__ == "__main__":
                main()
            LATER = 1
            """
        )
    )
    assert worker_bindings(str(path)) == {"fast", "err", "LATER"}


class TestWorkerBindings:
    def test_names_bound_on_import_outside_the_guard(self, tmp_path):
        """What the module level binds on import, the guard's else branch included."""
        path = tmp_path / "script.py"
        source = """
        import numpy as np
        from os import path as P
        DATA = np.ones(3)
        try:
            import fast
        except ImportError:
            fast = None
        def work(i): global SET_LATER; SET_LATER = i
        class Job: inner = 1
        if __name__ == "__main__":
            GUARDED = 1
        else:
            WORKER_ONLY = 2
        if __name__ != "__main__":
            ALSO_WORKER = 3
        """
        path.write_text(textwrap.dedent(source))
        assert worker_bindings(str(path)) == {
            "np", "P", "DATA", "fast", "work", "Job", "WORKER_ONLY", "ALSO_WORKER",
        }  # fmt: skip

    @pytest.mark.parametrize(
        "source", ["from os.path import *\n", "exec('X = 1')\n", "globals()['X'] = 1\n"]
    )
    def test_names_bound_out_of_sight_cannot_be_told(self, tmp_path, source):
        """A star import, exec or a write through globals(): None."""
        path = tmp_path / "script.py"
        path.write_text(source)
        assert worker_bindings(str(path)) is None

    def test_a_file_that_cannot_be_read(self, tmp_path):
        """A missing file: None."""
        assert worker_bindings(str(tmp_path / "gone.py")) is None


class TestGuardIndex:
    """What the running script's code tells of its guard without a parse (issue 29)."""

    SOURCES: ClassVar[dict[str, str]] = {
        "rebinding helpers": """
            import os
            CONFIG, CACHE, MODE, LOCK, OTHER = {}, {}, "import", None, 1
            square = lambda x: x * x

            def main():
                global MODE
                MODE = "sender"
                configure()
                table = {"square": square, "other": OTHER}
                with pool(initializer=init) as p:
                    p.map(work, [square])
                return table

            @decorated
            def configure(prefix="a"):
                CONFIG.update(k=1)
                CACHE[prefix] = 2
                setattr(Model, "size", 3)
                [ITEMS.append(i) for i in range(3)]

            async def later():
                global LATE
                LATE = 1

            def init():
                global LOCK
                LOCK = make_lock()

            def work(x):
                return x

            if __name__ == "__main__":
                main()
                later()
                os.makedirs("out")
            """,
        "a guard at the end of a long file": "\n".join(f"v{i} = {i}" for i in range(400))
        + '\nif __name__ == "__main__":\n    v7 = 8\n    helper()\n'
        + "def helper():\n    global v9\n    v9 = 0\n",
        "the guard's text in a string": '''
            TEXT = """
            if __name__ == "__main__":
                quiet = 1
            """
            loud = 1
            if __name__ == "__main__":
                loud = 2
            ''',
        "a guard that defines, imports and nests": """
            def run():
                pass

            if __name__ == "__main__":
                import json
                from pathlib import Path as P
                def run():
                    global RAN
                    RAN = 1
                for i in range(2):
                    if i:
                        try:
                            deep = i
                        except ValueError as err:
                            pass
                run()
            """,
        "a function in a block is not the guard's": """
            try:
                def main():
                    global HIDDEN
                    HIDDEN = 1
            except Exception:
                pass

            def main2():
                global SHOWN
                SHOWN = 1

            if __name__ == "__main__":
                main()
                main2()
            """,
        "globals() in a called function": """
            def main():
                globals()["X"] = 1

            if __name__ == "__main__":
                main()
            """,
        "reversed and negated guards": """
            if "__main__" == __name__:
                a = 1
            if __name__ != "__main__":
                b = 1
            else:
                c = 1
            """,
        "a guard mixed with other tests, in a try block, and after it": """
            A = B = E = 1
            if __name__ == "__main__" and DEBUG:
                A = 10
            try:
                if __name__ == "__main__":
                    B = 10
            except Exception:
                pass
            E = 10
            """,
        "the module object by other names": """
            import sys
            def run():
                import __main__
                __main__.D = 1
            if __name__ == "__main__":
                sys.modules[__name__].C = 10
                run()
            """,
        "the module by a name the module level gives it": """
            G = globals()
            def main():
                G["X"] = 1
            if __name__ == "__main__":
                main()
            """,
        "a match on the module's name": """
            match __name__:
                case "__main__":
                    SCALE = 10
            """,
        "commands an object dispatches to": """
            import typer
            app = typer.Typer()
            SCALE = 1

            @app.command()
            def run(scale: int = 1):
                global SCALE
                SCALE = scale

            if __name__ == "__main__":
                app()
            """,
        "no guard": """
            import logging
            log = logging.getLogger(__name__)
            x = 1
            """,
    }

    @staticmethod
    def index(tmp_path, source):
        path = tmp_path / "script.py"
        path.write_text(textwrap.dedent(source))
        code = compile(path.read_bytes(), str(path), "exec")
        names = set(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                names.update(const.co_names, const.co_varnames)
        return GuardIndex(str(path), code), guard_answer(str(path)), names

    @pytest.mark.parametrize("case", sorted(SOURCES))
    def test_never_says_no_where_the_parse_says_yes(self, tmp_path, case):
        """Checked for every name the script mentions, one at a time and all at once."""
        index, answer, names = self.index(tmp_path, self.SOURCES[case])
        touched = None if answer is None else answer[0] | answer[1]
        for name in names | {"quiet", "v9", "RAN", "SHOWN", "X", "SCALE"}:
            if touched is None or name in touched:
                assert index.may_touch({name}), name
        if touched is None or (touched & names):
            assert index.may_touch(names)

    def test_names_the_guard_only_reads_are_told_without_the_whole_answer(self, tmp_path):
        index, answer, _ = self.index(tmp_path, self.SOURCES["rebinding helpers"])
        assert answer is not None
        touched = {"MODE", "CONFIG", "CACHE", "Model", "ITEMS", "LATE", "os"}
        assert answer[0] | answer[1] == touched
        for name in ("square", "OTHER", "work", "init"):
            assert not index.may_touch({name}), name
        # init, handed to the pool, may be called as far as the code tells: the
        # whole answer (which knows it is not) decides.
        assert index.may_touch({"LOCK"}) and "LOCK" not in touched
        for name in touched:
            assert index.may_touch({name}), name

    def test_a_long_file_and_a_string_that_looks_like_a_guard(self, tmp_path):
        index, _, _ = self.index(tmp_path, self.SOURCES["a guard at the end of a long file"])
        assert not index.may_touch({"v1", "v399"})
        assert index.may_touch({"v7"}) and index.may_touch({"v9"})
        index, _, _ = self.index(tmp_path, self.SOURCES["the guard's text in a string"])
        assert not index.may_touch({"quiet", "TEXT"})
        assert index.may_touch({"loud"})

    def test_a_script_without_a_guard_touches_nothing(self, tmp_path):
        index, answer, _ = self.index(tmp_path, self.SOURCES["no guard"])
        assert answer == (frozenset(), frozenset())
        assert not index.may_touch({"log", "x", "logging"})

    def test_out_of_sight_rebinding_and_unplaceable_functions_answer_maybe(self, tmp_path):
        index, _, _ = self.index(tmp_path, self.SOURCES["globals() in a called function"])
        assert index.may_touch({"anything"})
        source = "# -*- coding: latin-1 -*-\ndef main():\n    global A\n    A = 1\n"
        index, _, _ = self.index(tmp_path, source + 'if __name__ == "__main__":\n    main()\n')
        assert index.may_touch({"A"})

    def test_the_index_of_the_running_script(self, tmp_path):
        """Found from the script's module frame; None where it is not running."""
        path = tmp_path / "script.py"
        path.write_text(
            "import picklable._reduce.main_guard as mg\nINDEX = mg.guard_index(__file__, globals())\n"
        )
        namespace = {"__file__": str(path), "__name__": "script"}
        exec(compile(path.read_bytes(), str(path), "exec"), namespace)
        assert isinstance(namespace["INDEX"], GuardIndex)
        assert guard_index(str(path), namespace) is None


def _classes_tested_on_node(function: Any) -> set[type]:
    """The ast classes that ``function``'s body tests ``node`` against with isinstance."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    tested: set[type] = set()
    for call in ast.walk(tree):
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "isinstance"
            and isinstance(call.args[0], ast.Name)
            and call.args[0].id == "node"
        ):
            spec = call.args[1]
            for element in spec.elts if isinstance(spec, ast.Tuple) else [spec]:
                assert isinstance(element, ast.Attribute), ast.dump(element)
                tested.add(getattr(ast, element.attr))
    return tested


@pytest.mark.parametrize(
    ("walk", "looked_at"),
    [
        (main_guard._collect, main_guard._BINDING_NODES),
        (main_guard._local_names, main_guard._LOCAL_NODES),
    ],
    ids=["_collect", "_local_names"],
)
def test_the_walks_pass_over_no_node_their_checks_handle(walk, looked_at):
    """Each walk passes over a node whose type is not in its set before its
    isinstance checks (issue 29: the walk's speed). A class the checks handle
    but the set lacks would be passed over: a binding missed, a worker's own
    object taken for the sender's. Every class the checks test ``node``
    against, and every subclass of it, is in the set."""
    tested = _classes_tested_on_node(walk)
    assert len(tested) >= 10
    for cls in tested:
        family = [cls]
        for member in family:
            family.extend(member.__subclasses__())
        assert set(family) <= looked_at, {c.__name__ for c in family} - {
            c.__name__ for c in looked_at
        }


def test_what_the_module_level_binds_again_between_guards(tmp_path):
    """Each statement between the first guard and the last that binds a name the
    module level bound before, or calls a method of one (not of a module), with
    its first line (a decorator's): not an import again, not a name first bound
    there, nothing after the last guard (that counts always) and nothing where
    there is one guard."""
    from picklable._reduce.main_guard import between

    path = tmp_path / "script.py"
    path.write_text(
        textwrap.dedent(
            """\
            import os
            A = B = 1
            CONFIG = {}
            def task():
                pass
            if __name__ == "__main__":
                run()
            import os
            A = 2
            FRESH = 3
            @wrap
            def task():
                pass
            CONFIG.update(k=1)
            os.makedirs("out")
            if __name__ == "__main__":
                run()
            B = 4
            """
        )
    )
    assert between(str(path)) == (
        (9, frozenset({"A"})),
        (11, frozenset({"task"})),
        (14, frozenset({"CONFIG"})),
    )
    path.write_text('A = 1\nif __name__ == "__main__":\n    run()\nA = 2\n')
    assert between(str(path)) == ()
    assert "A" in guard_answer(str(path))[0]


def test_what_lies_ahead_of_the_module_level():
    from picklable._reduce.script_position import module_line, rebound_later

    entries = ((8, frozenset({"A"})), (10, frozenset({"task"})))
    assert rebound_later(entries, 6) == {"A", "task"}
    assert rebound_later(entries, 9) == {"task"}
    assert rebound_later(entries, 14) == frozenset()
    assert rebound_later(entries, None) == frozenset()  # the module level has finished
    namespace: dict[str, Any] = {"__name__": "probe", "module_line": module_line}
    exec(compile("x = 1\nLINE = module_line(globals())\n", "probe.py", "exec"), namespace)
    assert namespace["LINE"] == 2
    assert module_line(namespace) is None
