"""Structure page in Chromium: the shift grid, a clicked head's kernel, evolution and rollout."""

import pytest

pytestmark = pytest.mark.browser


def test_structure_page_shows_shift_heads_kernel_and_rollout(dash_page, texts):
    page = dash_page
    page.fill("#text-input", "The cat sat on the mat and looked at the dog.")
    page.click("#run-button")
    page.wait_for_function("document.querySelectorAll('.head-thumb').length === 72", timeout=60_000)
    assert page.locator("#model-grid .head-thumb[title^='L0H2'] .badge").text_content() == "prev"
    page.click("a.nav-link:has-text('Structure')")
    page.wait_for_selector("#shift-grid .gtitle:has-text('Shift heads')", timeout=30_000)
    # the default kernel is the strongest shift head: L0H2, peaked at offset -1
    page.wait_for_selector("#kernel-figure .gtitle:has-text('L0H2')", timeout=30_000)
    page.wait_for_selector("#evolution-figure .gtitle:has-text('Sharpening')", timeout=30_000)
    page.wait_for_selector("#importance-figure .gtitle", timeout=30_000)
    assert "rollout" in texts(page, "#importance-figure .legendtext")
    assert "flow" in texts(page, "#importance-figure .legendtext")
    page.wait_for_selector("#importance-note:has-text('through layer 5')", timeout=30_000)
    last = page.evaluate("() => document.querySelector('#importance-figure .js-plotly-plot').data[0].y")
    page.click("#importance-layer")
    page.get_by_role("option", name="layer 0", exact=True).click()
    page.wait_for_selector("#importance-note:has-text('through layer 0')", timeout=30_000)
    first = page.evaluate("() => document.querySelector('#importance-figure .js-plotly-plot').data[0].y")
    assert len(first) == len(last) and first != last
    assert page.console_errors == []
