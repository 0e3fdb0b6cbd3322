"""Issue 8 across processes: the version guard, signed payloads, the allow-list and
deterministic bytes, each checked in a fresh interpreter."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
import zlib

import pytest

import picklable
from picklable import _code
from picklable._pickler import INTERPRETER_CHECK
from picklable._reduce import functions as _functions
from picklable_testpkg import api
from support import guard_checks
from support.child import child_env

HERE = _code.HERE


def forged_record() -> str:
    """This interpreter's record with another minor version, same length."""
    impl, version = HERE.split(" ")
    other = f"{impl} {version[:-1]}{(int(version[-1]) + 1) % 10}"
    assert len(other) == len(HERE) and other != HERE
    return other


def with_record(monkeypatch: pytest.MonkeyPatch, record: str, obj: object) -> bytes:
    """Dump ``obj`` as an interpreter whose record is ``record`` would."""
    monkeypatch.setattr(_functions, "_RECORD", record)
    _functions._code_cache.clear()
    try:
        return picklable.dumps(obj)
    finally:
        monkeypatch.undo()


class TestVersionGuard:
    def test_edited_record_refused_before_marshal(self, child):
        """A function whose record names another Python is refused before marshal runs."""
        payload = picklable.dumps(api.make_closure(1))
        other = forged_record()
        forged = payload.replace(HERE.encode(), other.encode())
        assert forged != payload
        report = child.run(guard_checks.load_refused, forged)
        assert report["type"] == "picklable.exceptions.UnpicklingError"
        assert f"compiled by {other}; this interpreter is {HERE}." in report["message"]
        assert report["reason"] == "bytecode from another interpreter"
        assert report["marshal_calls"] == 0 and report["codes_built"] == 0

    def test_older_python_record_of_any_length(self, child, monkeypatch):
        """A payload made under a patched record (another length) is refused the same way."""
        payload = with_record(monkeypatch, "cpython 3.8", api.make_closure(2))
        report = child.run(guard_checks.load_refused, payload)
        assert "compiled by cpython 3.8; this interpreter is" in report["message"]
        assert report["marshal_calls"] == 0 and report["codes_built"] == 0

    def test_other_implementation(self, child, monkeypatch):
        """Same version, other implementation (PyPy): refused, naming it."""
        _, version = HERE.split(" ")
        payload = with_record(monkeypatch, f"pypy {version}", lambda x: x)
        report = child.run(guard_checks.load_refused, payload)
        assert f"compiled by pypy {version}" in report["message"]
        assert report["marshal_calls"] == 0

    def test_bare_code_object(self, child, monkeypatch):
        """A code object shipped alone carries the record too."""
        other = forged_record()  # another minor version, whichever this one is
        payload = with_record(monkeypatch, other, api.make_closure(1).__code__)
        report = child.run(guard_checks.load_refused, payload)
        assert f"compiled by {other}; this interpreter is {HERE}." in report["message"]
        assert report["marshal_calls"] == 0

    def test_class_methods_refused(self, child, monkeypatch):
        """A class shipped by value is refused through its methods, before their code is built."""

        class Local:
            def method(self):
                return 1

        payload = with_record(monkeypatch, "cpython 3.10", Local)
        report = child.run(guard_checks.load_refused, payload)
        assert "compiled by cpython 3.10;" in report["message"]
        assert report["marshal_calls"] == 0 and report["codes_built"] == 0

    def test_other_bytecode_magic_refused_by_the_checksum(self, child, monkeypatch):
        """Same record, other bytecode magic (a pre-release build): the checksum, which
        starts from the magic, refuses the code before marshal runs."""
        other_magic = (int.from_bytes(importlib.util.MAGIC_NUMBER[:2], "little") + 1).to_bytes(
            2, "little"
        ) + importlib.util.MAGIC_NUMBER[2:]
        monkeypatch.setattr(_code, "_SEAL_START", zlib.crc32(other_magic))
        _functions._code_cache.clear()
        try:
            payload = picklable.dumps(api.make_closure(4))
        finally:
            monkeypatch.undo()
            _functions._code_cache.clear()
        assert HERE.encode() in payload
        report = child.run(guard_checks.load_refused, payload)
        assert report["reason"] == "damaged payload: code checksum"
        assert f"another build of {HERE} whose bytecode differs" in report["message"]
        assert report["marshal_calls"] == 0 and report["codes_built"] == 0

    def test_class_with_only_inherited_methods_carries_no_code(self, child):
        """A class with no code of its own ships no bytecode; the payload is still bound to
        this version (making a class runs code: its metaclass, __init_subclass__), so the
        interpreter check goes in front of it, once, and it loads here."""

        class Settings(dict):
            """Only inherited methods."""

            kind = "settings"

        payload = picklable.dumps(Settings)
        assert b"_make_function" not in payload
        assert payload.count(HERE.encode()) == 1 and payload.startswith(
            b"\x80\x05" + INTERPRETER_CHECK
        )
        report = child.run(guard_checks.load_class_report, payload)
        assert report == {
            "name": Settings.__qualname__,
            "module": __name__,
            "bases": ["dict"],
            "own": ["kind"],
            "instance": "{'a': 1}",
        }

    def test_matching_record_loads(self, child):
        """The same interpreter's payload loads and runs (the guard lets it through)."""
        assert (
            child.run(guard_checks.load_and_call, picklable.dumps(api.make_closure(3)), (1,)) == 4
        )


class TestSignedAcrossProcesses:
    KEY = b"k" * 32

    def test_signed_loads_with_the_key(self, child):
        """A signed by-value closure loads in another interpreter given the same key."""
        payload = picklable.dumps(api.make_closure(5), key=self.KEY)
        assert child.run(guard_checks.load_and_call, payload, (1,), {"key": self.KEY}) == 6

    def test_tampered_refused_before_loading(self, child):
        """A flipped bit anywhere is refused, and no code object gets built."""
        payload = bytearray(picklable.dumps(api.make_closure(5), key=self.KEY))
        payload[-20] ^= 0x01
        report = child.run(guard_checks.load_refused, bytes(payload), {"key": self.KEY})
        assert report["reason"] == "bad signature"
        assert report["marshal_calls"] == 0 and report["codes_built"] == 0

    def test_signed_without_key_refused(self, child):
        """A signed payload given to loads without a key is refused, saying so."""
        report = child.run(
            guard_checks.load_refused, picklable.dumps(api.make_closure(5), key=self.KEY)
        )
        assert report["reason"] == "signed payload, no key given"


class TestAllowedAcrossProcesses:
    def test_allowed_package_loads(self, child):
        """Objects of an allowed package load, by reference, and by value once opted into."""
        payload = picklable.dumps([api.plain, api.make_closure(2)])
        names = ["picklable_testpkg", "picklable_testpkg.api.plain"]  # a function: by name
        policy = picklable.Policy(names, by_value_code=True)
        assert child.run(guard_checks.load_value, payload, {"allowed": policy})[1](1) == 3
        report = child.run(guard_checks.load_refused, payload, {"allowed": names})
        assert "code shipped by value is arbitrary code" in report["message"]
        report = child.run(guard_checks.load_refused, payload, {"allowed": ["picklable_testpkg"]})
        assert "must be named exactly" in report["message"]

    def test_other_package_refused(self, child):
        """The same payload under another allow-list is refused, naming the module."""
        payload = picklable.dumps([api.plain])
        report = child.run(guard_checks.load_refused, payload, {"allowed": ["numpy"]})
        assert report["message"].startswith(
            "Refusing to load picklable_testpkg.api.plain: module 'picklable_testpkg.api' is not in the allow-list"
        )


# A script run as __main__ twice, under two hash seeds: its objects go by value.
_DETERMINISM_SCRIPT = textwrap.dedent(
    """
    import abc, dataclasses, enum, sys
    import picklable
    from picklable_testpkg import api

    OFFSET = 3

    def module_function(x):
        return x in {"alpha", "beta", "gamma"} or x in {b"a", b"b"}

    def make_closure(n):
        def add(x):
            return x + n + OFFSET
        return add

    @dataclasses.dataclass
    class Point:
        x: int
        y: float = 0.5
        tags: list = dataclasses.field(default_factory=list)

    class Base(abc.ABC):
        @abc.abstractmethod
        def run(self): ...

    class Thing(Base):
        names = {"x", "y", "z", "w"}
        frozen = frozenset({("a", 1), ("b", 2)})
        def run(self):
            return sorted(self.names)
        @property
        def size(self):
            return len(self.names)

    class Color(enum.Enum):
        RED = "r"
        BLUE = "b"

    picklable.register_by_value(api)  # an importable module's functions, by value
    objects = {
        "module function": module_function,
        "closure": make_closure(5),
        "lambda": lambda y: {"k": y, "s": {"p", "q", "r"}},
        "dataclass": Point,
        "dataclass instance": Point(1, 2.0, ["t"]),
        "class": Thing,
        "instance": Thing(),
        "enum": Color,
        "registered module function": api.make_closure(4),
        "data": {"set": {"a", "b", "c", "d"}, "bytes": {b"1", b"2", b"3"}, "nested": frozenset({("x", 1), ("y", 2)})},
    }
    out = sys.stdout.buffer
    for name, obj in objects.items():
        data = picklable.dumps(obj, deterministic=True)
        out.write(name.encode() + b"\\t" + data.hex().encode() + b"\\n")
    """
)


def _run_with_seed(tmp_path, seed: str) -> dict[str, bytes]:
    script = tmp_path / "script.py"  # the same path each time: co_filename is part of code
    script.write_text(_DETERMINISM_SCRIPT)
    env = child_env()
    env["PYTHONHASHSEED"] = seed
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    rows = [line.split(b"\t") for line in done.stdout.splitlines()]
    return {name.decode(): bytes.fromhex(data.decode()) for name, data in rows}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The script's payloads under three hash seeds."""
    tmp = tmp_path_factory.mktemp("det")
    return [_run_with_seed(tmp, seed) for seed in ("1", "2", "12345")]


class TestDeterministicAcrossProcesses:
    def test_same_bytes_under_other_hash_seeds(self, runs):
        """Fresh interpreters with other PYTHONHASHSEED values write identical payloads."""
        first, *others = runs
        assert len(first) == 10
        for other in others:
            differing = [name for name in first if first[name] != other[name]]
            assert differing == []

    def test_sets_really_vary_without_it(self, tmp_path):
        """The check has teeth: without deterministic=True the set payloads differ by seed."""
        script = tmp_path / "sets.py"
        script.write_text(
            "import sys, picklable\nsys.stdout.write(picklable.dumps({str(i) for i in range(50)}).hex())"
        )
        outs = set()
        for seed in ("1", "2"):
            env = child_env()
            env["PYTHONHASHSEED"] = seed
            done = subprocess.run(
                [sys.executable, str(script)], capture_output=True, env=env, timeout=60, check=True
            )
            outs.add(done.stdout)
        assert len(outs) == 2

    def test_payloads_load_and_work(self, runs, child):
        """Deterministic payloads load in yet another interpreter."""
        payloads = runs[0]
        assert child.run(guard_checks.load_and_call, payloads["closure"], (1,)) == 9
        assert child.run(guard_checks.load_and_call, payloads["module function"], ("beta",)) is True
        assert (
            child.run(guard_checks.load_and_call, payloads["registered module function"], (1,)) == 5
        )
        assert child.run(guard_checks.load_value, payloads["data"]) == {
            "set": {"a", "b", "c", "d"},
            "bytes": {b"1", b"2", b"3"},
            "nested": frozenset({("x", 1), ("y", 2)}),
        }
