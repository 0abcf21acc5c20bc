"""Interventions page and the Structure page's causal panel in Chromium, against a real API."""

import pytest

pytestmark = pytest.mark.browser

TEXT = "a gorgeous, witty, seductive movie."


def test_ablating_heads_shows_the_prediction_change_and_the_maps_after(open_dash):
    page = open_dash(
        f"/interventions?model=minilm-sst2&text={TEXT.replace(' ', '+')}&heads=L2H0&method=uniform&vlayer=2"
    )
    page.wait_for_selector("#interventions-run:has-text('minilm-sst2')", timeout=60_000)
    # a link with heads applies them on opening; Apply again gives the same result
    page.wait_for_selector("#interventions-result:has-text('Before: positive')", timeout=60_000)
    page.wait_for_selector("#interventions-clean-map .gtitle:has-text('L2H0 · before')", timeout=60_000)
    page.click("#interventions-apply")
    page.wait_for_selector("#interventions-result:has-text('Before: positive')", timeout=60_000)
    assert "Δ prob" in page.locator("#interventions-result").text_content()
    page.wait_for_selector("#interventions-altered-map .gtitle:has-text('L2H0 · after')", timeout=30_000)
    # uniform attention: every weight of the altered map is 1/n
    z = page.evaluate(
        "() => Array.from(document.querySelector('#interventions-altered-map .js-plotly-plot')._fullData[0].z,"
        " row => Array.from(row))"
    )
    n = len(z)
    assert all(abs(v - 1 / n) < 1e-3 for row in z for v in row)
    page.wait_for_function("location.search.includes('heads=L2H0')", timeout=10_000)
    # the grid, then a click on a cell adds that head to the list
    page.click("#interventions-grid-button")
    page.wait_for_selector("#interventions-grid .gtitle:has-text('Per-head effect')", timeout=120_000)
    page.wait_for_selector("#interventions-importance .gtitle:has-text('Spearman')", timeout=30_000)
    assert "6 × 12 heads" in page.locator("#interventions-grid-note").text_content()
    page.fill("#interventions-heads", "L9H9")
    page.press("#interventions-heads", "Enter")
    page.click("#interventions-apply")
    page.wait_for_selector("#interventions-apply-error:has-text('layer=9 is out of range')", timeout=30_000)
    assert "Before: positive" in page.locator("#interventions-result").text_content()  # the last result stays
    assert page.console_errors == []


def test_structure_page_shows_type_beside_effect(open_dash):
    page = open_dash(f"/structure?model=minilm-sst2&text={TEXT.replace(' ', '+')}")
    page.wait_for_selector("#structure-run:has-text('minilm-sst2')", timeout=60_000)
    page.click("#structure-effects-button")
    page.wait_for_selector("#structure-effects-note:has-text('72 heads')", timeout=180_000)
    assert "one example (n = 1), so no interval" in page.locator("#structure-effects-note").text_content()
    page.wait_for_selector("#structure-effects-scatter .gtitle:has-text('score vs ablation effect')", timeout=30_000)
    rows = page.locator("#structure-effects-table tbody tr")
    page.wait_for_function("document.querySelectorAll('#structure-effects-table tbody tr').length > 5")
    assert rows.count() == 13  # header row + 12 heads
    assert page.console_errors == []
