"""Compare in Chromium: two texts on one model and one text on two models; the A − B grid, the
Jensen-Shannon grid, two head details side by side; state in the address; runs that cannot be
compared are a message in the page's terms."""

import pytest

pytestmark = pytest.mark.browser

GRID = "document.querySelectorAll('#compare-grid .head-thumb').length === 72"


def test_two_texts_on_one_model_then_a_link_reopens_the_head(open_dash):
    page = open_dash("/compare")
    page.wait_for_function(GRID, timeout=90_000)  # the example minimal pair is compared on open
    js_grid = "((document.querySelector('#compare-js .js-plotly-plot') || {}).data || [])[0]"
    page.wait_for_function(f"({js_grid} || {{}}).type === 'heatmap'", timeout=30_000)
    page.locator("#compare-grid .head-thumb[data-layer='2'][data-head='3']").click()
    page.wait_for_selector("#compare-detail-a .gtitle:has-text('A · L2H3 · minilm')", timeout=30_000)
    page.wait_for_selector("#compare-detail-b .gtitle:has-text('B · L2H3 · minilm')", timeout=30_000)
    assert "cat" in page.locator("#compare-detail-a .ytick").all_text_contents()
    assert "dog" in page.locator("#compare-detail-b .ytick").all_text_contents()
    diff_map = "((document.querySelector('#compare-detail-diff .js-plotly-plot') || {}).data || [])[0]"
    page.wait_for_function(f"({diff_map} || {{}}).type === 'heatmap'", timeout=30_000)
    diff = page.evaluate(diff_map)
    assert diff["zmin"] == -diff["zmax"] and diff["colorscale"]  # symmetric diverging scale
    page.keyboard.press("ArrowDown")  # arrow keys move the selected head here too
    page.wait_for_selector("#compare-detail-a .gtitle:has-text('L3H3')", timeout=30_000)
    page.wait_for_function("location.search.includes('head=L3H3')", timeout=10_000)
    link = page.url
    assert "text_a=The+cat" in link and "text_b=The+dog" in link
    fresh = page.context.browser.new_page()
    fresh.goto(link)
    fresh.wait_for_selector("#compare-detail-b .gtitle:has-text('B · L3H3')", timeout=90_000)
    fresh.close()
    assert page.console_errors == []


def test_one_text_on_two_models_and_an_uncomparable_pair(open_dash):
    page = open_dash("/compare?model_b=minilm-sst2&text_a=a+gripping+film&text_b=a+gripping+film")
    page.wait_for_function(GRID, timeout=120_000)
    page.wait_for_selector("#compare-about:has-text('minilm-sst2')", timeout=30_000)
    page.fill("#compare-text-b", "a gripping and deeply moving film")
    page.click("#compare-run")
    page.wait_for_selector("#compare-error:has-text('needs the same positions')", timeout=60_000)
    assert "Comparing A with B failed" in page.locator("#compare-error").inner_text()
    assert page.locator("#compare-retry").is_visible()
