"""Headless Chromium for the browser tests: Debian's chromium and chromium-driver through Selenium
(nothing downloads a browser). Tests skip with this reason only where neither can be installed."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
needs_browser = pytest.mark.skipif(not (CHROMIUM and DRIVER),
                                   reason="no chromium/chromedriver: apt-get install chromium chromium-driver")


def headless_chrome() -> Iterator:
    """A 1400 x 900 headless Chrome driver; the generator quits it when closed (use as a fixture body)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--window-size=1400,900"):
        opts.add_argument(a)
    d = webdriver.Chrome(service=Service(DRIVER), options=opts)
    yield d
    d.quit()
