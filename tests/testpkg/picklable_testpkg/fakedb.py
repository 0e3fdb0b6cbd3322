"""A DB-API 2.0 (PEP 249) driver that is not sqlite3: connections hold a socket.

For the diagnostics: database connections are recognised by what they do
(``cursor``/``commit``/``rollback``/``close``), not only by sqlite3's type names.
"""

from __future__ import annotations

import socket
from typing import Any

apilevel = "2.0"
paramstyle = "qmark"


class Cursor:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.description = None
        self.rowcount = -1

    def execute(self, operation: str, parameters: Any = ()) -> Cursor:
        return self

    def fetchone(self) -> Any:
        return None

    def fetchall(self) -> list[Any]:
        return []

    def close(self) -> None:
        pass


class Connection:
    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._sock = socket.socket()

    def cursor(self) -> Cursor:
        return Cursor(self)

    def commit(self) -> None:
        pass

    def rollback(self) -> None:
        pass

    def close(self) -> None:
        self._sock.close()


def connect(dsn: str) -> Connection:
    return Connection(dsn)
