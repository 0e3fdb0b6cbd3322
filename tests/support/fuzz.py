"""Damaged payloads fed to ``picklable.loads`` in a child interpreter.

The parent builds a corpus (truncations, bit flips, byte edits, splices, random
bytes and random opcode sequences made from real payloads), writes it to a
file, and runs ``python -m support.fuzz CORPUS START [KEY_HEX]``. The child
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
from typing import Any

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


def base_payloads(*, key: bytes | None = None) -> list[bytes]:
    """picklable payloads of :func:`base_objects` (signed with ``key`` if given)."""
    import picklable

    payloads = []
    for obj in base_objects():
        payloads.append(picklable.dumps(obj, key=key))
        if key is None:
            payloads.append(picklable.dumps(obj, protocol=2))
            payloads.append(picklable.dumps(obj, deterministic=True))
    return payloads


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
    corpus: Path, *, key: bytes | None = None, hang_after: float = 10.0, env: dict[str, str]
) -> Report:
    """Feed every case of ``corpus`` to loads in child interpreters (restarted after a crash or hang)."""
    total = len(read_corpus(corpus))
    outcomes = ["?"] * total
    crashes: list[int] = []
    hangs: list[int] = []
    restarts = 0
    start_time = time.monotonic()
    index = 0
    while index < total:
        command = [sys.executable, "-m", "support.fuzz", str(corpus), str(index)]
        if key is not None:
            command.append(key.hex())
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


def _serve(corpus: str, start: int, key: bytes | None) -> None:
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
    for index in range(start, len(cases)):
        try:
            loaded = picklable.loads(cases[index], **options)
            outcome = "L"
            _exercise(loaded)
        except picklable.UnpicklingError:
            outcome = "U"
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
    _serve(sys.argv[1], int(sys.argv[2]), bytes.fromhex(sys.argv[3]) if len(sys.argv) > 3 else None)
