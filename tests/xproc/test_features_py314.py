"""Python 3.14's deferred annotations, Placeholder and template strings ship (issue 26).

Annotations are computed when asked for (PEP 649, 749): a function or class
may name what is defined later, or nowhere. Module-level objects load as
themselves in a fresh interpreter; local and script ones as exact copies whose
annotations read the same in every format of ``annotationlib`` (VALUE, which
may raise NameError as where they were made, FORWARDREF, STRING): an
``__annotate__`` of their own, or where every format reads the same, the
evaluated annotations. ``functools.Placeholder`` is functools' own;
partials holding it and template strings are data. Each is compared with pickle
and cloudpickle: never worse than pickle, right wherever cloudpickle is.
"""

from __future__ import annotations

import annotationlib
import functools
import json
import textwrap

import pytest

import picklable
from picklable_testpkg import py314_features as features
from support.child import run_command, run_script
from support.feature_checks import (
    compare,
    local_rows,
    module_rows,
    script_problems,
    shown,
    table,
)

MODULE = features.__name__


MODULE_OBJECTS = ["early", "dangling", "Node", "Node.adopt", "Depth", "collect"]
DATA = ["fill_first", "fill_middle", "fill_again", "GREETING"]
LOCAL_OBJECTS = {
    "make_annotated": ("function naming a later class", "class naming itself and nothing"),
    "make_partials": ("partial of a closure", "partial with keywords"),
}


def test_module_objects_load_as_themselves(child, reference):
    """Functions and classes with deferred annotations, by reference."""
    rows, problems = module_rows(child, reference, MODULE, MODULE_OBJECTS)
    assert not problems, f"{problems}\n{table(rows)}"


def test_placeholder_is_functools_own(child, reference):
    """functools.Placeholder, a singleton, loads as the receiver's own."""
    home = ("functools", "Placeholder")
    verdicts, difference = compare(child, reference, functools.Placeholder, home, home=home)
    assert verdicts == dict.fromkeys(verdicts, "identity"), difference


def test_partials_and_templates_are_data(child, reference):
    """Partials with placeholders (one of another, merged) and t-strings: copies, as pickle's."""
    rows, problems = module_rows(child, reference, MODULE, DATA, expect="copy")
    assert not problems, f"{problems}\n{table(rows)}"
    assert {v["pickle"] for v in rows.values()} == {"copy"}


def test_local_objects_are_exact_copies(child, reference):
    """Annotations naming later and undefined names read the same in every format."""
    rows, problems = local_rows(child, reference, MODULE, LOCAL_OBJECTS)
    assert not problems, f"{problems}\n{table(rows)}"
    assert rows["function naming a later class"]["pickle"] == "fails"


def test_forward_references_ship(child):
    """Annotations in the FORWARDREF format: ForwardRefs that know their owner."""
    forward = annotationlib.get_annotations(
        features.dangling, format=annotationlib.Format.FORWARDREF
    )
    local = features.make_annotated()[0]
    local_forward = annotationlib.get_annotations(local, format=annotationlib.Format.FORWARDREF)
    loaded = picklable.loads(picklable.dumps((forward, local_forward)))
    assert loaded[0]["x"].__forward_arg__ == "Undefined"
    assert loaded[0]["x"].__owner__ is features.dangling
    assert shown(loaded[1]) == shown(local_forward)


SCRIPT = textwrap.dedent(
    """
    import functools
    import json
    import sys

    import picklable
    from support import feature_checks


    def early(node: Node, count: Count = 0) -> Node | None:
        return None


    def dangling(x: Undefined = None) -> int:
        return 1


    class Node:
        parent: Node | None
        label: Missing

        def __init__(self) -> None:
            self.parent = None

        def adopt(self, child: Node) -> Node:
            child.parent = self
            return child


    type Count = int


    def build() -> Node:
        return Node()  # reads Node, whose annotations name what is defined nowhere


    def collect(*args, **kwargs):
        return args, kwargs


    FILL = functools.partial(collect, functools.Placeholder, "b")
    who = Node()
    GREETING = t"hello {who!r}"


    def owns(objects):
        here = sys.modules["__mp_main__"]
        return [obj is getattr(here, name) for name, obj in objects]


    if __name__ == "__main__":
        cases = {
            "function naming later names": early,
            "function naming nothing defined": dangling,
            "class with deferred annotations": Node,
            "partial with a placeholder": FILL,
            "template string": GREETING,
        }
        rows = feature_checks.script_rows(cases)
        with picklable.Pool(1) as pool:
            own = pool.apply(owns, ([("early", early), ("dangling", dangling), ("Node", Node), ("build", build)],))
        print(json.dumps({"rows": rows, "own": own}))
    """
)


def test_script_objects(tmp_path):
    """A script's objects: exact copies in a fresh interpreter (annotations in every
    format), the worker's own in a spawn worker."""
    found = json.loads(run_script(SCRIPT, tmp_path))
    rows = found["rows"]
    assert not script_problems(rows), rows
    assert found["own"] == [True, True, True, True]


CHANGED_ANNOTATIONS = textwrap.dedent(
    """
    import json
    import subprocess
    import sys
    import typing

    import picklable
    from picklable._reduce import repeat


    class A:
        tag = "A"


    class B:
        tag = "B"


    def changed(x: A) -> A:
        return x


    def shown(annotations):
        return {key: getattr(value, "tag", repr(value)) for key, value in annotations.items()}


    def register(fn):  # a decorator that records resolved hints
        fn.__annotations__.update(typing.get_type_hints(fn) | {"ctx": B})
        return fn


    @register
    def decorated(y: A): ...


    def generic(x: list[A]) -> A | None: ...


    class K:
        def method(self, x: A) -> A: ...


    def early(x: A) -> A: ...


    def dumped():
        return [picklable.dumps(obj) for obj in (changed, decorated, generic, K, early)]


    if __name__ == "__main__":
        first = dumped()  # kept payloads, before the changes below
        for _ in range(3):
            dumped()
        kept_before = id(changed) in repeat._kept
        changed.__annotations__["x"] = B  # changed in place, a key added
        changed.__annotations__["extra"] = typing.Any
        K.method.__annotations__["x"] = B
        generic.__annotations__["x"] = list[B]
        early.__annotations__  # computed (and kept on early), then A is rebound


        class A:
            tag = "second A"

        payloads = dumped()
        expected = [
            shown(changed.__annotations__),
            shown(decorated.__annotations__),
            shown(generic.__annotations__),
            shown(K.method.__annotations__),
            shown(early.__annotations__),
        ]
        load = (
            "import json, sys, picklable\\n"
            "from script import shown\\n"
            "objs = [picklable.loads(bytes.fromhex(h)) for h in json.load(sys.stdin)]\\n"
            "objs[3] = objs[3].method\\n"
            "print(json.dumps([shown(o.__annotations__) for o in objs]))\\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", load],
            input=json.dumps([p.hex() for p in payloads]),
            capture_output=True,
            text=True,
            check=True,
        )
        print(json.dumps({
            "kept_before": kept_before,
            "changed": [a != b for a, b in zip(first, payloads)],
            "expected": expected,
            "loaded": json.loads(done.stdout),
        }))
    """
)


def test_annotations_changed_or_kept_on_the_function_travel(tmp_path):
    """Annotations changed in place (a key rewritten or added, a decorator's
    ``update``), or computed before a name they read was rebound, are what the
    copy's ``__annotations__`` says, as on the sender: the function's dict
    travels instead of its ``__annotate__`` (which would compute them again).
    Also after the same function's payload was kept, and for a method of a
    class copied by value."""
    found = json.loads(run_script(CHANGED_ANNOTATIONS, tmp_path))
    assert found["kept_before"]
    assert found["changed"] == [True, False, True, True, True]
    assert found["loaded"] == found["expected"]
    assert found["expected"][0] == {"x": "B", "return": "A", "extra": "typing.Any"}
    assert found["expected"][1] == {"y": "A", "ctx": "B"}
    assert found["expected"][4] == {"x": "A", "return": "A"}


def test_an_interpreter_handle_loaded_elsewhere_says_why(tmp_path):
    """A concurrent.interpreters queue or interpreter is an id of the process that
    made it: loaded in another, the error says so (not "report it")."""
    from concurrent import interpreters

    handles = [interpreters.create_queue(), interpreters.create()]
    load = (
        "import sys, picklable\n"
        "try:\n"
        "    picklable.loads(bytes.fromhex(sys.stdin.read()))\n"
        "except picklable.UnpicklingError as exc:\n"
        "    print(exc.hint)\n"
    )
    try:
        for handle in handles:
            done = run_command(("-c", load), tmp_path, input=picklable.dumps(handle).hex())
            assert done.returncode == 0, done.stderr
            assert done.stdout.strip() == "pass interpreter handles within one process"
    finally:
        handles[1].close()


def test_the_path_into_a_template_string_names_its_fields():
    """What cannot travel inside a template string is named by the fields that
    hold it (``interpolations[0].value``), not by its reduction's indices."""
    import threading

    lock = threading.Lock()
    template = t"state: {lock}"
    with pytest.raises(picklable.PicklingError) as caught:
        picklable.dumps({"job": template})
    assert caught.value.path == "obj['job'].interpolations[0].value"
