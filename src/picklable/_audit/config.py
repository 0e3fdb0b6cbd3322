"""``[tool.picklable]`` of the audited project's ``pyproject.toml``: audit settings.

The file is looked for from the current directory upward: the nearest
``pyproject.toml`` that has a ``[tool.picklable]`` table, not above the
directory that holds ``.git`` (the repository's root). Keys are the long
options of ``picklable audit`` without their dashes::

    [tool.picklable]
    targets = ["mypackage"]            # audited when no TARGET is given
    ignore = ["mypackage.legacy.*"]    # fnmatch patterns of dotted names, left out
    fail-on = ["wrong", "dump", "load", "crash", "hang"]   # or [] for none
    serializers = ["picklable", "pickle"]
    recursive = true
    private = false
    members = true
    properties = true                  # false: leave property objects out
    jobs = 2
    timeout = 30.0

Precedence: an option on the command line wins over the file, the file over
the defaults; ``--ignore`` patterns are added to the file's ``ignore``. The
pytest plugin reads the same table (from its root directory): a marker's
arguments win over it, and ``serializers`` and ``targets`` are not used there.
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any

from .model import FAILURES
from .serializers import KNOWN

__all__ = ["AuditConfig", "ConfigError", "find", "load"]

_LISTS = ("targets", "ignore", "fail-on", "serializers")
_FLAGS = ("recursive", "private", "members", "properties")
_NUMBERS = {"jobs": int, "timeout": float}
KEYS = (*_LISTS, *_FLAGS, *_NUMBERS)


class ConfigError(ValueError):
    """``[tool.picklable]`` cannot be read or holds a wrong value (the message names
    the file and the key)."""


@dataclasses.dataclass
class AuditConfig:
    """The settings of one ``[tool.picklable]`` table (None: not set there).

    Attributes
    ----------
    path:
        The file they come from, or None when no file was found.
    """

    path: Path | None = None
    targets: list[str] | None = None
    ignore: list[str] | None = None
    fail_on: list[str] | None = None
    serializers: list[str] | None = None
    recursive: bool | None = None
    private: bool | None = None
    members: bool | None = None
    properties: bool | None = None
    jobs: int | None = None
    timeout: float | None = None

    def options(self, *keys: str) -> dict[str, Any]:
        """The settings among ``keys`` that the file sets, as keyword arguments
        of :func:`picklable._audit.audit` (``fail-on`` as ``fail_on``)."""
        out = {}
        for key in keys:
            value = getattr(self, key.replace("-", "_"))
            if value is not None:
                out[key.replace("-", "_")] = value
        return out


def find(start: Path | None = None) -> Path | None:
    """The nearest ``pyproject.toml`` with a ``[tool.picklable]`` table, from
    ``start`` (default: the current directory) upward, not above a ``.git`` root."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file() and _has_table(candidate):
            return candidate
        if (directory / ".git").exists():
            return None
    return None


def _has_table(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    try:
        tool = tomllib.loads(text).get("tool", {})
    except tomllib.TOMLDecodeError:
        return "[tool.picklable" in text  # load() says what is wrong with it
    return isinstance(tool, dict) and "picklable" in tool


def load(path: Path | None) -> AuditConfig:
    """Read and check ``[tool.picklable]`` of ``path`` (None: no file, the defaults).

    Raises
    ------
    ConfigError
        A file that is not TOML, an unknown key, or a value of the wrong type.
    """
    if path is None:
        return AuditConfig()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it: {exc}") from exc
    table = data.get("tool", {}).get("picklable", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.picklable] must be a table")
    config = AuditConfig(path=path)
    for key, raw in table.items():
        value = raw
        where = f"{path}: [tool.picklable] {key}"
        if key not in KEYS:
            raise ConfigError(f"{where}: unknown key; known: {', '.join(KEYS)}")
        if key in _LISTS:
            if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
            _check_names(where, key, value)
        elif key in _FLAGS:
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: expected true or false, got {value!r}")
        else:
            kind = _NUMBERS[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ConfigError(f"{where}: expected a positive number, got {value!r}")
            if kind is int and not isinstance(value, int):
                raise ConfigError(f"{where}: expected a positive integer, got {value!r}")
            value = kind(value)
        setattr(config, key.replace("-", "_"), value)
    return config


def _check_names(where: str, key: str, values: list[str]) -> None:
    if key == "fail-on":
        allowed = [o.value for o in FAILURES]
    elif key == "serializers":
        allowed = list(KNOWN)
    else:
        return
    unknown = [v for v in values if v not in allowed]
    if unknown:
        raise ConfigError(
            f"{where}: unknown {', '.join(map(repr, unknown))}; choose from {', '.join(allowed)}"
        )
