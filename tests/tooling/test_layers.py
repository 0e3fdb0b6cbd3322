"""The one-way import rule: leaves to front door, never back (CONTRIBUTING.md).

Every import of every module of ``src/picklable`` (at any depth, functions
included, except under ``if TYPE_CHECKING:``) must go to a module of its own
layer or of a lower one. Within a layer, no cycles either.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "picklable"

# Leaves first. A module may import from its own layer and the ones above it here.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("compat, caches, paths", ("exceptions", "_compat", "_caches", "_paths")),
    (
        "payload format",
        (
            "_code",
            "_reads",
            "_tracker",
            "_traceback",
            "_reconstruct",
            "_signing",
            "_diagnostics.wording",
            "_diagnostics.loading",
        ),
    ),
    ("locator", ("_locator",)),
    ("reducers", ("_reduce",)),
    ("pickler", ("_pickler",)),
    ("deterministic", ("_deterministic",)),
    ("loading", ("_capability", "_allow", "_unpickler")),
    ("diagnostics", ("_diagnostics",)),
    ("api", ("_api",)),
    (
        "built on the api",
        (
            "__init__",
            "__main__",
            "compat",
            "_decorators",
            "_envelope",
            "_cli",
            "_audit",
            "_format",
            "_pool",
            "_progress",
            "executors",
            "testing",
            "pytest_plugin",
            "notebook",
            "_transit",
            "dask",
            "ray",
            "spark",
            "integrations",
        ),
    ),
]


def layer_of(module: str) -> int:
    """The layer of ``picklable.<module>``: the longest member of LAYERS that is
    the module or a package holding it decides (``_diagnostics.loading`` is
    low, the rest of ``_diagnostics`` is not)."""
    matches = [
        (len(member), index)
        for index, (_, members) in enumerate(LAYERS)
        for member in members
        if module == member or module.startswith(member + ".")
    ]
    if not matches:
        raise AssertionError(f"picklable.{module} belongs to no layer: add it to LAYERS")
    return max(matches)[1]


def modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        relative = path.relative_to(SRC).with_suffix("")
        name = ".".join(relative.parts)
        out[name.removesuffix(".__init__") if name != "__init__" else "__init__"] = path
    return out


def imports(name: str, path: Path) -> set[str]:
    """``picklable.*`` modules that ``name`` imports (relative to the package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for body in node.body for inner in ast.walk(body))
    package = (
        name.split(".")
        if path.name == "__init__.py" and name != "__init__"
        else name.split(".")[:-1]
    )
    if name == "__init__":
        package = []
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped or not isinstance(node, ast.ImportFrom | ast.Import):
            continue
        if isinstance(node, ast.Import):
            found.update(
                a.name.removeprefix("picklable.")
                for a in node.names
                if a.name.startswith("picklable.")
            )
            continue
        if node.level:
            base = package[: len(package) - (node.level - 1)]
            module = ".".join(base + (node.module.split(".") if node.module else []))
        elif node.module and node.module.startswith("picklable"):
            module = node.module.removeprefix("picklable").lstrip(".")
        else:
            continue
        for alias in node.names:
            candidate = f"{module}.{alias.name}" if module else alias.name
            found.add(candidate if candidate in MODULES else module)
    return {m for m in found if m and m != name}


MODULES = modules()


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_flow_one_way(name):
    """A module imports only from its own layer or from layers below it."""
    own = layer_of(name)
    upward = sorted(
        f"{target} ({LAYERS[layer_of(target)][0]})"
        for target in imports(name, MODULES[name])
        if target in MODULES and layer_of(target) > own
    )
    assert upward == [], f"picklable.{name} ({LAYERS[own][0]}) imports upward: {upward}"


def test_every_module_has_a_layer():
    """New modules are placed in a layer on purpose."""
    for name in MODULES:
        layer_of(name)


def test_contributing_map_names_every_module():
    """CONTRIBUTING's map of layers names every module file, so a newcomer finds it."""
    text = (SRC.parents[1] / "CONTRIBUTING.md").read_text(encoding="utf-8")
    rows = "\n".join(line for line in text.splitlines() if line.startswith("| "))
    unnamed = sorted(
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if path.name != "__init__.py"
        and f"`{path.name}`" not in rows
        and f"{path.parent.name}/{path.name}`" not in rows
    )
    assert unnamed == [], f"CONTRIBUTING.md's layer table does not name: {unnamed}"
