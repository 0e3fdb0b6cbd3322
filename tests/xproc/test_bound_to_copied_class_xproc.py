"""A method bound to a class copied by value, inside that class (issue 27).

A class of a script is copied: made first, its attributes set once it is
memoized. A method bound to it that its own attributes hold (pydantic keeps
``User.strip``, a ``field_validator``, bound, in ``__pydantic_decorators__``)
was shipped as pickle ships a method, ``getattr(User, "strip")``, which ran
before ``strip`` was set: the load failed (and blamed the installed pydantic).
It now ships as its function and its class.
"""

from __future__ import annotations

import json
import textwrap

from support.child import run_script

SCRIPT = textwrap.dedent(
    """
    import json
    import picklable
    from support import checks
    from support.child import Child


    class Registry:
        @classmethod
        def make(cls, n):
            return [cls.__name__, n]


    Registry.hooks = {"make": Registry.make}  # bound to the class, held by it


    if __name__ == "__main__":
        child = Child()
        try:
            made = child.run(checks.load_and_apply, picklable.dumps(Registry), picklable.dumps(
                lambda cls: [cls.hooks["make"](1), cls.hooks["make"].__self__ is cls]
            ))
        finally:
            child.close()
        print(json.dumps(made))
    """
)


def test_a_scripts_class_holding_its_bound_method(tmp_path):
    """Loaded where the script does not run: the held method is bound to the copy."""
    out = run_script(SCRIPT, tmp_path)
    assert json.loads(out.strip().splitlines()[-1]) == [["Registry", 1], True]


PYDANTIC_SCRIPT = textwrap.dedent(
    """
    import json
    import picklable
    from pydantic import BaseModel, field_validator
    from support import checks
    from support.child import Child


    class User(BaseModel):
        name: str
        age: int

        @field_validator("name")
        @classmethod
        def strip(cls, value):
            return value.strip()


    if __name__ == "__main__":
        child = Child()
        try:
            made = child.run(checks.load_and_apply, picklable.dumps(User), picklable.dumps(
                lambda cls: cls(name="  b ", age=2).model_dump()
            ))
        finally:
            child.close()
        print(json.dumps(made))
    """
)


def test_a_scripts_pydantic_model_with_a_field_validator(tmp_path):
    """The model loads where the script does not run, and its validator runs there."""
    out = run_script(PYDANTIC_SCRIPT, tmp_path)
    assert json.loads(out.strip().splitlines()[-1]) == {"name": "b", "age": 2}
