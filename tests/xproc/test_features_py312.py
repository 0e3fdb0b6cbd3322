"""Python 3.12's type parameters and type statements ship (issue 26).

Generic functions and classes (``def f[T]``, ``class C[T]``) and type aliases
(``type A = ...``), module-level ones loading as themselves in a fresh
interpreter, local and script ones as exact copies (names, module, type
parameters with their bounds and constraints, annotations, an alias's value,
recursive aliases included), each compared with what pickle and cloudpickle
do: never worse than pickle, right wherever cloudpickle is.
"""

from __future__ import annotations

import json
import textwrap
import typing

import pytest

import picklable
from picklable_testpkg import py312_features as features
from support import feature_checks
from support.child import run_command, run_script
from support.feature_checks import local_rows, module_rows, script_problems, table

MODULE = features.__name__


MODULE_OBJECTS = [
    "first",
    "spread",
    "Box",
    "Box.apply",
    "Holder",
    "Holder.Inner",
    "Pair",
    "Tree",
    "Choice",
    "Spec",
    "Later",
]
LOCAL_OBJECTS = {
    "make_functions": ("first_local", "bounded_local"),
    "make_classes": ("LocalBox", "LocalChild"),
    "make_aliases": ("Local", "Nested", "Mutual", "Bounded"),
}


def test_module_objects_load_as_themselves(child, reference):
    """Importable generic functions, classes and aliases load as the receiver's own."""
    rows, problems = module_rows(child, reference, MODULE, MODULE_OBJECTS)
    assert not problems, f"{problems}\n{table(rows)}"
    # pickle finds an alias in a class body by its name alone, and fails.
    assert rows["Holder.Inner"]["pickle"] == "fails"


def test_local_objects_are_exact_copies(child, reference):
    """What a function makes loads as an exact copy; classes and aliases come back
    here as themselves."""
    rows, problems = local_rows(child, reference, MODULE, LOCAL_OBJECTS)
    assert not problems, f"{problems}\n{table(rows)}"
    # pickle ships none of them; cloudpickle no alias.
    assert {v["pickle"] for v in rows.values()} == {"fails"}
    assert rows["Local"]["cloudpickle"] == "fails"
    for factory in ("make_classes", "make_aliases"):
        for obj in getattr(features, factory)():
            assert picklable.loads(picklable.dumps(obj)) is obj, obj
            assert picklable.explain(obj).root.how == "value", obj
    assert picklable.explain(features.Tree).root.how == "reference"
    assert picklable.explain(features.Holder.Inner).root.via == f"{MODULE}:Holder.Inner"


def test_type_parameters_stay_those_of_their_owner(child):
    """A copy's type parameters are the ones in its annotations and value."""
    local_box = features.make_classes()[0]
    first_local = features.make_functions()[0]
    local, nested, mutual, bounded = features.make_aliases()
    payload = picklable.dumps(
        (local_box, first_local, local, bounded, *bounded.__type_params__, nested, mutual)
    )
    assert child.run(feature_checks.parameter_links, payload) == {
        "class's in its methods": True,
        "function's in its annotations": True,
        "alias's in its value": [True],
        "alias's shipped beside it": [True, True],
        "recursive alias in its value": True,
        "mutual aliases": True,
    }


def test_a_parameter_shipped_before_its_alias_is_refused(child):
    """The alias cannot take a type parameter made before it: a clear error, not another one."""
    bounded = features.make_aliases()[3]
    payload = picklable.dumps((bounded.__type_params__[0], bounded))
    error = child.run(feature_checks.load_error, payload)
    assert error.startswith(
        "UnpicklingError: Cannot load type alias 'Bounded': its type parameter 'N'"
    )


def test_a_bound_naming_nothing_is_refused():
    """A type parameter's bound is evaluated when asked for; one naming nothing
    defined cannot be copied: an error that says so, not a copy without it."""
    dangling = features.make_dangling_bound()
    with pytest.raises(picklable.PicklingError) as info:
        picklable.dumps(dangling)
    assert info.value.reason == (
        "the bound of TypeVar T names something not defined "
        "(name 'NotDefinedAnywhere' is not defined)"
    )


def test_type_parameters_of_module_objects_load_as_the_receivers_own(tmp_path):
    """A type parameter of a module's generic function, class or alias, shipped
    apart from its owner (or in ``Box[T]``), loads as the receiver's own object
    (``Box.__type_params__[0]``), not as a new TypeVar: pickle's rule for what
    the receiver can import. Its ``__module__`` (typing's) does not say where."""
    objects = [
        features.Box.__type_params__[0],
        features.first.__type_params__[0],
        features.Pair.__type_params__[1],  # type: ignore[attr-defined]
        features.Box[features.Box.__type_params__[0]],  # type: ignore[name-defined]
    ]
    assert all(isinstance(obj, typing.TypeVar) for obj in objects[:3])
    load = (
        "import sys, picklable\n"
        "from picklable_testpkg import py312_features as f\n"
        "got = picklable.loads(bytes.fromhex(sys.stdin.read()))\n"
        "own = [f.Box.__type_params__[0], f.first.__type_params__[0], f.Pair.__type_params__[1]]\n"
        "print(repr([a is b for a, b in zip(got, own)] + [got[3] == f.Box[own[0]]]))\n"
    )
    done = run_command(("-c", load), tmp_path, input=picklable.dumps(objects).hex())
    assert done.returncode == 0, done.stderr
    assert eval(done.stdout) == [True, True, True, True]


def test_type_parameters_of_module_objects_load_under_an_allow_list():
    """The path to a function's or an alias's type parameter (``__type_params__``,
    a read-only tuple of type variables) is admitted with the module and typing."""
    objects = [features.first.__type_params__[0], features.Pair.__type_params__[1]]  # type: ignore[attr-defined]
    loaded = picklable.loads(picklable.dumps(objects), allowed=[MODULE, "typing"])
    assert all(a is b for a, b in zip(loaded, objects, strict=True))


def test_aliases_made_without_a_module_name_load(tmp_path):
    """An alias made where the globals have no ``__name__`` (``exec(source, {})``,
    its ``__module__`` None) loads in a fresh interpreter as an exact copy, its
    ``__module__`` None too: not refused there as a damaged payload."""
    namespace: dict[str, object] = {}
    source = "import typing\nA = typing.TypeAliasType('A', list[int])\ntype B[T] = dict[str, T]\n"
    exec(source, namespace)
    aliases = [namespace["A"], namespace["B"]]
    assert [alias.__module__ for alias in aliases] == [None, None]  # type: ignore[attr-defined]
    load = (
        "import sys, picklable\n"
        "a, b = picklable.loads(bytes.fromhex(sys.stdin.read()))\n"
        "print(repr([(x.__name__, x.__module__, repr(x.__value__), len(x.__type_params__))"
        " for x in (a, b)]))\n"
    )
    done = run_command(("-c", load), tmp_path, input=picklable.dumps(aliases).hex())
    assert done.returncode == 0, done.stderr
    assert eval(done.stdout) == [
        ("A", None, "list[int]", 0),
        ("B", None, "dict[str, T]", 1),
    ]


def test_typevar_options_travel():
    """infer_variance (3.12) and every other option of a type variable by value."""
    variable = typing.TypeVar("V", bound=int, infer_variance=True)  # type: ignore[call-overload]
    back = picklable.loads(picklable.dumps(variable, scripts="copy"))
    assert back is variable
    assert picklable.loads(picklable.dumps([variable]))[0] is variable


SCRIPT = textwrap.dedent(
    """
    import json
    import sys
    from collections.abc import Callable

    import picklable
    from support import feature_checks
    from support.child import Child

    def first[T](items: list[T]) -> T:
        return items[0]

    class Box[T]:
        def __init__(self, item: T | None = None) -> None:
            self.item = item

        def apply[U](self, f: Callable[[T | None], U] = repr) -> U:
            return f(self.item)

    type Pair[K, V] = tuple[K, V]
    type Tree = list[Tree] | int
    type Choice[S: (str, bytes)] = list[S]

    class Holder:
        type Inner = dict[str, int]

    def make():
        type Local[T] = list[T]
        return Local

    Local = make()
    CASES = {
        "function": first, "class": Box, "alias": Pair, "recursive alias": Tree,
        "constrained alias": Choice, "alias in a class": Holder.Inner, "local alias": Local,
    }

    def owns(objects):
        here = sys.modules["__mp_main__"]
        return [obj is getattr(here, name) for name, obj in objects]

    if __name__ == "__main__":
        rows = feature_checks.script_rows(CASES)
        child = Child()
        try:  # under an allow-list of the modules it names
            allowed = child.run(
                feature_checks.load_error,
                picklable.dumps([Tree, Pair, Local]),
                ["__main__", "typing", "types", "_operator", "_functools"],
            )
        finally:
            child.close()
        with picklable.Pool(1) as pool:
            own = pool.apply(owns, ([("first", first), ("Box", Box), ("Pair", Pair), ("Tree", Tree)],))
        print(json.dumps({"rows": rows, "own": own, "allowed": allowed}))
    """
)


def test_script_objects(tmp_path):
    """A script's generic objects and aliases: exact copies in a fresh interpreter,
    the worker's own in a spawn worker that runs the script."""
    found = json.loads(run_script(SCRIPT, tmp_path))
    rows = found["rows"]
    assert not script_problems(rows), rows
    assert {row["pickle"] for row in rows.values()} == {"fails"}
    assert found["own"] == [True, True, True, True]
    assert found["allowed"] == "loaded"
