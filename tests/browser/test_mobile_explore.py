"""Explore on a phone (390 x 844) in Chromium (issue 26 item 12): the text box spans the screen and
takes typing, Run works, and the head detail fits the screen's width with its tokens readable."""

import pytest

pytestmark = pytest.mark.browser


def test_explore_at_390_px_has_a_usable_text_box_and_head_detail(page, dashboard_url):
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{dashboard_url}/")
    page.wait_for_selector("#api-status:has-text('API')", timeout=30_000)
    box = page.locator("#text-input").bounding_box()
    assert box["width"] >= 300 and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    assert box["height"] >= 40, box  # room for a line of text and the caret
    page.fill("#text-input", "")
    page.locator("#text-input").press_sequentially("The cat sat.")
    assert page.locator("#text-input").input_value() == "The cat sat."
    page.click("#run-button")
    page.wait_for_function("new URLSearchParams(location.search).get('text') === 'The cat sat.'", timeout=60_000)
    page.wait_for_function("document.querySelectorAll('#head-detail .ytick').length === 6", timeout=60_000)
    detail = page.locator("#head-detail .main-svg").first.bounding_box()
    assert detail["x"] >= 0 and detail["x"] + detail["width"] <= 391 and detail["width"] >= 300, detail
    sideways = page.evaluate("document.documentElement.scrollWidth - innerWidth")
    assert sideways <= 0, sideways
    ticks = page.locator("#head-detail .ytick text").evaluate_all("els => els.map(e => e.textContent)")
    assert ticks == ["[CLS]", "the", "cat", "sat", ".", "[SEP]"]
