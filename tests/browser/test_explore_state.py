"""Explore in Chromium: the run and the head live in the address (reload, navigation and a pasted
link reopen them), bad address values are a message, Run shows a busy state, the selected head is
outlined and arrow keys move it, hovering a token highlights its lines, and the head view's legend
never covers the last token (issue 16)."""

import pytest

pytestmark = pytest.mark.browser

TEXT = "The cat sat on the mat."
N_HEADS = "document.querySelectorAll('#model-grid .head-thumb').length === 72"


def _selected(page) -> str:
    return page.locator(".head-thumb.selected").get_attribute("title").split(" ")[0]


def test_unknown_address_values_are_a_message_not_a_blank_page(open_dash):
    page = open_dash("/?model=nope&layer=x&scaling=wild")
    page.wait_for_selector("#api-status.notice:has-text(\"Model 'nope' is not served\")", timeout=30_000)
    problems = page.locator("#explore-url-problems").inner_text()
    assert "layer='x' must be a whole number" in problems and "scaling='wild' must be one of" in problems
    assert page.locator("#model-dropdown").inner_text().startswith("minilm")
    assert page.console_errors == []


def test_run_survives_reload_navigation_and_a_pasted_link(open_dash, dashboard_url):
    page = open_dash("/")
    page.wait_for_selector("#api-status:has-text('API')", timeout=30_000)
    page.fill("#text-input", TEXT)
    page.evaluate(
        """() => { window.busy = []; const b = document.getElementById('run-button');
        new MutationObserver(() => window.busy.push([b.disabled, b.textContent]))
            .observe(b, {attributes: true, childList: true, subtree: true}); }"""
    )
    page.click("#run-button")
    page.wait_for_function(N_HEADS, timeout=60_000)
    assert [True, "Running…"] in page.evaluate("window.busy")  # disabled with a visible state while in flight
    assert not page.locator("#run-button").is_disabled()
    page.locator(".head-thumb[title^='L2H3']").click()
    page.wait_for_selector("#head-detail .gtitle:has-text('L2H3')", timeout=30_000)
    assert _selected(page) == "L2H3"
    # arrow keys move the selection through the grid
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#head-detail .gtitle:has-text('L2H4')", timeout=30_000)
    page.keyboard.press("ArrowDown")
    page.wait_for_selector("#head-detail .gtitle:has-text('L3H4')", timeout=30_000)
    assert _selected(page) == "L3H4"
    page.wait_for_function("location.search.includes('head=L3H4')", timeout=10_000)
    link = page.url
    assert "run=" in link and "model=minilm" in link and "text=The+cat" in link
    page.reload()
    page.wait_for_function(N_HEADS, timeout=60_000)
    page.wait_for_selector("#head-detail .gtitle:has-text('L3H4')", timeout=30_000)
    assert _selected(page) == "L3H4"
    # to another page and back: the grid is drawn again from the session's run (was: empty)
    page.click("header nav >> text=Structure")
    page.wait_for_selector("#structure-run:has-text('Run ')", timeout=30_000)
    page.click("header nav >> text=Explore")
    page.wait_for_function(N_HEADS, timeout=60_000)
    page.wait_for_function("location.search.includes('run=')", timeout=10_000)
    assert page.locator("#text-input").input_value() == TEXT
    # a pasted link in a fresh browser context (no session storage) reopens the same view
    # (its own context, with the suite's bypass_csp: the string predicates below are evaluated in the page)
    fresh = page.context.browser.new_page(bypass_csp=True, viewport={"width": 1400, "height": 1000})
    fresh.goto(link)
    fresh.wait_for_function(N_HEADS, timeout=60_000)
    fresh.wait_for_selector("#head-detail .gtitle:has-text('L3H4')", timeout=30_000)
    fresh.close()
    assert page.console_errors == []


def test_a_run_the_api_forgot_is_made_again_from_the_address(open_dash):
    page = open_dash(f"/?run=000000000000000000000000&model=minilm&text={TEXT.replace(' ', '+')}&head=L1H1")
    page.wait_for_function(N_HEADS, timeout=60_000)
    page.wait_for_selector("#explore-run:has-text('made again')", timeout=30_000)
    page.wait_for_selector("#head-detail .gtitle:has-text('L1H1')", timeout=30_000)
    page.wait_for_function("!location.search.includes('000000000000')", timeout=10_000)


def test_head_view_legend_never_covers_a_token_and_hover_highlights_its_lines(open_dash):
    page = open_dash(f"/?model=minilm&text={TEXT.replace(' ', '+')}")
    page.wait_for_selector("#head-view .legend", timeout=60_000)
    legend = page.locator("#head-view .legend").bounding_box()
    for box in page.locator("#head-view .textpoint text").evaluate_all(
        "els => els.map(e => { const r = e.getBoundingClientRect(); return [r.top, r.bottom, e.textContent]; })"
    ):
        top, bottom, token = box
        legend_top = legend["y"] - page.evaluate("window.scrollY")
        assert bottom <= legend_top, f"{token} ({top:.0f}..{bottom:.0f}) under the legend (top {legend_top:.0f})"
    token = page.locator("#head-view .textpoint text").nth(2)
    token.scroll_into_view_if_needed()
    box = token.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_function(
        "document.querySelector('#head-view .js-plotly-plot').data.some(t => t.name === '__hover')", timeout=10_000
    )
    heat = page.locator("#head-detail .nsewdrag").first
    heat.scroll_into_view_if_needed()
    box = heat.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] * 0.6)
    page.wait_for_function(
        "(document.querySelector('#head-detail .js-plotly-plot').layout.shapes || []).length === 2", timeout=10_000
    )
