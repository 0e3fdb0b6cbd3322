"""Python 3.15: lazy imports (PEP 810), the sentinel and frozendict builtins,
closed TypedDicts (PEP 728) and typing.disjoint_base.

Imported only by Python 3.15 and later (its syntax is new there). The
modules imported lazily here are ones nothing else in the tests imports, so
a test can tell whether shipping a function imported them. Never call these
functions in the process that ships them: calling imports what they use.
"""

from typing import TypedDict, disjoint_base
lazy import colorsys
lazy import email.mime.audio as mime_audio
lazy import xml.dom.minidom
lazy from wave import Error as WaveError
lazy from wave import Wave_read

lazy import picklable_testpkg_no_such_module


def uses_lazy(flag: bool = False) -> tuple[str, ...]:
    if flag:
        return picklable_testpkg_no_such_module.anything
    return (colorsys.__name__, xml.dom.minidom.__name__, mime_audio.__name__, Wave_read.__name__)


MISSING = sentinel("MISSING")
FANCY = sentinel("FANCY", repr="<fancy>")


class Options:
    UNSET = sentinel("UNSET")


def lookup(key: object = MISSING) -> bool:
    return key is MISSING


SETTINGS = frozendict(limit=10, lookup=lookup, missing=MISSING)


class Closed(TypedDict, closed=True):
    a: int


class Extra(TypedDict, extra_items=str):
    a: int


@disjoint_base
class Solid:
    def __init__(self) -> None:
        self.value = 1


def make_readers() -> tuple[object, ...]:
    def read() -> tuple[str, ...]:
        return (colorsys.__name__, mime_audio.__name__, WaveError.__name__)

    def read_missing() -> object:
        return picklable_testpkg_no_such_module.anything

    return read, read_missing


def make_sentinels() -> tuple[object, ...]:
    local = sentinel("LOCAL")
    return local, frozendict(marker=local, check=lambda value=local: value is local)


def make_typed_dicts() -> tuple[type, ...]:
    class LocalClosed(TypedDict, closed=True):
        b: str

    class LocalExtra(TypedDict, extra_items=int):
        b: str

    @disjoint_base
    class LocalSolid:
        pass

    return LocalClosed, LocalExtra, LocalSolid
