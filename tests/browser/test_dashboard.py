"""Real browser (Debian's Chromium through pytest-playwright): type, run, see 72 heads, open one."""

import os
import re

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("ATTNSCOPE_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright launches Debian's Chromium (no browser download), sandboxing off for root."""
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"Chromium not found at {CHROMIUM}; `make test` installs Debian's chromium")
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1400, "height": 1000}}


def texts(page, selector):
    """textContent of every element matching ``selector`` (SVG text has no innerText)."""
    return page.locator(selector).evaluate_all("els => els.map(e => e.textContent)")


@pytest.fixture
def dash_page(page, dashboard_url):
    """The dashboard, loaded, with console errors collected in ``page.console_errors``."""
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.console_errors = errors
    page.goto(dashboard_url)
    page.wait_for_selector("#api-status:has-text('API')", timeout=30_000)  # models listed
    return page


def test_submit_sentence_see_72_heads_open_one(dash_page):
    page = dash_page
    page.fill("#text-input", "The cat sat on the mat and looked at the dog.")
    page.click("#run-button")
    page.wait_for_function("document.querySelectorAll('.head-thumb').length === 72", timeout=60_000)
    page.locator("#model-grid .head-thumb[title^='L0H2']").click()
    page.wait_for_selector("#head-detail .gtitle:has-text('L0H2')", timeout=30_000)
    ticks = texts(page, "#head-detail .xtick text")
    assert ticks == ["[CLS]", "the", "cat", "sat", "on", "the", "mat", "and", "looked", "at", "the",
                     "dog", ".", "[SEP]"]
    assert texts(page, "#head-detail .ytick text") == ticks
    page.wait_for_selector("#head-view .gtitle:has-text('layer 0')")
    assert page.console_errors == []


def test_bad_input_shows_the_apis_message_and_the_page_keeps_working(dash_page):
    page = dash_page
    page.fill("#text-input", "   ")
    page.click("#run-button")
    page.wait_for_selector("#run-error:has-text('empty')", timeout=30_000)
    page.fill("#text-input", "Short and fine.")
    page.click("#run-button")
    page.wait_for_function("document.querySelectorAll('.head-thumb').length === 72", timeout=60_000)
    assert page.locator("#run-error").inner_text() == ""
    assert not [e for e in page.console_errors if not re.search(r"status of 4\d\d", e)]
