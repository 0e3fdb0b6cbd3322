"""docs/notebooks/shipping.ipynb runs, and shows what it says (issue 11).

The notebook is executed with nbclient in a real kernel (one per module) and
every output that tells the story is checked, by cell id. The outputs stored in
the repository (for readers of the docs) must pass the same checks, so they
cannot drift from what running the notebook gives. To store fresh outputs::

    cd tests && ../.venv/bin/python -m interactive.test_notebooks --write
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from .drivers import marked_env, reap
from .test_kernel import _Html

ROOT = Path(__file__).resolve().parents[2]
SHIPPING = ROOT / "docs" / "notebooks" / "shipping.ipynb"


def execute(path: Path, workdir: Path) -> Any:
    """The notebook at ``path``, executed in a fresh kernel whose processes are all gone after."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=180,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(workdir)}},
    )
    env, mark = marked_env(dict(os.environ))
    try:
        client.execute(env=env)
    finally:
        survivors = reap(mark)
    assert not survivors, (
        f"processes left running after the notebook's kernel shut down (killed): {survivors}"
    )
    return notebook


def outputs(notebook: Any) -> dict[str, list[Any]]:
    """cell id -> outputs of that code cell."""
    return {cell.id: cell.outputs for cell in notebook.cells if cell.cell_type == "code"}


def stdout(cell_outputs: list[Any]) -> str:
    return "".join(o.text for o in cell_outputs if o.output_type == "stream" and o.name == "stdout")


def value(cell_outputs: list[Any]) -> dict[str, str]:
    """``data`` of the cell's execute_result."""
    results = [o.data for o in cell_outputs if o.output_type == "execute_result"]
    assert len(results) == 1, cell_outputs
    return results[0]  # type: ignore[no-any-return]


def _decorated(out: list[Any], python: tuple[int, int]) -> None:
    assert value(out)["text/plain"] == "(16, 'timed.<locals>.wrapper')"


# What pickle says of the local function, in the words of the Python that ran the
# cells (the newest first).
PICKLE_SAYS = [
    (
        (3, 14),
        r"PicklingError: Can't pickle local object <function timed\.<locals>\.wrapper at 0x[0-9a-f]+>\n",
    ),
    ((3, 13), r"AttributeError: Can't get local object 'timed\.<locals>\.wrapper'\n"),
    ((3, 11), r"AttributeError: Can't pickle local object 'timed\.<locals>\.wrapper'\n"),
]


def _stdlib_fails(out: list[Any], python: tuple[int, int]) -> None:
    expected = next(words for since, words in PICKLE_SAYS if python >= since)
    assert re.fullmatch(expected, stdout(out)), (python, stdout(out))


def _squares(out: list[Any], python: tuple[int, int]) -> None:
    assert stdout(out) == "[0, 1, 4, 9, 16, 25]\n"


def _explain(out: list[Any], python: tuple[int, int]) -> None:
    data = value(out)
    text = data["text/plain"]
    assert text.startswith("wrapper: ships,")
    assert "function __main__.timed.<locals>.wrapper  by value" in text
    assert "function __main__.square  by value" in text
    assert "not importable: defined in __main__" in text
    page = _Html.parse(data["text/html"])
    assert page.errors == []
    assert "function __main__.timed.<locals>.wrapper by value" in page.text
    assert "not importable: defined in __main__" in page.text


def _wrapt_local(out: list[Any], python: tuple[int, int]) -> None:
    assert value(out)["text/plain"] == "('audited', 12)"


def _dask_drops(out: list[Any], python: tuple[int, int]) -> None:
    assert value(out)["text/plain"] == "12"  # the wrapper's tag is gone


def _dask_keeps(out: list[Any], python: tuple[int, int]) -> None:
    assert stdout(out) == "('audited', 12)\n[('audited', 3), ('audited', 12), ('audited', 27)]\n"


CHECKS: dict[str, Callable[[list[Any], tuple[int, int]], None]] = {
    "decorated": _decorated,
    "stdlib-fails": _stdlib_fails,
    "picklable-pool": _squares,
    "ship": _squares,
    "explain": _explain,
    "wrapt-def": _wrapt_local,
    "dask-drops": _dask_drops,
    "dask-keeps": _dask_keeps,
}


def check(notebook: Any) -> None:
    """Every output the notebook's text relies on, and no error anywhere."""
    # The kernel's Python (the one that made the stored outputs, for those).
    major, minor = map(int, notebook.metadata.language_info.version.split(".")[:2])
    cells = outputs(notebook)
    assert set(CHECKS) <= set(cells), sorted(set(CHECKS) - set(cells))
    for cell_id, cell_outputs in cells.items():
        errors = [o for o in cell_outputs if o.output_type == "error"]
        assert not errors, f"cell {cell_id} raised: {errors}"
    for cell_id, run_check in CHECKS.items():
        try:
            run_check(cells[cell_id], (major, minor))
        except AssertionError as exc:
            raise AssertionError(f"cell {cell_id!r}: {exc}") from exc


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The shipping notebook, executed once for the module."""
    return execute(SHIPPING, tmp_path_factory.mktemp("notebook"))


class TestShippingNotebook:
    """docs/notebooks/shipping.ipynb."""

    def test_runs_and_shows_problems_and_fixes(self, executed):
        """Executed now: the stdlib pool fails and Dask drops the wrapper; picklable fixes both."""
        check(executed)

    def test_stored_outputs_are_what_it_shows(self):
        """The outputs stored for readers pass the same checks (regenerate with --write)."""
        stored = nbformat.read(SHIPPING, as_version=4)
        nbformat.validate(stored)
        check(stored)

    def test_every_cell_is_checked_or_silent(self, executed):
        """A cell without a check prints nothing (so no output goes unchecked)."""
        for cell_id, cell_outputs in outputs(executed).items():
            if cell_id not in CHECKS:
                assert cell_outputs == [], f"cell {cell_id!r} has unchecked output: {cell_outputs}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m interactive.test_notebooks --write  (from tests/)")
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        fresh = execute(SHIPPING, Path(scratch))
    check(fresh)
    nbformat.write(fresh, SHIPPING)
    print(f"wrote {SHIPPING}")
