"""What an audit produces: outcomes, per-serializer results, entries, the report.

Everything here is plain data (str, int, tuples, dicts), so a report converts
to JSON and back without loss, and results cross the pipe from the loading
children with plain :mod:`pickle`.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping
from typing import Any


# str and Enum, not StrEnum: str() and f-strings give `Outcome.COPY`, as reports expect.
class Outcome(str, enum.Enum):  # noqa: UP042
    """How one object fared with one serializer (see :mod:`picklable._audit`)."""

    IDENTITY = "identity"
    COPY = "copy"
    WRONG = "wrong"
    DUMP = "dump"
    LOAD = "load"
    CRASH = "crash"
    HANG = "hang"

    @property
    def label(self) -> str:
        """Words for people: ``exact copy``, ``dump fails``, ..."""
        return _LABELS[self]

    @property
    def ok(self) -> bool:
        """Identity or an exact copy: the object ships."""
        return self in (Outcome.IDENTITY, Outcome.COPY)


_LABELS = {
    Outcome.IDENTITY: "identity",
    Outcome.COPY: "exact copy",
    Outcome.WRONG: "wrong",
    Outcome.DUMP: "dump fails",
    Outcome.LOAD: "load fails",
    Outcome.CRASH: "crash",
    Outcome.HANG: "hang",
}

#: The kind of property objects (and other data descriptors) of classes.
PROPERTY = "property"

#: Outcomes that make ``picklable audit`` exit non-zero by default.
FAILURES: tuple[Outcome, ...] = (
    Outcome.WRONG,
    Outcome.DUMP,
    Outcome.LOAD,
    Outcome.CRASH,
    Outcome.HANG,
)


@dataclasses.dataclass(frozen=True)
class Result:
    """One object through one serializer.

    Attributes
    ----------
    outcome:
        The classification.
    error:
        First line of the error (dump, load, crash, hang), else ``""``.
    hint:
        picklable's fix for it, when picklable knows one, else ``""``.
    detail:
        For ``wrong``: what differs, e.g. ``type: wrapt.FunctionWrapper ->
        function``; for ``copy``: that it is a copy; else ``""``.
    size:
        Payload size in bytes (0 when the dump failed).
    """

    outcome: Outcome
    error: str = ""
    hint: str = ""
    detail: str = ""
    size: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (JSON)."""
        return {
            "outcome": self.outcome.value,
            "error": self.error,
            "hint": self.hint,
            "detail": self.detail,
            "size": self.size,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Result:
        """Inverse of :meth:`to_dict`."""
        return cls(
            Outcome(data["outcome"]),
            data.get("error", ""),
            data.get("hint", ""),
            data.get("detail", ""),
            int(data.get("size", 0)),
        )


@dataclasses.dataclass
class Entry:
    """One audited object and its results, one per serializer.

    Attributes
    ----------
    name:
        Dotted name it was reached by, e.g. ``pandas.DataFrame.to_csv``.
    module:
        Module it was reached through (imported again in the children).
    path:
        Attribute names from ``module`` to the object.
    kind:
        ``function``, ``class``, ``method``, ``classmethod``, ``staticmethod``,
        ``property``, ``accessor``, ``builtin`` or ``callable object``.
    aliases:
        Other names that reach the very same object (audited once).
    results:
        serializer name -> :class:`Result`.
    """

    name: str
    module: str
    path: tuple[str, ...]
    kind: str
    aliases: list[str] = dataclasses.field(default_factory=list)
    results: dict[str, Result] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (JSON)."""
        return {
            "name": self.name,
            "module": self.module,
            "path": list(self.path),
            "kind": self.kind,
            "aliases": list(self.aliases),
            "results": {name: r.to_dict() for name, r in self.results.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Entry:
        """Inverse of :meth:`to_dict`."""
        return cls(
            data["name"],
            data["module"],
            tuple(data["path"]),
            data["kind"],
            list(data.get("aliases", [])),
            {k: Result.from_dict(v) for k, v in data["results"].items()},
        )


@dataclasses.dataclass(frozen=True)
class Problem:
    """A module that failed to import, or an attribute that failed to read."""

    name: str
    error: str

    def to_dict(self) -> dict[str, str]:
        """Plain-data form (JSON)."""
        return {"name": self.name, "error": self.error}


@dataclasses.dataclass
class Report:
    """The whole audit.

    Attributes
    ----------
    targets:
        What was asked for (``pandas``, ``pandas.Series``, ...).
    serializers:
        serializer name -> version, in column order; ``picklable`` first.
    entries:
        One per distinct object.
    problems:
        Modules that failed to import and attributes that failed to read.
    python:
        Version of the interpreter that ran the audit.
    seconds:
        Wall time of the audit.
    ignored:
        Names left out by ``ignore`` patterns.
    notes:
        What was not audited and how to audit it (exported submodules).
    """

    targets: list[str]
    serializers: dict[str, str]
    entries: list[Entry] = dataclasses.field(default_factory=list)
    problems: list[Problem] = dataclasses.field(default_factory=list)
    python: str = ""
    seconds: float = 0.0
    ignored: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)

    def totals(self, properties: bool | None = None) -> dict[str, dict[str, int]]:
        """serializer -> outcome value -> count (every outcome present, zeros included).

        Parameters
        ----------
        properties:
            None: every entry; False: all but property objects; True: only them.
            Property objects are counted apart in the reports: no one ships a
            ``property`` itself, and pickle fails on every one of them.
        """
        out = {name: {o.value: 0 for o in Outcome} for name in self.serializers}
        for entry in self.entries:
            if properties is not None and (entry.kind == PROPERTY) is not properties:
                continue
            for name, result in entry.results.items():
                out[name][result.outcome.value] += 1
        return out

    @property
    def property_count(self) -> int:
        """How many entries are property objects."""
        return sum(1 for e in self.entries if e.kind == PROPERTY)

    def failing(self, serializer: str, outcomes: Iterable[Outcome]) -> list[Entry]:
        """Entries whose ``serializer`` result is one of ``outcomes``."""
        wanted = set(outcomes)
        return [
            e
            for e in self.entries
            if serializer in e.results and e.results[serializer].outcome in wanted
        ]

    def entry(self, name: str) -> Entry:
        """The entry reached by ``name`` (or one of its aliases).

        Raises
        ------
        KeyError
            If no audited object has that name.
        """
        for e in self.entries:
            if e.name == name or name in e.aliases:
                return e
        raise KeyError(f"no audited object named {name!r}")

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (the JSON report)."""
        from .. import __version__

        return {
            "tool": "picklable audit",
            "picklable_version": __version__,
            "python": self.python,
            "seconds": round(self.seconds, 3),
            "targets": list(self.targets),
            "serializers": dict(self.serializers),
            "outcomes": {o.value: o.label for o in Outcome},
            "totals": self.totals(),
            "property_totals": self.totals(properties=True),
            "entries": [e.to_dict() for e in self.entries],
            "problems": [p.to_dict() for p in self.problems],
            "ignored": list(self.ignored),
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Report:
        """Inverse of :meth:`to_dict` (``totals`` are recomputed)."""
        return cls(
            list(data["targets"]),
            dict(data["serializers"]),
            [Entry.from_dict(e) for e in data["entries"]],
            [Problem(p["name"], p["error"]) for p in data.get("problems", [])],
            data.get("python", ""),
            float(data.get("seconds", 0.0)),
            list(data.get("ignored", [])),
            list(data.get("notes", [])),
        )
