"""Loading never changes what the receiver already had (issue 27).

Every kind of the kinds table (``picklable._reduce.table``) is shipped from
module-level objects of ``picklable_testpkg.held`` whose state the sender
changed first; a fresh interpreter imports the module, loads every payload,
and its module objects hold exactly what they held before (ids and values,
a few levels deep). The state the sender set arrives on a copy.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import subprocess
import sys
import textwrap
from typing import Any

import pytest

import picklable
from picklable import _pickler
from picklable._reduce import objects, table, wrappers
from picklable._reduce.reference import Reference
from picklable_testpkg import held as H
from support import receiver_checks
from support.child import Child, run_script

MODULES = ["picklable_testpkg.held"]
EXTRA: dict[str, list[str]] = {}
if sys.version_info >= (3, 12):
    from picklable_testpkg import py312_features

    MODULES.append("picklable_testpkg.py312_features")
if sys.version_info >= (3, 15):
    from picklable_testpkg import py315_features

    MODULES.append("picklable_testpkg.py315_features")


def _all_kinds() -> set[str]:
    """Every kind of the table on this Python, by name: what must be shipped."""
    kinds = {kind.name for kind in table._STATIC.values()}
    kinds |= {kind.name for kind in table._DATA_KINDS.values()}
    kinds |= {k.name for k in vars(table).values() if isinstance(k, table.Kind)}
    kinds |= {"exception", "refused"}  # made per class by classify
    if objects.dataclass_singletons():
        kinds.add("dataclasses sentinel")
    return kinds


def _change_the_senders_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a program does to module objects before it ships them."""
    setattr_ = monkeypatch.setattr
    setattr_(H.plain, "label", "sender")
    setattr_(H.CLOSURE, "label", "sender")
    setattr_(H.Point, "default", "sender")
    setattr_(H.POINT, "x", 5)
    setattr_(H.POINT, "tags", ["sender"])
    setattr_(H.SCORER, "weight", 5)
    setattr_(H.SCORER, "history", [0, 5])
    setattr_(H.counted, "calls", 7)
    setattr_(H.counted, "config", {"scale": 10})
    setattr_(H.closure_wrapped, "factor", 3)
    setattr_(H.wrapt_wrapped, "label", "sender", raising=False)  # lands on the wrapped function
    setattr_(H.WRAPT_PROXY, "x", 9)
    setattr_(H.cached, "tag", "sender", raising=False)
    setattr_(H.CACHED_PROPERTY, "note", "sender", raising=False)
    setattr_(H.PARTIAL, "note", "sender")
    setattr_(H.PARTIALMETHOD, "note", "sender")
    setattr_(H.SLOTTED, "a", ["sender"])
    setattr_(H.CONFIG, "values", {"mode": "sender"})
    setattr_(H.DESCRIPTOR, "note", "sender")
    setattr_(H.LAZY, "target", H.Scorer())
    setattr_(H.ERROR, "job", 2)
    setattr_(H.OWN_PROPERTY, "note", "sender", raising=False)
    setattr_(H.SLOTTED_SCALER, "factor", 10)
    monkeypatch.setitem(H.REGISTRY, "double", H.plain)
    H.PIPELINE.append(H.plain)  # put back by the test
    setattr_(H.COUNTING_PROXY, "_self_calls", 2)
    monkeypatch.setitem(H.DICT, "a", [1, "sender"])
    monkeypatch.setitem(H.DEFAULTDICT, "a", ["sender"])
    monkeypatch.setattr(H, "LIST", [1, [2, "sender"]])
    H.BUFFER[:] = b"sender"  # put back by the test
    H.STREAM.seek(3)


def _recursive() -> Any:
    def fact(n: int) -> int:
        return 1 if n <= 1 else n * fact(n - 1)

    return fact


def _shipped() -> list[tuple[str, Any, str | None]]:
    """(label, what is shipped, an attribute whose sender value must arrive)."""
    shipped: list[tuple[str, Any, str | None]] = [
        (name, getattr(H, name), None)
        for name in dir(H)
        if not name.startswith("__") and not isinstance(getattr(H, name), type(sys))
    ]
    probes = {
        "SCORER": "weight",
        "counted": "calls",
        "closure_wrapped": "factor",
        "wrapt_wrapped": "label",
        "POINT": "x",
        "CONFIG": "values",
        "PARTIAL": "note",
        "DESCRIPTOR": "note",
        "cached": "tag",
        "SLOTTED_SCALER": "factor",
        "REGISTRY": "keys_now",
        "PIPELINE": "steps_now",
        "COUNTING_PROXY": "calls_now",
    }
    shipped = [(label, obj, probes.get(label)) for label, obj, _ in shipped]
    shipped += [
        ("with_state(plain)", picklable.with_state(H.plain), "label"),
        ("with_state(CLOSURE)", picklable.with_state(H.CLOSURE), "label"),
        ("without_state(counted)", picklable.without_state(H.counted), "calls"),
        ("ByReference(POINT)", wrappers.ByReference(H.POINT), "x"),
        ("Reference(SCORER)", Reference(H.SCORER, H.SCORER.__reduce_ex__(5)), None),
        ("(SCORER, SCORER.history)", (H.SCORER, H.SCORER.history), None),
        ("local function", H.make_closure(3), None),
        ("recursive local function", _recursive(), None),
        ("dataclasses factory marker", dataclasses._HAS_DEFAULT_FACTORY, None),  # type: ignore[attr-defined]
        ("a lambda reading the module's objects", lambda: (H.SCORER, H.counted), None),
    ]
    if sys.version_info >= (3, 12):
        shipped.append(("type alias", py312_features.Pair, None))
    if sys.version_info >= (3, 15):
        shipped.append(("sentinel", py315_features.MISSING, None))
        shipped.append(("lazy import", dict.__getitem__(vars(py315_features), "colorsys"), None))
    return shipped


@pytest.fixture(scope="module")
def fresh() -> Any:
    handle = Child()
    yield handle
    handle.close()


def test_no_kind_changes_the_receivers_objects(fresh, monkeypatch):
    """Every kind, its state changed by the sender: the receiver's objects are
    exactly as its import made them after every payload loads, and what the
    sender set arrives (on a copy)."""
    seen: set[str] = set()
    original = _pickler.Pickler.reducer_override

    def recording(self: Any, obj: Any, *args: Any) -> Any:
        seen.add(table.kind_for(type(obj)).name)
        return original(self, obj)

    monkeypatch.setattr(_pickler.Pickler, "reducer_override", recording)
    payloads = []
    try:
        _change_the_senders_state(monkeypatch)
        for label, obj, probe in _shipped():
            seen.add(table.kind_for(type(obj)).name)
            try:
                payloads.append((label, picklable.dumps(obj), probe))
            except picklable.PicklingError:
                continue  # nothing travels: nothing can change there
    finally:
        H.BUFFER[:] = b"import"
        H.STREAM.seek(0)
        del H.PIPELINE[1:]
    receiver, sender = multiprocessing.Pipe()
    try:
        with pytest.raises(picklable.PicklingError):
            picklable.dumps(sender)
        seen.add(table.kind_for(type(sender)).name)
    finally:
        receiver.close()
        sender.close()
    assert _all_kinds() - seen == set()

    report = fresh.run(receiver_checks.load_untouched, MODULES, payloads)
    assert report["changed"] == []
    outcomes = report["outcomes"]
    assert {k: v for k, v in outcomes.items() if v[0] != "loaded"} == {}
    assert outcomes["SCORER"] == ("loaded", 5)
    assert outcomes["counted"] == ("loaded", 7)
    assert outcomes["closure_wrapped"] == ("loaded", 3)
    assert outcomes["wrapt_wrapped"] == ("loaded", "sender")
    assert outcomes["POINT"] == ("loaded", 5)
    assert outcomes["CONFIG"] == ("loaded", {"mode": "sender"})
    assert outcomes["with_state(plain)"] == ("loaded", "sender")
    assert outcomes["with_state(CLOSURE)"] == ("loaded", "sender")
    assert outcomes["without_state(counted)"] == ("loaded", 0)
    assert outcomes["cached"] == ("loaded", "sender")
    # State kept in slots, in a dict's or list's items, on a wrapt proxy itself
    assert outcomes["SLOTTED_SCALER"] == ("loaded", 10)
    assert outcomes["REGISTRY"] == ("loaded", ["double", "neg"])
    assert outcomes["PIPELINE"] == ("loaded", ["abs", "plain"])
    assert outcomes["COUNTING_PROXY"] == ("loaded", 2)


SCORER_IN_THREADS = textwrap.dedent(
    """
    import sys
    import threading
    import picklable
    from picklable_testpkg import held

    payloads = [bytes.fromhex(line) for line in sys.stdin.read().split()]
    results = {}

    def task(i):
        scorer = picklable.loads(payloads[i])
        results[i] = (scorer, scorer.weight)

    threads = [threading.Thread(target=task, args=(i,)) for i in range(len(payloads))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    own = held.SCORER
    print(
        [results[i][1] for i in range(len(payloads))],
        [results[i][0] is own for i in range(len(payloads))],
        results[1][0] is results[2][0],
        own.weight,
    )
    """
)


def test_two_states_two_objects_in_one_receiver(tmp_path, monkeypatch):
    """A scorer of an importable module, shipped with two states (and with the
    state the receiver has): two copies and the receiver's own, each with its
    state, in threads of one fresh interpreter; the receiver's own unchanged."""
    first = picklable.dumps(H.SCORER)
    monkeypatch.setattr(H.SCORER, "weight", 5)
    second = picklable.dumps(H.SCORER)
    monkeypatch.setattr(H.SCORER, "weight", 7)
    third = picklable.dumps(H.SCORER)
    script = tmp_path / "threads.py"
    script.write_text(SCORER_IN_THREADS)
    from support.child import child_env

    done = subprocess.run(
        [sys.executable, str(script)],
        input=" ".join(p.hex() for p in (first, second, third)),
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(),
        check=True,
    )
    assert done.stdout == "[1, 5, 7] [True, False, False] False 1\n"


SCRIPT_WRAPPER = textwrap.dedent(
    """
    import sys
    import picklable


    class Counted:
        def __init__(self, func):
            self.func = func
            self.calls = 0

        def __call__(self, *args):
            self.calls += 1
            return self.func(*args)


    @Counted
    def square(x):
        return x * x


    def in_worker(payload, fresh):
        own = square.calls
        loaded = picklable.loads(payload)
        again = picklable.loads(fresh)
        return (own, square.calls, loaded is square, loaded.calls, again is square)


    if __name__ == "__main__":
        fresh = picklable.dumps(square)
        square(2)
        square(3)
        with picklable.Pool(1, context="spawn") as pool:
            print(pool.apply(in_worker, (picklable.dumps(square), fresh)))
    """
)


def test_a_scripts_wrapper_in_a_worker_that_runs_the_script(tmp_path):
    """A spawn worker runs the script: its own wrapper where the sender's has the
    same count, a copy with the sender's count otherwise; its own count stays."""
    assert run_script(SCRIPT_WRAPPER, tmp_path) == "(0, 0, False, 2, True)\n"
