"""What the reducers of one payload share (owned by the pickler that makes it)."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from types import MappingProxyType
from typing import Any

__all__ = ["NOT_FIRST", "PayloadState"]

# PayloadState.first_value when no object's rebuilder checks the record first.
NOT_FIRST: Any = object()

# What the containers that most payloads never write hold until their first
# write (see PayloadState): one shared empty, read-only, so a lambda's dump does
# not make seven empty containers (about 0.4 us of a 12 us dump).
_NO_IDS: frozenset[int] = frozenset()
_NO_ENTRIES: Mapping[Any, Any] = MappingProxyType({})


class PayloadState:
    """Per-payload state: a by-value function needs it, plain data never does
    (so a payload without functions never makes one; see ``DumpContext.state``).

    Containers that most payloads never write start as one shared empty,
    read-only one: read them as they are, write them through the methods below,
    which make the payload's own on the first write."""

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
        "inlined",
        "inlined_cells",
        "inlined_read",
    )

    def __init__(self) -> None:
        # id(module globals) -> the shipped globals dict of that namespace
        self.globals_map: dict[int, dict[str, Any]] = {}
        # id(module globals) -> names and values those shipped globals hold once loaded
        self.globals_values: dict[int, dict[str, Any]] = {}
        # ids of closure cells whose contents a function's state fills in
        self.deferred_cells: AbstractSet[int] = _NO_IDS  # see defer_cell()
        # Whether objects of the sender's script were copied (see .scripts)
        self.script_copies = False
        # id(object) -> the marker shipping it by reference (see .wrappers)
        self.markers: Mapping[int, Any] = _NO_ENTRIES  # see marker()
        # name -> this payload's own copy of it (see name()), made on first need
        self.names: dict[str, str] | None = None
        # script module name -> id -> path of its index's objects, read once per
        # payload (see picklable._reduce.scripts.script_location)
        self.script_paths: Mapping[str, Any] = _NO_ENTRIES  # see script_table()
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
        self.class_cells: Mapping[int, type] = _NO_ENTRIES  # see fill_class_cell()
        # id(a class's namespace) -> the cell of an annotation scope shipped
        # before its class, for the class's copy to fill (see .functions)
        self.classdict_cells: Mapping[int, Any] = _NO_ENTRIES  # see keep_classdict_cell()
        # ids of objects found by reference whose state this payload carries in
        # the arguments of the call that finds them (see .reference): met again
        # inside that state, they are the reference alone
        self.carrying: AbstractSet[int] = _NO_IDS  # see carry()
        # qualname -> the first code object of it whose function this payload
        # copied: another code of that qualname carries its names beside its
        # bytes, the same objects (see .functions.named_code); made on first need
        self.code_qualnames: dict[str, Any] | None = None
        # (function, closure) whose cells' contents travelled in the function's
        # arguments (see .functions.function_by_value), in order; held, so the
        # cells' ids stay theirs. A list (one append per closure): the map below
        # is made from it only when the payload meets a cell object at all.
        self.inlined: list[tuple[Any, Any]] | tuple[()] = ()  # a list on first need
        # id(cell) -> (its function, its index), of the first `inlined_read` of them
        self.inlined_cells: dict[int, tuple[Any, int]] | None = None
        self.inlined_read = 0

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

    def inlined_cell(self, cell: Any) -> tuple[Any, int] | None:
        """``(function, index)`` where ``cell`` is one whose content travelled in
        its function's arguments, else None."""
        inlined = self.inlined
        cells = self.inlined_cells
        if cells is None:
            cells = self.inlined_cells = {}
        if self.inlined_read < len(inlined):
            for func, closure in inlined[self.inlined_read :]:
                for index, each in enumerate(closure):
                    cells[id(each)] = (func, index)
            self.inlined_read = len(inlined)
        return cells.get(id(cell))

    def defer_cell(self, cell_id: int) -> None:
        """Note that a function's state fills the cell ``cell_id`` in."""
        cells = self.deferred_cells
        if cells is _NO_IDS:
            self.deferred_cells = {cell_id}
        else:
            cells.add(cell_id)  # type: ignore[attr-defined]

    def fill_class_cell(self, cell_id: int, cls: type) -> None:
        """Note that creating the copy of ``cls`` fills the cell ``cell_id`` (its
        ``__classdict__`` cell), which ships empty."""
        if self.class_cells is _NO_ENTRIES:
            self.class_cells = {}
        self.class_cells[cell_id] = cls  # type: ignore[index]
        self.defer_cell(cell_id)

    def keep_classdict_cell(self, namespace_id: int, cell: Any) -> None:
        """Keep the ``__classdict__`` cell of an annotation scope shipped before
        its class, for the class's copy to fill (see :meth:`take_classdict_cell`)."""
        if self.classdict_cells is _NO_ENTRIES:
            self.classdict_cells = {}
        self.classdict_cells[namespace_id] = cell  # type: ignore[index]

    def take_classdict_cell(self, namespace_id: int) -> Any:
        """The cell kept for the class namespace ``namespace_id``, or None."""
        cells = self.classdict_cells
        return cells.pop(namespace_id, None) if cells else None  # type: ignore[attr-defined]

    def carry(self, obj_id: int) -> None:
        """Note that this payload carries the object ``obj_id`` found by reference
        with its state (see :attr:`carrying`)."""
        carrying = self.carrying
        if carrying is _NO_IDS:
            self.carrying = {obj_id}
        else:
            carrying.add(obj_id)  # type: ignore[attr-defined]

    def marker(self, owner_id: int, make: Any) -> Any:
        """The one marker of the owner ``owner_id`` in this payload, ``make()``
        the first time."""
        markers = self.markers
        if markers is _NO_ENTRIES:
            markers = self.markers = {}
        marker = markers.get(owner_id)
        if marker is None:
            marker = markers[owner_id] = make()  # type: ignore[index]
        return marker

    def script_table(self) -> dict[str, Any]:
        """The script tables read in this payload, to add to."""
        tables = self.script_paths
        if tables is _NO_ENTRIES:
            tables = self.script_paths = {}
        return tables  # type: ignore[return-value]

    def ship_globals(self, home: dict[str, Any], refs: dict[str, Any]) -> dict[str, Any]:
        """Make ``refs`` the shipped globals of ``home`` (pickled as they are now)."""
        self.globals_map[id(home)] = refs
        self.globals_values[id(home)] = dict(refs)
        return refs
