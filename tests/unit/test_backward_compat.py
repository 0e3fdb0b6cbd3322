"""Payloads written by earlier releases load with today's code (``tests/old_payloads``).

Each ``cpython_XY`` directory holds what one release wrote on CPython X.Y
(``generate_old_payloads.py``) and a ``manifest.json`` saying, for every file,
what must hold once it is loaded: expressions over the loaded object, each with
its value on the original object (see ``support/old_payloads.py``). The payloads
load in fresh interpreters, one with ``picklable.loads`` and another with plain
``pickle.loads`` (so neither finds what the other built): nothing the test
process imported can stand in for what a payload must bring, and decoys in the
child's ``__main__`` catch code that reads its globals from there.

On another Python than the one that wrote them, no payload is skipped: one
that carries code by value (:func:`support.old_payloads.carries_code`) must be
refused with a :class:`picklable.UnpicklingError` naming both interpreters,
and any other must load as on its own version (:data:`ON_ANOTHER_PYTHON` says
which each kind may be).
"""

from __future__ import annotations

import json
import pickle
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

import picklable
from picklable._code import HERE
from support import old_payloads
from support.child import Child

OLD_PAYLOADS = Path(__file__).resolve().parent.parent / "old_payloads"
# The key the generator signed with (generate_old_payloads.KEY).
KEY = b"picklable old payloads test key!"
THIS_PYTHON = f"{sys.implementation.name}_{sys.version_info.major}{sys.version_info.minor}"
# What a payload of each kind does on another Python than the one that wrote it:
# "refused" (it carries code by value), "right" (it does not: loads as on its own).
ON_ANOTHER_PYTHON = {
    "function": {"refused"},
    "class": {"refused"},
    "module": {"refused"},
    "envelope": {"refused"},
    "signed": {"refused"},
    "deterministic": {"refused"},
    "out_of_band": {"refused"},
    "reference": {"right"},
    # A __main__ IntFlag has no method: a class by value without code, which
    # payloads of 0.1.0 do not bind to their interpreter.
    "enum": {"refused", "right"},
    # with_state of a located reference; the other wrappers are of __main__ code.
    "wrapper": {"refused", "right"},
    # OSErrors and picklable's own errors; the others are __main__ classes.
    "exception": {"refused", "right"},
}
# Every kind of payload a directory must hold, each checked by one class below.
KINDS = frozenset(
    {
        "function",
        "class",
        "enum",
        "module",
        "reference",
        "wrapper",
        "exception",
        "envelope",
        "signed",
        "deterministic",
        "out_of_band",
    }
)


# The rebuilders of code and classes shipped by value (frozen names of the format).
BY_VALUE = ("_make_function", "_make_class", "_make_enum")
# The names of picklable that 0.1.0 writes into payloads (all but picklable.dask's,
# whose envelopes need distributed): each directory's payloads name every one, so
# each is loaded by some test.
WRITTEN_BY_0_1_0 = frozenset(
    {
        *(
            f"picklable._reconstruct:{name}"
            for name in (
                "_bind_descriptor",
                "_class_setstate",
                "_exception_setstate",
                "_import",
                "_load_code",
                "_make_cached_property",
                "_make_cell",
                "_make_class",
                "_make_enum",
                "_make_function",
                "_make_lru_cache",
                "_make_module",
                "_make_property",
                "_make_singledispatch",
                "_make_traceback",
                "_make_wrapt_function_wrapper",
                "_make_wrapt_proxy",
                "_resolve",
                "_set_proxy_state",
                "_with_state",
            )
        ),
        "picklable._decorators:FunctionWrapper",
        "picklable._decorators:Wrapper",
        "picklable._envelope:_open_envelope",
        "picklable._pool._broken:BrokenPoolError",
        "picklable._pool._broken:WorkerDiedError",
        "picklable._pool._broken:_rebuild_broken",
        "picklable._pool._broken:_rebuild_died",
        "picklable.exceptions:PicklingError",
        "picklable.exceptions:UnpicklingError",
        "picklable.exceptions:_rebuild_error",
    }
)


class Payload(NamedTuple):
    directory: Path
    name: str
    entry: dict[str, Any]
    main_names: list[str]
    written_on: str  # the interpreter record: "cpython 3.11"

    @property
    def path(self) -> Path:
        return self.directory / self.name

    @property
    def refused_here(self) -> bool:
        """Whether this interpreter must refuse it: code by value, another Python."""
        return self.directory.name != THIS_PYTHON and old_payloads.carries_code(
            self.path.read_bytes()
        )


def _directories() -> list[Path]:
    return sorted(path for path in OLD_PAYLOADS.glob("cpython_*") if path.is_dir())


def _manifest(directory: Path) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((directory / "manifest.json").read_text())
    return manifest


def _written_on(manifest: dict[str, Any]) -> str:
    """The interpreter record of the Python that wrote a directory's payloads."""
    written = manifest["written_by"]
    major, minor = written["python"].split(".")[:2]
    return f"{written['implementation']} {major}.{minor}"


def _payloads(kind: str) -> list[Any]:
    params = []
    for directory in _directories():
        manifest = _manifest(directory)
        for name, entry in manifest["payloads"].items():
            if entry["kind"] == kind:
                payload = Payload(
                    directory, name, entry, manifest["main_names"], _written_on(manifest)
                )
                params.append(pytest.param(payload, id=f"{directory.name}/{name}"))
    return params


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "payload" in metafunc.fixturenames:
        metafunc.parametrize("payload", _payloads(metafunc.cls.kind))


@pytest.fixture(scope="module")
def pickle_child() -> Iterator[Child]:
    """A second fresh interpreter, for plain pickle.loads."""
    handle = Child()
    yield handle
    handle.close()


def _load_and_check(child: Child, payload: Payload, loader: str, key: bytes | None = None) -> Any:
    return child.run(
        old_payloads.load_and_check,
        str(payload.directory),
        payload.name,
        payload.entry,
        payload.main_names,
        loader,
        key,
    )


# Checks whose value a deliberate change of the rule changed since the release
# that wrote the payload (the manifests stay as written): (file, expression) ->
# (the value now, why).
CHANGED_BY_THE_RULE: dict[tuple[str, str], tuple[str, str]] = {
    ("wrapper_with_state.pkl", "obj is picklable_testpkg.api.counted_square"): (
        "False",
        (
            "issue 27: loading never writes the sender's state (calls=3) onto the "
            "receiver's own object; a copy carries it (the receiver's has calls=0)"
        ),
    ),
}


def _mismatches(payload: Payload, result: dict[str, Any]) -> list[str]:
    """The checks whose value after loading differs from the original's (or from
    what :data:`CHANGED_BY_THE_RULE` says it is now)."""
    expected = payload.entry["checks"]
    assert [expression for expression, _ in result["checks"]] == [e for e, _ in expected]
    return [
        f"{expression}: original gave {want}, loaded gives {got}"
        for (expression, want), (_, got) in zip(expected, result["checks"])
        if got != CHANGED_BY_THE_RULE.get((payload.name, expression), (want,))[0]
    ]


def _assert_refused(child: Child, payload: Payload, loader: str, key: bytes | None) -> None:
    """Loading fails with picklable's UnpicklingError naming both interpreters."""
    failure = child.run(
        old_payloads.load_failure, str(payload.path), loader, key, payload.entry["buffers"]
    )
    assert failure is not None, f"{payload.name}: code written on {payload.written_on} loaded"
    assert failure.startswith("picklable.exceptions.UnpicklingError"), failure
    assert f"compiled by {payload.written_on}; this interpreter is {HERE}." in failure


class _LoadsWithPicklable:
    kind: str
    key: bytes | None = None

    def test_loads_as_the_original(self, payload, child):
        """picklable.loads in a fresh interpreter: every check gives what the original gave
        (on another Python, code by value is refused naming both interpreters)."""
        if payload.refused_here:
            _assert_refused(child, payload, "picklable", self.key)
            return
        result = _load_and_check(child, payload, "picklable", self.key)
        assert _mismatches(payload, result) == []
        assert not result["generator_imported"]


class _LoadsWithPlainPickleToo(_LoadsWithPicklable):
    def test_plain_pickle_loads_it_too(self, payload, pickle_child):
        """Plain pickle.loads (picklable importable) gives the same, in another fresh interpreter."""
        if payload.refused_here:
            _assert_refused(pickle_child, payload, "pickle", None)
            return
        result = _load_and_check(pickle_child, payload, "pickle")
        assert _mismatches(payload, result) == []
        assert not result["generator_imported"]


class TestFunctions(_LoadsWithPlainPickleToo):
    kind = "function"


class TestClasses(_LoadsWithPlainPickleToo):
    kind = "class"


class TestEnums(_LoadsWithPlainPickleToo):
    kind = "enum"


class TestModules(_LoadsWithPlainPickleToo):
    kind = "module"


class TestReferences(_LoadsWithPlainPickleToo):
    kind = "reference"

    def test_payload_holds_no_code(self, payload):
        """A reference names importable objects only: no code rebuilt by value."""
        names = old_payloads.named_globals(payload.path.read_bytes())
        assert not {f"picklable._reconstruct:{n}" for n in BY_VALUE} & set(names)


class TestWrappers(_LoadsWithPlainPickleToo):
    kind = "wrapper"


class TestExceptions(_LoadsWithPlainPickleToo):
    kind = "exception"


class TestEnvelopes(_LoadsWithPlainPickleToo):
    kind = "envelope"


class TestSigned(_LoadsWithPicklable):
    kind = "signed"
    key = KEY

    def test_refused_without_the_key(self, payload):
        """Without a key, picklable refuses the payload and says it is signed."""
        with pytest.raises(picklable.UnpicklingError, match="signed"):
            picklable.loads(payload.path.read_bytes())

    def test_refused_with_another_key(self, payload):
        """Another key does not open it."""
        with pytest.raises(picklable.UnpicklingError, match="signature"):
            picklable.loads(payload.path.read_bytes(), key=bytes(reversed(KEY)))

    def test_refused_once_altered(self, payload):
        """One flipped bit in the pickle and the right key refuses it."""
        data = bytearray(payload.path.read_bytes())
        data[-2] ^= 1
        with pytest.raises(picklable.UnpicklingError, match="signature"):
            picklable.loads(bytes(data), key=KEY)

    def test_plain_pickle_refuses_it(self, payload):
        """Plain pickle.loads stops at the first byte of the signed header."""
        with pytest.raises(pickle.UnpicklingError, match="invalid load key"):
            pickle.loads(payload.path.read_bytes())


class TestDeterministic(_LoadsWithPlainPickleToo):
    kind = "deterministic"


class TestOutOfBand(_LoadsWithPlainPickleToo):
    kind = "out_of_band"

    def test_needs_its_buffers(self, payload, child):
        """Without the saved buffers, loading fails and says why (on another Python,
        the code by value in front of the buffer is refused first)."""
        failure = child.run(old_payloads.load_failure, str(payload.path), "picklable")
        assert failure is not None and failure.startswith("picklable.exceptions.UnpicklingError")
        if payload.refused_here:
            assert f"compiled by {payload.written_on}; this interpreter is {HERE}." in failure
        else:
            assert "out-of-band data but no *buffers*" in failure


def _each_directory() -> list[Any]:
    return [pytest.param(directory, id=directory.name) for directory in _directories()]


class TestPayloadDirectories:
    def test_directories_are_named_by_python(self):
        """tests/old_payloads holds at least one cpython_XY directory, none named otherwise."""
        assert _directories()
        others = [
            path.name
            for path in OLD_PAYLOADS.iterdir()
            if path.is_dir() and not re.fullmatch(r"cpython_\d{2,3}", path.name)
        ]
        assert [name for name in others if name != "__pycache__"] == []

    @pytest.mark.parametrize("directory", _each_directory())
    def test_at_least_ten_payloads(self, directory):
        """Each directory holds at least ten payload files."""
        assert len(list(directory.glob("*.pkl"))) >= 10

    @pytest.mark.parametrize("directory", _each_directory())
    def test_every_file_is_checked(self, directory):
        """Every file is the manifest, a payload it describes, or a buffer of one; and back."""
        payloads = _manifest(directory)["payloads"]
        described = {"manifest.json", *payloads}
        for entry in payloads.values():
            described.update(entry["buffers"])
        assert {path.name for path in directory.iterdir()} == described

    @pytest.mark.parametrize("directory", _each_directory())
    def test_every_payload_has_checks_of_a_known_kind(self, directory):
        """Each manifest entry has checks and a kind that a class of this module tests."""
        for name, entry in _manifest(directory)["payloads"].items():
            assert entry["kind"] in KINDS, name
            assert entry["checks"], name
            assert entry["signed"] == (entry["kind"] == "signed"), name

    @pytest.mark.parametrize("directory", _each_directory())
    def test_what_each_kind_does_on_another_python(self, directory):
        """Each kind's payloads carry code by value (refused on another Python) or
        not (loaded there) as ON_ANOTHER_PYTHON says, and every outcome occurs."""
        seen: dict[str, set[str]] = {}
        for name, entry in _manifest(directory)["payloads"].items():
            code = old_payloads.carries_code((directory / name).read_bytes())
            outcome = "refused" if code else "right"
            assert outcome in ON_ANOTHER_PYTHON[entry["kind"]], (name, outcome)
            seen.setdefault(entry["kind"], set()).add(outcome)
        assert seen == ON_ANOTHER_PYTHON

    @pytest.mark.parametrize("directory", _each_directory())
    def test_every_kind_is_there(self, directory):
        """Each directory has payloads of every kind."""
        kinds = {entry["kind"] for entry in _manifest(directory)["payloads"].values()}
        assert kinds == KINDS

    @pytest.mark.parametrize("directory", _each_directory())
    def test_manifest_names_what_each_file_names(self, directory):
        """The globals the manifest lists for a payload are those its opcodes name."""
        for name, entry in _manifest(directory)["payloads"].items():
            assert old_payloads.named_globals((directory / name).read_bytes()) == entry["names"], (
                name
            )

    @pytest.mark.parametrize("directory", _each_directory())
    def test_every_name_of_the_format_is_loaded(self, directory):
        """The payloads name every name of picklable 0.1.0 writes, and no other."""
        named = set()
        for entry in _manifest(directory)["payloads"].values():
            named.update(name for name in entry["names"] if name.startswith("picklable."))
        assert named == WRITTEN_BY_0_1_0
