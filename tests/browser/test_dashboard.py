"""Real browser (Debian's Chromium through pytest-playwright): type, run, see 72 heads, open one."""

import json
import re

import pytest
from settle import settle, track

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


def _dash_updates(page):
    """Record the Dash updates the page asks for from here on: ``[(outputs, status, body)]`` as they
    finish. A request sent before (the page's own first callbacks, still in flight on a loaded machine)
    is not counted, nor is one sent before ``seen.clear()``."""
    seen = _Updates()

    def started(request):
        if "_dash-update-component" in request.url:
            seen.asked.add(request)

    def finished(request):
        if request in seen.asked:
            response = request.response()
            seen.append((request.post_data_json["output"], response.status, response.text()))

    page.on("request", started)
    page.on("requestfinished", finished)
    return seen


class _Updates(list):
    """The recorded updates; ``clear()`` also forgets the requests asked so far."""

    def __init__(self):
        super().__init__()
        self.asked: set = set()

    def clear(self):
        super().clear()
        self.asked.clear()


def test_a_run_draws_its_detail_with_the_grid_and_a_click_costs_one_round_trip(dash_page):
    """The grid's response carries the selected head's detail (no chain of callbacks before it), and
    a click selects its head in the browser: the detail's own request is the only one that draws."""
    page = dash_page
    page.fill("#text-input", "The cat sat on the mat and looked at the dog.")
    updates = _dash_updates(page)
    track(page)
    page.click("#run-button")
    page.wait_for_function("document.querySelectorAll('.head-thumb').length === 72", timeout=60_000)
    page.wait_for_selector("#head-detail .gtitle:has-text('L0H0 ')", timeout=30_000)
    settle(page)  # every callback of the run answered (a state, not a time)
    grid = [json.loads(body)["response"] for out, status, body in updates if "model-grid.children" in out]
    assert len(grid) == 1 and grid[0]["head-detail"]["figure"]["layout"]["title"]["text"].startswith("L0H0 ")
    drawn_again = [out for out, status, _ in updates if "head-detail.figure" in out and status == 200]
    assert drawn_again == [next(out for out, _, _ in updates if "model-grid.children" in out)]

    updates.clear()
    page.locator("#model-grid .head-thumb[title^='L3H5']").click()
    page.wait_for_selector("#head-detail .gtitle:has-text('L3H5')", timeout=30_000)
    settle(page)
    outputs = [out for out, _, _ in updates]
    assert not any("selected-head" in out or "gen-layer" in out for out in outputs), outputs  # in the browser
    assert sum("head-detail.figure" in out for out in outputs) == 1, outputs
    assert page.console_errors == []
