"""The built-in kinds cloudpickle ships, loaded in a fresh interpreter (issue 17):
dict views, memoryviews, type variables, generic classes, abstract class and
static methods, submodules and modules, weak collections, the standard streams,
and payloads that a worker re-dumps to the same bytes."""

from __future__ import annotations

import abc
import collections
import pickle
import sys
import textwrap
import types
import typing
import weakref
from typing import Any

import numpy as np
import pytest

import picklable
from support import builtin_checks
from support.builtin_checks import Member
from support.child import run_script


class TestDictViews:
    def test_views_stay_linked_to_their_dict(self, child):
        """keys(), values() and items() arrive as views of the dict that came with them."""
        mapping = {"a": 1, "b": 2}
        payload = picklable.dumps((mapping, mapping.keys(), mapping.values(), mapping.items()))
        facts = child.run(builtin_checks.dict_views, payload)
        assert facts == {
            "types": ["dict_keys", "dict_values", "dict_items"],
            "keys": ["a", "b", "added"],
            "values": [1, 2, 0],
            "items": [("a", 1), ("b", 2), ("added", 0)],
        }

    def test_ordered_dict_views_keep_their_type(self, child):
        """The views of an OrderedDict are odict views there too."""
        mapping = collections.OrderedDict([("z", 1), ("a", 2)])
        payload = picklable.dumps((mapping, mapping.keys(), mapping.values(), mapping.items()))
        facts = child.run(builtin_checks.dict_views, payload)
        assert facts["types"] == ["odict_keys", "odict_values", "odict_items"]
        assert facts["keys"] == ["z", "a", "added"]


class TestMemoryviews:
    def test_format_shape_writability_and_identity(self, child):
        """Full views view the object shipped beside them; others are exact copies."""
        data = bytearray(range(12))
        readonly = b"Hello!" * 3
        array = np.arange(6, dtype=np.int16).reshape(2, 3)
        pairs = [
            (memoryview(readonly), readonly),  # full view of bytes
            (memoryview(data), data),  # full, writable view of a bytearray
            (memoryview(readonly)[2:15:2], None),  # sliced, non-contiguous
            (memoryview(data).cast("H", (2, 3)), None),  # cast to another format and shape
            (memoryview(array.T), None),  # Fortran order: copied in C order
        ]
        facts = child.run(builtin_checks.memoryview_facts, picklable.dumps(pairs))
        assert [f["views_base"] for f in facts] == [True, True, False, False, False]
        for (view, _), found in zip(pairs, facts):
            assert found["type"] == "memoryview"
            assert (found["format"], found["shape"], found["readonly"]) == (
                view.format,
                view.shape,
                view.readonly,
            )
            assert found["data"] == view.tolist()
        assert facts[3]["obj_type"] == "bytearray"  # a writable copy

    def test_out_of_band(self, child):
        """A contiguous view's bytes can travel out of band."""
        view = memoryview(bytearray(range(8))).cast("I")[1:]
        buffers: list[pickle.PickleBuffer] = []
        payload = picklable.dumps([(view, None)], buffer_callback=buffers.append)
        assert len(buffers) == 1
        facts = child.run(
            builtin_checks.memoryview_facts, payload, [bytes(b.raw()) for b in buffers]
        )
        assert facts[0]["data"] == view.tolist() and facts[0]["shape"] == (1,)


class TestTypeVariables:
    def test_local_type_variables_are_copies_and_come_back_as_themselves(self, child):
        """A TypeVar made in a function: an exact copy there, the original back here."""
        T = typing.TypeVar("T", int, str)
        B = typing.TypeVar("B", bound=Member, covariant=True)
        P = typing.ParamSpec("P")
        for variable in (T, B, P):
            facts = child.run(builtin_checks.typevar_facts, picklable.dumps(variable))
            assert facts["type"] == type(variable).__name__
            assert facts["name"] == variable.__name__
            assert facts["module"] == __name__  # as here, though no such module is there
            assert facts["bound"] == getattr(variable, "__bound__", None)
            assert facts["constraints"] == getattr(variable, "__constraints__", ())
            assert facts["covariant"] == getattr(variable, "__covariant__", False)
            assert facts["again"]  # one object per process, as here
            assert picklable.loads(facts["back"]) is variable

    @pytest.mark.skipif(sys.version_info < (3, 11), reason="TypeVarTuple is new in 3.11")
    def test_type_variable_tuple(self, child):
        """A TypeVarTuple too."""
        Ts = typing.TypeVarTuple("Ts")  # type: ignore[misc]
        facts = child.run(builtin_checks.typevar_facts, picklable.dumps(Ts))
        assert (facts["type"], facts["name"]) == ("TypeVarTuple", "Ts")
        assert picklable.loads(facts["back"]) is Ts

    def test_importable_type_variables_go_by_reference(self, child):
        """typing.AnyStr is typing's own there."""
        assert child.run(builtin_checks.is_typing_own, picklable.dumps(typing.AnyStr), "AnyStr")


class TestGenericClasses:
    def test_local_generic_class_and_subclasses(self, child):
        """class C(Generic[T]) and its subclasses load where they were never seen."""
        T = typing.TypeVar("T")

        class Base(typing.Generic[T]):
            pass

        class DerivedInt(Base[int]):
            pass

        class DerivedT(Base[T]):
            pass

        facts = child.run(builtin_checks.generic_facts, picklable.dumps((Base[int], Base)))
        assert facts == {
            "origin_is_class": True,
            "args": ["int"],
            "orig_bases": ["typing.Generic[~T]"],
            "parameters": ["T"],
            "mro": ["Base", "Generic", "object"],
            "instance": "Base",
        }
        facts = child.run(builtin_checks.generic_facts, picklable.dumps((DerivedT[str], DerivedT)))
        assert facts["mro"] == ["DerivedT", "Base", "Generic", "object"]
        assert facts["parameters"] == ["T"]
        assert facts["args"] == ["str"]
        assert child.run(builtin_checks.class_bases, picklable.dumps(DerivedInt)) == {
            "mro": ["DerivedInt", "Base", "Generic", "object"],
            "orig_bases": [f"{__name__}.{Base.__qualname__}[int]"],
        }

    def test_main_generic_class_in_a_fresh_interpreter(self, tmp_path):
        """The reported bug: a __main__ class C(Generic[T]) sent to a fresh interpreter."""
        source = textwrap.dedent(
            """
            import typing
            import picklable
            from support import builtin_checks
            from support.child import Child

            T = typing.TypeVar("T")

            class C(typing.Generic[T]):
                def first(self, items: list[T]) -> T:
                    return items[0]

            child = Child()
            try:
                facts = child.run(builtin_checks.generic_facts, picklable.dumps((C[int], C)))
            finally:
                child.close()
            assert facts["orig_bases"] == ["typing.Generic[~T]"], facts
            assert facts["mro"] == ["C", "Generic", "object"], facts
            print("ok")
            """
        )
        assert run_script(source, tmp_path) == "ok\n"


class TestAbstractMethods:
    def test_abstract_class_and_static_methods(self, child):
        """abc.abstractclassmethod and abc.abstractstaticmethod ship with their class."""

        class Abstract(abc.ABC):
            @abc.abstractclassmethod  # type: ignore[arg-type]
            def build(cls):
                """Make one."""

            @abc.abstractstaticmethod  # type: ignore[arg-type]
            def helper():
                """Help."""

        class Concrete(Abstract):
            @classmethod
            def build(cls):
                return cls.__name__

            @staticmethod
            def helper():
                return "helped"

        Abstract.register(tuple)
        facts = child.run(builtin_checks.abstract_facts, picklable.dumps((Abstract, Concrete)))
        assert facts == {
            "base_is_abstract": True,
            "abstract_methods": ["build", "helper"],
            "classmethod": "Concrete",
            "staticmethod": "helped",
            "registered_tuple": True,
        }


class TestModules:
    def test_submodule_reached_through_its_package(self, child):
        """A closure over `xml` that uses xml.etree.ElementTree: imported when it loads."""

        def scope():
            import xml.etree.ElementTree  # noqa: ICN001  (the closure holds `xml`)

            def tag():
                return xml.etree.ElementTree.Element("x").tag

            return tag

        facts = child.run(
            builtin_checks.submodule_call, picklable.dumps(scope()), "xml.etree.ElementTree"
        )
        assert facts == {"imported_before": False, "result": "x", "imported_after": True}

    def test_in_memory_module_gets_the_receivers_builtins(self, child):
        """A module made in memory, its builtins holding something that cannot ship."""
        module = types.ModuleType("scratch")
        exec("def compute(x):\n    return abs(x) * 2\n", module.__dict__)
        module.__dict__["__builtins__"]["_picklable_test_unshippable"] = weakref.ref(Member)
        try:
            facts = child.run(builtin_checks.module_facts, picklable.dumps(module))
        finally:
            del module.__dict__["__builtins__"]["_picklable_test_unshippable"]
        assert facts == {
            "name": "scratch",
            "is_sys_module": False,
            "has_builtins": True,
            "result": 6,
        }

    def test_module_registered_by_value(self, child, tmp_path, monkeypatch):
        """A module only this process can import: by value once registered, and
        an ImportError (and UnpicklingError) there once not."""
        (tmp_path / "only_here.py").write_text("def compute(x):\n    return abs(x) + 1\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        import only_here  # type: ignore[import-not-found]

        picklable.register_pickle_by_value(only_here)
        try:
            facts = child.run(builtin_checks.module_facts, picklable.dumps(only_here))
            by_value = child.run(
                builtin_checks.submodule_call, picklable.dumps(lambda: only_here.compute(-1)), "x"
            )
        finally:
            picklable.unregister_pickle_by_value(only_here)
        by_reference = picklable.dumps(only_here.compute)
        monkeypatch.delitem(sys.modules, "only_here")
        assert facts == {
            "name": "only_here",
            "is_sys_module": False,
            "has_builtins": True,
            "result": 4,
        }
        assert by_value["result"] == 2
        error = child.run(builtin_checks.load_error, by_reference)
        assert error["import_error"] and error["unpickling_error"]
        assert error["name"] == "only_here"


class TestWeakCollections:
    def test_members_keep_their_identity(self, child):
        """WeakSet, WeakKeyDictionary and WeakValueDictionary over the payload's members."""
        a, b, c = Member(1), Member(2), Member(3)
        payload = picklable.dumps(
            (
                weakref.WeakSet([a, b]),
                weakref.WeakKeyDictionary({a: "a", c: "c"}),
                weakref.WeakValueDictionary({"b": b}),
                a,
                b,
                c,
            )
        )
        assert child.run(builtin_checks.weak_facts, payload) == {
            "types": ["WeakSet", "WeakKeyDictionary", "WeakValueDictionary"],
            "set_members": [1, 2],
            "set_is_members": True,
            "by_key": [(1, "a"), (3, "c")],
            "by_value": [("b", 2)],
        }


class TestClassDescriptors:
    def test_c_class_descriptors_are_the_receivers(self, child):
        """Descriptors of C classes travel by where they sit: a classmethod
        descriptor (which getattr binds, so pickle and cloudpickle refuse it),
        a getset and a member descriptor, and a namespace holding one."""
        wanted = [
            (dict, "fromkeys"),  # classmethod descriptors
            (int, "from_bytes"),
            (type, "__prepare__"),
            (type, "__dict__"),  # a getset descriptor that getattr does not return
            (collections.deque, "maxlen"),  # a member descriptor
        ]
        triples = [(owner, name, vars(owner)[name]) for owner, name in wanted]
        assert child.run(builtin_checks.own_class_attributes, picklable.dumps(triples)) == []
        namespace = child.run(builtin_checks.namespace_items, picklable.dumps(vars(type)))
        assert namespace == sorted(vars(type))


class TestStandardStreams:
    def test_stdout_and_stderr_are_the_receivers(self, child):
        """sys.stdout and sys.stderr load as the receiving process's own."""
        assert child.run(builtin_checks.streams, picklable.dumps((sys.stdout, sys.stderr))) == [
            True,
            True,
        ]


class TestChainedDumps:
    """A class dumped here, loaded in a worker and dumped again gives the same bytes."""

    def classes(self) -> list[Any]:
        class Documented:
            """A docstring."""

        class LateDoc:
            name = "A"
            __doc__ = "set after another attribute"

        class Interned:
            """Names that are interned strings."""

            arg_1 = "join"

            def join(self, arg_1):
                return arg_1

            def method(self, arg_1, join):
                pass

        Interned.join.arg_1 = "join"  # type: ignore[attr-defined]

        class TwoMethods:
            def first(self):
                pass

            def second(self):
                pass

        class Lambdas:
            first = staticmethod(lambda: 1)
            second = staticmethod(lambda: 2)

        class OtherJoin:
            def join(self):
                pass

        return [Documented, LateDoc, Interned, TwoMethods, Lambdas, (Interned, OtherJoin)]

    def test_default_payloads(self, child):
        for cls in self.classes():
            payload = picklable.dumps(cls)
            assert child.run(builtin_checks.redump, payload) == payload, cls

    def test_deterministic_payloads(self, child):
        for cls in self.classes():
            payload = picklable.dumps(cls, deterministic=True)
            again = child.run(builtin_checks.redump, payload, True)
            assert again == payload, cls
