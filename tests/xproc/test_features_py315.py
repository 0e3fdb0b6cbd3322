"""Python 3.15's lazy imports, sentinels and frozendict ship (issue 26).

A function whose globals hold lazy imports (``lazy import colorsys``, or
every import under ``sys.set_lazy_imports("all")``) ships them as lazy
imports: the sender imports nothing, the receiver imports the module where
the copy first uses the name (a module that does not exist fails there, as
where it was made). A sentinel is the receiver's own where its module holds
it, else one copy per process, the original again back home; in a spawn
worker, the worker's own. Each case is compared with pickle and cloudpickle:
never worse than pickle, right wherever cloudpickle is.
"""

from __future__ import annotations

import json
import textwrap

import pytest

import picklable
from picklable._diagnostics.inspect import inspect_payload
from picklable_testpkg import py315_features as features
from support import feature_checks
from support.child import Child, run_script
from support.feature_checks import compare, local_rows, module_rows, script_problems, table

MODULE = features.__name__


def _lazy(name: str) -> bool:
    """Whether the module's global ``name`` is still a lazy import (never imported)."""
    return type(dict.__getitem__(vars(features), name)).__name__ == "lazy_import"


MODULE_OBJECTS = [
    "MISSING",
    "FANCY",
    "Options.UNSET",
    "uses_lazy",
    "lookup",
    "Closed",
    "Extra",
    "Solid",
]
LOCAL_OBJECTS = {
    "make_readers": ("function reading lazy imports", "function reading a missing module"),
    "make_sentinels": ("local sentinel", "frozendict of a local sentinel"),
    "make_typed_dicts": ("closed TypedDict", "TypedDict with extra items", "disjoint base"),
}


def test_module_objects_load_as_themselves(child, reference):
    """Importable sentinels (one in a class too), functions and classes: the receiver's own."""
    rows, problems = module_rows(child, reference, MODULE, MODULE_OBJECTS)
    assert not problems, f"{problems}\n{table(rows)}"
    # A sentinel in a class: pickle looks for it by its name in the module.
    assert rows["Options.UNSET"]["pickle"] == "fails"


def test_frozendict_is_data(child, reference):
    """A frozendict is copied, as pickle copies it, its functions and sentinels by name."""
    verdicts, difference = compare(child, reference, features.SETTINGS, (MODULE, "SETTINGS"))
    assert verdicts == {"pickle": "copy", "cloudpickle": "copy", "picklable": "copy"}, difference


def test_local_objects_are_exact_copies():
    """Closures reading lazy imports, local sentinels and TypedDicts: exact copies;
    the sender imports none of the lazy modules."""
    # Interpreters that never ran the module's functions: a lazy import of a module
    # already imported is the module itself, there as here.
    child, reference = Child(), Child()
    try:
        rows, problems = local_rows(child, reference, MODULE, LOCAL_OBJECTS)
    finally:
        child.close()
        reference.close()
    assert not problems, f"{problems}\n{table(rows)}"
    assert rows["function reading lazy imports"]["cloudpickle"] == "fails"  # lazy_import refused
    assert all(_lazy(name) for name in ("colorsys", "mime_audio", "WaveError")), "imported here"


def test_sentinels_keep_their_identity(child):
    """One copy of a local sentinel per process, in every payload; the original back home."""
    local, mapping = features.make_sentinels()
    first, second = picklable.dumps(local), picklable.dumps((mapping, local))
    assert child.run(feature_checks.same_loaded, first, second) == [True, True]
    assert picklable.loads(first) is local
    assert picklable.loads(second)[0]["marker"] is local
    assert picklable.explain(local).root.how == "value"
    assert picklable.explain(features.Options.UNSET).root.via == f"{MODULE}:Options.UNSET"


def test_explain_and_inspect_name_the_lazy_imports():
    """explain says a lazy import ships by reference, imported where first used;
    picklable inspect lists it apart from the modules imported when loaded."""
    read = features.make_readers()[0]
    report = str(picklable.explain(read))
    assert ".__globals__['colorsys']  lazy_import  by reference -> colorsys" in report, report
    assert ".__globals__['WaveError']  lazy_import  by reference -> wave:Error" in report, report
    inspected = inspect_payload(picklable.dumps(read))
    assert "colorsys" not in inspected.modules
    assert "colorsys (a lazy import: imported where first used)" in inspected.references
    assert "wave.Error (a lazy import: imported where first used)" in inspected.references
    assert _lazy("colorsys")


SCRIPT = textwrap.dedent(
    """
    import sys

    if sys.argv[1:] == ["all"]:
        sys.set_lazy_imports("all")  # every import below is lazy, as python -X lazy_imports=all

    import json
    import colorsys
    lazy import wave
    lazy from xml.dom import minidom
    lazy import picklable_script_no_such_module

    import picklable
    from support import feature_checks

    MISSING = sentinel("MISSING")
    CONFIG = frozendict(limit=3, missing=MISSING)


    def check(value=MISSING):
        return value is MISSING


    def reader(flag=False):
        if flag:
            return picklable_script_no_such_module.anything
        return wave.__name__, minidom.__name__, colorsys.__name__


    def owns(objects):
        here = sys.modules["__mp_main__"]
        return [obj is getattr(here, name) for name, obj in objects]


    if __name__ == "__main__":
        cases = {"sentinel": MISSING, "sentinel default": check, "lazy imports": reader, "frozendict": CONFIG}
        for obj in cases.values():
            feature_checks.dumped(obj)  # shipping them must import nothing
        imported = sorted(m for m in ("wave", "xml.dom.minidom", "colorsys") if m in sys.modules)
        rows = feature_checks.script_rows(cases)
        with picklable.Pool(1) as pool:
            own = pool.apply(owns, ([("MISSING", MISSING), ("check", check), ("reader", reader)],))
            own.append(pool.apply(check, (MISSING,)))
            own.append(pool.apply(reader))
        print(json.dumps({"rows": rows, "own": own, "imported": imported}))
    """
)


@pytest.mark.parametrize("mode", ["normal", "all"])
def test_script_objects(tmp_path, mode):
    """A script's lazy imports, sentinels and frozendicts: exact copies in a fresh
    interpreter, the worker's own in a spawn worker; nothing imported to ship them."""
    found = json.loads(run_script(SCRIPT, tmp_path, args=(mode,)))
    rows = found["rows"]
    assert not script_problems(rows), rows
    assert {row["pickle"] for row in rows.values()} == {"fails"}
    assert found["own"] == [True, True, True, True, ["wave", "xml.dom.minidom", "colorsys"]]
    # Shipping imported nothing: only what the script imported eagerly itself.
    assert found["imported"] == ([] if mode == "all" else ["colorsys"])
