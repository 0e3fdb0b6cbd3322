"""The HTML audit report in headless Chromium: filters and search change what the page shows.

Needs Debian's chromium and chromium-driver (/usr/bin/chromium, /usr/bin/chromedriver)
and selenium (test extra). The test installs nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from picklable._audit import Report, audit
from picklable._format import HtmlFormat
from support.browser import chromium

# Rows the browser actually lays out (hidden rows have no layout box).
SHOWN_NAMES = """
return Array.prototype.slice.call(document.querySelectorAll('#entries tbody tr'))
  .filter(function (row) { return row.getClientRects().length > 0; })
  .map(function (row) { return row.getAttribute('data-name'); });
"""


@pytest.fixture(scope="module")
def report() -> Report:
    """A real audit of fixture modules with every serializer."""
    return audit(
        [
            "picklable_testpkg.api",
            "picklable_testpkg.wrapt_methods",
            "picklable_testpkg.clicommands",
        ],
        jobs=2,
    )


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[webdriver.Chrome]:
    """Headless Chromium driven through chromedriver."""
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as driver:
        yield driver


@pytest.fixture
def page(report: Report, browser: webdriver.Chrome, tmp_path: Path) -> webdriver.Chrome:
    """The report written to a file and freshly opened."""
    path = tmp_path / "audit.html"
    path.write_text(HtmlFormat().format(report), encoding="utf-8")
    browser.get(path.as_uri())
    return browser


def shown(browser: webdriver.Chrome) -> list[str]:
    names: list[str] = browser.execute_script(SHOWN_NAMES)
    assert browser.find_element(By.ID, "shown").text == str(len(names))
    return names


def checkbox(browser: webdriver.Chrome, outcome: str):  # type: ignore[no-untyped-def]
    return browser.find_element(By.ID, f"filter-{outcome}")


class TestHtmlReport:
    def test_everything_is_shown_at_first(self, page: webdriver.Chrome, report: Report) -> None:
        """Opened, the page lists every audited object and says so."""
        assert shown(page) == [e.name for e in report.entries]
        assert page.find_element(By.ID, "total").text == str(len(report.entries))

    def test_totals_match_the_report(self, page: webdriver.Chrome, report: Report) -> None:
        """The totals table shows the report's count per serializer and outcome."""
        totals = report.totals()
        for serializer in report.serializers:
            for outcome, count in totals[serializer].items():
                cell = page.find_element(
                    By.CSS_SELECTOR,
                    f'#totals td[data-serializer="{serializer}"][data-outcome="{outcome}"]',
                )
                assert cell.text == str(count)

    def test_unchecking_an_outcome_hides_its_rows(
        self, page: webdriver.Chrome, report: Report
    ) -> None:
        """With pickle selected, unchecking identity leaves the rows pickle did not ship as themselves."""
        Select(page.find_element(By.ID, "serializer")).select_by_value("pickle")
        checkbox(page, "identity").click()
        expected = [
            e.name for e in report.entries if e.results["pickle"].outcome.value != "identity"
        ]
        assert "picklable_testpkg.api.add" in expected
        assert shown(page) == expected
        checkbox(page, "identity").click()
        assert len(shown(page)) == len(report.entries)

    def test_any_serializer_with_only_wrong(self, page: webdriver.Chrome, report: Report) -> None:
        """'any serializer' with only 'wrong' checked shows the objects some serializer got wrong."""
        Select(page.find_element(By.ID, "serializer")).select_by_value("*")
        for box in page.find_elements(By.CSS_SELECTOR, "input.outcome-filter"):
            if box.get_attribute("value") != "wrong" and box.is_selected():
                box.click()
        expected = [
            e.name
            for e in report.entries
            if any(r.outcome.value == "wrong" for r in e.results.values())
        ]
        assert "picklable_testpkg.wrapt_methods.Table.total" in expected
        assert shown(page) == expected

    def test_search_box_filters_by_name(self, page: webdriver.Chrome) -> None:
        """Typing in the search box keeps the rows whose name contains every word."""
        search = page.find_element(By.ID, "search")
        search.send_keys("frame total")
        assert shown(page) == ["picklable_testpkg.api.Frame.total"]
        search.clear()
        search.send_keys("CLICOMMANDS")
        assert shown(page) == [
            "picklable_testpkg.clicommands.cli",
            "picklable_testpkg.clicommands.greet",
            "picklable_testpkg.clicommands.standalone",
        ]

    def test_search_and_filter_combine(self, page: webdriver.Chrome) -> None:
        """Search and outcome filter apply together."""
        Select(page.find_element(By.ID, "serializer")).select_by_value("pickle")
        checkbox(page, "identity").click()
        page.find_element(By.ID, "search").send_keys("api.Tools")
        assert shown(page) == [
            "picklable_testpkg.api.Tools.method",
            "picklable_testpkg.api.Tools.scaled",
            "picklable_testpkg.api.Tools.static_add",
        ]
