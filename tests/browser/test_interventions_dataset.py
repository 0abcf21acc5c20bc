"""Interventions page in Chromium (issue 28): the data-set panel runs a head-effects job for the run's model
and shows every head with its mean effect's 95 % interval, n and Holm/BH-corrected p, and how many heads
stand out; a bad N is the form's message. Every wait is for a state of the page."""

import pytest

pytestmark = pytest.mark.browser

TEXT = "a gorgeous, witty, seductive movie."
HEADERS = (
    "() => [...document.querySelectorAll('#interventions-ds-table th .column-header-name')].map(e => e.textContent)"
)
CELLS = """(col) => [...document.querySelectorAll(`#interventions-ds-table td[data-dash-column="${col}"]`)]
    .map(e => e.textContent.trim())"""


def test_per_head_effects_over_a_data_set_with_intervals_and_corrected_p(open_dash):
    page = open_dash(f"/interventions?model=minilm-sst2&text={TEXT.replace(' ', '+')}")
    page.wait_for_selector("#interventions-run:has-text('minilm-sst2')", timeout=60_000)
    page.fill("#interventions-ds-n", "1")
    page.click("#interventions-ds-start")
    page.wait_for_selector("#interventions-ds-error:has-text('N must be a whole number from 2')", timeout=30_000)
    page.fill("#interventions-ds-n", "4")
    page.click("#interventions-ds-start")
    page.wait_for_selector("#interventions-ds-status:has-text('done')", timeout=300_000)
    page.wait_for_function(f"({HEADERS})().includes('Holm p')", timeout=60_000)
    assert page.evaluate(HEADERS) == [
        "head", "mean Δ", "95 % low (t)", "95 % high (t)", "n", "p", "Holm p", "BH p", "stands out",
    ]  # fmt: skip
    assert set(page.evaluate(CELLS, "n")) == {"4"}
    means = [abs(float(v)) for v in page.evaluate(CELLS, "mean")]
    assert len(means) == 12 and means == sorted(means, reverse=True)  # largest |effect| first
    lows, highs = ([float(v) for v in page.evaluate(CELLS, c) if v] for c in ("low", "high"))
    assert all(lo <= hi for lo, hi in zip(lows, highs))
    assert set(page.evaluate(CELLS, "standout")) <= {"yes (Holm)", "yes (BH)", "no"}
    summary = page.locator("#interventions-ds-summary").text_content()
    assert "minilm-sst2 on sst2, n = 4" in summary and "after Holm" in summary and "after Benjamini-Hochberg" in summary
    # its four examples, each with its rank agreement and a link that runs it in Explore (issue 26 item 11)
    page.wait_for_selector("#interventions-ds-examples-status:has-text('examples 1–4 of 4')", timeout=60_000)
    rows = page.locator("#interventions-ds-examples tbody tr")
    assert rows.count() == 4
    assert all(rows.nth(i).locator("td").first.inner_text().startswith("sst2-dev-") for i in range(4))
    rhos = [rows.nth(i).locator("td").nth(3).inner_text() for i in range(4)]
    assert all(r == "" or -1 <= float(r) <= 1 for r in rhos), rhos
    href = rows.first.get_by_role("link").get_attribute("href")
    assert href.startswith("/?model=minilm-sst2&text=")
    assert page.console_errors == [], page.console_errors
