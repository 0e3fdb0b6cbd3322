"""What a notebook shows, laid out by a real browser (headless Chromium).

The HTML that the kernel sends for ``picklable.explain(...)`` and for
``picklable.notebook.show_audit(...)`` (test_kernel checks that it is what the
kernel sends) is put in a page as a notebook front end puts outputs, and
Chromium renders it: the explain tree reads as the text report does, and the
audit page works inside its sandboxed frame (rows, filter script) without
reaching the notebook around it.

Needs Debian's chromium and chromium-driver, as tests/e2e does.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

import picklable
from picklable.notebook import AuditView, show_audit
from support.browser import chromium


def _make_locked() -> Any:
    guard = threading.Lock()

    def locked(x: int) -> int:
        with guard:
            return x

    return locked


@pytest.fixture(scope="module")
def locked() -> Any:
    """A function that goes by value (as a notebook's do) and cannot ship: it holds a lock.
    Kept out of the module's namespace, where the locator would find it by name."""
    return _make_locked()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[webdriver.Chrome]:
    """Headless Chromium driven through chromedriver."""
    with chromium(tmp_path_factory.mktemp("chromium-profile"), "--window-size=1200,1400") as driver:
        yield driver


@pytest.fixture(scope="module")
def view() -> AuditView:
    """A real audit of a small fixture module."""
    return show_audit(
        "picklable_testpkg.decorators", serializers=["picklable", "cloudpickle"], jobs=1
    )


@pytest.fixture(scope="module")
def notebook_page(
    browser: webdriver.Chrome,
    view: AuditView,
    locked: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> webdriver.Chrome:
    """A page holding the outputs as output areas of a notebook, opened once."""
    outputs = [picklable.explain(locked)._repr_html_(), view._repr_html_()]
    body = "".join(f'<div class="output_html">{html}</div>' for html in outputs)
    path = tmp_path_factory.mktemp("page") / "notebook.html"
    path.write_text(
        f"<!DOCTYPE html><html><head><title>notebook</title></head><body>{body}</body></html>",
        encoding="utf-8",
    )
    browser.get(path.as_uri())
    return browser


def in_frame(browser: webdriver.Chrome) -> Any:
    """Switch into the audit frame once its page has run its script."""
    browser.switch_to.default_content()
    frame = browser.find_element(By.CSS_SELECTOR, "iframe.picklable-audit")
    browser.switch_to.frame(frame)
    WebDriverWait(browser, 30).until(lambda b: b.find_elements(By.ID, "shown"))
    return frame


class TestExplainRendered:
    """explain()'s HTML as the browser lays it out."""

    def test_reads_like_the_text_report(self, notebook_page, locked):
        """Every line of the text report appears, in order, in the rendered tree."""
        notebook_page.switch_to.default_content()
        shown = notebook_page.find_element(By.CSS_SELECTOR, ".picklable-explain").text
        lines = [
            " ".join(line.strip("│├└─ ").split())
            for line in str(picklable.explain(locked)).splitlines()
        ]
        rendered = [" ".join(line.split()) for line in shown.splitlines()]
        assert rendered == [line for line in lines if line]

    def test_problem_is_visible(self, notebook_page, locked):
        """The failing part, its path, why and fix are on screen (not folded away)."""
        notebook_page.switch_to.default_content()
        box = notebook_page.find_element(By.CSS_SELECTOR, ".picklable-explain")
        [problem] = picklable.explain(locked).problems
        assert "guard" in problem.path or "__closure__" in problem.path
        for text in (
            "CANNOT SHIP",
            f"at: {problem.path}",
            f"why: {problem.why}",
            f"fix: {problem.fix}",
        ):
            assert text in box.text
            assert box.find_element(
                By.XPATH, f".//*[contains(normalize-space(text()), {text!r})]"
            ).is_displayed()


class TestAuditFrame:
    """The audit page in its sandboxed frame."""

    def test_rows_and_script_work_inside(self, notebook_page, view):
        """Every audited object is a row, the script counts them, and the search filters them."""
        in_frame(notebook_page)
        rows = notebook_page.find_elements(By.CSS_SELECTOR, "#entries tbody tr")
        assert [r.get_attribute("data-name") for r in rows] == [e.name for e in view.report.entries]
        assert notebook_page.find_element(By.ID, "shown").text == str(len(rows))
        first = view.report.entries[0].name
        notebook_page.find_element(By.ID, "search").send_keys(first)
        visible = [r.get_attribute("data-name") for r in rows if r.is_displayed()]
        assert visible == [first]
        assert notebook_page.find_element(By.ID, "shown").text == "1"

    def test_cannot_reach_the_notebook(self, notebook_page):
        """The frame's script has no access to the notebook page (sandbox without same-origin)."""
        in_frame(notebook_page)
        reached = notebook_page.execute_script(
            "try { return window.parent.document.title; }"
            " catch (e) { return 'blocked: ' + e.name; }"
        )
        assert reached == "blocked: SecurityError"

    def test_small_report_needs_no_scrolling(self, notebook_page):
        """For a handful of objects the frame is tall enough to show the whole table."""
        in_frame(notebook_page)
        bottom = notebook_page.execute_script(
            "return document.getElementById('entries').getBoundingClientRect().bottom;"
        )
        height = notebook_page.execute_script("return window.innerHeight;")
        assert bottom <= height


def test_page_file_written_by_save_is_the_frame_page(view, tmp_path: Path):
    """save() writes what the frame shows."""
    assert view.save(tmp_path / "a.html").read_text(encoding="utf-8") == view.html
