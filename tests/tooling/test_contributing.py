"""CONTRIBUTING.md's map of the source is the tree (CONTRIBUTING.md, issue 30).

The map is the ``text`` block under "Where each concern lives": one line per
entry of ``src/picklable``, indented two spaces per level, a directory's name
ending with ``/``; a line indented to the description column or deeper goes on
with the description above it; ``#`` lines name the layer of the top-level
entries below them (the layers of ``test_layers.py``).
"""

from __future__ import annotations

import re

from test_layers import LAYERS, SRC, layer_of

CONTRIBUTING = SRC.parents[1] / "CONTRIBUTING.md"
DESCRIPTION_COLUMN = 22


def map_lines() -> list[str]:
    text = CONTRIBUTING.read_text(encoding="utf-8")
    section = text.split("## Where each concern lives", 1)[1]
    block = re.search(r"```text\n(.*?)```", section, re.DOTALL)
    assert block is not None, "CONTRIBUTING.md: no ```text block under 'Where each concern lives'"
    return block.group(1).splitlines()


def entries() -> list[tuple[str, str | None]]:
    """(path relative to src/picklable, layer) of every entry, in order; a
    directory's path ends with ``/``."""
    lines = map_lines()
    assert lines[0] == "src/picklable/", f"the map starts at src/picklable/, not {lines[0]!r}"
    out: list[tuple[str, str | None]] = []
    parents: list[str] = []  # the directories of the entry being read, outermost first
    layer = None
    for line in lines[1:]:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent >= DESCRIPTION_COLUMN:
            continue  # a description goes on
        assert indent % 2 == 0 and indent >= 2, f"indent by two spaces per level: {line!r}"
        depth = indent // 2 - 1
        assert depth <= len(parents), f"deeper than its directory: {line!r}"
        word = line.split()[0]
        if word == "#":
            assert depth == 0, f"layers name top-level entries: {line!r}"
            layer = line.strip()[1:].strip()
            continue
        del parents[depth:]
        path = "".join(parents) + word
        out.append((path, layer))
        if word.endswith("/"):
            parents.append(word)
    return out


def test_every_module_is_on_the_map():
    """Every file of src/picklable (modules and py.typed) has its line."""
    listed = {path for path, _ in entries()}
    files = {
        str(path.relative_to(SRC))
        for path in SRC.rglob("*")
        if path.is_file() and (path.suffix == ".py" or path.name == "py.typed")
    }
    assert sorted(files - listed) == [], "not on CONTRIBUTING.md's map"


def test_every_entry_exists():
    """No line names a file or directory that is not there."""
    missing = []
    for path, _ in entries():
        target = SRC / path.rstrip("/")
        if not (target.is_dir() if path.endswith("/") else target.is_file()):
            missing.append(path)
    assert missing == [], "on CONTRIBUTING.md's map, not in src/picklable"


def test_each_entry_once():
    """No module has two lines."""
    paths = [path for path, _ in entries()]
    assert sorted(p for p in set(paths) if paths.count(p) > 1) == []


def test_top_level_entries_sit_in_their_layer():
    """The map's ``#`` lines agree with the layers that test_layers.py checks."""
    names = [name for name, _ in LAYERS]
    wrong = []
    for path, layer in entries():
        if "/" in path.rstrip("/") or path == "py.typed":
            continue
        assert layer in names, f"{path}: under {layer!r}, which is not a layer of test_layers.py"
        module = path.rstrip("/").removesuffix(".py")
        if names[layer_of(module)] != layer:
            wrong.append(
                f"{path}: the map says {layer!r}, test_layers.py {names[layer_of(module)]!r}"
            )
    assert wrong == []


def test_layers_in_order():
    """The ``#`` lines are the layers, leaves first, each once."""
    layers = [line.strip()[1:].strip() for line in map_lines() if line.strip().startswith("# ")]
    assert layers == [name for name, _ in LAYERS]


def test_reads_continuations():
    """A description that goes on is not taken for an entry (the parser's own check)."""
    assert ("_reconstruct.py", "payload format") in entries()
    assert not any(path.startswith("add,") or " " in path for path, _ in entries())
