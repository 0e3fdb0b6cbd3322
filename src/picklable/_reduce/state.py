"""What the reducers of one payload share (owned by the pickler that makes it)."""

from __future__ import annotations

from typing import Any

__all__ = ["NOT_FIRST", "PayloadState"]

# PayloadState.first_value when no object's rebuilder checks the record first.
NOT_FIRST: Any = object()


class PayloadState:
    """Per-payload state: a by-value function needs it, plain data never does
    (so a payload without functions never makes one; see ``DumpContext.state``)."""

    __slots__ = (
        "globals_map",
        "globals_values",
        "deferred_cells",
        "script_copies",
        "markers",
        "names",
        "script_paths",
        "bound",
        "first_value",
        "class_cells",
        "classdict_cells",
        "carrying",
        "code_qualnames",
    )

    def __init__(self) -> None:
        # id(module globals) -> the shipped globals dict of that namespace
        self.globals_map: dict[int, dict[str, Any]] = {}
        # id(module globals) -> names and values those shipped globals hold once loaded
        self.globals_values: dict[int, dict[str, Any]] = {}
        # ids of closure cells whose contents a function's state fills in
        self.deferred_cells: set[int] = set()
        # Whether objects of the sender's script were copied (see .scripts)
        self.script_copies = False
        # id(object) -> the marker shipping it by reference (see .wrappers)
        self.markers: dict[int, Any] = {}
        # name -> this payload's own copy of it (see name()), made on first need
        self.names: dict[str, str] | None = None
        # script module name -> id -> path of its index's objects, read once per
        # payload (see picklable._reduce.scripts.script_location)
        self.script_paths: dict[str, Any] = {}
        # Whether the payload is bound to this interpreter: code or a class went
        # by value, or a reference that means another object on another Python
        # version; it then loads on this minor version only (see
        # picklable._pickler.INTERPRETER_CHECK) ...
        self.bound = False
        # ... and the object of the first reduction that bound it when its
        # rebuilder checks the record before anything of the payload runs (a
        # function or code object whose arguments are plain data), else NOT_FIRST
        self.first_value: Any = NOT_FIRST
        # id(cell) -> the class copied by value whose creation fills it with its
        # namespace (the __classdict__ cell of its body; see .classes)
        self.class_cells: dict[int, type] = {}
        # id(a class's namespace) -> the cell of an annotation scope shipped
        # before its class, for the class's copy to fill (see .functions)
        self.classdict_cells: dict[int, Any] = {}
        # ids of objects found by reference whose state this payload carries in
        # the arguments of the call that finds them (see .reference): met again
        # inside that state, they are the reference alone
        self.carrying: set[int] = set()
        # qualname -> the first code object of it whose function this payload
        # copied: another code of that qualname carries its names beside its
        # bytes, the same objects (see .functions.named_code)
        self.code_qualnames: dict[str, Any] = {}

    def name(self, name: str) -> str:
        """This payload's copy of the name of a function or of an attribute.

        pickle writes an object met twice once, then a reference to it (its
        memo is by identity). Where a class was made, a method's ``__name__``
        and the class's attribute name are one interned string; where it was
        loaded they are not (loading interns attribute names -- setattr, BUILD
        -- but not function names), so the class re-dumped in a worker would
        give other bytes. Every such name is written as one copy per value
        and payload, which nothing else shares: the same bytes on both sides,
        and 1,000 functions of one name share one string. (One-character
        strings are singletons: shared alike everywhere.)
        """
        names = self.names
        if names is None:
            names = self.names = {}
        found = names.get(name)
        if found is None:
            found = name[:1] + name[1:] if type(name) is str and len(name) > 1 else name
            names[name] = found
        return found

    def adopt(self, name: str) -> str:
        """This payload's copy of ``name``'s value: ``name`` itself if it has none
        yet. For a string that nothing else holds (:func:`picklable._code.carried`,
        the module name in an origin), so that the globals' ``__name__`` and a
        class's ``__module__`` share it with the origins (issue 29)."""
        names = self.names
        if names is None:
            names = self.names = {}
        return names.setdefault(name, name)

    def ship_globals(self, home: dict[str, Any], refs: dict[str, Any]) -> dict[str, Any]:
        """Make ``refs`` the shipped globals of ``home`` (pickled as they are now)."""
        self.globals_map[id(home)] = refs
        self.globals_values[id(home)] = dict(refs)
        return refs
