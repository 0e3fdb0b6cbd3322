"""Headless Chromium (Debian's chromium + chromium-driver) for browser tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

# Headless, and nothing that reaches for the network: this machine's closed
# network refuses Chromium's background connections.
_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


@contextmanager
def chromium(profile: Path, *extra_flags: str) -> Iterator[webdriver.Chrome]:
    """A driven headless Chromium with a fresh profile in ``profile``; quit on exit."""
    for path in (CHROMIUM, CHROMEDRIVER):
        assert os.path.exists(path), (
            f"{path} is missing: install it with `apt-get install -y chromium chromium-driver`"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*_FLAGS, *extra_flags, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


# Screenshots of pages whose layout a test checks, for people to look at: under
# reports/ (ignored by git; CI may keep it as an artifact).
SCREENSHOTS = Path(__file__).resolve().parents[2] / "reports" / "screenshots"


def screenshot(driver: webdriver.Chrome, name: str) -> Path:
    """Save what ``driver`` shows as ``reports/screenshots/<name>.png``; return the path."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def horizontal_overflow(driver: webdriver.Chrome, selector: str = "html") -> list[str]:
    """Elements matching ``selector`` wider than their box (they scroll sideways):
    their tag, class and the first words of their text."""
    found: list[str] = driver.execute_script(
        """
        return Array.prototype.slice.call(document.querySelectorAll(arguments[0]))
          .filter(function (e) { return e.scrollWidth > e.clientWidth + 1; })
          .map(function (e) {
            return e.tagName + '.' + e.className + ': ' + e.textContent.slice(0, 60);
          });
        """,
        selector,
    )
    return found
