"""No module of picklable reads a private name that another module of picklable defines.

A private name starts with an underscore and is not a dunder (``__x__``). A
module's private names are its own business: what another module needs is
public there (in the module's ``__all__``, or a name without the underscore).
For every module of ``src/picklable`` this walks the syntax tree and checks
each attribute ``x._name`` (read, written or deleted) and each
``from module import _name``:

* ``x`` a module of picklable (``from .. import _reconstruct``, then
  ``_reconstruct._name``): ``_name`` must be in that module's ``__all__``
  (``_reconstruct``'s frozen rebuilder names are) or be a submodule;
* ``x`` imported from outside picklable (``sys._getframe``,
  ``pickle._Pickler``, ``copyreg._reconstructor``): not picklable's name,
  skipped;
* any other ``x`` (``self``, ``pickler``, ``result``...): flagged when the
  module does not define ``_name`` itself while another module of picklable
  defines it as an attribute (a method or class attribute in a class body, an
  entry of ``__slots__``, or ``self._name = ...`` / ``cls._name = ...``). The
  namedtuple API (``_replace``, ``_fields``...) is public despite its
  underscore, and is skipped.

Simple on purpose: it matches names, not types. It cannot tell two classes'
``_name`` apart (a module that defines ``_state`` may read any object's
``_state``), does not see ``getattr(x, "_name")``, and takes a subclass that
assigns ``self._name`` for a definition of its own. It can mistake a
third-party object's private attribute for ours when the names coincide: the
allow-list says so where that happens. Each entry of ``ALLOWED`` is
``(module, name)`` with the reason; an entry no longer needed fails too.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "picklable"

# Old payloads name these where they lived before issue 27 moved them to
# _envelope: the re-export keeps those payloads loading (names are frozen).
_MOVED_REBUILDER = "a payload name re-exported at its old home (_envelope's, frozen)"

# (reading module, private name) -> why it may read that name of another module.
ALLOWED: dict[tuple[str, str], str] = {
    ("picklable._allow", "_rebuild_error"): (
        "the allow-list admits the rebuilder that picklable's own errors name in "
        "their payloads (a frozen payload name of picklable.exceptions)"
    ),
    ("picklable._allow", "_rebuild_combined"): "as _rebuild_error",
    ("picklable._reduce.refusals", "_name"): (
        "ctypes.CDLL._name (the library's path), not one of ours"
    ),
    ("picklable._transit", "_load_exception"): _MOVED_REBUILDER,
    ("picklable._transit", "_restore_exception"): _MOVED_REBUILDER,
    ("picklable._transit", "_thaw"): _MOVED_REBUILDER,
}

# Public API of collections.namedtuple (and typing.NamedTuple), underscore and all.
NAMEDTUPLE_API = frozenset({"_replace", "_fields", "_asdict", "_make", "_field_defaults"})


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def modules() -> dict[str, tuple[ast.Module, bool]]:
    """``picklable.x.y`` -> (its syntax tree, whether it is a package's ``__init__``)."""
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = ("picklable", *path.relative_to(SRC).with_suffix("").parts)
        package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if package else parts)
        out[name] = (ast.parse(path.read_text(encoding="utf-8")), package)
    return out


MODULES = modules()


def exported(tree: ast.Module) -> set[str]:
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                return set(ast.literal_eval(node.value))
    return set()


def defined(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(every name the module binds, the attribute names its classes and
    instances get: class bodies, ``__slots__``, ``self.x =`` / ``cls.x =``)."""
    names: set[str] = set()
    attributes: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
        ):
            attributes.add(node.attr)
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    attributes.add(statement.name)
                elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
                    targets = (
                        statement.targets
                        if isinstance(statement, ast.Assign)
                        else [statement.target]
                    )
                    for target in targets:
                        if not isinstance(target, ast.Name):
                            continue
                        attributes.add(target.id)
                        if target.id == "__slots__" and statement.value is not None:
                            slots = ast.literal_eval(statement.value)
                            attributes.update([slots] if isinstance(slots, str) else slots)
    return names | attributes, attributes


def source_of(name: str, node: ast.ImportFrom, package: bool) -> str:
    """The absolute name of the module ``node`` (in module ``name``) imports from."""
    if not node.level:
        return node.module or ""
    base = name.split(".") if package else name.split(".")[:-1]
    parts = base[: len(base) - node.level + 1]
    return ".".join(parts + ([node.module] if node.module else []))


def imported(name: str, tree: ast.Module, package: bool) -> dict[str, str | None]:
    """Local name -> the picklable module it is bound to, or None when it
    comes from outside picklable (only names that imports bind)."""
    out: dict[str, str | None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                ours = alias.name == "picklable" or alias.name.startswith("picklable.")
                if alias.asname:
                    out[alias.asname] = alias.name if ours else None
                else:
                    head = alias.name.split(".")[0]
                    out[head] = head if ours else None
        elif isinstance(node, ast.ImportFrom):
            source = source_of(name, node, package)
            ours = source == "picklable" or source.startswith("picklable.")
            for alias in node.names:
                local = alias.asname or alias.name
                if not ours:
                    out[local] = None
                elif f"{source}.{alias.name}" in MODULES:
                    out[local] = f"{source}.{alias.name}"
    return out


def violations() -> set[tuple[str, str, int, str]]:
    """(module, private name, line, what was written) of every access the rule flags."""
    found = set()
    own = {name: defined(tree) for name, (tree, _) in MODULES.items()}
    public = {name: exported(tree) for name, (tree, _) in MODULES.items()}
    for name, (tree, package) in MODULES.items():
        names, _ = own[name]
        bound = imported(name, tree, package)
        elsewhere = {
            other
            for module, (_, attributes) in own.items()
            if module != name
            for other in attributes
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = source_of(name, node, package)
                if source not in MODULES or source == name:
                    continue
                for alias in node.names:
                    if (
                        private(alias.name)
                        and alias.name not in public[source]
                        and f"{source}.{alias.name}" not in MODULES
                    ):
                        found.add((name, alias.name, node.lineno, f"from {source} import"))
                continue
            if not isinstance(node, ast.Attribute) or not private(node.attr):
                continue
            attr = node.attr
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in bound:
                module = bound[owner.id]
                if (
                    module is None
                    or module == name
                    or attr in public[module]
                    or f"{module}.{attr}" in MODULES
                ):
                    continue
                found.add((name, attr, node.lineno, ast.unparse(node)))
            elif attr not in names and attr not in NAMEDTUPLE_API and attr in elsewhere:
                found.add((name, attr, node.lineno, ast.unparse(node)))
    return found


FOUND = violations()


def test_no_private_name_of_another_module():
    """Each module reads only its own private names (or an allowed one)."""
    unexplained = sorted(v for v in FOUND if (v[0], v[1]) not in ALLOWED)
    assert not unexplained, "\n".join(
        f"{module}:{line}: {text} reads {attr}, private to another module: make it public "
        "there, or add (module, name) to ALLOWED with the reason"
        for module, attr, line, text in unexplained
    )


def test_every_allowed_entry_is_needed():
    """No entry of the allow-list outlives the access it explains."""
    used = {(module, attr) for module, attr, _, _ in FOUND}
    assert not sorted(set(ALLOWED) - used)


def test_the_rule_sees_what_it_should():
    """The checker flags another module's private attribute and module-level
    name, and leaves alone stdlib privates, the module's own names and the
    namedtuple API."""
    owner = ast.parse("class Owner:\n    __slots__ = ('_secret',)\ndef _helper():\n    pass\n")
    reader = ast.parse(
        "import sys\n"
        "from . import _probe_owner\n"
        "class Reader:\n"
        "    def __init__(self):\n"
        "        self._own = sys._getframe()\n"
        "    def read(self, obj, point):\n"
        "        point._replace(x=1)\n"
        "        _probe_owner._helper()\n"
        "        return obj._secret, self._own\n"
    )
    MODULES["picklable._probe_owner"] = (owner, False)
    MODULES["picklable._probe_reader"] = (reader, False)
    try:
        found = {(module, attr) for module, attr, _, _ in violations()}
    finally:
        del MODULES["picklable._probe_owner"], MODULES["picklable._probe_reader"]
    assert found - {(module, attr) for module, attr, _, _ in FOUND} == {
        ("picklable._probe_reader", "_helper"),
        ("picklable._probe_reader", "_secret"),
    }
