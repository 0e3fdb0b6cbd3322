"""Objects defined in a script run as ``__main__`` ship as exact copies (issue 2, item 4).

Each test runs real source as ``__main__`` of a new interpreter; that script ships
its objects to another fresh interpreter (``support.child``) or to a spawn pool,
and asserts there. The receiver's ``__main__`` is a different module, so only a
faithful by-value copy can work.
"""

from __future__ import annotations

import textwrap

from support.child import run_script

PRELUDE = textwrap.dedent(
    """
    import dataclasses, enum, functools, multiprocessing, pickle, sys, typing
    import picklable
    from support import checks
    from support.child import Child
    """
)


def test_main_objects_are_exact_copies(tmp_path):
    """Lambdas, closures, classes, enums, dataclasses from __main__, checked in a child."""
    source = PRELUDE + textwrap.dedent(
        '''
        OFFSET = 100

        square = lambda x: x * x + OFFSET - OFFSET

        def outer(n):
            def inner(x):
                return x + n + OFFSET
            return inner

        def make_fact():
            def fact(n):
                return 1 if n <= 1 else n * fact(n - 1)
            return fact

        def make_counter():
            count = 0
            def inc():
                nonlocal count
                count += 1
                return count
            def read():
                return count
            return inc, read

        class Base:
            """A base class."""
            def hello(self):
                return "hello " + type(self).__name__

        class Slotted(Base):
            __slots__ = ("a",)
            def __init__(self, a):
                self.a = a
            @property
            def double(self):
                return 2 * self.a
            @classmethod
            def build(cls, a):
                return cls(a)
            @staticmethod
            def helper(x):
                return x - 1

        Dynamic = type("Dynamic", (Base,), {"value": 7, "get": lambda self: self.value})

        class Shade(enum.Enum):
            DARK = "d"
            LIGHT = "l"
            def flip(self):
                return Shade.LIGHT if self is Shade.DARK else Shade.DARK

        @dataclasses.dataclass(order=True)
        class Item:
            name: str
            qty: int = 1
            tags: list = dataclasses.field(default_factory=list)

        def annotated(a: int, b: str = "x", *, c: float = 2.5) -> str:
            """Doc of annotated."""
            return f"{a}{b}{c}"
        annotated.marker = "kept"

        class Planet(enum.Enum):  # the enum docs' example: __init__ sets fields
            EARTH = (5.976e24, 6.37814e6)
            def __init__(self, mass, radius):
                self.mass = mass
                self.radius = radius
            @property
            def gravity(self):
                return round(6.673e-11 * self.mass / (self.radius * self.radius), 2)

        class Status(str, enum.Enum):  # __new__ sets the value and a label
            def __new__(cls, code, label):
                member = str.__new__(cls, code)
                member._value_ = code
                member.label = label
                return member
            MISSING = ("404", "not found")

        Status.MISSING.seen = 2  # set by the program after the class

        UserId = typing.NewType("UserId", int)

        def make_user(n):
            return UserId(n)

        if __name__ == "__main__":
            child = Child()
            run = lambda fn, *a: child.run(fn, *a)
            d = picklable.dumps
            assert run(checks.call, d(square), 7) == 49
            assert run(checks.call, d(outer(2)), 1) == 103
            assert run(checks.call, d(make_fact()), 6) == 720
            assert run(checks.counter_pair, d(make_counter())) == (2, 3)
            for fn in (square, outer(2), annotated):
                assert run(checks.metadata, d(fn)) == checks.describe(fn), fn
            assert run(checks.call, d(annotated), 1) == "1x2.5"
            assert run(checks.call_method, d(Slotted(4)), "hello") == "hello Slotted"
            facts = run(checks.class_facts, d(Slotted))
            assert facts["slots"] == ("a",) and facts["module"] == "__main__", facts
            assert facts["mro"] == ["Slotted", "Base", "object"]
            assert run(checks.call_method, d(Slotted), "build", 5).double == 10
            assert run(checks.call_method, d(Slotted), "helper", 5) == 4
            assert run(checks.call_method, d(Dynamic()), "get") == 7
            assert run(checks.call_method, d(Shade.DARK), "flip") is Shade.LIGHT
            # What an enum's __init__, its __new__ and the program set on members
            assert run(checks.attribute, d(Planet.EARTH), "gravity") == 9.8
            missing = d(Status.MISSING)
            assert [run(checks.attribute, missing, n) for n in ("value", "label", "seen")] == [
                "404", "not found", 2
            ]
            assert run(checks.call_method, missing, "upper") == "404"
            # A NewType of the script: a copy there, itself again here
            assert run(checks.attribute, d(UserId), "__supertype__") is int
            assert run(checks.call, d(make_user), 5) == 5
            assert picklable.loads(run(checks.echo, d(UserId))) is UserId
            assert run(checks.call, d(Item), "a", 2) == Item("a", 2)
            # Instances made in the child come back as instances of *our* classes.
            back = picklable.loads(run(checks.echo, d(Slotted(3))))
            assert type(back) is Slotted and back.a == 3
            assert picklable.loads(run(checks.echo, d(Item))) is Item
            assert picklable.loads(run(checks.echo, d(Shade))) is Shade
            child.close()
            print("OK")
        '''
    )
    assert run_script(source, tmp_path).strip().endswith("OK")


def test_main_class_protocols(tmp_path):
    """What a script's classes do through Python's protocols survives the copy:
    singledispatchmethod, partialmethod, __set_name__, total_ordering, and an
    exception group of the script's exceptions with keyword-only fields, notes and a
    cause. Each answer in the child equals the sender's own (cloudpickle 3.1
    cannot dump the singledispatchmethod; on 3.14 neither could picklable load the
    partialmethod before it rebuilt one by its constructor)."""
    source = PRELUDE + textwrap.dedent(
        """
        class Dispatch:
            @functools.singledispatchmethod
            def handle(self, x):
                return "object"
            @handle.register
            def _(self, x: int):
                return "int"

        class Settings:
            def set(self, key, value):
                return (key, value)
            set_limit = functools.partialmethod(set, "limit")

        class Named:
            def __set_name__(self, owner, name):
                self.name = f"{owner.__name__}.{name}"
            def __get__(self, obj, owner=None):
                return self.name

        class HasNamed:
            field = Named()

        @functools.total_ordering
        class Version:
            def __init__(self, n):
                self.n = n
            def __eq__(self, other):
                return self.n == other.n
            def __lt__(self, other):
                return self.n < other.n

        class AppError(Exception):
            def __init__(self, code, *, detail="none"):
                super().__init__(f"code {code}")
                self.code = code
                self.detail = detail

        def failure():
            try:
                try:
                    raise KeyError("inner")
                except KeyError as inner:
                    raise AppError(7, detail="outer") from inner
            except AppError as error:
                error.add_note("while loading")
                return ExceptionGroup("many", [ValueError(1), error])

        if __name__ == "__main__":
            child = Child()
            run = lambda fn, *a: child.run(fn, *a)
            d = picklable.dumps
            assert run(checks.call_method, d(Dispatch()), "handle", 1) == "int"
            assert run(checks.call_method, d(Dispatch()), "handle", "s") == "object"
            assert run(checks.call_method, d(Settings()), "set_limit", 3) == ("limit", 3)
            assert run(checks.attribute, d(HasNamed()), "field") == "HasNamed.field"
            assert run(checks.call_method, d(Version(2)), "__ge__", Version(1)) is True
            assert run(checks.call_method, d(Version(1)), "__gt__", Version(2)) is False
            group = failure()
            got = run(checks.exception_facts, d(group))
            assert got == checks.exception_facts(d(group)), (got, "sender")
            app = got["members"][1]
            assert app["type"] == "AppError" and app["str"] == "code 7", app
            assert app["fields"] == {"code": 7, "detail": "outer"}, app
            assert app["notes"] == ["while loading"], app
            assert app["cause"]["type"] == "KeyError", app
            child.close()
            print("OK")
        """
    )
    assert run_script(source, tmp_path).strip().endswith("OK")


def test_main_functions_in_a_spawn_pool(tmp_path):
    """A no-wraps decorator and a __main__ function as tasks of a stdlib spawn Pool."""
    source = PRELUDE + textwrap.dedent(
        """
        def shout(func):  # forgot functools.wraps
            def wrapper(*args):
                return func(*args).upper()
            return wrapper

        @shout
        def greet(name):
            return "hi " + name

        if __name__ == "__main__":
            payloads = [picklable.dumps((greet, (n,))) for n in ("ann", "bob", "cy")]
            with multiprocessing.get_context("spawn").Pool(2) as pool:
                results = [picklable.loads(r) for r in pool.map(checks.run_payload, payloads)]
            assert results == ["HI ANN", "HI BOB", "HI CY"], results
            # stdlib pickle cannot ship it at all:
            try:
                pickle.dumps(greet)
            except (pickle.PicklingError, AttributeError) as exc:
                print("pickle fails:", type(exc).__name__)
            print("OK")
        """
    )
    out = run_script(source, tmp_path)
    assert "pickle fails" in out and out.strip().endswith("OK")


RETENTION = textwrap.dedent(
    """
    import dataclasses
    import gc
    import json
    import weakref

    import picklable
    from picklable._reduce import type_cache


    class Model:
        def __init__(self):
            self.weights = [1.0]

        def __call__(self, x):
            return x * self.weights[0]


    class Plain:
        def __init__(self):
            self.value = 1


    @dataclasses.dataclass
    class Point:
        x: int = 1


    def make_local():
        class Local:
            def __init__(self):
                self.value = 2

        return Local


    if __name__ == "__main__":
        Local = make_local()
        refs = {
            name: weakref.ref(cls)
            for name, cls in [("Model", Model), ("Plain", Plain), ("Point", Point), ("Local", Local)]
        }
        for cls in (Model, Plain, Point, Local):
            picklable.dumps(cls())
            picklable.dumps([cls(), cls])
        # While the script binds them, its top-level classes are cached by the
        # type (the hook's fast path); the local one by id.
        print(sorted(cls.__name__ for cls in type_cache.LASTING if cls.__module__ == "__main__"))
        del Model, Plain, Point, Local, cls
        for later in ([1, 2], json.dumps, {"a": 1}, dataclasses.field):
            picklable.dumps(later)
        gc.collect()
        print(sorted(name for name, ref in refs.items() if ref() is not None))
    """
)


def test_classes_a_script_drops_are_freed(tmp_path):
    """After dumps of instances of a script's classes, the script drops them and
    dumps other things: nothing of picklable keeps the classes alive (issue 27)."""
    assert run_script(RETENTION, tmp_path) == "['Model', 'Plain', 'Point']\n[]\n"


def test_a_script_class_no_copy_can_make_says_why_where_loaded(tmp_path):
    """A script's class holding a class without ``__module__`` (made by type() in an
    exec with bare globals): no copy of it can be exact, so its reference alone
    travels; a receiver that does not run the script says which class, why, and
    the fix, once each."""
    source = PRELUDE + textwrap.dedent(
        """
        Bare = eval("type('Bare', (), {})", {"__builtins__": __builtins__})
        assert "__module__" not in Bare.__dict__

        class Holder:
            kind = Bare

        data = picklable.dumps(Holder)
        child = Child()
        try:
            child.run(picklable.loads, data)
        except Exception as exc:
            said = str(exc)
        else:
            raise AssertionError("loaded")
        said = said.strip().splitlines()[-1]  # the error's own line, after the traceback
        assert "no copy of it could travel: Bare: class without __module__ (to fix it: " in said
        assert said.count("Fix:") == 1, said
        print("OK")
        """
    )
    assert run_script(source, tmp_path).strip().endswith("OK")


def test_a_script_object_whose_own_reduction_ships_where_its_copy_cannot(tmp_path):
    """A decorator product of the script whose state no pickler writes (compiled
    code), and whose own ``__reduce__`` ships what it is made from: that
    reduction travels, as pickle sends it, and loads where the script does not run
    (it went as a reference alone, which only the script's own processes load);
    a spawn worker running the script still gets its own object."""
    source = PRELUDE + textwrap.dedent(
        """
        from picklable_testpkg.decorators import Compiled

        @Compiled
        def vec(x):
            return x + 1.0

        def is_the_workers_own(obj):
            return obj is sys.modules["__main__"].vec

        if __name__ == "__main__":
            data = picklable.dumps(vec)
            assert pickle.loads(pickle.dumps(vec))(1.0) == 2.0  # what pickle does
            print(Child().run(checks.call, data, 1.0))
            with picklable.Pool(1, context="spawn") as pool:
                print(pool.apply(is_the_workers_own, (vec,)))
        """
    )
    assert run_script(source, tmp_path).strip().splitlines() == ["2.0", "True"]
