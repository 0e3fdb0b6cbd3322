"""The serializers an audit compares: picklable and, when installed, the others.

Dumping happens in the auditing process through :func:`dump`; loading happens
in the children through :func:`loader` (by name, so nothing but the payload
crosses the pipe). Each library is used with its own defaults: that is what its
users get.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from collections.abc import Callable
from typing import Any

#: Known serializers in report order (picklable first).
KNOWN = ("picklable", "pickle", "cloudpickle", "dill")


def available() -> list[str]:
    """The known serializers importable here."""
    return [
        name for name in KNOWN if name == "pickle" or importlib.util.find_spec(name) is not None
    ]


def version(name: str) -> str:
    """Version string of the serializer ``name`` (the Python version for pickle)."""
    if name == "pickle":
        import platform

        return f"stdlib (Python {platform.python_version()})"
    if name == "picklable":
        from .. import __version__

        return __version__
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return str(getattr(importlib.import_module(name), "__version__", "unknown"))


def dumper(name: str) -> Callable[[Any], bytes]:
    """The ``dumps`` function of ``name``.

    Raises
    ------
    ValueError
        For a serializer the audit does not know.
    ImportError
        When it is not installed.
    """
    if name == "picklable":
        from .. import dumps

        return dumps
    if name in ("pickle", "cloudpickle", "dill"):
        return importlib.import_module(name).dumps  # type: ignore[no-any-return]
    raise ValueError(f"unknown serializer {name!r}; known: {', '.join(KNOWN)}")


def loader(name: str) -> Callable[[bytes], Any]:
    """The ``loads`` function of ``name`` (cloudpickle payloads load with pickle)."""
    if name == "picklable":
        from .. import loads

        return loads
    if name in ("pickle", "cloudpickle"):
        import pickle

        return pickle.loads
    if name == "dill":
        return importlib.import_module("dill").loads  # type: ignore[no-any-return]
    raise ValueError(f"unknown serializer {name!r}; known: {', '.join(KNOWN)}")
