"""A script's typing classes, loaded where the script does not run (issue 27).

A ``TypedDict`` is a ``dict`` subclass that its metaclass makes from the
bases its class statement names; it refuses ``dict`` itself as a base. On
Python 3.11 a TypedDict whose bases are TypedDicts keeps no record of them
(``__orig_bases__``): its copy was made on ``dict`` and refused, with an
error that blamed another version of ``types``.
"""

from __future__ import annotations

import json
import textwrap

from support.child import run_script

SCRIPT = textwrap.dedent(
    """
    import json
    from typing import Generic, NotRequired, TypedDict, TypeVar
    import picklable
    from support import checks
    from support.child import Child

    T = TypeVar("T")


    class Movie(TypedDict):
        title: str
        year: int


    class Rated(Movie, total=False):
        stars: int


    class Box(TypedDict, Generic[T]):
        item: T
        note: NotRequired[str]


    def facts(cls):
        return [
            cls.__name__,
            sorted(cls.__required_keys__),
            sorted(cls.__optional_keys__),
            cls.__total__,
            type(cls).__name__,
            cls(title="t", year=1, stars=2) if cls is Rated else None,
        ]


    if __name__ == "__main__":
        child = Child()
        try:
            out = [
                child.run(checks.load_and_apply, picklable.dumps(cls), picklable.dumps(facts))
                for cls in (Movie, Rated, Box)
            ]
        finally:
            child.close()
        print(json.dumps(out))
    """
)


def test_a_scripts_typed_dicts_load_elsewhere(tmp_path):
    """Each loads in an interpreter that does not run the script, with its keys,
    totality and metaclass; the subclass makes dicts of its parent's keys too."""
    out = json.loads(run_script(SCRIPT, tmp_path).strip().splitlines()[-1])
    assert out == [
        ["Movie", ["title", "year"], [], True, "_TypedDictMeta", None],
        [
            "Rated",
            ["title", "year"],
            ["stars"],
            False,
            "_TypedDictMeta",
            {"title": "t", "year": 1, "stars": 2},
        ],
        ["Box", ["item"], ["note"], True, "_TypedDictMeta", None],
    ]
