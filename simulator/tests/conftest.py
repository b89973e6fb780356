"""Fixtures shared by test modules: one headless Chromium for the whole session (browser.py)."""

import os

import pytest

from browser import ARGS, CHROMIUM


@pytest.fixture(scope="session")
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: run scripts/setup-system (Debian package chromium)")
    from playwright.sync_api import sync_playwright

    # Playwright gives the browser a fresh temporary profile itself.
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield browser
        browser.close()
