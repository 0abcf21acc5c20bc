"""Results that no longer match the inputs, in Chromium (issue 26 item 12): Explore and Measure mark
their results stale as soon as the text or the model differs from the shown run's, and clear the mark
when the inputs match again or a new run arrives; Measure's "No run yet" goes once Run has made a run."""

import pytest

pytestmark = pytest.mark.browser

N_HEADS = "document.querySelectorAll('#model-grid .head-thumb').length === 72"
TEXT_IN_ADDRESS = "new URLSearchParams(location.search).get('text') === '{}'"  # the shown run's text


def test_explore_marks_its_results_stale_when_the_text_changes(dash_page):
    page = dash_page
    page.fill("#text-input", "The cat sat.")
    page.click("#run-button")
    page.wait_for_function(N_HEADS, timeout=60_000)
    page.wait_for_function(TEXT_IN_ADDRESS.format("The cat sat."), timeout=30_000)
    assert page.locator("#explore-stale").is_hidden()
    page.fill("#text-input", "The dog sat.")
    page.wait_for_selector("#explore-stale:has-text('Stale')", timeout=30_000)
    note = page.locator("#explore-stale").inner_text()
    assert "the earlier text" in note and "Press Run" in note
    page.fill("#text-input", "The cat sat.")  # back to the run's own text: nothing is stale
    page.wait_for_selector("#explore-stale", state="hidden", timeout=30_000)
    page.fill("#text-input", "The dog sat.")
    page.wait_for_selector("#explore-stale:has-text('Stale')", timeout=30_000)
    page.click("#run-button")  # the new run is the text's: the mark goes
    page.wait_for_function(TEXT_IN_ADDRESS.format("The dog sat."), timeout=60_000)
    page.wait_for_selector("#explore-stale", state="hidden", timeout=30_000)
    assert page.console_errors == []


def test_explore_marks_its_results_stale_when_the_model_changes(dash_page):
    """Another model in the picker than the shown run's: the mark names the run's model, and goes when
    the picker is back on it."""
    page = dash_page
    page.fill("#text-input", "The cat sat.")
    page.click("#run-button")
    page.wait_for_function(N_HEADS, timeout=60_000)
    page.wait_for_function(TEXT_IN_ADDRESS.format("The cat sat."), timeout=30_000)
    assert page.locator("#explore-stale").is_hidden()
    for name, label in (
        ("minilm-sst2", "minilm-sst2 · bert · classification"),
        ("minilm", "minilm · bert · embedding"),
    ):
        page.click("#model-dropdown")
        page.get_by_placeholder("Search").fill(name)
        page.get_by_role("option", name=label).click()
        if name == "minilm-sst2":
            page.wait_for_selector("#explore-stale:has-text('Stale')", timeout=30_000)
            note = page.locator("#explore-stale").inner_text()
            assert "model minilm" in note and "the earlier text" not in note and "Press Run" in note
    page.wait_for_selector("#explore-stale", state="hidden", timeout=30_000)  # back on the run's model
    assert page.console_errors == []


def test_measure_names_its_run_after_run_and_marks_it_stale_after_an_edit(open_dash):
    page = open_dash("/measure")
    page.wait_for_selector("#measure-run-about:has-text('No run yet')", timeout=60_000)  # a fresh tab
    page.fill("#measure-text", "The cat sat.")
    page.click("#measure-run-button")
    page.wait_for_selector("#measure-run-about:has-text('· minilm · 6 layers')", timeout=60_000)
    assert "No run yet" not in page.locator("#measure-run-about").inner_text()
    assert page.locator("#measure-stale").is_hidden()
    page.fill("#measure-text", "The cat sat on the mat.")
    page.wait_for_selector("#measure-stale:has-text('Stale')", timeout=30_000)
    assert page.console_errors == []
