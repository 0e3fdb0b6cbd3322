"""The HTML audit report in headless Chromium: it opens on problems, keeps its filters
in the URL, folds aliases, and keeps the "why" column on screen.

Needs Debian's chromium and chromium-driver (/usr/bin/chromium, /usr/bin/chromedriver)
and selenium (test extra). The test installs nothing. Screenshots of the layouts
checked here go to reports/screenshots/ (support.browser.screenshot).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from picklable._audit import Entry, Outcome, Report, Result, audit
from picklable._format import HtmlFormat
from support import wrapper_checks
from support.browser import chromium, horizontal_overflow, screenshot

# Rows the browser actually lays out (hidden rows have no layout box).
SHOWN_NAMES = """
return Array.prototype.slice.call(document.querySelectorAll('#entries tbody tr'))
  .filter(function (row) { return row.getClientRects().length > 0; })
  .map(function (row) { return row.getAttribute('data-name'); });
"""
FAILING = {
    o.value for o in (Outcome.WRONG, Outcome.DUMP, Outcome.LOAD, Outcome.CRASH, Outcome.HANG)
}


@pytest.fixture(scope="module")
def report() -> Report:
    """A real audit of fixture modules with every serializer."""
    return audit(
        [
            "picklable_testpkg.api",
            "picklable_testpkg.wrapt_methods",
            "picklable_testpkg.clicommands",
            "picklable_testpkg.auditables",
        ],
        jobs=2,
    )


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[webdriver.Chrome]:
    """Headless Chromium driven through chromedriver, a 1280x900 window."""
    with chromium(tmp_path_factory.mktemp("chromium-profile"), "--window-size=1280,900") as driver:
        yield driver


def open_report(browser: webdriver.Chrome, report: Report, path: Path, fragment: str = "") -> str:
    path.write_text(HtmlFormat().format(report), encoding="utf-8")
    browser.get(path.as_uri() + fragment)
    return path.as_uri()


@pytest.fixture
def page(report: Report, browser: webdriver.Chrome, tmp_path: Path) -> webdriver.Chrome:
    """The report written to a file and freshly opened."""
    open_report(browser, report, tmp_path / "audit.html")
    return browser


def shown(browser: webdriver.Chrome) -> list[str]:
    names: list[str] = browser.execute_script(SHOWN_NAMES)
    assert browser.find_element(By.ID, "shown").text == str(len(names))
    return names


def checkbox(browser: webdriver.Chrome, outcome: str):  # type: ignore[no-untyped-def]
    return browser.find_element(By.ID, f"filter-{outcome}")


def fragment(browser: webdriver.Chrome) -> str:
    return unquote(browser.current_url.partition("#")[2])


def failing_anywhere(report: Report) -> list[str]:
    return [
        e.name
        for e in report.entries
        if e.kind != "property" and any(r.outcome.value in FAILING for r in e.results.values())
    ]


class TestOpening:
    def test_opens_on_problems(self, page: webdriver.Chrome, report: Report) -> None:
        """picklable ships all of it, so the page opens on the other serializers' failures
        (property objects apart), and says so in the URL."""
        assert all(e.results["picklable"].outcome.ok for e in report.entries)
        expected = failing_anywhere(report)
        assert "picklable_testpkg.api.add" in expected
        assert shown(page) == expected
        assert page.find_element(By.ID, "total").text == str(len(report.entries))
        assert fragment(page) == "serializer=*&outcomes=wrong,dump,load,crash,hang&properties=0"
        pressed = page.find_element(By.CSS_SELECTOR, '.views button[aria-pressed="true"]')
        assert pressed.get_attribute("data-view") == "anywhere"
        screenshot(page, "audit-opens-on-problems")

    def test_opens_on_picklables_problems(self, browser: webdriver.Chrome, tmp_path: Path) -> None:
        """With a picklable failure, the page opens on picklable's failures alone."""
        report = synthetic_report(3)
        report.entries[1].results["picklable"] = Result(Outcome.LOAD, "UnpicklingError: gone")
        open_report(browser, report, tmp_path / "audit.html")
        assert shown(browser) == [report.entries[1].name]
        assert fragment(browser).startswith("serializer=picklable&outcomes=wrong,dump,load")

    def test_everything_view(self, page: webdriver.Chrome, report: Report) -> None:
        """The 'everything' view shows every row."""
        page.find_element(By.CSS_SELECTOR, '.views button[data-view="all"]').click()
        assert shown(page) == [e.name for e in report.entries]

    def test_totals_match_the_report(self, page: webdriver.Chrome, report: Report) -> None:
        """The totals tables show the counts per serializer and outcome, properties apart."""
        for table, totals in (
            ("totals", report.totals(properties=False)),
            ("property-totals", report.totals(properties=True)),
        ):
            for serializer in report.serializers:
                for outcome, count in totals[serializer].items():
                    cells = page.find_elements(
                        By.CSS_SELECTOR,
                        f'#{table} td[data-serializer="{serializer}"][data-outcome="{outcome}"]',
                    )
                    assert [c.text for c in cells] == ([str(count)] if cells else []), table
                    if table == "totals":
                        assert cells


class TestFilters:
    def test_unchecking_an_outcome_hides_its_rows(
        self, page: webdriver.Chrome, report: Report
    ) -> None:
        """With pickle selected, only the outcomes checked are shown."""
        page.find_element(By.CSS_SELECTOR, '.views button[data-view="all"]').click()
        Select(page.find_element(By.ID, "serializer")).select_by_value("pickle")
        checkbox(page, "identity").click()
        expected = [
            e.name for e in report.entries if e.results["pickle"].outcome.value != "identity"
        ]
        assert "picklable_testpkg.api.add" in expected
        assert shown(page) == expected
        checkbox(page, "identity").click()
        assert len(shown(page)) == len(report.entries)

    def test_property_objects_box(self, page: webdriver.Chrome, report: Report) -> None:
        """The 'property objects' box puts them in and out of the rows shown."""
        page.find_element(By.ID, "properties").click()
        names = shown(page)
        assert "picklable_testpkg.auditables.Shape.area" in names  # pickle cannot dump it
        page.find_element(By.ID, "properties").click()
        assert "picklable_testpkg.auditables.Shape.area" not in shown(page)

    def test_search_box_filters_by_name(self, page: webdriver.Chrome) -> None:
        """Typing in the search box keeps the rows whose name contains every word."""
        page.find_element(By.CSS_SELECTOR, '.views button[data-view="all"]').click()
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


class TestUrlState:
    def test_filters_survive_a_reload(self, page: webdriver.Chrome, report: Report) -> None:
        """What is chosen is written to the URL; reloading that URL restores it."""
        page.find_element(By.CSS_SELECTOR, '.views button[data-view="all"]').click()
        Select(page.find_element(By.ID, "serializer")).select_by_value("pickle")
        checkbox(page, "identity").click()
        page.find_element(By.ID, "search").send_keys("api.Tools")
        before = shown(page)
        assert before == [
            "picklable_testpkg.api.Tools.method",
            "picklable_testpkg.api.Tools.scaled",
            "picklable_testpkg.api.Tools.static_add",
        ]
        url = page.current_url
        assert unquote(url.partition("#")[2]) == (
            "serializer=pickle&outcomes=copy,wrong,dump,load,crash,hang&q=api.Tools"
        )
        page.get("about:blank")
        page.get(url)
        assert shown(page) == before
        assert Select(page.find_element(By.ID, "serializer")).first_selected_option.text == "pickle"
        assert not checkbox(page, "identity").is_selected()
        assert page.find_element(By.ID, "search").get_attribute("value") == "api.Tools"

    def test_a_link_opens_on_its_filters(
        self, browser: webdriver.Chrome, report: Report, tmp_path: Path
    ) -> None:
        """A URL with a fragment (a bookmark, a link in a CI log) opens on those rows."""
        open_report(
            browser, report, tmp_path / "audit.html", "#serializer=cloudpickle&outcomes=wrong"
        )
        expected = [
            e.name for e in report.entries if e.results["cloudpickle"].outcome.value == "wrong"
        ]
        assert expected and shown(browser) == expected
        assert browser.find_element(By.ID, "why-head").text == "why (cloudpickle)"
        why = browser.find_element(
            By.CSS_SELECTOR, '#entries tbody tr:not([hidden]) .why-for[data-for="cloudpickle"]'
        )
        wrapper = wrapper_checks.wrapt_type_label("BoundFunctionWrapper")
        assert f"type: {wrapper} -> function" in why.text

    def test_nothing_matches(
        self, browser: webdriver.Chrome, report: Report, tmp_path: Path
    ) -> None:
        """Filters that match nothing say so."""
        open_report(browser, report, tmp_path / "audit.html", "#serializer=picklable&outcomes=hang")
        assert shown(browser) == []
        assert browser.find_element(By.ID, "nothing").is_displayed()


def synthetic_report(rows: int) -> Report:
    """Rows with very long names, one object with 120 aliases, and long reasons."""
    serializers = {"picklable": "0", "pickle": "stdlib", "cloudpickle": "3", "dill": "0.4"}
    entries = []
    for i in range(rows):
        name = (
            f"pkg.subpackage_with_a_long_name.module_{i}.SomeRatherLongClassName.method_{i}_"
            + "x" * 40
        )
        entry = Entry(name, "pkg", ("m",), "method")
        entry.results = {
            "picklable": Result(Outcome.IDENTITY),
            "pickle": Result(
                Outcome.DUMP,
                "PicklingError: Can't pickle <function a.b.c>: it's not the same object as "
                + "a.b.c " * 10,
            ),
            "cloudpickle": Result(Outcome.COPY, detail="no importable name; the copy matches"),
            "dill": Result(Outcome.WRONG, detail="type: wrapt.FunctionWrapper -> function"),
        }
        entries.append(entry)
    entries[0].aliases = [f"pkg.alias_number_{k}.sympify" for k in range(120)]
    return Report(["pkg"], serializers, entries, python="3.11.7")


class TestLayout:
    def test_why_column_visible_at_1280(self, browser: webdriver.Chrome, tmp_path: Path) -> None:
        """At 1280 px, long names wrap in their column: the "why" column is on screen
        and the page does not scroll sideways."""
        open_report(
            browser,
            synthetic_report(30),
            tmp_path / "audit.html",
            "#serializer=*&outcomes=dump,wrong",
        )
        width = browser.execute_script("return window.innerWidth")
        assert 1200 <= width <= 1280
        why = browser.find_element(By.ID, "why-head").rect
        assert why["x"] + why["width"] <= width
        assert why["width"] >= 200
        assert horizontal_overflow(browser) == []
        first = browser.find_element(By.CSS_SELECTOR, "#entries tbody tr")
        reason = first.find_element(By.CSS_SELECTOR, '.why-for[data-for="pickle"]')
        assert reason.is_displayed() and "not the same object" in reason.text
        screenshot(browser, "audit-why-column-1280")

    def test_aliases_fold_inside_the_row(self, browser: webdriver.Chrome, tmp_path: Path) -> None:
        """An object with 120 other names is one row of normal height; the names open on click."""
        open_report(
            browser, synthetic_report(3), tmp_path / "audit.html", "#serializer=*&outcomes=dump"
        )
        rows = browser.find_elements(By.CSS_SELECTOR, "#entries tbody tr")
        assert len(rows) == 3
        folded, plain = rows[0].rect["height"], rows[1].rect["height"]
        assert folded < plain * 2
        summary = rows[0].find_element(By.CSS_SELECTOR, "details.aliases summary")
        assert summary.text == "120 other names"
        item = rows[0].find_element(By.CSS_SELECTOR, "details.aliases li")
        assert not item.is_displayed()
        summary.click()
        assert item.is_displayed() and item.text == "pkg.alias_number_0.sympify"
        screenshot(browser, "audit-aliases-open")
