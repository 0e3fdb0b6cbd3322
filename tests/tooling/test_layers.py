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
    (
        "compat, caches, paths",
        ("exceptions", "_remote", "_compat", "_caches", "_paths", "_layout"),
    ),
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
    ("loading", ("_capability", "_allow_calls", "_allow", "_unpickler")),
    ("diagnostics", ("_diagnostics",)),
    ("api", ("_loading", "_api")),
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


# The pool package's own layers, leaves first (its docstring draws them with the
# way of a task through them).
POOL_LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("what crosses processes", ("_protocol", "_inherit", "_forking")),
    ("a worker", ("_worker",)),
    ("starting workers", ("_launch", "_template")),
    ("what callers hold, and what failed", ("_jobs", "_broken", "_failures")),
    ("the manager", ("_link", "_dispatch", "_core")),
    ("submission", ("_submit",)),
    ("the front ends", ("_mp", "_futures")),
]
FRONT_ENDS = ("_mp", "_futures")
POOL = sorted(name for name in MODULES if name.startswith("_pool."))


def pool_layer_of(module: str) -> int:
    """The pool layer of ``picklable._pool.<module>``."""
    for index, (_, members) in enumerate(POOL_LAYERS):
        if module in members:
            return index
    raise AssertionError(f"picklable._pool.{module} belongs to no pool layer: add it")


@pytest.mark.parametrize("name", POOL)
def test_pool_imports_flow_one_way(name):
    """Inside _pool too: a module imports only from its own pool layer or lower ones,
    and the front ends reach the manager through _submit, never through each other."""
    own = name.removeprefix("_pool.")
    targets = {
        t.removeprefix("_pool.")
        for t in imports(name, MODULES[name])
        if t.startswith("_pool.") and t in MODULES
    }
    upward = sorted(t for t in targets if pool_layer_of(t) > pool_layer_of(own))
    assert upward == [], f"picklable.{name} imports upward inside _pool: {upward}"
    if own in FRONT_ENDS:
        manager = {m for layer, members in POOL_LAYERS if layer == "the manager" for m in members}
        around = sorted(t for t in targets if t in manager or (t in FRONT_ENDS and t != own))
        assert around == [], f"picklable.{name} goes around _submit: {around}"
