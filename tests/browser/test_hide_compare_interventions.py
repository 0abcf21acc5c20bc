"""The "hide first token / special tokens" switch on Compare's and Interventions' maps (issue 26 item 4),
in Chromium: the hidden keys' columns blank on every map of the page, each row renormalised over the
rest (sums to 1), the choice stated in the titles and kept in the address (a pasted link reopens it).
Every wait is for a state of the page."""

import pytest

pytestmark = pytest.mark.browser

ROWS = """(id) => Array.from(document.querySelector('#' + id + ' .js-plotly-plot').calcdata[0][0].z,
    r => Array.from(r, v => Number.isFinite(v) ? v : null))"""


def _renormalised(rows: list[list], blank: list[int]) -> bool:
    """Every row blank at ``blank`` and summing to 1 over the rest (a row with no weight left: 0)."""
    for r in rows:
        if any(r[b] is not None for b in blank):
            return False
        total = sum(v for v in r if v is not None)
        if not (abs(total - 1) < 1e-3 or total == 0):
            return False
    return True


def test_compare_hides_the_special_tokens_on_a_b_and_the_difference(open_dash):
    page = open_dash("/compare?head=L2H3")
    page.wait_for_selector("#compare-detail-a .gtitle:has-text('A · L2H3 · minilm')", timeout=120_000)
    assert "hidden" not in page.text_content("#compare-detail-a .gtitle")
    page.locator("#compare-hide").get_by_label("special tokens", exact=True).check()
    for side in ("a", "b"):
        page.wait_for_selector(f"#compare-detail-{side} .gtitle:has-text('special tokens hidden')", timeout=60_000)
        rows = page.evaluate(ROWS, f"compare-detail-{side}")
        assert _renormalised(rows, [0, len(rows) - 1]), rows  # [CLS] and [SEP]
    page.wait_for_selector("#compare-detail-diff .gtitle:has-text('special tokens hidden')", timeout=60_000)
    diff = page.evaluate(ROWS, "compare-detail-diff")
    assert all(r[0] is None and r[-1] is None for r in diff)
    page.wait_for_function("location.search.includes('hide=special')", timeout=30_000)
    fresh = page.context.browser.new_page()
    fresh.goto(page.url)
    fresh.wait_for_selector("#compare-detail-a .gtitle:has-text('special tokens hidden')", timeout=120_000)
    fresh.close()
    assert page.console_errors == []


def test_interventions_hides_the_first_token_before_and_after(open_dash):
    text = "a gorgeous, witty, seductive movie."
    page = open_dash(f"/interventions?model=minilm-sst2&text={text.replace(' ', '+')}&heads=L2H0&vlayer=3")
    page.wait_for_selector("#interventions-altered-map .gtitle:has-text('L3H0 · after')", timeout=120_000)
    page.locator("#interventions-hide").get_by_label("first token", exact=True).check()
    for which in ("clean", "altered"):
        page.wait_for_selector(f"#interventions-{which}-map .gtitle:has-text('first token hidden')", timeout=60_000)
        assert _renormalised(page.evaluate(ROWS, f"interventions-{which}-map"), [0])
    assert "largest change of a weight" in page.text_content("#interventions-map-note")
    page.wait_for_function("location.search.includes('hide=first')", timeout=30_000)
    fresh = page.context.browser.new_page()
    fresh.goto(page.url)
    fresh.wait_for_selector("#interventions-clean-map .gtitle:has-text('first token hidden')", timeout=120_000)
    fresh.close()
    assert page.console_errors == []
