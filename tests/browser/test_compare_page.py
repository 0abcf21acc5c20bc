"""Compare in Chromium: two texts on one model and one text on two models; the A − B grid, the
Jensen-Shannon grid, two head details side by side on one colour scale; state in the address; texts of
different token counts are a note next to the counters, and compare on their aligned tokens when asked."""

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
    # a token-count mismatch is a note next to the counters, not an error Retry could fix
    page.wait_for_selector("#compare-mismatch:has-text('needs the same positions')", timeout=60_000)
    assert "Retry cannot help" in page.locator("#compare-mismatch").inner_text()
    assert page.locator("#compare-retry").is_hidden()


def test_one_colour_scale_a_grid_that_fits_1440_px_and_aligned_tokens(open_dash):
    page = open_dash("/compare?text_a=The+cat+sat+on+the+mat.&text_b=The+dog+sat+on+the+big+red+mat.")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.wait_for_selector("#compare-mismatch:has-text('A has 9 tokens and B has 11')", timeout=90_000)
    assert page.locator("#compare-retry").is_hidden() and page.locator("#compare-error").inner_text() == ""
    page.get_by_label("Compare by aligned tokens").check()  # the way out the note names
    page.wait_for_function(GRID, timeout=90_000)
    page.wait_for_selector("#compare-about:has-text('Compared on 9 aligned tokens')", timeout=30_000)
    assert page.locator("#compare-mismatch").inner_text() == ""
    page.wait_for_function("location.search.includes('align=true')", timeout=10_000)
    fits = page.evaluate(
        """() => { const g = document.querySelector('#compare-grid');
        const last = g.querySelector('.head-thumb[data-layer="5"][data-head="11"]').getBoundingClientRect();
        return {scroll: g.scrollWidth - g.clientWidth, right: last.right, edge: g.getBoundingClientRect().right,
                page: document.documentElement.scrollWidth - innerWidth}; }"""
    )
    assert fits["scroll"] <= 0 and fits["right"] <= fits["edge"] + 1 and fits["page"] <= 0, fits
    page.locator("#compare-grid .head-thumb[data-layer='1'][data-head='2']").click()
    page.wait_for_selector("#compare-detail-b .gtitle:has-text('B · L1H2')", timeout=30_000)
    page.wait_for_selector("#compare-detail-diff .xtick:has-text('cat→dog')", timeout=30_000)
    ranges = page.evaluate(
        """() => ['a', 'b'].map(s => { const t = document.querySelector(`#compare-detail-${s} .js-plotly-plot`).data[0];
        return [t.zmin, t.zmax, document.querySelectorAll(`#compare-detail-${s} .ytick`).length]; })"""
    )
    assert ranges[0] == ranges[1] and ranges[0][2] == 9, ranges  # one colour scale; 9 aligned rows each
    link = page.url
    fresh = page.context.browser.new_page()
    fresh.goto(link)
    fresh.wait_for_selector("#compare-about:has-text('Compared on 9 aligned tokens')", timeout=90_000)
    assert fresh.locator("#compare-align input").is_checked()
    fresh.close()
    assert page.console_errors == []
