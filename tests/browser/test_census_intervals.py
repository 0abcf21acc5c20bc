"""Census page in Chromium (issue 28): the census table gives, for the chosen metric, each head's mean
with its 95 % t interval and n, and follows the metric picker; the probe table gives each layer's accuracy
with its Wilson interval, n and the verdict against chance. Every wait is for a state of the page."""

import pytest

pytestmark = pytest.mark.browser

HEADERS = "() => [...document.querySelectorAll('#census-table th .column-header-name')].map(e => e.textContent)"
CELLS = """(col) => [...document.querySelectorAll(`#census-table td[data-dash-column="${col}"]`)]
    .map(e => e.textContent.trim())"""


def test_census_and_probe_tables_show_intervals_and_n(open_dash):
    page = open_dash("/census?n=4")
    page.wait_for_selector("#census-model :text('minilm')", timeout=30_000)
    page.click("#census-start")
    page.wait_for_selector("#census-status:has-text('done')", timeout=300_000)
    page.wait_for_function(f"({HEADERS})().includes('shift_score mean')", timeout=60_000)
    assert page.evaluate(HEADERS) == ["head", "shift_score mean", "95 % low (t)", "95 % high (t)",
                                      "std over examples", "n"]  # fmt: skip
    assert set(page.evaluate(CELLS, "n")) == {"4"}
    means, lows, highs = (list(map(float, page.evaluate(CELLS, c))) for c in ("mean", "low", "high"))
    assert len(means) == 12 and all(lo <= m <= hi for m, lo, hi in zip(means, lows, highs))
    # another metric: the table follows it
    page.click("#census-metric")
    page.get_by_role("option", name="norm_entropy", exact=True).click()
    page.wait_for_function(f"({HEADERS})().includes('norm_entropy mean')", timeout=60_000)
    assert set(page.evaluate(CELLS, "n")) == {"4"}

    page.click("#census-kind")
    page.get_by_role("option", name="probe (logistic regression)").click()
    page.fill("#census-n", "12")
    page.click("#census-start")
    page.wait_for_function(f"({HEADERS})().includes('vs chance')", timeout=300_000)
    verdicts = page.evaluate(CELLS, "verdict")
    assert len(verdicts) == 6 and set(verdicts) <= {"above chance", "below chance", "no difference"}
    assert set(page.evaluate(CELLS, "n")) == {"12"}
    acc, lows, highs = (list(map(float, page.evaluate(CELLS, c))) for c in ("accuracy", "low", "high"))
    assert all(lo <= a <= hi for a, lo, hi in zip(acc, lows, highs))
    page.wait_for_selector("#census-figure .gtitle:has-text('95 % Wilson interval')", timeout=30_000)
    assert page.console_errors == [], page.console_errors
