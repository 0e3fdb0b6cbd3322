"""Tests for `picklable._reduce.functions` and `.classes`: functions and classes by value."""

from __future__ import annotations

import abc
import enum
import sys
import types

import pytest

import picklable
from picklable._reduce import functions as _functions
from picklable_testpkg import api


def roundtrip(obj):
    return picklable.loads(picklable.dumps(obj))


class TestFunctions:
    def test_shared_globals_namespace(self):
        """Functions of one namespace share one globals dict in the receiver."""
        ns: dict = {"__name__": "scratch"}
        exec(
            "counter = 0\ndef bump():\n    global counter\n    counter += 1\n    return counter\n"
            "def read():\n    return counter\n",
            ns,
        )
        bump, read = roundtrip((ns["bump"], ns["read"]))
        bump()
        bump()
        assert read() == 2 and bump.__globals__ is read.__globals__

    def test_mutual_recursion(self):
        """Two functions that call each other through their globals."""
        ns: dict = {"__name__": "scratch"}
        exec(
            "def even(n):\n    return True if n == 0 else odd(n - 1)\n"
            "def odd(n):\n    return False if n == 0 else even(n - 1)\n",
            ns,
        )
        even = roundtrip(ns["even"])
        assert even(10) is True and even(7) is False

    def test_self_reference_built_once(self):
        """A function that names itself as a global is built once, not twice."""
        ns: dict = {"__name__": "scratch"}
        exec("def fact(n):\n    return 1 if n < 2 else n * fact(n - 1)\n", ns)
        fact = roundtrip(ns["fact"])
        assert fact(5) == 120 and fact.__globals__["fact"] is fact

    def test_empty_cell_stays_empty(self):
        """A cell never assigned stays empty after loading."""

        def outer():
            def inner():
                return later  # noqa: F821 - assigned after inner is made

            return inner

        fn = roundtrip(outer())
        with pytest.raises(NameError):
            fn()

    def test_changed_metadata_travels(self):
        """Attributes changed after definition travel; the rest comes from the code."""
        fn = api.make_closure(1)
        fn.__qualname__ = "renamed"
        fn.__module__ = "elsewhere"
        fn.__doc__ = "new doc"
        fn.__defaults__ = ([1],)
        fn.__kwdefaults__ = {"k": 2}
        fn.tag = "kept"
        back = roundtrip(fn)
        for name in (
            "__qualname__",
            "__module__",
            "__doc__",
            "__defaults__",
            "__kwdefaults__",
            "tag",
        ):
            assert getattr(back, name) == getattr(fn, name), name

    def test_default_that_refers_to_the_function(self):
        """A default value holding the function itself loads (set once memoized)."""
        fn = api.make_closure(2)
        fn.__defaults__ = (fn,)
        back = roundtrip(fn)
        assert back.__defaults__[0] is back

    def test_code_object_alone(self):
        """A bare code object ships by value."""
        code = api.make_closure(1).__code__
        assert roundtrip(code) == code

    def test_cells_nothing_else_holds_travel_as_contents(self):
        """A closure's cells of plain data that nothing else holds travel as a
        list of contents (no cell object per closure); held elsewhere too (a
        second function over the same cell, the cell in the payload, a running
        frame), they stay cells, whose identity the memo keeps."""
        assert b"_make_cell" not in picklable.dumps([api.make_closure(i) for i in range(3)])
        add = api.make_closure(1)
        back = roundtrip(add)
        assert back(1) == 2 and back.__closure__[0].cell_contents == 1
        assert b"_make_cell" in picklable.dumps(api.make_nonlocal_counter())
        assert b"_make_cell" in picklable.dumps([add, add.__closure__[0]])

        def make():
            a, b = 1, "two"

            def both():
                return a, b

            def one():
                return b

            return both, one

        both, one = make()
        assert b"_make_cell" in picklable.dumps(both)  # one holds a cell too
        assert b"_make_cell" in picklable.dumps([both, one])
        back_both, back_one = roundtrip([both, one])
        assert back_both.__closure__[1] is back_one.__closure__[0]
        del one
        assert b"_make_cell" not in picklable.dumps(both)
        assert roundtrip(both)() == (1, "two")
        n = 3

        def running():
            return n

        # Deterministic payloads depend on the object alone, not on what holds it.
        alone = picklable.dumps(add, deterministic=True)
        held = add.__closure__[0]
        assert picklable.dumps(add, deterministic=True) == alone
        del held
        # This frame holds the cell of n while dumps runs.
        assert b"_make_cell" in picklable.dumps(running)
        assert roundtrip(running)() == 3

    def test_closures_share_code_and_bytes(self):
        """1,000 closures of one factory carry their code once."""
        one = len(picklable.dumps([api.make_closure(0)]))
        many = len(picklable.dumps([api.make_closure(i) for i in range(1000)]))
        assert many < one + 1000 * 40


class TestRegisterByValue:
    def test_switch_ships_an_importable_module_by_value(self):
        """register_by_value makes an importable module's functions travel as copies."""
        from picklable_testpkg import factories

        by_ref = picklable.dumps(factories.make_summary)
        picklable.register_by_value(factories)
        try:
            assert factories.__name__ in picklable.list_registry_by_value()
            by_value = picklable.dumps(factories.make_summary)
            assert len(by_value) > len(by_ref)
            copy = picklable.loads(by_value)
            assert copy is not factories.make_summary
            assert copy.__qualname__ == "make_summary" and copy.__module__ == factories.__name__
        finally:
            picklable.unregister_by_value(factories)
        assert picklable.loads(picklable.dumps(factories.make_summary)) is factories.make_summary

    def test_unknown_module(self):
        """Registering a module that is not imported is an error."""
        with pytest.raises(ValueError, match="not an imported module"):
            picklable.register_by_value("no_such_module_xyz")
        with pytest.raises(ValueError, match="was not registered"):
            picklable.unregister_by_value("json")


class TestClasses:
    def test_c_heap_type_is_never_copied(self):
        """A C type no module exports is refused, a heap type too (ctypes' metaclasses
        from Python 3.13 on): type() would make another class, with none of its C code."""
        import ctypes

        meta = type(ctypes.CDLL(None)._FuncPtr)  # _ctypes.PyCFuncPtrType
        assert bool(meta.__flags__ & (1 << 9)) is (sys.version_info >= (3, 13))  # heap type
        with pytest.raises(picklable.PicklingError) as info:
            picklable.dumps(meta)
        assert info.value.reason == "built-in type that no module exports"

    def test_class_a_c_metaclass_makes_is_refused(self):
        """A class whose metaclass's __new__ is C code (ctypes' PyCStructType here,
        msgspec's StructMeta in the wild, which makes __slots__ itself and refuses a
        namespace with them) is refused at dump, naming it and where it sits: a copy
        cannot give that metaclass its class statement again (it loaded wrong, or
        failed to load with "report it")."""
        import ctypes

        class Point(ctypes.Structure):
            _fields_ = [("x", ctypes.c_int)]

        with pytest.raises(picklable.PicklingError) as info:
            picklable.dumps({"k": Point})
        assert info.value.path == "obj['k']"
        assert "PyCStructType" in info.value.reason
        assert "Point" in str(info.value)

    def test_class_without_module_is_refused_by_name(self):
        """A class type() made where no module name was at hand (no __module__)
        is refused at dump, naming it and its path (it failed at load with
        'AttributeError: __module__')."""
        made = eval("type('Nameless', (), {})", {})
        assert "__module__" not in made.__dict__

        class Holder:
            pass

        Holder.reg = {"two": made}

        with pytest.raises(picklable.PicklingError) as info:
            picklable.dumps({"k": Holder})
        assert info.value.path == "obj['k'].reg['two']"
        assert "Nameless" in str(info.value) and "__module__" in str(info.value)

    def test_slots_keep_no_dict(self):
        """A slotted class rebuilt by value has no instance __dict__."""
        local = api.make_class()
        assert roundtrip(local) is local  # same process: the original class comes back
        payload = picklable.dumps(local)
        _forget(local)
        copy = picklable.loads(payload)
        assert copy is not local and copy.__slots__ == ("a", "b")
        assert not hasattr(copy(1, 2), "__dict__")
        assert copy(1, 2).total() == 3

    def test_copyregs_slotnames_cache_stays_home(self):
        """Pickling an instance makes copyreg cache ``__slotnames__ = []`` on its
        class (pickle does it too): the class's copy leaves that cache out, so its
        payload is the same before and after, and the receiver works it out again."""
        import copyreg

        class Plain:
            def __init__(self, x):
                self.x = x

        before = picklable.dumps(Plain)
        picklable.dumps(Plain(1))
        Plain(1).__reduce_ex__(2)  # copyreg writes the cache (pickle.dumps calls it)
        assert Plain.__dict__["__slotnames__"] == []
        assert picklable.dumps(Plain) == before
        assert picklable.dumps([Plain(1), Plain]) == picklable.dumps([Plain(1), Plain])
        _forget(Plain)
        copy = picklable.loads(before)
        assert copy is not Plain and "__slotnames__" not in copy.__dict__
        # Where it is pickled again, copyreg works the cache out for the copy.
        assert copy(7).__reduce_ex__(2)[0] is copyreg.__newobj__
        assert copy.__dict__["__slotnames__"] == []

    def test_slotted_class_keeps_its_slotnames(self):
        """Where a class of its MRO has __slots__, ``__slotnames__`` travels as it is."""
        import copyreg

        class Base:
            __slots__ = ("a",)

        class Child(Base):
            pass

        assert copyreg._slotnames(Child) == ["a"]
        payload = picklable.dumps(Child)
        _forget(Child)
        _forget(Base)
        copy = picklable.loads(payload)
        assert copy is not Child and copy.__dict__["__slotnames__"] == ["a"]

    def test_metaclass_and_init_subclass(self):
        """The metaclass is kept; __init_subclass__ runs for the rebuilt class."""
        seen = []

        class Meta(type):
            pass

        class Base(metaclass=Meta):
            def __init_subclass__(cls, **kwargs):
                super().__init_subclass__(**kwargs)
                seen.append(cls.__name__)
                cls.registered = True

        def make():
            class Child(Base):
                x = 1

            return Child

        child = make()
        payload = picklable.dumps(child)
        _forget(child)
        copy = picklable.loads(payload)
        assert type(copy) is type(child) and copy.registered and copy.x == 1
        assert seen == ["Child", "Child"]

    def test_abc_registrations(self):
        """Virtual subclasses registered on an ABC are registered on the copy."""

        def make():
            class Shape(abc.ABC):
                @abc.abstractmethod
                def area(self): ...

            Shape.register(int)
            return Shape

        shape = make()
        payload = picklable.dumps(shape)
        _forget(shape)
        copy = picklable.loads(payload)
        assert issubclass(int, copy) and not issubclass(str, copy)
        with pytest.raises(TypeError):
            copy()

    def test_enum_members_and_identity(self):
        """A rebuilt enum has its members, aliases and methods; members are singletons."""
        mode = api.make_enum()
        payload = picklable.dumps([mode, mode.FAST, mode.QUICK])
        _forget(mode)
        copy, fast, quick = picklable.loads(payload)
        assert fast is copy.FAST and quick is copy.FAST and copy(2) is copy.SLOW
        assert copy.SLOW.describe() == "mode SLOW"
        assert isinstance(copy, enum.EnumMeta)

    def test_properties_classmethods_staticmethods(self):
        """Descriptors defined in a local class keep working."""

        def make():
            class Box:
                def __init__(self, v):
                    self._v = v

                @property
                def v(self):
                    return self._v

                @v.setter
                def v(self, value):
                    self._v = value

                @classmethod
                def of(cls, v):
                    return cls(v)

                @staticmethod
                def twice(x):
                    return 2 * x

            return Box

        box = make()
        payload = picklable.dumps(box)
        _forget(box)
        copy = picklable.loads(payload)
        b = copy.of(3)
        b.v = 4
        assert b.v == 4 and copy.twice(5) == 10

    def test_builtin_type_that_no_module_exports(self):
        """Types like FunctionType and CellType travel by reference."""
        assert roundtrip(types.FunctionType) is types.FunctionType
        assert roundtrip(types.CellType) is types.CellType
        assert roundtrip(type(None)) is type(None)

    def test_module_objects(self):
        """Importable modules travel by name; __main__ itself is refused clearly."""
        assert roundtrip(sys) is sys
        with pytest.raises(picklable.PicklingError, match="the __main__ module is not shippable"):
            picklable.dumps(sys.modules["__main__"])
        dynamic = types.ModuleType("made_in_memory")
        dynamic.value = 3
        assert roundtrip(dynamic).value == 3


def _forget(cls):
    """Make this process forget it made ``cls`` (as a receiver would not know it)."""
    from picklable import _tracker

    tracker = _tracker._id_by_class.pop(cls, None)
    if tracker is not None:
        _tracker._class_by_id.pop(tracker, None)


class TestReceiverKeepsUp:
    def test_class_built_here_takes_the_senders_later_state(self):
        """A class built from a payload is updated by a later payload of the same class."""

        def make():
            class Config:
                size = 1

            return Config

        config = make()
        first = picklable.dumps(config)
        _forget(config)  # from here on this process plays the receiver
        copy = picklable.loads(first)
        assert copy.size == 1
        from picklable import _tracker

        tracker = _tracker._id_by_class[copy]
        _tracker.track(config, tracker)  # the sender's side: same id, changed class
        config.size = 3
        second = picklable.dumps(config)
        _forget(config)
        _tracker.track(copy, tracker)
        assert picklable.loads(second) is copy and copy.size == 3

    def test_class_defined_here_never_touched(self):
        """A class that comes home is the original, its attributes unchanged."""
        local = api.make_class()
        payload = picklable.dumps(local)
        local.extra = "set after the dump"
        assert picklable.loads(payload) is local and local.extra == "set after the dump"


class TestGlobalNames:
    def test_attribute_named_like_a_global_is_not_shipped(self):
        """x.real does not ship a global called real (here a lock that cannot ship)."""
        import threading

        ns: dict = {"__name__": "scratch", "real": threading.Lock()}
        exec("def real_part(x):\n    return x.real\n", ns)
        assert picklable.loads(picklable.dumps(ns["real_part"]))(3) == 3

    def test_class_body_globals_are_shipped(self):
        """A class made inside a function reads module globals with LOAD_NAME."""
        ns: dict = {"__name__": "scratch", "SIZE": 7}
        exec("def make():\n    class Box:\n        size = SIZE\n    return Box\n", ns)
        assert picklable.loads(picklable.dumps(ns["make"]))().size == 7

    def test_loader_travels_with_its_spec(self, tmp_path):
        """A copy reading __loader__ gets __spec__ too: a traceback through it
        prints without linecache's warning (Python 3.15: no __spec__.loader)."""
        import importlib.machinery
        import traceback

        path = str(tmp_path / "scratch_loader.py")
        source = "def fail():\n    raise ValueError(__loader__.name)\n"
        loader = importlib.machinery.SourceFileLoader("scratch_loader", path)
        spec = importlib.machinery.ModuleSpec("scratch_loader", loader, origin=path)
        ns: dict = {"__name__": "scratch_loader", "__loader__": loader, "__spec__": spec}
        exec(compile(source, path, "exec"), ns)
        copy = picklable.loads(picklable.dumps(ns["fail"]))
        assert copy is not ns["fail"]
        assert copy.__globals__["__spec__"].loader is copy.__globals__["__loader__"]
        with pytest.raises(ValueError, match="scratch_loader") as caught:
            copy()
        assert 'scratch_loader.py", line 2, in fail' in "".join(
            traceback.format_exception(caught.value)
        )


class TestAnnotations:
    """Annotations travel in _make_function's arguments when nothing in them can
    lead back to the function; otherwise in the state, set once it is memoized."""

    @staticmethod
    def _function(source: str, **names) -> types.FunctionType:
        return TestAnnotations._run(source, **names)["f"]

    @staticmethod
    def _run(source: str, **names) -> dict:
        """Run ``source`` without this module's ``from __future__ import annotations``,
        and give ``f`` its annotations as a dict: since Python 3.14 a function
        computes them with ``__annotate__``, which its copy ships instead (that
        dict is what a copy carries where ``__annotate__`` is None)."""
        ns: dict = {"__name__": "scratch", **names}
        exec(compile(source, "<scratch>", "exec", dont_inherit=True), ns)
        ns["f"].__annotations__ = dict(ns["f"].__annotations__)
        return ns

    @staticmethod
    def _state_sets_annotations(payload: bytes) -> bool:
        """Whether a BUILD state in ``payload`` names __annotations__."""
        import pickletools

        names = [arg for op, arg, _ in pickletools.genops(payload) if op.name.endswith("UNICODE")]
        return "__annotations__" in names

    @pytest.mark.parametrize(
        "source",
        [
            "def f(x: int, y: 'Later' = 1) -> None:\n    return None\n",
            "def f(x: str) -> bytes:\n    return b''\n",
            "def f(x: api.Frame) -> int:\n    return 1\n",  # importable class: a reference
        ],
    )
    def test_plain_annotations_in_arguments(self, source):
        f = self._function(source, api=api)
        payload = picklable.dumps(f)
        assert not self._state_sets_annotations(payload)
        loaded = picklable.loads(payload)
        assert loaded.__annotations__ == f.__annotations__
        assert loaded.__annotations__ is not f.__annotations__

    def test_annotation_leading_back_goes_in_the_state(self):
        """A by-value class whose namespace holds the function: pickled in the
        arguments it would recurse into the unmemoized function."""
        ns = self._run(
            "class Node:\n    pass\ndef f(x: Node) -> Node:\n    return x\nNode.make = f\n"
        )
        payload = picklable.dumps(ns["f"])
        assert self._state_sets_annotations(payload)
        loaded = picklable.loads(payload)
        # Back in its own process a by-value class is the original class again.
        assert loaded.__annotations__ == {"x": ns["Node"], "return": ns["Node"]}
        assert loaded(1) == 1

    def test_typing_constructs_go_in_the_state(self):
        f = self._function("def f(x: list[int]) -> dict[str, int]:\n    return {}\n")
        payload = picklable.dumps(f)
        assert self._state_sets_annotations(payload)
        assert picklable.loads(payload).__annotations__ == {
            "x": list[int],
            "return": dict[str, int],
        }

    def test_decision_does_not_depend_on_the_cache(self):
        """The by-name cache only speeds the test up: deterministic bytes stay so."""
        from picklable import _locator

        f = self._function("def f(x: api.Frame) -> int:\n    return 1\n", api=api)
        _locator.by_name.clear()
        cold = picklable.dumps(f, deterministic=True)
        picklable.dumps(api.Frame)  # now cached as importable by its own name
        assert _locator.by_name.get(_locator.by_name_key(api.Frame)) is api.Frame
        assert picklable.dumps(f, deterministic=True) == cold
        assert _functions._annotations_in_arguments(f.__annotations__) is _functions._IMPORTS

    @pytest.mark.parametrize(
        ("annotations", "answer"),
        [
            ({"x": "Later", "return": None}, "_QUIET"),
            ({"x": int, "y": str, "return": None}, "_QUIET"),
            ({"x": int, "return": api.Frame}, "_IMPORTS"),
            ({"x": list[int]}, False),
            ({"x": [1]}, False),  # unhashable: never looked up
        ],
    )
    def test_annotations_in_arguments_answers(self, annotations, answer):
        """In the arguments or not, and whether loading them runs anything."""
        expected = getattr(_functions, answer) if answer else False
        assert _functions._annotations_in_arguments(annotations) is expected

    @pytest.mark.skipif(
        sys.version_info < (3, 14), reason="__annotate__ (PEP 649) is new in Python 3.14"
    )
    @pytest.mark.parametrize(
        "change",
        [
            "f.__annotations__['x'] = B",  # rewritten in place
            "f.__annotations__['extra'] = B",  # a key added
            "f.__annotations__.update(ctx=B)",  # a decorator's update
            "f.__annotations__; del f.__annotations__['x']",  # a key removed
            "f.__annotations__; A = B",  # computed, then the name rebound
            "f.__annotations__; del A",  # computed, then the name deleted
        ],
    )
    def test_annotations_kept_on_the_function_travel(self, change):
        """Annotations kept on a function (3.14: computed, then kept) that are not
        what its ``__annotate__`` gives now travel as they are: the copy's
        ``__annotations__`` are the original's, not computed again from
        ``__annotate__``. Unchanged ones leave ``__annotate__`` to travel."""
        source = "class A: pass\nclass B: pass\ndef f(x: A, y: list[A]) -> A | None: ...\n"
        ns: dict = {"__name__": "scratch"}
        exec(compile(source, "<scratch>", "exec", dont_inherit=True), ns)
        f = ns["f"]
        assert f.__annotations__  # computed and kept: unchanged, __annotate__ travels
        assert picklable.loads(picklable.dumps(f)).__annotate__ is not None
        exec(change, ns)
        expected = dict(f.__annotations__)
        loaded = picklable.loads(picklable.dumps(f))
        assert loaded.__annotations__ == expected
        assert loaded.__annotate__ is None

    def test_old_six_argument_payloads_still_load(self):
        """Payloads whose annotations came in the state (before this argument) load."""
        import pickle

        from picklable import _reconstruct

        f = self._function("def f(x: int) -> int:\n    return x + 1\n")
        data = _functions.code_info(f.__code__)[1]
        old = pickle.dumps(
            _Reduce(
                _reconstruct._make_function,
                (data, _functions._RECORD, {"__name__": "scratch"}, "f", None, None),
                (None, {"__annotations__": {"x": int, "return": int}}),
            ),
            protocol=5,
        )
        loaded = picklable.loads(old)
        assert loaded(1) == 2 and loaded.__annotations__ == {"x": int, "return": int}


class _Reduce:
    """An object whose pickle is exactly the given reduce value."""

    def __init__(self, func, args, state=None):
        self.value = (func, args, state)

    def __reduce__(self):
        return self.value


def _compiled(source: str, filename: str, name: str = "f") -> types.FunctionType:
    """A function of ``source`` compiled as ``filename``, in a module shipped by value."""
    namespace = {"__name__": "scratch_by_value"}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]  # type: ignore[no-any-return]


class TestCodeFileName:
    """The code's file name travels beside its marshal bytes, once per payload (issue 29)."""

    SOURCE = "def f(x):\n    return [lambda: y for y in [x]][0]()\n"

    def test_file_name_once_and_restored_in_nested_code(self):
        """Three functions of one file name it once; each code object gets it back."""
        path = "/a/path/that/is/long/enough/to/count.py"
        functions = [_compiled(self.SOURCE.replace("x", v), path) for v in "abc"]
        data = picklable.dumps(functions)
        assert data.count(path.encode()) == 1
        for loaded in picklable.loads(data):
            stack = [loaded.__code__]
            while stack:
                code = stack.pop()
                assert code.co_filename == path
                stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))

    def test_checksum_covers_the_file_name(self):
        """A file name changed on the way fails the code's checksum."""
        data = picklable.dumps(_compiled(self.SOURCE, "/here/one.py"))
        with pytest.raises(picklable.UnpicklingError, match="checksum"):
            picklable.loads(data.replace(b"/here/one.py", b"/here/two.py"))

    def test_same_code_under_two_file_names(self):
        """Equal bytes under two file names are two code objects (the cache is keyed by both)."""
        one, two = _compiled(self.SOURCE, "/here/one.py"), _compiled(self.SOURCE, "/here/two.py")
        first, second = roundtrip([one, two])
        assert (first.__code__.co_filename, second.__code__.co_filename) == (
            "/here/one.py",
            "/here/two.py",
        )
        assert roundtrip(two).__code__.co_filename == "/here/two.py"

    def test_empty_and_mixed_file_names_stay_in_the_bytes(self):
        """An empty co_filename, or nested code of another file, ships as it is."""
        empty = _compiled(self.SOURCE, "")
        assert _functions.code_info(empty.__code__)[1].__class__ is bytes
        assert roundtrip(empty).__code__.co_filename == ""
        mixed = _compiled(self.SOURCE, "/outer.py")
        consts = tuple(
            c.replace(co_filename="/inner.py") if isinstance(c, types.CodeType) else c
            for c in mixed.__code__.co_consts
        )
        mixed.__code__ = mixed.__code__.replace(co_consts=consts)
        assert _functions.code_info(mixed.__code__)[1].__class__ is bytes
        nested = [c for c in roundtrip(mixed).__code__.co_consts if isinstance(c, types.CodeType)]
        assert [c.co_filename for c in nested] == ["/inner.py"]

    def test_bare_code_object(self):
        """A code object alone gets its file name back too."""
        code = _compiled(self.SOURCE, "/here/one.py").__code__
        loaded = roundtrip(code)
        assert loaded == code and loaded.co_filename == "/here/one.py"

    def test_damaged_pair_is_refused(self):
        """Anything but (bytes, non-empty file name) is refused as damaged, never loaded."""
        from picklable import _code, _reconstruct

        data = _functions.code_info(_compiled(self.SOURCE, "/here/one.py").__code__)[1]
        for bad in [(data[0], ""), (data[0], 3), (data[0],), ("x", "/a.py"), (data[0], "/a.py")]:
            with pytest.raises(picklable.UnpicklingError, match=r"damaged|checksum"):
                _code.load(bad, _code.HERE)
        unhashable = (data[0], ["a list"])
        with pytest.raises(picklable.UnpicklingError, match=r"file name"):
            _reconstruct._make_function(unhashable, _code.HERE, {}, None, None, None)


class TestCodeNames:
    """The code's own name and qualname travel beside its bytes, shared with the
    function's name and with other code of those names (issue 29)."""

    def test_distinct_code_writes_each_name_once(self):
        """1,000 lambdas of distinct code write their names twice: in the first
        code's bytes, then once beside the others' (and loading them again finds
        their code objects kept)."""
        from picklable import _code

        functions = [eval(f"lambda n: lambda x: x + n + {i}")(i) for i in range(1000)]
        data = picklable.dumps(functions)
        assert data.count(b"<lambda>.<locals>.<lambda>") == 2
        # in the first code's bytes: its name and twice in its qualname; beside
        # the others: the name (the functions' too) and twice in the qualname
        assert data.count(b"<lambda>") == 6
        loaded = picklable.loads(data)
        assert len([key for key in _code.CODES if type(key) is tuple and len(key) == 4]) >= 999
        assert [f(1) for f in loaded[:3]] == [1, 3, 5]
        for original, copy in zip(functions[:50], loaded[:50], strict=True):
            for attribute in ("__name__", "__qualname__"):
                assert getattr(copy, attribute) == getattr(original, attribute)
            assert copy.__code__ == original.__code__
            assert copy.__code__.co_qualname == "<lambda>.<locals>.<lambda>"

    def test_code_alone_keeps_its_names_in_its_bytes(self):
        """A code object whose qualname no other has in the payload keeps its names
        in its marshal bytes (fewer bytes than a tuple of strings); closures of
        one code share what their code carries."""
        factory = eval("lambda n: lambda x: x + n")
        closures = [factory(i) for i in range(3)]
        data = picklable.dumps(closures)
        assert data.count(b"<lambda>.<locals>.<lambda>") == 1
        assert [f(1) for f in picklable.loads(data)] == [1, 2, 3]

    def test_nested_code_keeps_its_names(self):
        """Only the outer code's names move; code nested in it is restored whole."""
        f = _compiled(TestCodeFileName.SOURCE, "/here/one.py")
        loaded = roundtrip(f)
        assert loaded.__code__ == f.__code__
        nested = [c for c in loaded.__code__.co_consts if isinstance(c, types.CodeType)]
        assert [(c.co_name, c.co_qualname) for c in nested] == [
            (c.co_name, c.co_qualname)
            for c in f.__code__.co_consts
            if isinstance(c, types.CodeType)
        ]
        assert loaded(4) == 4

    def test_renamed_function_and_code(self):
        """A function named apart from its code keeps both names, each its own."""
        f = _compiled("def f(x):\n    return x\n", "/here/one.py")
        f.__name__, f.__qualname__ = "renamed", "Some.renamed"
        g = _compiled("def g(x):\n    return -x\n", "/here/one.py", "g")
        g.__code__ = g.__code__.replace(co_name="inner", co_qualname="outer.<locals>.inner")
        h, k = roundtrip([f, g])
        assert (h.__name__, h.__qualname__, h.__code__.co_name) == ("renamed", "Some.renamed", "f")
        assert (k.__name__, k.__qualname__) == ("g", "g")
        assert (k.__code__.co_name, k.__code__.co_qualname) == ("inner", "outer.<locals>.inner")
        assert (h(2), k(2)) == (2, -2)

    def test_same_bytes_after_a_round_trip(self):
        """A function loaded and dumped again gives the same bytes (names shared alike)."""
        functions = [eval(f"lambda n: lambda x: x + n + {i}")(i) for i in range(5)]
        data = picklable.dumps(functions)
        assert picklable.dumps(picklable.loads(data)) == data

    def test_checksum_covers_the_names(self):
        """A name changed on the way, or moved between name and qualname, fails the checksum."""
        f = _compiled("def fun(x):\n    return x\n", "/here/one.py", "fun")
        f.__code__ = f.__code__.replace(co_qualname="fun.x")
        data = picklable.dumps(f)
        with pytest.raises(picklable.UnpicklingError, match="checksum"):
            picklable.loads(data.replace(b"fun.x", b"fux.x"))
        from picklable import _code

        bytes_, filename, name, qualname = _functions.named_code(f.__code__, "/here/one.py")
        assert _code.load((bytes_, filename, name, qualname), _code.HERE) == f.__code__
        for bad in [(bytes_, filename, "fun.", "x"), (bytes_, filename, name, "fun.y")]:
            with pytest.raises(picklable.UnpicklingError, match="checksum"):
                _code.load(bad, _code.HERE)

    def test_damaged_names_are_refused(self):
        """Names that are not two str are refused as damaged, never loaded."""
        from picklable import _code

        code = _compiled("def f(x):\n    return x\n", "/here/one.py").__code__
        bytes_, filename, name, qualname = _functions.named_code(code, "/here/one.py")
        for bad in [
            (bytes_, filename, 3, qualname),
            (bytes_, filename, name, None),
            (bytes_, filename, name),
            (bytes_, filename, name, qualname, "more"),
        ]:
            with pytest.raises(picklable.UnpicklingError, match=r"damaged|name"):
                _code.load(bad, _code.HERE)
