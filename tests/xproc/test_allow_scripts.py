"""The allow-list and a script's own objects, in real scripts (issues 16 and 20).

Where the receiver runs the sender's script (a spawn worker re-imports it as
``__mp_main__``), its objects load as the receiver's own with
``allowed=["__main__"]`` and the exact names of the script's functions and
methods (a module admits its classes, not its functions): no code is built, so
no by-value code opt-in.
Elsewhere they are copies: by-value code, refused without the opt-in.
"""

from __future__ import annotations

import json
import textwrap

from support.child import run_script

SCRIPT = textwrap.dedent(
    '''
    import dataclasses
    import enum
    import functools
    import json
    import multiprocessing
    import sys
    import threading

    import picklable


    @dataclasses.dataclass(order=True)
    class Point:
        x: int
        tags: list[str] = dataclasses.field(default_factory=list)


    class Color(enum.Enum):
        RED = 1
        GREEN = 2

        def describe(self):
            return self.name.lower()


    def double(x):
        return 2 * x


    class Scaled:
        """A class-based decorator: its instance takes the function's name."""

        def __init__(self, fn):
            functools.update_wrapper(self, fn)
            self.fn = fn

        def __call__(self, x):
            return 10 * self.fn(x)


    @Scaled
    def scaled(x):
        return x + 1


    LOCK = threading.Lock()


    def guarded():
        """Reads a lock: it cannot be copied, so it travels as a reference alone."""
        with LOCK:
            return 42


    def load_here(payload, options):
        """In the worker: load under the allow-list, and say what came back."""
        main = sys.modules["__main__"]
        try:
            point, color, fn, locked, *wrapper = picklable.loads(payload, **options)
        except picklable.UnpicklingError as exc:
            return {"refused": str(exc)}
        found = {
            "same point class": type(point) is main.Point,
            "point": repr(point),
            "same enum member": color is main.Color.GREEN,
            "describe": color.describe(),
            "same function": fn is main.double,
            "same guarded": locked is main.guarded,
        }
        if wrapper:
            found.update({"same wrapper": wrapper[0] is main.scaled, "works": wrapper[0](1)})
        return found


    # The script's functions and methods, each by its exact name: a module admits
    # its classes, not its functions.
    NAMED = [
        "__main__",
        "__main__.double",
        "__main__.guarded",
        "__main__.scaled",
        *(
            f"__main__.{cls.__qualname__}.{name}"
            for cls in (Point, Color, Scaled)
            for name, value in vars(cls).items()
            if callable(value) and not isinstance(value, type)
        ),
    ]


    if __name__ == "__main__":
        objects = (Point(1, ["a"]), Color.GREEN, double, guarded)
        payloads = {
            "auto": picklable.dumps(objects),
            "auto, a wrapper too": picklable.dumps((*objects, scaled)),
            "references": picklable.dumps((*objects, scaled), scripts="reference"),
            "copies": picklable.dumps((*objects[:3], None), scripts="copy"),
        }
        runs = {
            "auto, __main__": ("auto", ["__main__"]),
            "auto, named": ("auto", NAMED),
            "auto, json": ("auto", ["json"]),
            "wrapper, named": ("auto, a wrapper too", NAMED),
            "wrapper, named and functools": ("auto, a wrapper too", [*NAMED, "functools"]),
            "references, __main__": ("references", ["__main__"]),
            "references, named": ("references", NAMED),
            "copies, named": ("copies", NAMED),
        }
        context = multiprocessing.get_context("spawn")
        with context.Pool(1) as pool:
            results = {
                name: pool.apply(load_here, (payloads[kind], {"allowed": allowed}))
                for name, (kind, allowed) in runs.items()
            }
        print(json.dumps(results))
    '''
)


def test_a_scripts_objects_under_an_allow_list(tmp_path):
    """The worker's own objects with __main__ listed; refused without; copies need the opt-in."""
    results = json.loads(run_script(SCRIPT, tmp_path, timeout=180).splitlines()[-1])
    own = {
        "same point class": True,
        "point": "Point(x=1, tags=['a'])",
        "same enum member": True,
        "describe": "green",
        "same function": True,
        "same guarded": True,
    }
    # The module admits the script's classes, not its functions and methods: a
    # function the list does not name is never the receiver's own, but a copy.
    assert "code shipped by value is arbitrary code" in results["auto, __main__"]["refused"]
    assert "must be named exactly" in results["references, __main__"]["refused"]
    assert results["auto, named"] == own
    assert "'__main__'" in results["auto, json"]["refused"]
    # A wrapper's copy travels too (the receiver might not run the script), and
    # its globals name functools: list it, or send references alone.
    wrapper = {**own, "same wrapper": True, "works": 20}
    assert "'functools'" in results["wrapper, named"]["refused"]
    assert results["wrapper, named and functools"] == wrapper
    assert results["references, named"] == wrapper
    copies = results["copies, named"]["refused"]
    assert "code shipped by value is arbitrary code" in copies
