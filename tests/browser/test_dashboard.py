"""Real browser (Debian's Chromium through pytest-playwright): type, run, see 72 heads, open one."""

import re

import pytest

pytestmark = pytest.mark.browser


def test_submit_sentence_see_72_heads_open_one(dash_page, texts):
    page = dash_page
    page.fill("#text-input", "The cat sat on the mat and looked at the dog.")
    page.click("#run-button")
    page.wait_for_function("document.querySelectorAll('.head-thumb').length === 72", timeout=60_000)
    page.locator("#model-grid .head-thumb[title^='L0H2']").click()
    page.wait_for_selector("#head-detail .gtitle:has-text('L0H2')", timeout=30_000)
    ticks = texts(page, "#head-detail .xtick text")
    assert ticks == [
        "[CLS]",
        "the",
        "cat",
        "sat",
        "on",
        "the",
        "mat",
        "and",
        "looked",
        "at",
        "the",
        "dog",
        ".",
        "[SEP]",
    ]
    assert texts(page, "#head-detail .ytick text") == ticks
    page.wait_for_selector("#head-view .gtitle:has-text('layer 0')")
    assert page.console_errors == []


def test_bad_input_shows_the_apis_message_and_the_page_keeps_working(dash_page, texts):
    page = dash_page
    page.fill("#text-input", "   ")
    page.click("#run-button")
    page.wait_for_selector("#run-error:has-text('empty')", timeout=30_000)
    page.fill("#text-input", "Short and fine.")
    page.click("#run-button")
    page.wait_for_function("document.querySelectorAll('.head-thumb').length === 72", timeout=60_000)
    assert page.locator("#run-error").inner_text() == ""
    assert not [e for e in page.console_errors if not re.search(r"status of 4\d\d", e)]
