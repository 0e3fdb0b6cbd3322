"""``explain(obj)``: how each part of a payload ships, what it weighs, what fails.

The report is a tree of the parts worth telling: functions, classes, modules and
wrappers (by reference via which ``module:path``, by value and why not
importable, taken apart), what cannot ship (why, and the fix), the state that
stays behind with by-reference wrappers, and the bytes each subtree adds to the
payload, largest first.

Sizes are measured by dumping with picklable itself, once per part and bottom
up: when a part is dumped, every part already in the tree is replaced by a
persistent id (a few bytes) and its own size is added instead, so each object's
bytes are produced once however deep it sits. Out-of-band buffers (numpy arrays
under protocol 5) are counted, not copied. Nothing is kept: the output is
counted and dropped.
"""

from __future__ import annotations

import dataclasses
import html
import json
import types
from collections.abc import Iterator
from typing import Any

from .._compat import class_module, is_heap_type
from .._pickler import Pickler
from .._reduce.table import refusal
from ..exceptions import PicklingError
from .culprit import (
    MAX_CHILDREN,
    PLAIN_TYPES,
    Decision,
    Shipping,
    children,
    decide,
    find_culprit,
    root_name,
    state_left_behind,
)
from .errors import pickling_error, recursion_error
from .hints import explain_failure
from .wording import message, type_name

__all__ = ["Explanation", "Node", "explain"]

# Strings and bytes shorter than this are counted in their parent, never told.
_SMALL = 1024
# Packages whose objects are data to the user: their insides are not told.
_OPAQUE_PACKAGES = frozenset(
    {
        "numpy",
        "pandas",
        "polars",
        "pyarrow",
        "torch",
        "tensorflow",
        "jax",
        "jaxlib",
        "scipy",
        "xarray",
        "cupy",
    }
)
_SCALARS = (type(None), bool, int, float, complex)
# Parts deeper than this are counted in their ancestor at this depth: no one reads
# a deeper tree, and rendering it would recurse as deep.
_MAX_DEPTH = 48
# Rendering: children shown per node before the rest are summed up in one line.
_SHOWN_CHILDREN = 12


@dataclasses.dataclass
class Node:
    """One part of the payload.

    Attributes
    ----------
    path:
        Full attribute path from the root, e.g. ``job.__closure__[0].cell_contents``.
    name:
        The last step of the path (the root's name for the root).
    type:
        What it is: ``function mod.qualname``, ``class mod.Name``, ``module name``
        or the qualified name of its type.
    how:
        ``reference``, ``value``, ``wrapper``, ``data``, ``fails``, ``shared``
        (met before, at ``via``: pickle's memo sends it once) or ``behind``
        (it cannot ship, and sits in an exception's ``__cause__`` or
        ``__context__``: that link travels as a :class:`picklable.RemoteError`
        naming it).
    via:
        ``module:path`` the receiver imports (``reference``), or the path of the
        first occurrence (``shared``).
    why:
        Why by value (not importable), what a wrapper ships, or why it fails.
    fix:
        What to do instead (``fails`` only).
    size:
        Bytes this subtree adds to the payload; None when it cannot ship.
    state_left_behind:
        Attributes of a by-reference function or wrapper that stay in this
        process: the receiver uses its own values.
    children:
        The parts worth telling inside it, largest first.
    omitted:
        Parts inside it not worth a line (small data), and their bytes.
    """

    path: str
    name: str
    type: str
    how: str
    via: str = ""
    why: str = ""
    fix: str = ""
    size: int | None = None
    state_left_behind: tuple[str, ...] = ()
    children: list[Node] = dataclasses.field(default_factory=list)
    omitted: int = 0
    omitted_size: int = 0

    def to_dict(self) -> dict[str, Any]:
        """This node and its subtree as JSON-ready data."""
        return {
            "path": self.path,
            "name": self.name,
            "type": self.type,
            "how": self.how,
            "via": self.via,
            "why": self.why,
            "fix": self.fix,
            "size": self.size,
            "state_left_behind": list(self.state_left_behind),
            "omitted": self.omitted,
            "omitted_size": self.omitted_size,
            "children": [child.to_dict() for child in self.children],
        }

    def walk(self) -> Iterator[Node]:
        """This node and all below it, depth first."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))


@dataclasses.dataclass
class Explanation:
    """What :func:`explain` found: printable as a tree, readable by programs.

    Attributes
    ----------
    name:
        The root's name (the start of every path).
    root:
        The tree of parts.
    ships:
        Whether ``picklable.dumps`` succeeds.
    size:
        Payload bytes when it ships (out-of-band buffers included), else None.
    error:
        The message ``picklable.dumps`` raises, or ``""``.
    """

    name: str
    root: Node
    ships: bool
    size: int | None
    error: str = ""

    @property
    def problems(self) -> list[Node]:
        """The parts that cannot ship (each with ``path``, ``why`` and ``fix``)."""
        return [node for node in self.root.walk() if node.how == "fails"]

    def nodes(self) -> Iterator[Node]:
        """Every node of the tree, depth first."""
        return self.root.walk()

    def find(self, path: str) -> Node | None:
        """The node at ``path``, or None."""
        return next((node for node in self.root.walk() if node.path == path), None)

    def to_dict(self) -> dict[str, Any]:
        """The whole report as JSON-ready data."""
        return {
            "name": self.name,
            "ships": self.ships,
            "size": self.size,
            "error": self.error,
            "problems": [
                {"path": n.path, "type": n.type, "why": n.why, "fix": n.fix} for n in self.problems
            ],
            "root": self.root.to_dict(),
        }

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as a JSON string."""
        return json.dumps(self.to_dict(), indent=indent)

    def render(self) -> str:
        """The report as a text tree (what ``str(report)`` and the CLI print)."""
        if self.ships:
            head = f"{self.name}: ships, {human_size(self.size)} payload"
        else:
            count = len(self.problems)
            head = f"{self.name}: cannot ship ({count} problem{'s' if count != 1 else ''})"
        lines = [head]
        _render(self.root, "", "", lines, top=True)
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        return self.render()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.render().rstrip("\n"))

    def _repr_html_(self) -> str:
        if self.ships:
            head = f"<b>{html.escape(self.name)}</b>: ships, {human_size(self.size)} payload"
        else:
            head = (
                f"<b>{html.escape(self.name)}</b>: <span style='color:#b00'>cannot ship "
                f"({len(self.problems)} problem{'s' if len(self.problems) != 1 else ''})</span>"
            )
        return (
            "<div class='picklable-explain' style='font-family:monospace;font-size:90%'>"
            f"<div>{head}</div><ul style='list-style:none;padding-left:0.5em;margin:0'>"
            f"{_html(self.root)}</ul></div>"
        )


# ------------------------------------------------------------------ render


def human_size(size: int | None) -> str:
    """``512 B``, ``1.5 KiB``, ``200.0 MiB``; ``?`` for None."""
    if size is None:
        return "?"
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def _how_text(node: Node) -> str:
    if node.how == "reference":
        return f"by reference -> {node.via}"
    if node.how == "value":
        return "by value"
    if node.how == "wrapper":
        return "taken apart"
    if node.how == "fails":
        return "CANNOT SHIP"
    if node.how == "behind":
        return "STAYS BEHIND"
    if node.how == "shared":
        return f"same object as {node.via}"
    return ""


def _details(node: Node) -> list[str]:
    out = []
    if node.how == "value" and node.why:
        out.append(f"not importable: {node.why}")
    elif node.how == "wrapper" and node.why:
        out.append(f"ships {node.why}")
    elif node.how == "reference" and node.why:
        out.append(node.why)
    if node.how in ("fails", "behind"):
        out.append(f"at:  {node.path}")
        out.append(f"why: {node.why}")
        if node.how == "behind":
            out.append(
                "the exception's link to it travels as a picklable.RemoteError that names it"
            )
        if node.fix:
            out.append(f"fix: {node.fix}")
    if node.state_left_behind:
        names = ", ".join(node.state_left_behind)
        out.append(
            f"state left behind: {names} (the receiver has its own; picklable.with_state() carries "
            "it)"
        )
    return out


def _label(node: Node, parent_size: int | None, top: bool) -> str:
    parts = [node.name, node.type]
    how = _how_text(node)
    if how:
        parts.append(how)
    if node.how not in ("fails", "behind", "shared") and node.size is not None:
        size = human_size(node.size)
        if not top and parent_size and node.size * 100 >= parent_size and parent_size >= 1024:
            size += f" ({100 * node.size / parent_size:.0f}%)"
        parts.append(size)
    return "  ".join(parts)


def _render(
    node: Node,
    lead: str,
    child_lead: str,
    lines: list[str],
    top: bool = False,
    parent_size: int | None = None,
) -> None:
    lines.append(lead + _label(node, parent_size, top))
    shown = node.children[:_SHOWN_CHILDREN]
    hidden = node.children[_SHOWN_CHILDREN:]
    more = node.omitted + len(hidden)
    more_size = node.omitted_size + sum(c.size or 0 for c in hidden)
    has_after = bool(shown) or more > 0
    bar = "│   " if has_after else "    "
    lines.extend(child_lead + bar + detail for detail in _details(node))
    for i, child in enumerate(shown):
        last = i == len(shown) - 1 and more == 0
        _render(
            child,
            child_lead + ("└── " if last else "├── "),
            child_lead + ("    " if last else "│   "),
            lines,
            parent_size=node.size,
        )
    if more:
        lines.append(
            f"{child_lead}└── ... {more} more part{'s' if more != 1 else ''}, "
            f"{human_size(more_size)}"
        )


def _html(node: Node) -> str:
    style = {
        "fails": "color:#b00;font-weight:bold",
        "value": "color:#a60",
        "reference": "color:#070",
    }.get(node.how, "")
    how = _how_text(node)
    size = "" if node.how in ("fails", "shared") or node.size is None else human_size(node.size)
    label = (
        f"<code>{html.escape(node.name)}</code> <span "
        f"style='color:#555'>{html.escape(node.type)}</span> "
        f"<span style='{style}'>{html.escape(how)}</span> <b>{size}</b>"
    )
    details = "".join(
        f"<div style='padding-left:1.5em;color:#444'>{html.escape(d)}</div>" for d in _details(node)
    )
    inner = "".join(_html(child) for child in node.children)
    if node.omitted:
        inner += f"<li>... {node.omitted} more parts, {human_size(node.omitted_size)}</li>"
    if not inner:
        return f"<li>{label}{details}</li>"
    return (
        f"<li><details open><summary>{label}</summary>{details}"
        f"<ul style='list-style:none;padding-left:1.5em;margin:0'>{inner}</ul></details></li>"
    )


# ------------------------------------------------------------------- build


def _describe(obj: Any) -> str:
    t = type(obj)
    if t is types.FunctionType:
        return f"function {getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', '?')}"
    if _is_a(obj, type):
        module = class_module(obj) if isinstance(obj, type) else None
        return f"class {module or '?'}.{getattr(obj, '__qualname__', '?')}"
    if t is types.ModuleType:
        return f"module {obj.__name__}"
    return type_name(obj)


def _is_a(obj: Any, classes: Any) -> bool:
    """``isinstance``, for objects whose ``__class__`` raises or recurses without end
    (then what their type says)."""
    try:
        return isinstance(obj, classes)
    except Exception:  # RecursionError too
        return issubclass(type(obj), classes)


def _trivial(obj: Any) -> bool:
    """Counted in the parent's bytes, never a line of its own."""
    t = type(obj)
    if t in _SCALARS:
        return True
    if t in (str, bytes, bytearray):
        return len(obj) < _SMALL
    if t in (list, tuple, dict, set, frozenset):
        return not obj
    return bool(
        t is types.BuiltinFunctionType or (_is_a(obj, type) and obj.__module__ == "builtins")
    )


def _opaque(obj: Any, how: Shipping) -> bool:
    """Data whose insides are not the user's parts (an array, a DataFrame, a date)."""
    if how.how != "data":
        return False
    t = type(obj)
    if t in PLAIN_TYPES or _is_a(obj, BaseException):
        return False
    module = class_module(t) or ""
    if module.partition(".")[0] in _OPAQUE_PACKAGES:
        return True
    # Other C types are data too (dates, decimals, arrays), except containers.
    return not is_heap_type(t) and module not in ("collections", "builtins")


class _Counter:
    __slots__ = ("size",)

    def __init__(self) -> None:
        self.size = 0

    def write(self, data: Any) -> int:
        n = len(data)
        self.size += n
        return n


class _SkipPickler(Pickler):
    """Writes a persistent id for the parts already in the tree (told on their own)."""

    def __init__(self, file: Any, replace: dict[int, Any], own: int, buffer_callback: Any) -> None:
        super().__init__(file, buffer_callback=buffer_callback)
        self._replace = replace
        self._own = own

    def persistent_id(self, obj: Any) -> Any:
        key = id(obj)
        if key != self._own and key in self._replace:
            return 0
        return None


def _in_a_chain(path: str, label: str) -> bool:
    """Whether ``path`` passes through an exception's ``__cause__`` or ``__context__``."""
    rest = path[len(label) :]
    return ".__cause__" in rest or ".__context__" in rest


def _measure(obj: Any, replace: dict[int, Any] | None, *, stand_ins: bool = False) -> int:
    """Payload bytes of ``obj``, with the objects in ``replace`` left out;
    ``stand_ins``: as dumps's last try makes it (links of a chain that cannot
    travel stood in for)."""
    counter = _Counter()
    buffers = [0]

    def out_of_band(buffer: Any) -> bool:
        buffers[0] += buffer.raw().nbytes + 9  # what BYTEARRAY8 + length would add in band
        return False

    if replace:
        pickler: Pickler = _SkipPickler(counter, replace, id(obj), out_of_band)
    else:
        pickler = Pickler(counter, buffer_callback=out_of_band)  # type: ignore[arg-type]
    pickler.context.check_copies = True  # decide as dumps does in the end (its second try)
    pickler.context.stand_ins = stand_ins
    pickler.dump(obj)
    return counter.size + buffers[0]


class _Builder:
    def __init__(self, max_nodes: int) -> None:
        self.max_nodes = max_nodes
        self.count = 0
        # id -> (object, node) of every part in the tree (kept alive: ids stay unique).
        self.parts: dict[int, tuple[Any, Node]] = {}
        # pre-order: (obj, node, all pieces enumerated, no piece worth a line)
        self.order: list[tuple[Any, Node, bool, bool]] = []
        # id -> the pickler's decision for that part (its pieces come from it)
        self.decisions: dict[int, Decision] = {}

    def node(self, obj: Any, path: str, name: str) -> Node:
        self.count += 1
        if type(obj) in PLAIN_TYPES:
            how = Shipping("data")
        else:
            try:
                decided = decide(obj)
            except Exception:  # odd objects (a __getattr__ that raises anything) are data
                how = Shipping("data")
            else:
                self.decisions[id(obj)] = decided
                how = decided.shipping
        node = Node(
            path=path,
            name=name,
            type=_describe(obj),
            how=how.how,
            via=how.via,
            why=how.why,
            fix=how.fix,
        )
        self.parts[id(obj)] = (obj, node)
        return node

    def build(self, root: Any, name: str) -> Node:
        top = self.node(root, name, name)
        stack = [(root, top, 0)]
        while stack:
            obj, node, depth = stack.pop()
            complete = True
            leaf = True  # no piece worth a line: dumped as it is, nothing replaced
            how = Shipping(node.how, node.via, node.why, node.fix)
            known = refusal(obj) if node.how != "reference" else None
            if node.how == "reference":
                node.state_left_behind = tuple(_left_behind(obj))
            elif known is not None:
                pass  # confirmed (or not) when measured
            elif _opaque(obj, how) or depth >= _MAX_DEPTH:
                complete = leaf = False
            else:
                pending = []
                try:
                    pieces = list(children(obj, self.decisions.get(id(obj))))
                except Exception:
                    pieces, complete, leaf = [], False, False
                if len(pieces) >= MAX_CHILDREN:
                    complete = False
                for suffix, child in pieces:
                    if _trivial(child):
                        continue
                    leaf = False  # shared or not, a part already told must be replaced
                    seen = self.parts.get(id(child))
                    if seen is not None:
                        # Sent once (pickle's memo); worth a line when it is a part that
                        # tells something (a function, a wrapper), not for plain data.
                        if seen[1] is not node and seen[1].how not in ("data", "shared"):
                            node.children.append(
                                Node(
                                    path=node.path + suffix,
                                    name=suffix,
                                    type=seen[1].type,
                                    how="shared",
                                    via=seen[1].path,
                                    size=0,
                                )
                            )
                        continue
                    if self.count >= self.max_nodes:
                        complete = False
                        continue
                    child_node = self.node(child, node.path + suffix, suffix)
                    node.children.append(child_node)
                    pending.append((child, child_node, depth + 1))
                stack.extend(reversed(pending))
            self.order.append((obj, node, complete, leaf))
        self.measure()
        return top

    def measure(self) -> None:
        replace = {key: obj for key, (obj, _) in self.parts.items()}
        for obj, node, complete, leaf in reversed(self.order):
            real = [c for c in node.children if c.how != "shared"]
            try:
                own = _measure(obj, None if leaf else replace)
            except RecursionError as exc:
                self.fail(obj, node, exc, complete)
                continue
            except Exception as exc:
                self.fail(obj, node, exc, complete)
                continue
            if node.how == "fails":  # shipping() expected a failure that did not come
                node.how, node.why = "data", ""
            node.size = own + sum(c.size or 0 for c in real)

    def fail(self, obj: Any, node: Node, exc: BaseException, complete: bool) -> None:
        # Too deep to walk piece by piece (each try would fail at the recursion limit).
        too_deep = isinstance(exc, RecursionError)
        if complete or too_deep or refusal(obj) is not None or node.how == "fails":
            self.mark(node, obj, exc)
            node.children.clear()
            return
        # Its insides were not all told: find the culprit inside, as dumps would.
        path, culprit, cause = find_culprit(obj, exc, node.path)
        if path == node.path:
            self.mark(node, obj, exc)
            return
        inner = Node(path=path, name=path[len(node.path) :], type=_describe(culprit), how="fails")
        self.mark(inner, culprit, cause)
        node.children.insert(0, inner)

    @staticmethod
    def mark(node: Node, obj: Any, exc: BaseException) -> None:
        node.how = "fails"
        node.size = None
        known = refusal(obj)
        if known is not None:  # what it is tells more than how pickling it failed (as dumps)
            node.why, node.fix = known
        elif isinstance(exc, PicklingError) and exc.reason:
            node.why, node.fix = exc.reason, exc.hint
        elif isinstance(exc, RecursionError):  # as dumps says it: recursing code, or depth
            said = recursion_error(obj, exc)
            node.why, node.fix = getattr(said, "reason", ""), getattr(said, "hint", "")
        else:
            node.why, node.fix = explain_failure(obj, exc)


def _left_behind(obj: Any) -> list[str]:
    """Attributes of a by-reference function or wrapper object that stay here
    (a class's or a module's namespace is its definition, not state)."""
    if _is_a(obj, (type, types.ModuleType)) or not callable(obj):
        return []
    try:
        return state_left_behind(obj)
    except Exception:
        return []


def _sort_and_prune(node: Node, total: int | None) -> None:
    """Largest first (failures before all); small plain data summed up."""
    for child in node.children:
        _sort_and_prune(child, total)
    kept = []
    for child in node.children:
        if _worth_telling(child, total):
            kept.append(child)
        else:
            node.omitted += 1 + child.omitted
            node.omitted_size += child.size or 0
    kept.sort(key=lambda c: (c.how not in ("fails", "behind"), -(c.size or 0)))
    node.children = kept


def _worth_telling(node: Node, total: int | None) -> bool:
    if node.how in ("reference", "value", "wrapper", "fails", "behind") or node.state_left_behind:
        return True
    if node.children:
        return True
    if node.how == "shared":
        return True
    size = node.size or 0
    return size >= _SMALL and (total is None or size * 100 >= total)


def explain(obj: Any, name: str | None = None, *, max_nodes: int = 2000) -> Explanation:
    """Tell how ``obj`` ships: by reference, by value, taken apart, or not at all.

    Parameters
    ----------
    obj:
        What would be given to ``picklable.dumps``.
    name:
        The name its paths start with (default: its ``__name__`` for functions,
        classes and modules, else ``obj``).
    max_nodes:
        Parts examined one by one at most; beyond that, parts are counted in
        the bytes of their parent. Keeps ``explain`` fast on huge graphs.

    Returns
    -------
    Explanation
        ``str(report)`` is a tree; ``report.to_dict()`` / ``to_json()`` the same
        data for programs; ``report.problems`` the parts that cannot ship, each
        with its path, reason and fix.

    Examples
    --------
    >>> print(picklable.explain(job))  # doctest: +SKIP
    job: cannot ship (1 problem)
    job  function __main__.job  by value  1.2 KiB
    │   not importable: defined in __main__: the receiving process has its own __main__
    └── .__closure__[0].cell_contents  _thread.lock  CANNOT SHIP
            at:  job.__closure__[0].cell_contents
            why: locks hold OS state
            fix: create it inside the worker (e.g. in the pool initializer)
    """
    label = name or root_name(obj)
    builder = _Builder(max_nodes)
    root = builder.build(obj, label)
    problems = [node for node in root.walk() if node.how == "fails"]
    if problems and all(_in_a_chain(node.path, label) for node in problems):
        try:
            _measure(obj, None, stand_ins=True)
        except Exception:
            pass
        else:  # dumps ships it, each of these links stood in for (see chain())
            for node in problems:
                node.how = "behind"
            problems = []
    ships = not problems
    error = ""
    if ships and (root.size or 0) <= 32 << 20:
        try:
            root.size = _measure(obj, None, stand_ins=True)  # exact, and cheap at this size
        except Exception as exc:  # the parts pickled alone but not together
            ships = False
            error = str(pickling_error(obj, exc, label))
    elif not ships:
        first = problems[0]
        error = message(first.type.split(" ", 1)[-1], first.path, first.why, first.fix)
    size = root.size if ships else None
    _sort_and_prune(root, size)
    return Explanation(name=label, root=root, ships=ships, size=size, error=error)
