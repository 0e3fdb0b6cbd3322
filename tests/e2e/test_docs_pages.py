"""The documentation site in headless Chromium: every page fits the window, and the
Diagnostics page's error example is read whole, without scrolling sideways.

The site is built once (``mkdocs build --strict``) and each page of the nav is
opened from disk at 1280x900 and at 1024x768. A code block may scroll sideways
inside itself (code, a tree, a table of figures), the page may not; messages
marked ``{.wrap}`` wrap (docs/stylesheets/extra.css). Screenshots go to
reports/screenshots/ (support.browser.screenshot) for people to look at.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from support.browser import chromium, horizontal_overflow, screenshot

ROOT = Path(__file__).resolve().parents[2]
# Page paths of the nav, as mkdocs writes them (docs/guide.md -> guide/index.html).
PAGES = sorted(
    "index" if page.stem == "index" else page.stem for page in (ROOT / "docs").glob("*.md")
)
WIDTHS = [(1280, 900), (1024, 768)]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built strictly into a temporary directory."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[webdriver.Chrome]:
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as driver:
        yield driver


def page_file(site: Path, page: str) -> Path:
    return site / "index.html" if page == "index" else site / page / "index.html"


@pytest.mark.parametrize(("width", "height"), WIDTHS, ids=str)
@pytest.mark.parametrize("page", PAGES)
def test_page_fits_the_window(
    site: Path, browser: webdriver.Chrome, page: str, width: int, height: int
) -> None:
    """The page does not scroll sideways; its content is there (a heading)."""
    browser.set_window_size(width, height)
    browser.get(page_file(site, page).as_uri())
    assert browser.find_element(By.CSS_SELECTOR, "article h1").text
    assert horizontal_overflow(browser, "html, body") == []
    assert horizontal_overflow(browser, ".wrap pre > code") == []
    screenshot(browser, f"docs-{page}-{width}")


@pytest.mark.parametrize(("width", "height"), WIDTHS, ids=str)
def test_diagnostics_error_example_is_whole(
    site: Path, browser: webdriver.Chrome, width: int, height: int
) -> None:
    """The error of `dumps` wraps: what, where, why and the fix are all on screen."""
    browser.set_window_size(width, height)
    browser.get(page_file(site, "diagnostics").as_uri() + "#errors-of-dumps")
    block = browser.find_element(By.CSS_SELECTOR, "#errors-of-dumps ~ .wrap pre > code")
    text = block.text
    assert text.startswith(">>> picklable.dumps(job)")
    assert re.search(r"Fix: create it inside the worker", text)
    assert horizontal_overflow(browser, ".wrap pre > code") == []
    # Wrapped: the message takes more lines than it has newlines.
    assert block.rect["height"] > 3 * float(block.value_of_css_property("line-height")[:-2])
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", block)
    screenshot(browser, f"docs-diagnostics-error-{width}")
