"""Python 3.13's type parameter defaults and class attributes ship (issue 26).

Generic functions, classes and aliases whose type parameters have defaults
(PEP 696), classes' ``__static_attributes__`` and ``__firstlineno__``,
``warnings.deprecated`` functions and classes, ``ReadOnly`` and ``TypeIs`` in
annotations: module-level objects load as themselves in a fresh interpreter,
local and script ones as exact copies, compared with pickle and cloudpickle.
"""

from __future__ import annotations

import json
import textwrap
import typing

import picklable
from picklable_testpkg import py313_features as features
from support import feature_checks
from support.child import run_script
from support.feature_checks import local_rows, module_rows, script_problems, table

MODULE = features.__name__


MODULE_OBJECTS = [
    "pick",
    "Registry",
    "Table",
    "Handler",
    "Point",
    "old_pick",
    "OldPoint",
    "is_text",
    "Movie",
]
LOCAL_OBJECTS = {
    "make_classes": ("LocalPoint", "LocalOld", "LocalMovie"),
    "make_defaults": ("local_pick", "LocalRegistry", "LocalTable", "local_old"),
}


def test_module_objects_load_as_themselves(child, reference):
    """Importable objects of 3.13's features load as the receiver's own."""
    rows, problems = module_rows(child, reference, MODULE, MODULE_OBJECTS)
    assert not problems, f"{problems}\n{table(rows)}"


def test_local_objects_are_exact_copies(child, reference):
    """Defaults of type parameters, __static_attributes__, __firstlineno__ and
    __deprecated__ travel with the copies."""
    rows, problems = local_rows(child, reference, MODULE, LOCAL_OBJECTS)
    assert not problems, f"{problems}\n{table(rows)}"
    assert {v["pickle"] for v in rows.values()} == {"fails"}


def test_class_attributes_of_313():
    """A class copied by value keeps what 3.13 records of its source."""
    point = features.make_classes()[0]
    back = picklable.loads(picklable.dumps(point, scripts="copy"))
    assert back is point
    copy = feature_checks.facts(point)
    assert copy["__static_attributes__"] == "('a', 'b', 'c')"
    assert copy["__firstlineno__"] == str(point.__firstlineno__)


def test_type_variable_defaults_travel(child):
    """A TypeVar, ParamSpec and TypeVarTuple with defaults: exact copies."""
    variables = [
        typing.TypeVar("T", default=int),
        typing.ParamSpec("P", default=[int, str]),
        typing.TypeVarTuple("Ts", default=typing.Unpack[tuple[int, ...]]),
    ]
    found = child.run(feature_checks.loaded, "picklable", picklable.dumps(variables))
    assert found["facts"] == feature_checks.facts(variables)


SCRIPT = textwrap.dedent(
    """
    import json
    import sys
    import warnings

    import picklable
    from support import feature_checks


    def pick[T = int](x: T | None = None) -> T | None:
        return x


    class Registry[K = str, **P = [int]]:
        def __init__(self) -> None:
            self.entries = {}
            self.count = 0


    type Table[R = int] = dict[str, R]


    @warnings.deprecated("use pick")
    def old() -> int:
        return 1


    @warnings.deprecated("use Registry")
    class Old(Registry):
        pass


    def owns(objects):
        here = sys.modules["__mp_main__"]
        return [obj is getattr(here, name) for name, obj in objects]


    if __name__ == "__main__":
        cases = {"function": pick, "class": Registry, "alias": Table, "deprecated": old, "deprecated class": Old}
        rows = feature_checks.script_rows(cases)
        with picklable.Pool(1) as pool:
            own = pool.apply(owns, ([(name.__name__, name) for name in (pick, Registry, Table, Old)],))
        print(json.dumps({"rows": rows, "own": own}))
    """
)


def test_script_objects(tmp_path):
    """A script's objects: exact copies in a fresh interpreter, the worker's own in a
    spawn worker."""
    found = json.loads(run_script(SCRIPT, tmp_path))
    assert not script_problems(found["rows"]), found["rows"]
    assert found["own"] == [True, True, True, True]
