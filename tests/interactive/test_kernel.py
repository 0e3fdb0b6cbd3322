"""Everything ships from a real Jupyter kernel (issue 11).

One ipykernel, started with jupyter_client as a notebook server starts it, for
the whole module. Its cells define the objects; the kernel's own pools map
them. In a kernel ``__main__`` is IPython's user namespace and a cell's code
lives in a file name that exists only in the kernel's ``linecache``: workers
can import none of it, so everything travels by value, and results and
exceptions come back as the kernel's own classes.
"""

from __future__ import annotations

import html.parser
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import sacred_runs
from support.child import child_env

from . import cells
from .drivers import Kernel

KINDS = ["pool", "executor", "dask"]

CLEANUP = cells.CLOSE_POOLS


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    """One kernel with the definitions, a picklable.Pool, a ProcessPoolExecutor and a
    Dask LocalCluster with a picklable.dask.Client."""
    session = Kernel(tmp_path_factory.mktemp("kernel"), child_env())
    try:
        session.run(cells.DEFINITIONS)
        session.run(cells.POOLS)
        session.run(cells.DASK)
        session.run(cells.CATCH)
    except BaseException:
        session.close(CLEANUP)
        raise
    yield session
    survivors = session.close(CLEANUP)
    assert not survivors, f"processes left running after the kernel shut down (killed): {survivors}"


def value(kernel: Kernel, expression: str, code: str = "") -> object:
    """Run ``code``, then evaluate ``expression`` in the kernel."""
    return kernel.run(code, value=expression)["value"]


class TestCells:
    """What the cells made: __main__ objects without an importable home."""

    def test_kernel_runs_this_environment(self, kernel):
        """The kernel is this environment's Python (not another python3 kernelspec)."""
        assert value(kernel, "sys.executable") == sys.executable

    def test_main_is_the_user_namespace(self, kernel):
        """__main__ is the kernel's user module; cell code has no file on disk."""
        got = kernel.run(
            "",
            shell="type(get_ipython()).__name__",
            main="sys.modules['__main__'] is get_ipython().user_module",
            modules=(
                "[f.__module__ for f in"
                " (nowraps, class_decorated, wrapt_decorated, square, add_ten, Point, JobError)]"
            ),
            on_disk="os.path.exists(fails.__code__.co_filename)",
        )
        assert got["shell"] == "ZMQInteractiveShell"
        assert got["main"] is True
        assert got["modules"] == ["__main__"] * 7
        assert got["on_disk"] is False


@pytest.mark.parametrize("kind", KINDS)
class TestShipping:
    """Each kind of object, mapped over each executor from the kernel."""

    @pytest.mark.parametrize("case", list(cells.CASES))
    def test_maps(self, kernel, kind, case):
        """The object ships by value and every result is right."""
        expression, expected = cells.CASES[case]
        assert value(kernel, expression.replace("KIND", repr(kind))) == expected

    def test_runs_in_workers(self, kernel, kind):
        """Tasks run in worker processes, not in the kernel."""
        got = kernel.run(
            "", pids=f"set(mapped({kind!r}, worker_pid, range(8)))", kernel="os.getpid()"
        )
        assert got["pids"] and got["kernel"] not in got["pids"]

    def test_exception_arrives_intact(self, kernel, kind):
        """A keyword-only __init__ exception comes back as the kernel's class with its
        attributes and the worker's traceback; the kernel shows the cell's source line."""
        got = value(kernel, f"catch({kind!r})")
        assert got["type"] == "JobError", got.get("formatted")
        assert got["same class"] is True
        assert (got["job"], got["attempt"], got["message"]) == (5, 2, "job 5 failed")
        if kind == "dask":  # Dask attaches the worker's frames to the exception itself
            assert got["cause"] is None
        else:  # the pools add the worker's traceback text as __cause__
            assert got["cause"] == "RemoteTraceback"
            assert "in fails" in got["cause text"] and "JobError: job 5 failed" in got["cause text"]
        formatted = got["formatted"]
        assert "/ipykernel_" in formatted and ", in fails\n" in formatted
        assert "raise JobError(job, attempt=2)" in formatted  # from the kernel's linecache


@pytest.mark.parametrize("kind", KINDS)
class TestRedefinition:
    """A later cell changes what was shipped; shipping again ships the change."""

    def test_redefined_function(self, kernel, kind):
        """Redefining a function in a later cell runs the new definition in the same workers."""
        first = value(
            kernel, f"mapped({kind!r}, step, [1, 2, 3])", "def step(x):\n    return x + 1\n"
        )
        assert first == [2, 3, 4]
        second = value(
            kernel, f"mapped({kind!r}, step, [1, 2, 3])", "def step(x):\n    return x * 100\n"
        )
        assert second == [100, 200, 300]

    def test_redefined_helper(self, kernel, kind):
        """A function shipped again after a helper it calls was redefined uses the new helper."""
        code = "def helper(x):\n    return x + 1\ndef task(x):\n    return helper(x) * 10\n"
        assert value(kernel, f"mapped({kind!r}, task, [1, 2])", code) == [20, 30]
        redefined = "def helper(x):\n    return x - 1\n"
        assert value(kernel, f"mapped({kind!r}, task, [1, 2])", redefined) == [0, 10]

    def test_changed_global(self, kernel, kind):
        """A global reassigned in a later cell travels with the next shipment."""
        code = "FACTOR = 2\ndef scale(x):\n    return x * FACTOR\n"
        assert value(kernel, f"mapped({kind!r}, scale, [1, 2])", code) == [2, 4]
        assert value(kernel, f"mapped({kind!r}, scale, [1, 2])", "FACTOR = 7\n") == [7, 14]

    def test_redefined_lambda_and_closure(self, kernel, kind):
        """Rebinding a lambda or remaking a closure in a later cell ships the new one."""
        code = "tweak = lambda x: x + 1\nadder = make_adder(1)\n"
        got = kernel.run(code, a=f"mapped({kind!r}, tweak, [1])", b=f"mapped({kind!r}, adder, [1])")
        assert got == {"a": [2], "b": [2]}
        code = "tweak = lambda x: x - 1\nadder = make_adder(100)\n"
        got = kernel.run(code, a=f"mapped({kind!r}, tweak, [1])", b=f"mapped({kind!r}, adder, [1])")
        assert got == {"a": [0], "b": [101]}

    def test_redefined_class(self, kernel, kind):
        """A class redefined in a later cell (same name, new method) runs its new code."""
        code = (
            "class Greeter:\n    def greet(self, x):\n        return f'hi {x}'\n"
            "def greet(x):\n    return Greeter().greet(x)\n"
        )
        assert value(kernel, f"mapped({kind!r}, greet, [1])", code) == ["hi 1"]
        code = "class Greeter:\n    def greet(self, x):\n        return f'bye {x}'\n"
        assert value(kernel, f"mapped({kind!r}, greet, [1])", code) == ["bye 1"]

    def test_class_whose_method_global_changed(self, kernel, kind):
        """A class shipped again after a global its method reads was reassigned uses the new value
        (in every worker, all of which had loaded the class before)."""
        code = (
            "RATE = 2\nclass Scaler:\n    def apply(self, x):\n        return x * RATE\n"
            "def apply_rate(_):\n    return os.getpid(), Scaler().apply(1)\n"
        )
        assert value(kernel, f"everywhere({kind!r}, apply_rate)", code) == [2]
        assert value(kernel, f"everywhere({kind!r}, apply_rate)", "RATE = 5\n") == [5]

    def test_class_attribute_set_later(self, kernel, kind):
        """A class attribute set in a later cell reaches the workers that already had the class."""
        code = "class Config:\n    size = 1\ndef size(_):\n    return os.getpid(), Config.size\n"
        assert value(kernel, f"everywhere({kind!r}, size)", code) == [1]
        assert value(kernel, f"everywhere({kind!r}, size)", "Config.size = 3\n") == [3]


class TestGlobalsShipped:
    """A function defined in a cell takes along the globals it reads, and only those."""

    def test_attribute_named_like_a_global(self, kernel):
        """Reading x.real does not ship an unrelated global called real (here a lock)."""
        code = "import threading\nreal = threading.Lock()\ndef real_part(x):\n    return x.real\n"
        assert value(kernel, "mapped('pool', real_part, [3, 4.5])", code) == [3, 4.5]


class TestEnvelopes:
    """picklable.ship through a stdlib spawn pool: loads are cached by digest there."""

    def test_redefined_function_new_digest(self, kernel):
        """The new definition gets a new digest and the stdlib pool's workers run it."""
        setup = textwrap.dedent(
            """
            import concurrent.futures, multiprocessing
            spawn = multiprocessing.get_context("spawn")
            stdlib_pool = concurrent.futures.ProcessPoolExecutor(2, mp_context=spawn)
            def step(x):
                return x + 1
            first = picklable.ship(step)
            """
        )
        try:
            got = kernel.run(setup, result="list(stdlib_pool.map(first, [1, 2, 3]))")
            assert got["result"] == [2, 3, 4]
            redefine = "def step(x):\n    return x * 100\nsecond = picklable.ship(step)\n"
            got = kernel.run(
                redefine,
                result="list(stdlib_pool.map(second, [1, 2, 3]))",
                differ="first.digest != second.digest",
                again="list(stdlib_pool.map(first, [1]))",
            )
            assert got == {"result": [100, 200, 300], "differ": True, "again": [2]}
        finally:
            kernel.run("stdlib_pool.shutdown(wait=True)")


SACRED = (
    """
import tempfile
from sacred import Experiment
from sacred.observers import FileStorageObserver
ex = Experiment("notebook_experiment", interactive=True, save_git_info=False)
runs_dir = tempfile.mkdtemp(prefix="sacred-runs-")
ex.observers.append(FileStorageObserver(runs_dir))
"""
    + sacred_runs.EXPERIMENT_BODY
    + """
def run_config(task):
    updates, named = task
    options = {"--loglevel": "ERROR", "--capture": "sys"}
    run = ex.run(config_updates=updates, named_configs=named, options=options)
    return {"result": run.result, "id": run._id, "pid": os.getpid()}
"""
    + f"TASKS = {sacred_runs.TASKS!r}\n"
    + """
with picklable.Pool(2) as sacred_pool:
    sacred_results = sacred_pool.map(run_config, TASKS, chunksize=1)
"""
)


class TestSacred:
    """A sacred Experiment defined in cells (interactive mode) runs in a pool."""

    def test_four_configs_in_a_pool(self, kernel):
        """4 configs run in pool workers; the observer shipped with the Experiment
        records each run."""
        got = kernel.run(SACRED, results="sacred_results", runs="runs_dir", kernel="os.getpid()")
        assert [r["result"] for r in got["results"]] == sacred_runs.EXPECTED
        assert got["kernel"] not in {r["pid"] for r in got["results"]}
        runs = Path(got["runs"])
        ids = sorted(str(r["id"]) for r in got["results"])
        assert ids == ["1", "2", "3", "4"]
        assert sorted(p.name for p in runs.iterdir() if p.name.isdigit()) == ids
        for r in got["results"]:
            run_dir = runs / str(r["id"])
            info = json.loads((run_dir / "run.json").read_text())
            assert info["status"] == "COMPLETED" and info["result"] == r["result"]
            assert info["experiment"]["name"] == "notebook_experiment"
            config = json.loads((run_dir / "config.json").read_text())
            assert config["a"] * 10 + config["b"] == r["result"]["value"]


class _Html(html.parser.HTMLParser):
    """Text of an HTML fragment, and whether its tags nest (no stray ``<locals>``)."""

    VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "wbr"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.chunks: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.chunks.append(data)

    @classmethod
    def parse(cls, text: str) -> _Html:
        parser = cls()
        parser.feed(text)
        parser.close()
        if parser.stack:
            parser.errors.append(f"unclosed {parser.stack}")
        return parser

    @property
    def text(self) -> str:
        return " ".join("".join(self.chunks).split())


EXPLAIN_NODES = (
    "[(n.name, n.type, n.how, n.path, n.why, n.fix) for n in picklable.explain({obj}).nodes()]"
)


class TestRendering:
    """Reports display readably in the notebook."""

    @pytest.mark.parametrize("obj", ["add_ten", "wrapt_decorated", "square"])
    def test_explain_shows_as_html_and_text(self, kernel, obj):
        """A cell returning explain(obj) sends text/html (a well-formed tree telling every
        part) and text/plain (the text tree)."""
        out = kernel.execute(
            f"picklable.explain({obj})",
            text=f"str(picklable.explain({obj}))",
            nodes=EXPLAIN_NODES.format(obj=obj),
        )
        assert out.error is None
        data = out.result
        assert data is not None and {"text/html", "text/plain"} <= set(data)
        assert data["text/plain"] == out.values["text"].rstrip("\n")
        page = _Html.parse(data["text/html"])
        assert page.errors == []
        assert "script" not in page.tags and "style" not in page.tags
        nodes = out.values["nodes"]
        root = nodes[0][0]  # the object's name, or "obj" for a lambda
        assert page.text.startswith(f"{root}: ships,") and data["text/plain"].startswith(
            f"{root}: ships,"
        )
        for name, type_name, *_ in nodes:
            assert name in page.text and type_name in page.text, (name, type_name)
            assert name in data["text/plain"] and type_name in data["text/plain"]
        assert "by value" in page.text and "by value" in data["text/plain"]

    def test_explain_failure_names_path_and_fix(self, kernel):
        """What cannot ship is shown with its path, why and fix, in both renderings."""
        code = (
            "import threading\nguard = threading.Lock()\n"
            "def locked(x):\n    with guard:\n        return x\n"
        )
        out = kernel.execute(
            code + "picklable.explain(locked)",
            problems="[(n.path, n.why, n.fix) for n in picklable.explain(locked).problems]",
        )
        assert out.error is None
        problems = out.values["problems"]
        assert len(problems) == 1
        path, why, fix = problems[0]
        assert "guard" in path and why and fix
        page = _Html.parse(out.result["text/html"])
        assert page.errors == []
        for text in (page.text, " ".join(out.result["text/plain"].split())):
            assert "cannot ship" in text
            assert path in text and " ".join(why.split()) in text and " ".join(fix.split()) in text

    def test_audit_report_inline(self, kernel):
        """show_audit() displays the audit's HTML page in a sandboxed iframe, and its table
        as text."""
        out = kernel.execute(
            "from picklable.notebook import show_audit\n"
            "from picklable._format import HtmlFormat\n"
            "view = show_audit('picklable_testpkg.decorators', jobs=1)\n"
            "view",
            names="[e.name for e in view.report.entries]",
            same="view.html == HtmlFormat().format(view.report)",
            timeout=180,
        )
        assert out.error is None, out.error
        data = out.result
        assert out.values["same"] is True
        names = out.values["names"]
        assert names
        frame = _Html.parse(data["text/html"])
        assert frame.errors == [] and frame.tags == {"iframe"}
        start = data["text/html"].index('srcdoc="') + len('srcdoc="')
        page_source = html.unescape(data["text/html"][start : data["text/html"].rindex('"')])
        assert page_source.startswith("<!DOCTYPE html>") and page_source.rstrip().endswith(
            "</html>"
        )
        page = _Html.parse(page_source)
        assert {"table", "script", "input"} <= page.tags
        for name in names:
            assert f'data-name="{html.escape(name)}"' in page_source
        assert 'sandbox="allow-scripts"' in data["text/html"]
        assert data["text/plain"].startswith("picklable audit of picklable_testpkg.decorators:")


class TestProgressWidget:
    """progress=True in a notebook: tqdm's widget (ipywidgets), not text on stderr."""

    def test_map_shows_a_widget(self, kernel):
        """A pool map with progress=True displays a progress widget and returns its results."""
        out = kernel.execute(
            "widget_values = pool.map(abs, range(-4, 4), progress=True)", values="widget_values"
        )
        assert out.error is None, out.error
        assert out.values["values"] == [4, 3, 2, 1, 0, 1, 2, 3]
        assert any("application/vnd.jupyter.widget-view+json" in d for d in out.displays), (
            out.displays
        )
        assert "%|" not in out.stderr and "Warning" not in out.stderr, out.stderr
