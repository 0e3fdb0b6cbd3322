"""The file name of a script's code travels once per payload (issue 29).

A by-value function's marshal bytes leave out ``co_filename`` (the same in every
code object nested in it); the payload carries it once, beside them, and the
receiver puts it back. These scripts run as ``__main__`` of a new interpreter
and ship their objects to another one (``support.child``), which runs no such
script: tracebacks, ``co_filename``, names and ``inspect.getsource`` of the
copies must be the originals', nested code objects included, and code whose
file name is another (made by ``exec`` or ``compile`` in the script, or
mixed by ``code.replace``) keeps its own.
"""

from __future__ import annotations

import textwrap

from support.child import run_script

SCRIPT = textwrap.dedent(
    '''
    import functools
    import picklable
    from support import code_facts
    from support.child import Child

    OFFSET = 3


    def fails(x):
        squares = [(lambda y: y * y)(v) for v in range(x)]
        return squares[x]  # IndexError: a frame on this line


    outer = lambda xs: [(lambda y: 1 // y)(v) for v in xs]


    def make_closure(n):
        def add(x):
            return x + n + OFFSET
        return add


    closure = make_closure(7)


    def logged(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs)
        return wrapper


    @logged
    def decorated(x):
        return {}[x]


    class Shape:
        """A class of the script."""

        def __init__(self, width=2.0):
            self.width = width

        def area(self):
            return [self.width * w for w in range(3)]

        def broken(self):
            raise ValueError(self.width)


    namespace = {"OFFSET": OFFSET}
    exec(compile("def generated(x):\\n    return [1 / y for y in [x]]\\n", "<generated>", "exec"), namespace)
    generated = namespace["generated"]
    exec(compile("def elsewhere(x):\\n    return x.missing\\n", "/no/such/other.py", "exec"), namespace)
    elsewhere = namespace["elsewhere"]


    def mixed_outer():
        return (lambda: 1 // 0)()


    # A nested code object from another file (code.replace): the bytes keep both.
    _inner = [c for c in mixed_outer.__code__.co_consts if hasattr(c, "co_code")][0]
    mixed_outer.__code__ = mixed_outer.__code__.replace(
        co_consts=tuple(
            c.replace(co_filename="/elsewhere/inner.py") if c is _inner else c
            for c in mixed_outer.__code__.co_consts
        )
    )


    if __name__ == "__main__":
        child = Child()
        d = picklable.dumps
        objects = [fails, outer, closure, decorated, Shape, generated, elsewhere, mixed_outer]
        for obj in objects:
            here = code_facts.describe(obj)
            there = child.run(code_facts.describe_loaded, d(obj))
            assert there == here, (obj, here, there)
        assert code_facts.describe(fails)["source"] is not None
        assert code_facts.describe(mixed_outer)["codes"][1][0] == "/elsewhere/inner.py"
        for fn, args in [
            (fails, (2,)),
            (outer, ([1, 0],)),
            (closure, (None,)),
            (decorated, ("k",)),
            (generated, (0,)),
            (elsewhere, (1,)),
            (mixed_outer, ()),
        ]:
            here = code_facts.failure(fn, *args)
            there = child.run(code_facts.loaded_failure, d(fn), *args)
            assert there == here and here[-1][0] in (__file__, "<generated>", "/no/such/other.py", "/elsewhere/inner.py"), (fn, here, there)
        assert code_facts.failure(fails, 2)[-1][:2] == (__file__, 12)
        here = code_facts.failure(Shape().broken)
        assert child.run(code_facts.method_failure, d(Shape), "broken") == here, here
        # One payload holding all of them names the script's path once.
        path = __file__.encode()
        assert d(Shape).count(path) == 1
        assert d([fails, outer, closure, decorated, Shape]).count(path) == 1
        # Files of several names in one payload: each code gets its own back.
        several = [generated, elsewhere, fails, mixed_outer]
        assert child.run(code_facts.describe_loaded, d(several)) == code_facts.describe(several)
        child.close()
        print("OK")
    '''
)


def test_copies_name_their_files_and_lines(tmp_path):
    """Tracebacks, co_filename, names and source of copies are the originals'."""
    assert run_script(SCRIPT, tmp_path).strip().endswith("OK")
