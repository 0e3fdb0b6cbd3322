"""Damaged payloads fed to ``picklable.loads`` in a child interpreter.

The parent builds a corpus (truncations, bit flips, byte edits, splices, random
bytes and random opcode sequences made from real payloads), writes it to a
file, and runs ``python -m support.fuzz CORPUS START [KEY_HEX|-] [LOADER]``
(``LOADER``: ``picklable``; ``allowed``: picklable under :data:`ALLOWED`, the
guarded unpickler; ``pickle``: plain ``pickle.loads``). The child
loads each case from START on and writes one line per case, ``<index>
<outcome>``: ``L`` loaded, ``U`` refused with picklable.UnpicklingError,
``X:<type>`` any other exception (loading, or formatting a loaded exception
and its traceback, as a receiver would). A case that kills the child (no line, the
process gone) is a crash; one that writes nothing for ``hang_after`` seconds is a
hang. Either way the parent restarts the child after that case, so one run
classifies every case.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import os
import random
import select
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

# ---------------------------------------------------------------- corpus


_FACTORY_SOURCE = '''
import functools

OFFSET = 7

def make_closure(n, data):
    def inner(x, *rest, scale=2, **options):
        """A closure over data."""
        return (x + n + OFFSET) * scale, data, rest, options
    inner.attribute = {"tag": n}
    return inner

def recursive(n):
    return 1 if n <= 1 else n * recursive(n - 1)

class Base:
    registry = []
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        Base.registry.append(cls.__name__)

class Child(Base):
    __slots__ = ("a", "b")
    limit = 10
    def __init__(self, a, b=None):
        self.a, self.b = a, b
    def total(self):
        return self.a + (self.b or 0)
    @property
    def doubled(self):
        return 2 * self.a
    @classmethod
    def make(cls):
        return cls(1)
    @staticmethod
    def helper(x):
        return x in {"p", "q"}

def no_wraps(fn):
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper

@no_wraps
def decorated(x):
    return x - 1

@functools.lru_cache(maxsize=None)
def cached(x):
    return x * x

class Failure(Exception):
    def __init__(self, code, *, detail):
        super().__init__(f"failed {code}")
        self.code, self.detail = code, detail
'''


def script_namespace() -> dict[str, Any]:
    """The factory source executed as if it were a script (its objects go by value)."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(_FACTORY_SOURCE, "<fuzz-factories>", "exec"), namespace)
    return namespace


@dataclasses.dataclass
class _Point:
    x: int
    y: float
    tags: list[str]


class _Color(enum.Enum):
    RED = 1
    BLUE = 2


def base_objects() -> list[Any]:
    """Objects whose payloads the corpus damages: one of each kind picklable writes."""
    from picklable_testpkg import api, errors

    ns = script_namespace()
    child = ns["Child"](3, 4)
    try:
        try:
            raise KeyError("inner")
        except KeyError as inner:
            raise ns["Failure"](2, detail={"k": [1, 2]}) from inner
    except Exception as exc:
        failure = exc
    nested: Any = {"leaf": (1, 2.5, "s", b"b", None, True)}
    for i in range(6):
        nested = {"level": i, "child": nested, "items": [nested, {i, i + 1}, frozenset({str(i)})]}
    return [
        nested,
        ns["make_closure"](1, [1, 2, {"a": (3,)}]),
        [ns["make_closure"](i, i) for i in range(3)],
        ns["recursive"],
        ns["Child"],
        child,
        [child.total, ns["Child"].make, ns["Child"].helper],
        ns["decorated"],
        ns["cached"],
        failure,
        functools.partial(ns["make_closure"], 5),
        lambda x, y=3: {x: y},
        (lambda v: lambda: v)(123).__code__,
        [api.plain, api.add, api.Frame.mean, api.Color.RED, api.Record(1, "r")],
        [_Point(1, 2.0, ["a"]), _Color.BLUE, 1.5, -2, 10**30, "é", bytearray(b"ba")],
        errors.KwOnlyError("x", code=3),
        {"set": {"a", "b", "c"}, "tuple": tuple(range(20)), "bytes": bytes(range(256))},
    ]


ALLOWED = ["__main__", "picklable_testpkg", "support"]
"""What the base payloads name: under this list (with by-value code) they all load."""


def numpy_objects() -> list[Any]:
    """Arrays whose payloads numpy rebuilds (``_reconstruct`` and ``ndarray.__setstate__``)."""
    import numpy as np

    record = np.dtype([("id", "<i4"), ("score", "<f8"), ("tag", "S3")])
    return [
        np.arange(24, dtype=np.int64).reshape(4, 6),
        np.linspace(0, 1, 17),
        np.asfortranarray(np.arange(12.0).reshape(3, 4)),
        np.array([1 + 2j, 3 - 4j], dtype=np.complex64),
        np.array([True, False, True]),
        np.zeros((0, 3)),
        np.array(7, dtype=np.uint8),
        np.array([(1, 2.5, b"abc"), (2, -1.0, b"de")], dtype=record),
        np.array(["x", "yz"], dtype="<U2"),
        np.array(["2020-01-01", "2021-06-15"], dtype="datetime64[D]"),
        np.arange(10, dtype=">i2")[::2],
        {"weights": np.ones((2, 2), dtype=np.float32), "bias": np.array([0.5])},
        np.array([1, "two", None, 3.0], dtype=object),
        np.zeros(3, dtype=[("v", "<f4", (3,)), ("n", [("a", "<i2"), ("b", "u1")])]),
        np.arange(6).reshape(2, 3).T,
        np.ma.masked_array([1, 2, 3], mask=[0, 1, 0]),
        np.arange(20_000, dtype=np.float64),
        [np.float64(3.5), np.int32(-5), np.str_("x"), np.datetime64("2020-01-01"), np.bool_(True)],
    ]


def base_payloads(*, key: bytes | None = None, objects: list[Any] | None = None) -> list[bytes]:
    """picklable payloads of :func:`base_objects` (or ``objects``; signed with ``key`` if given)."""
    import picklable

    payloads = []
    for obj in base_objects() if objects is None else objects:
        payloads.append(picklable.dumps(obj, key=key))
        if key is None:
            payloads.append(picklable.dumps(obj, protocol=2))
            payloads.append(picklable.dumps(obj, deterministic=True))
    return payloads


def reproducible_payloads(
    workdir: Path, env: dict[str, str], *, kind: str = "picklable", key: bytes | None = None
) -> list[bytes]:
    """:func:`base_payloads` made in a child with a fixed hash seed and class ids.

    Set order depends on ``PYTHONHASHSEED`` and by-value classes carry random
    tracker ids: made here, the same payloads (so the same damaged cases, and
    the same figures) come out of every run.
    """
    path = workdir / f"base-{kind}.bin"
    command = [sys.executable, "-m", "support.fuzz", "--payloads", kind, str(path)]
    subprocess.run(
        [*command, key.hex() if key is not None else "-"],
        env={**env, "PYTHONHASHSEED": "0"},
        check=True,
        timeout=120,
    )
    return read_corpus(path)


def _write_payloads(kind: str, path: str, key_hex: str) -> None:
    from picklable import _tracker

    ids = random.Random(0)
    _tracker.os = type("SeededIds", (), {"urandom": staticmethod(ids.randbytes)})  # type: ignore[assignment]
    objects = numpy_objects() if kind == "numpy" else None
    key = None if key_hex == "-" else bytes.fromhex(key_hex)
    write_corpus(Path(path), base_payloads(key=key, objects=objects))


def _report(kind: str, count: int, seed: int) -> None:
    """``python -m support.fuzz --report numpy 100000 10`` (from tests/): a longer run
    than the suite's, printed like it (docs/safety.md quotes both)."""
    import tempfile

    from support.child import child_env

    env = child_env()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        cases = mutations(reproducible_payloads(workdir, env, kind=kind), count, seed)
        corpus = workdir / "corpus.bin"
        write_corpus(corpus, [data for _, data in cases])
        report = run(corpus, env=env)
        print(
            f"{kind}: {count:,} cases (seed {seed}) in {report.seconds:.1f} s: "
            f"{report.count('L'):,} loaded, {report.count('U'):,} refused, "
            f"{len(report.unclean) - len(report.crashes) - len(report.hangs)} other exceptions, "
            f"{len(report.crashes)} crashes, {len(report.hangs)} hangs"
        )
        for index, damage, plain, call in crash_culprits(cases, report, workdir, env):
            print(f"  crash at case {index} ({damage}): last call {call}; pickle.loads: {plain}")


def _random_opcodes(rng: random.Random) -> bytes:
    """A random sequence of pickle opcodes with arguments of the right shape."""
    import pickletools

    out = bytearray(b"\x80\x05")
    for _ in range(rng.randint(1, 40)):
        op = rng.choice(pickletools.opcodes)
        out += op.code.encode("latin-1")
        arg = op.arg
        if arg is None:
            continue
        n = arg.n
        if n > 0:
            out += bytes(rng.getrandbits(8) for _ in range(n))
        elif n == pickletools.UP_TO_NEWLINE:
            out += rng.choice([b"builtins", b"picklable._reconstruct", b"1", b"'x'", b"os"]) + b"\n"
        elif n == pickletools.TAKEN_FROM_ARGUMENT1:
            size = rng.randint(0, 8)
            out += bytes([size]) + bytes(rng.getrandbits(8) for _ in range(size))
        elif n == pickletools.TAKEN_FROM_ARGUMENT4:
            size = rng.choice([0, 1, 3, 2**31 - 1, rng.getrandbits(32)])
            out += struct.pack("<I", size) + bytes(rng.getrandbits(8) for _ in range(min(size, 8)))
        elif n == pickletools.TAKEN_FROM_ARGUMENT4U:
            size = rng.choice([0, 2, rng.getrandbits(32)])
            out += struct.pack("<I", size) + bytes(rng.getrandbits(8) for _ in range(min(size, 8)))
        elif n == pickletools.TAKEN_FROM_ARGUMENT8U:
            size = rng.choice([0, 2, rng.getrandbits(64)])
            out += struct.pack("<Q", size) + bytes(rng.getrandbits(8) for _ in range(min(size, 8)))
    if rng.random() < 0.8:
        out += b"."
    return bytes(out)


def mutations(payloads: list[bytes], count: int, seed: int) -> list[tuple[str, bytes]]:
    """``count`` damaged cases made from ``payloads``, the same for the same seed."""
    rng = random.Random(seed)
    kinds = [
        ("truncated", 0.25),
        ("bit-flipped", 0.30),
        ("byte-edited", 0.15),
        ("spliced", 0.10),
        ("random bytes", 0.10),
        ("random opcodes", 0.10),
    ]
    names = [k for k, _ in kinds]
    weights = [w for _, w in kinds]
    cases: list[tuple[str, bytes]] = []
    while len(cases) < count:
        kind = rng.choices(names, weights)[0]
        base = rng.choice(payloads)
        if kind == "truncated":
            data = base[: rng.randrange(len(base))]
        elif kind == "bit-flipped":
            buf = bytearray(base)
            for _ in range(rng.choice([1, 1, 1, 2, 3, 8])):
                i = rng.randrange(len(buf))
                buf[i] ^= 1 << rng.randrange(8)
            data = bytes(buf)
        elif kind == "byte-edited":
            buf = bytearray(base)
            for _ in range(rng.randint(1, 4)):
                i = rng.randrange(len(buf))
                op = rng.random()
                if op < 0.4:
                    buf[i] = rng.getrandbits(8)
                elif op < 0.7:
                    del buf[i]
                else:
                    buf.insert(i, rng.getrandbits(8))
            data = bytes(buf)
        elif kind == "spliced":
            other = rng.choice(payloads)
            data = base[: rng.randrange(len(base))] + other[rng.randrange(len(other)) :]
        elif kind == "random bytes":
            size = rng.randint(0, 300)
            prefix = rng.choice(
                [b"", b"\x80\x05", b"\x80\x05\x95" + struct.pack("<Q", size), b"\x00PKS\x01"]
            )
            data = prefix + bytes(rng.getrandbits(8) for _ in range(size))
        else:
            data = _random_opcodes(rng)
        if data == base:
            continue
        cases.append((kind, data))
    return cases


def write_corpus(path: Path, cases: list[bytes]) -> None:
    """Length-prefixed cases in one file."""
    with open(path, "wb") as f:
        for data in cases:
            f.write(struct.pack("<I", len(data)))
            f.write(data)


def read_corpus(path: Path) -> list[bytes]:
    data = Path(path).read_bytes()
    cases, at = [], 0
    while at < len(data):
        (size,) = struct.unpack_from("<I", data, at)
        cases.append(data[at + 4 : at + 4 + size])
        at += 4 + size
    return cases


# ---------------------------------------------------------------- parent side


@dataclasses.dataclass
class Report:
    """What happened to each case of a run."""

    outcomes: list[str]
    crashes: list[int]
    hangs: list[int]
    restarts: int
    seconds: float

    def count(self, outcome: str) -> int:
        return sum(1 for o in self.outcomes if o == outcome)

    @property
    def unclean(self) -> list[tuple[int, str]]:
        return [(i, o) for i, o in enumerate(self.outcomes) if o not in ("L", "U")]


def run(
    corpus: Path,
    *,
    key: bytes | None = None,
    hang_after: float = 10.0,
    env: dict[str, str],
    loader: str = "picklable",
) -> Report:
    """Feed every case of ``corpus`` to loads in child interpreters (restarted after a
    crash or hang); ``loader="pickle"``: to plain ``pickle.loads`` instead."""
    total = len(read_corpus(corpus))
    outcomes = ["?"] * total
    crashes: list[int] = []
    hangs: list[int] = []
    restarts = 0
    start_time = time.monotonic()
    index = 0
    while index < total:
        command = [sys.executable, "-m", "support.fuzz", str(corpus), str(index)]
        command += [key.hex() if key is not None else "-", loader]
        # stdin: nothing to read, as in a pool's worker (multiprocessing gives its
        # children /dev/null): a random payload that calls input() fails at once
        # instead of waiting on whatever the test runner's stdin is (an xdist pipe).
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert process.stdout is not None
        for line, timed_out in _lines(process, hang_after):
            if timed_out:
                process.kill()
                hangs.append(index)
                outcomes[index] = "hang"
                index += 1
                break
            done, outcome = line.split(" ", 1)
            outcomes[int(done)] = outcome
            index = int(done) + 1
        else:
            code = process.wait()
            if index < total:  # the child died inside case `index`
                crashes.append(index)
                outcomes[index] = f"crash (exit {code})"
                index += 1
        process.wait()
        process.stdout.close()
        if index < total:
            restarts += 1
    return Report(outcomes, crashes, hangs, restarts, time.monotonic() - start_time)


def _lines(process: subprocess.Popen[bytes], hang_after: float) -> Iterator[tuple[str, bool]]:
    """Lines the child writes; (``""``, True) when it stays silent for ``hang_after`` s."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    pending = b""
    while True:
        ready, _, _ = select.select([fd], [], [], hang_after)
        if not ready:
            yield "", True
            return
        chunk = os.read(fd, 65536)
        if not chunk:
            return
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            yield line.decode(), False


# ---------------------------------------------------------------- child side


def last_call(data: bytes, env: dict[str, str]) -> str:
    """The last callable a load of ``data`` called before it ended (or killed the process).

    Loads with pickle's pure-Python unpickler in a child, which writes the name of
    every callable to stderr before calling it (REDUCE, NEWOBJ, and BUILD's
    ``__setstate__``); the last line names the culprit of a crash.
    """
    result = subprocess.run(
        [sys.executable, "-m", "support.fuzz", "--trace"],
        input=data,
        capture_output=True,
        env=env,
        timeout=60,
    )
    calls = [
        line
        for line in result.stderr.decode(errors="replace").splitlines()
        if line.startswith(("call ", "new ", "setstate "))
    ]
    return calls[-1] if calls else ""


def crash_culprits(
    cases: list[tuple[str, bytes]], report: Report, workdir: Path, env: dict[str, str]
) -> list[tuple[int, str, str, str]]:
    """For each crash of ``report``: (index, damage kind, what plain ``pickle.loads``
    does with the same bytes, the last call before the crash)."""
    found = []
    for index in report.crashes:
        single = workdir / f"case-{index}.bin"
        write_corpus(single, [cases[index][1]])
        plain = run(single, env=env, loader="pickle").outcomes[0]
        found.append((index, cases[index][0], plain, last_call(cases[index][1], env)))
    return found


def _trace_calls() -> None:
    import pickle

    def name(obj: Any) -> str:
        owner = obj if isinstance(obj, type) else type(obj)
        qualname = getattr(obj, "__qualname__", None) or owner.__qualname__
        return f"{getattr(obj, '__module__', None) or owner.__module__}.{qualname}"

    class Tracing(pickle._Unpickler):  # type: ignore[name-defined,misc]
        dispatch: ClassVar[dict[int, Any]] = dict(pickle._Unpickler.dispatch)  # type: ignore[attr-defined]

        def _say(self, text: str) -> None:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()

        def load_reduce(self) -> None:
            self._say(f"call {name(self.stack[-2])}")
            super().load_reduce()

        def load_newobj(self) -> None:
            self._say(f"new {name(self.stack[-2])}")
            super().load_newobj()

        def load_build(self) -> None:
            self._say(f"setstate {name(type(self.stack[-2]))}.__setstate__")
            super().load_build()

        dispatch[pickle.REDUCE[0]] = load_reduce
        dispatch[pickle.NEWOBJ[0]] = load_newobj
        dispatch[pickle.BUILD[0]] = load_build

    import io

    try:
        Tracing(io.BytesIO(sys.stdin.buffer.read())).load()
    except Exception:
        pass


def _serve(corpus: str, start: int, key: bytes | None, loader: str = "picklable") -> None:
    import resource

    # A damaged length or memo index may ask for gigabytes: fail with MemoryError instead.
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    for harmful in ("antigravity", "this", "webbrowser"):
        sys.modules[harmful] = None  # type: ignore[assignment]
    import picklable

    out = os.fdopen(os.dup(1), "w", buffering=1)
    sys.stdout = sys.stderr  # anything a rebuilt object prints must not corrupt the channel
    cases = read_corpus(Path(corpus))
    options = {"key": key} if key is not None else {}
    load: Any = picklable.loads
    if loader == "pickle":
        import pickle

        load = pickle.loads
    elif loader == "allowed":
        options["allowed"] = picklable.Policy(ALLOWED, by_value_code=True)
    for index in range(start, len(cases)):
        try:
            loaded = load(cases[index], **options)
            outcome = "L"
            _exercise(loaded)
        except picklable.UnpicklingError:
            outcome = "U"
        except Exception as exc:
            outcome = (
                "U" if loader == "pickle" else f"X:{type(exc).__module__}.{type(exc).__qualname__}"
            )
        except BaseException as exc:  # what must never happen: reported, not hidden
            outcome = f"X:{type(exc).__module__}.{type(exc).__qualname__}"
        out.write(f"{index} {outcome}\n")


def _exercise(obj: Any, depth: int = 0) -> None:
    """Use what loaded the way a receiver would: print an exception and its traceback."""
    import traceback

    if isinstance(obj, BaseException):
        "".join(traceback.format_exception(obj))
    elif type(obj) in (list, tuple) and depth < 2:
        for item in obj[:10]:
            _exercise(item, depth + 1)


if __name__ == "__main__":
    if sys.argv[1] == "--trace":
        _trace_calls()
    elif sys.argv[1] == "--payloads":
        _write_payloads(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "--report":
        _report(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        key_hex = sys.argv[3] if len(sys.argv) > 3 else "-"
        _serve(
            sys.argv[1],
            int(sys.argv[2]),
            None if key_hex == "-" else bytes.fromhex(key_hex),
            sys.argv[4] if len(sys.argv) > 4 else "picklable",
        )
