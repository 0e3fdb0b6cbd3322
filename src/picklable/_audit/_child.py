"""The loading side of an audit: ``python -m picklable._audit._child``.

Reads batches of payloads from stdin, loads each with its serializer, compares
the result with the object at its home path (imported here, in a fresh
interpreter) and writes one result frame per payload as soon as it is known,
so that the parent can tell which payload a crash or a hang belongs to.

Frames in both directions are ``<4-byte little-endian length><pickle>`` of
plain data. Payload code may print: file descriptor 1 is pointed at stderr
and the frames go to a private duplicate of the original stdout.
"""

from __future__ import annotations

import faulthandler
import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

from .._paths import format_path
from .._paths import walk as _walk
from . import compare as fp
from .serializers import loader
from .wire import first_line, read_frame, write_frame

_MISSING = object()


class _Loader:
    def __init__(self) -> None:
        self._loaders: dict[str, Callable[[bytes], Any]] = {}
        self._homes: dict[tuple[str, tuple[Any, ...]], Any] = {}

    def home(self, module: str, path: tuple[Any, ...]) -> Any:
        key = (module, path)
        found = self._homes.get(key, _MISSING)
        if found is not _MISSING:
            return found
        try:
            obj: Any = _walk(importlib.import_module(module), path)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            obj = _MISSING
        self._homes[key] = obj
        return obj

    def classify(self, item: tuple[Any, ...]) -> tuple[Any, ...]:
        index, serializer, payload, module, path, stable, expected = item
        loads = self._loaders.get(serializer)
        try:
            if loads is None:
                loads = self._loaders[serializer] = loader(serializer)
            obj = loads(payload)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            return (index, "load", first_line(exc), str(getattr(exc, "hint", "") or ""), "")
        where = format_path(module, path) if module else ""
        home = self.home(module, path) if module else _MISSING
        if home is not _MISSING and fp.same_object(obj, home, stable):
            return (index, "identity", "", "", "")
        diffs = fp.differences(expected, fp.fingerprint(obj))
        if diffs:
            return (index, "wrong", "", "", "; ".join(diffs))
        if not module:
            return (index, "copy", "", "", "no importable name; the copy matches the original")
        if home is _MISSING:
            return (
                index,
                "copy",
                "",
                "",
                f"{where} does not resolve here; the copy matches the original",
            )
        return (
            index,
            "copy",
            "",
            "",
            f"another object than {where}, with the same type, names and signature",
        )


def main() -> None:
    """Serve batches until stdin closes."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # C and Python writes to fd 1 now land in stderr
    faulthandler.enable()
    inp = sys.stdin.buffer
    worker = _Loader()
    write_frame(out, ("ready", os.getpid()))
    while True:
        batch = read_frame(inp)
        if batch is None:
            return
        for item in batch:
            write_frame(out, ("result", worker.classify(item)))


if __name__ == "__main__":
    main()
