"""Module-level state that an allow-listed payload must not be able to change.

Attack tests (tests/unit/test_allow_attacks.py) load payloads under
``allowed=["picklable_testpkg"]`` that try to modify these objects: through
calls that return them (``registry()``), by name, or through the classes and
members defined here. The package does not import this module.
"""

from __future__ import annotations

import enum
import http.server
import socketserver

REGISTRY = {"mode": "safe"}
NAMES = ["first"]
TAGS = {"a"}
BUFFER = bytearray(b"clean")


def registry():
    """The module's own dict (a call that returns something the module holds)."""
    return REGISTRY


def names():
    return NAMES


def tags():
    return TAGS


def buffer():
    return BUFFER


class Level(enum.Enum):
    LOW = 1
    HIGH = 2


class Settings:
    """A module-level singleton, returned by ``Settings.current()``."""

    def __init__(self, mode):
        self.mode = mode

    @classmethod
    def current(cls):
        return CURRENT


CURRENT = Settings("safe")


class Server(http.server.HTTPServer):
    """A class of this module whose bases belong to other modules."""


SERVER_BASES = Server.__mro__  # classes of socketserver among them
MODULE_ALIAS = socketserver  # another module, reachable by a name of this one
