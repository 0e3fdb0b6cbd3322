"""Every Python example of the documentation runs, and the site builds strictly.

The pages are ``docs/**/*.md`` and the quick start and process pools sections of
``README.md``. A fenced
block whose language is ``python`` (or ``py``) is, by its info string:

- ```` ```python title="mylib.py" ````: a file of the example. It is written into
  the page's directory, where the page's examples import it (``import mylib``).
- ```` ```python {.script} ````, or any block that has an
  ``if __name__ == "__main__":`` guard: a program, run as ``__main__`` of a fresh
  interpreter (``python example.py``): the way to show pools and objects defined
  in ``__main__``. It must exit with status 0.
- ```` ```python {.no-run} ````: not run. Keep these rare (a test counts them).
- any other ```` ```python ```` block: a session step. The page's session blocks
  run in order in one fresh interpreter, in one namespace (the real ``__main__``),
  so a later block uses what an earlier one defined, as a reader would.

Examples prove their claims with ``assert``; tracebacks point at the line of the
Markdown file. Each page runs in its own directory (its files, its cwd) with only
picklable and its dependencies importable: not the tests' helper packages.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import picklable
from support.engines import skip_reason

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*)$")
PYTHON = {"python", "py", "python3"}
MAIN_GUARD = re.compile(r"""^if __name__ == ["']__main__["']:""", re.MULTILINE)

# Runs in the page's fresh interpreter: each session block in the real __main__,
# compiled with blank lines in front so that tracebacks show the Markdown line.
RUNNER = """\
def _run_blocks():
    import json, sys
    path, blocks = json.load(sys.stdin)
    namespace = sys.modules["__main__"].__dict__
    for line, code in blocks:
        exec(compile("\\n" * (line - 1) + code, path, "exec"), namespace)
_run_blocks()
"""


@dataclass(frozen=True)
class Block:
    """One fenced Python block of a page."""

    page: Path
    line: int  # line of the first code line in the Markdown file
    code: str
    kind: str  # "file", "script", "session" or "no-run"
    title: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def parse_info(info: str) -> tuple[str, set[str], dict[str, str]]:
    """Language, classes and key="value" attributes of an info string."""
    language, _, rest = info.strip().partition(" ")
    classes: set[str] = set()
    attributes: dict[str, str] = {}
    for token in shlex.split(rest.replace("{", " ").replace("}", " ")):
        if token.startswith("."):
            classes.add(token[1:])
        elif "=" in token:
            key, _, value = token.partition("=")
            attributes[key] = value
    return language.lower(), classes, attributes


def blocks_of(page: Path, text: str | None = None, first_line: int = 1) -> list[Block]:
    """The Python blocks of ``text`` (default: the whole page)."""
    lines = (page.read_text() if text is None else text).splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence = match["indent"], match["fence"]
        start = i + 1
        end = start
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        i = end + 1
        language, classes, attributes = parse_info(match["info"])
        if language not in PYTHON:
            continue
        body = [line.removeprefix(indent) for line in lines[start:end]]
        code = "\n".join(body) + "\n"
        title = attributes.get("title")
        if "no-run" in classes:
            kind = "no-run"
        elif title:
            kind = "file"
        elif "script" in classes or MAIN_GUARD.search(code):
            kind = "script"
        else:
            kind = "session"
        out.append(Block(page, first_line + start, code, kind, title))
    return out


# The README's sections whose examples run (the others show a package of yours).
README_SECTIONS = ("Quick start", "Process pools")


def readme_quick_start() -> list[Block]:
    """The Python blocks of the README's "Quick start" and "Process pools" sections."""
    text = README.read_text()
    blocks = []
    for title in README_SECTIONS:
        match = re.search(rf"^## {title}\n(.*?)(?=^## )", text, re.MULTILINE | re.DOTALL)
        assert match, f"README.md has no '## {title}' section"
        first_line = text[: match.start(1)].count("\n") + 1
        blocks += blocks_of(README, match.group(1), first_line)
    return blocks


def all_pages() -> dict[Path, list[Block]]:
    pages = {page: blocks_of(page) for page in sorted(DOCS.rglob("*.md"))}
    pages[README] = readme_quick_start()
    return pages


PAGES = all_pages()


def example_env(directory: Path) -> dict[str, str]:
    """The environment of an example: picklable installed, the page's files importable."""
    env = dict(os.environ)
    # The page's files first, then the picklable under test (a worktree's, not the
    # one installed elsewhere), then the PYTHONPATH the tests run with.
    source = Path(picklable.__file__).resolve().parent.parent
    inherited = os.environ.get("PYTHONPATH")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(directory), str(source), *([inherited] if inherited else [])]
    )
    env.pop("PYTHONSTARTUP", None)
    return env


@pytest.fixture(scope="module")
def page_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, Path]:
    """One directory per page, holding the page's file blocks."""
    dirs: dict[Path, Path] = {}
    for page, blocks in PAGES.items():
        directory = tmp_path_factory.mktemp(page.stem)
        for block in blocks:
            if block.kind == "file":
                assert block.title is not None
                (directory / block.title).write_text(block.code)
        dirs[page] = directory
    return dirs


# Pages whose examples run in the run's one Spark (the spark_driver fixture): a
# fresh interpreter per page would start a Spark of its own (17-40 s each). Their
# programs run there as __main__, their session blocks in a fresh __main__, with the
# page's directory as cwd.
SPARK_PAGES = {DOCS / "spark.md"}


def spark_done(reply: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """The Spark driver's reply to a run, as a finished process."""
    return subprocess.CompletedProcess([], reply["status"], reply["stdout"], reply["stderr"])


def check_exit(done: subprocess.CompletedProcess[str], what: str) -> None:
    if done.returncode != 0:
        pytest.fail(
            f"{what} exited with {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}",
            pytrace=False,
        )


def skips(codes: list[str]) -> list[pytest.MarkDecorator]:
    """A skip where the code imports a package this Python has no wheel of (Ray on 3.15)."""
    names = set()
    for code in codes:
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
    reasons = sorted({reason for name in names if (reason := skip_reason(name))})
    return [pytest.mark.skip(reason=reason) for reason in reasons[:1]]


def session_pages() -> list[Any]:
    return [
        pytest.param(
            page,
            marks=skips([b.code for b in blocks if b.kind == "session"]),
            id=str(page.relative_to(ROOT)),
        )
        for page, blocks in PAGES.items()
        if any(b.kind == "session" for b in blocks)
    ]


def script_blocks() -> list[Any]:
    return [
        pytest.param(b, marks=skips([b.code]), id=b.where)
        for blocks in PAGES.values()
        for b in blocks
        if b.kind == "script"
    ]


class TestExamples:
    """The examples of the docs and of the README's quick start run as written."""

    @pytest.mark.parametrize("page", session_pages())
    def test_session_blocks(
        self, page: Path, page_dirs: dict[Path, Path], request: pytest.FixtureRequest
    ) -> None:
        """A page's session blocks run in order in one fresh interpreter."""
        blocks = [(b.line, b.code) for b in PAGES[page] if b.kind == "session"]
        if page in SPARK_PAGES:  # in the run's Spark driver, in a fresh __main__
            driver = request.getfixturevalue("spark_driver")
            reply = driver.run_blocks(page, blocks, page_dirs[page])
            check_exit(spark_done(reply), f"the examples of {page.relative_to(ROOT)}")
            return
        done = subprocess.run(
            [sys.executable, "-c", RUNNER],
            input=json.dumps([str(page), blocks]),
            capture_output=True,
            text=True,
            timeout=180,
            cwd=page_dirs[page],
            env=example_env(page_dirs[page]),
        )
        check_exit(done, f"the examples of {page.relative_to(ROOT)}")

    @pytest.mark.parametrize("block", script_blocks())
    def test_script_block(
        self, block: Block, page_dirs: dict[Path, Path], request: pytest.FixtureRequest
    ) -> None:
        """A program block runs as __main__ of a fresh interpreter and exits 0."""
        directory = page_dirs[block.page]
        script = directory / f"{block.page.stem}_line{block.line}.py"
        # Blank lines first: the script's line numbers are the Markdown file's.
        source = "\n" * (block.line - 1) + block.code
        if block.page in SPARK_PAGES:  # as __main__ of the run's Spark driver
            driver = request.getfixturevalue("spark_driver")
            reply = driver.run_script(source, directory, name=script.name, check=False)
            check_exit(spark_done(reply), f"the program at {block.where}")
            return
        script.write_text(source)
        done = subprocess.run(
            [sys.executable, script.name],
            capture_output=True,
            text=True,
            timeout=180,
            cwd=directory,
            env=example_env(directory),
        )
        check_exit(done, f"the program at {block.where}")


class TestBlockRules:
    """The conventions above hold across the documentation."""

    def test_pages_have_examples(self) -> None:
        """The user guide and the README's quick start have runnable examples."""
        runnable = {
            page.name
            for page, blocks in PAGES.items()
            if any(b.kind in ("session", "script") for b in blocks)
        }
        assert {"guide.md", "README.md"} <= runnable

    def test_no_run_blocks_are_rare(self) -> None:
        """At most one Python block in ten is marked {.no-run}."""
        blocks = [b for page_blocks in PAGES.values() for b in page_blocks]
        skipped = [b.where for b in blocks if b.kind == "no-run"]
        assert len(skipped) * 10 <= len(blocks), skipped

    def test_file_blocks_are_imported(self) -> None:
        """Every file block is imported or run by an example of its page."""
        unused = []
        for blocks in PAGES.values():
            others = "".join(b.code for b in blocks if b.kind != "file")
            for block in blocks:
                if block.kind == "file" and block.title is not None:
                    name = block.title.removesuffix(".py")
                    if not re.search(
                        rf"\b(import {name}\b|from {name} import|{block.title})", others
                    ):
                        unused.append(f"{block.where} ({block.title})")
        assert not unused, unused

    def test_parser_reads_info_strings(self) -> None:
        """Info strings select the kind: title file, {.script}, __main__ guard, {.no-run}."""
        text = (
            '```python title="lib.py"\nx = 1\n```\n'
            "```python {.no-run}\nboom()\n```\n"
            "```python {.script}\nprint(1)\n```\n"
            '```python\nif __name__ == "__main__":\n    pass\n```\n'
            "  ```py\n  y = 2\n  ```\n"
            "```bash\nls\n```\n"
        )
        got = [(b.kind, b.line, b.code) for b in blocks_of(README, text)]
        assert got == [
            ("file", 2, "x = 1\n"),
            ("no-run", 5, "boom()\n"),
            ("script", 8, "print(1)\n"),
            ("script", 11, 'if __name__ == "__main__":\n    pass\n'),
            ("session", 15, "y = 2\n"),
        ]


class TestSite:
    """The documentation site builds with mkdocs --strict."""

    def test_strict_build(self, tmp_path: Path) -> None:
        """No warning (broken link, page outside nav, unreadable docstring); API pages present."""
        site = tmp_path / "site"
        env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
        done = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=ROOT,
            env=env,
        )
        check_exit(done, "mkdocs build --strict")
        api = (site / "api" / "index.html").read_text()
        for name in ("picklable.dumps", "picklable.loads", "picklable.Pool", "picklable.decorator"):
            assert f'id="{name}"' in api, f"{name} missing from the API reference"
        # Docstrings' Sphinx roles are rendered (scripts/mkdocs_roles.py), not shown raw.
        leftover = re.findall(r":(?:func|class|meth|attr|mod|exc|data|obj):<code>", api)
        assert not leftover, f"{len(leftover)} raw Sphinx roles in the API reference"
        assert '<a href="#picklable.loads"><code>loads</code></a>' in api
