"""Size limits: 10,000-deep nesting and 100,000 functions in one payload."""

from __future__ import annotations

import sys
import textwrap
import types

import pytest

import picklable
from support import checks, robust_checks
from support.child import run_script

DEPTH = 10_000
COUNT = 100_000


def nested_list(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def depth_of(value, step) -> int:
    """How deep ``value`` nests, walked without recursion."""
    n = 0
    while True:
        inner = step(value)
        if inner is None:
            return n
        value, n = inner, n + 1


def _list_step(v):
    return v[0] if v else None


def _dict_step(v):
    return v.get("child")


def _tuple_step(v):
    return v[1] if len(v) > 1 else None


class TestDeepNesting:
    @pytest.mark.timeout(60)
    def test_default_limit_is_a_clear_error(self):
        """At the default recursion limit, 100,000-deep data is a PicklingError that says
        what to do (3.11-3.13 stop before 10,000 levels, 3.14's C stack at about 40,000)."""
        assert sys.getrecursionlimit() < 2 * DEPTH
        with pytest.raises(picklable.PicklingError) as info:
            picklable.dumps(nested_list(10 * DEPTH))
        message = str(info.value)
        if sys.version_info >= (3, 12):  # C code's recursion has a limit of its own
            assert "nested deeper than the interpreter's C recursion limit, which " in message
            assert "sys.setrecursionlimit() does not raise (Python 3.12+)" in message
            assert "Fix: flatten the structure, or ship it in shallower parts." in message
        else:
            assert "nested deeper than the recursion limit" in message
            assert "sys.setrecursionlimit() on both sides" in message

    @pytest.mark.timeout(60)
    def test_deep_closure_chain_is_a_clear_error(self):
        """10,000 closures, each over the previous: a PicklingError, not a crash."""
        namespace: dict = {"__name__": "__main__"}
        exec(
            "def wrap(inner):\n    def outer(x):\n        return inner(x) + 1\n    return outer\n",
            namespace,
        )
        fn = lambda x: x  # noqa: E731
        for _ in range(DEPTH):
            fn = namespace["wrap"](fn)
        with pytest.raises(picklable.PicklingError, match="recursion limit"):
            picklable.dumps(fn)

    @pytest.mark.timeout(120)
    def test_raised_limit_dumps_and_any_limit_loads(self, tmp_path):
        """With the limit raised, 10,000-deep lists, dicts and tuples dump; loading needs no raise."""
        source = textwrap.dedent(
            f"""
            import sys
            import picklable
            # 3.11's C pickler spends 2 levels per nesting level; past 3.12's and
            # 3.13's fixed C depth the pure-Python pickler takes over, and spends 3.
            sys.setrecursionlimit(4 * {DEPTH})
            lst, dct, tup = [], {{}}, ()
            for i in range({DEPTH}):
                lst, dct, tup = [lst], {{"child": dct, "i": i}}, (i, tup)
            for name, value in (("list", lst), ("dict", dct), ("tuple", tup)):
                open(name + ".bin", "wb").write(picklable.dumps(value))
            print("ok")
            """
        )
        assert run_script(source, tmp_path).strip() == "ok"
        limit = sys.getrecursionlimit()
        loaded = {
            name: picklable.loads((tmp_path / f"{name}.bin").read_bytes())
            for name in ("list", "dict", "tuple")
        }
        assert sys.getrecursionlimit() == limit
        assert depth_of(loaded["list"], _list_step) == DEPTH
        assert depth_of(loaded["dict"], _dict_step) == DEPTH
        assert depth_of(loaded["tuple"], _tuple_step) == DEPTH


def _make_closures(count: int) -> list:
    namespace: dict = {"__name__": "__main__"}
    exec("def factory(n):\n    def add(x):\n        return x + n\n    return add\n", namespace)
    return [namespace["factory"](i) for i in range(count)]


_PLACEHOLDER = 1_000_003


def _make_distinct(count: int) -> list:
    """``count`` by-value functions, each with its own code object (f_i(x) = x + i)."""
    namespace: dict = {"__name__": "__main__"}
    # Not a small int: Python 3.14 loads those with LOAD_SMALL_INT, not from co_consts.
    exec(f"def base(x):\n    return x + {_PLACEHOLDER}\n", namespace)
    code = namespace["base"].__code__
    out = []
    for i in range(count):
        consts = tuple(i if (type(c) is int and c == _PLACEHOLDER) else c for c in code.co_consts)
        out.append(
            types.FunctionType(
                code.replace(co_consts=consts, co_name=f"f{i}", co_qualname=f"f{i}"), namespace
            )
        )
    return out


class TestManyFunctions:
    @pytest.mark.timeout(120)
    def test_hundred_thousand_closures(self, child):
        """100,000 by-value closures (one code object) ship in one payload, here and in a child."""
        fns = _make_closures(COUNT)
        payload = picklable.dumps(fns)
        assert len(payload) < 60 * COUNT  # one code object, shared globals: tens of bytes each
        back = picklable.loads(payload)
        assert len(back) == COUNT and all(back[i](1) == i + 1 for i in (0, 1, 4_999, COUNT - 1))
        assert len({f.__code__ for f in back}) == 1
        sample = child.run(checks.call, picklable.dumps(back[COUNT - 1]), 1)
        assert sample == COUNT
        assert child.run(robust_checks.len_and_last_call, payload, 1) == (COUNT, COUNT)

    @pytest.mark.timeout(120)
    def test_hundred_thousand_distinct_functions(self):
        """100,000 by-value functions with distinct code objects (past every cache size)."""
        fns = _make_distinct(COUNT)
        assert [fns[i](1) for i in (0, 7, COUNT - 1)] == [1, 8, COUNT]  # distinct, as made
        back = picklable.loads(picklable.dumps(fns))
        assert len(back) == COUNT
        assert [back[i](1) for i in (0, 7, 50_000, COUNT - 1)] == [1, 8, 50_001, COUNT]
        assert back[12_345].__name__ == "f12345"
