"""Explore to Compare with a counterfactual (issue 26 item 11): after a run, editing the text box on
the same model shows a link whose address carries the run's text as A and the edit as B; following
it, Compare draws both texts' maps of the same head; back at the run's own text (or on another
model) the link is gone."""

from urllib.parse import parse_qs, urlparse

import pytest

pytestmark = pytest.mark.browser

TEXT = "The cat sat on the mat."
EDIT = "The dog sat on the mat."


def test_an_edited_text_links_to_compare_with_both_texts(dash_page):
    page = dash_page
    page.fill("#text-input", TEXT)
    page.click("#run-button")
    page.wait_for_function("document.querySelectorAll('.head-thumb').length === 72", timeout=60_000)
    link = page.locator("#explore-counterfactual")
    assert link.is_hidden()
    page.fill("#text-input", EDIT)
    link.wait_for(state="visible", timeout=30_000)
    query = parse_qs(urlparse(link.get_attribute("href")).query)
    assert query == {"model_a": ["minilm"], "text_a": [TEXT], "model_b": ["minilm"], "text_b": [EDIT]}
    page.fill("#text-input", TEXT)  # the run's own text: nothing to compare
    link.wait_for(state="hidden", timeout=30_000)
    page.fill("#text-input", EDIT)
    link.wait_for(state="visible", timeout=30_000)
    link.click()
    page.wait_for_url("**/compare?**", timeout=30_000)
    page.locator("#compare-grid .head-thumb[data-layer='2'][data-head='3']").click(timeout=120_000)
    page.wait_for_selector("#compare-detail-a .gtitle:has-text('A · L2H3 · minilm')", timeout=60_000)
    page.wait_for_selector("#compare-detail-b .gtitle:has-text('B · L2H3 · minilm')", timeout=60_000)
    assert "cat" in page.locator("#compare-detail-a .ytick").all_text_contents()
    assert "dog" in page.locator("#compare-detail-b .ytick").all_text_contents()
    assert page.console_errors == []
