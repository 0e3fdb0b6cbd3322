"""Never worse than pickle (issue 16): wherever stdlib pickle round-trips an
object into a fresh interpreter, picklable gives the same object there, or an
equal one; everything of the test corpora, compared in one child interpreter."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

import picklable
from picklable._compat import class_module
from picklable_testpkg import api, clicommands, decorators, errors, neverwrong, wrapped
from support.corpus import corpus
from support.never_wrong_checks import both_loaded


def _module_objects() -> list[tuple[str, Any]]:
    """Every public object of the fixture modules: functions, classes, instances."""
    found = []
    for module in (api, clicommands, decorators, errors, neverwrong, wrapped):
        for name, value in vars(module).items():
            # class_module: a pure-Python wrapt proxy class has a property there
            home = (
                class_module(value)
                if isinstance(value, type)
                else getattr(value, "__module__", module.__name__)
            )
            if not name.startswith("_") and home in (module.__name__, None):
                found.append((f"{module.__name__}.{name}", value))
    return found


def _instances() -> list[tuple[str, Any]]:
    return [
        ("Frame instance", api.Frame([1, 2])),
        ("Record instance", api.Record(1, "r")),
        ("enum member", api.Color.RED),
        ("exception with fields", errors.KwOnlyError("x", code=3)),
        ("Model", neverwrong.MODEL),
        ("Settings", neverwrong.Settings(limit=1)),
        ("Handler", neverwrong.Handler()),
        ("nested data", {"a": [1, 2.5, ("x", b"y")], "b": {1, 2}, "c": None}),
    ]


CASES = [*corpus(), *_module_objects(), *_instances()]
# Where pickle's "success" is another object, and picklable gives the object
# itself (docs/rule.md): the difference is the point.
BETTER_THAN_PICKLE = {
    "picklable_testpkg.neverwrong.lazy_double": "pickle ships what the proxy stands for",
}


def _stdlib(obj: Any) -> bytes | None:
    try:
        return pickle.dumps(obj, protocol=5)
    except Exception:
        return None


@pytest.mark.parametrize(("name", "obj"), CASES, ids=[name for name, _ in CASES])
def test_never_worse_than_pickle(child, name, obj):
    """Where pickle's copy loads, picklable's is the same object or an equal one."""
    try:
        ours = picklable.dumps(obj)
    except picklable.PicklingError:
        assert _stdlib(obj) is None or _fails_to_load(child, _stdlib(obj)), name
        return
    result = child.run(both_loaded, _stdlib(obj), ours)
    if "pickle" not in result:
        return  # pickle cannot ship it: other tests say what picklable does
    if name in BETTER_THAN_PICKLE:
        assert result["picklable"] != result["pickle"], (name, BETTER_THAN_PICKLE[name])
        return
    assert result["picklable"] == result["pickle"] or result["same_object"], (name, result)


def _fails_to_load(child, payload: bytes) -> bool:
    try:
        result = child.run(both_loaded, payload, picklable.dumps(None))
    except Exception:
        return True
    return "pickle" not in result


def test_the_corpus_is_large():
    """The comparison covers well over a hundred objects of every kind."""
    assert len(CASES) >= 140
    assert sum(1 for _, obj in CASES if _stdlib(obj) is not None) > 80
