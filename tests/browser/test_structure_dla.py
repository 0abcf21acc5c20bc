"""Structure's type-vs-effect panel with each head's direct logit attribution beside its ablation
effect, in Chromium, on a SmolLM2 run (metric: the next-token loss): the table gains a DLA column, a
scatter plots DLA against the effect for the 270 heads, and the note gives Spearman's rho of the
signed DLA with +effect (the loss rises when a head's direct write to the true token is removed) with
n and p, equal to scipy's on the plotted values."""

from urllib.parse import quote

import pytest
from axe_harness import axe_violations, install_axe, split_dash_own
from scipy.stats import spearmanr

pytestmark = pytest.mark.browser

TEXT = "The capital of France is Paris"


def test_dla_beside_the_ablation_effect_with_its_rank_correlation(page, open_dash, smollm2_converted):
    install_axe(page)
    open_dash(f"/structure?model=smollm2&text={quote(TEXT)}")
    page.wait_for_selector("#structure-run:has-text('smollm2')", timeout=180_000)
    page.click("#structure-effects-button")
    page.wait_for_selector("#structure-effects-note:has-text('270 heads')", timeout=600_000)
    note = page.locator("#structure-effects-note").inner_text()
    assert "Spearman ρ of DLA and effect" in note and "(n = 270 heads, two-sided p = " in note
    page.wait_for_selector("#structure-effects-dla .gtitle:has-text('DLA vs ablation effect')", timeout=60_000)
    x = page.evaluate("() => document.querySelector('#structure-effects-dla .js-plotly-plot').data[0].x")
    y = page.evaluate("() => document.querySelector('#structure-effects-dla .js-plotly-plot').data[0].y")
    labels = page.evaluate("() => document.querySelector('#structure-effects-dla .js-plotly-plot').data[0].text")
    assert len(x) == len(y) == 270
    rho = spearmanr(x, y).statistic
    assert f"Spearman ρ of DLA and effect {rho:+.2f} " in note

    headers = page.locator("#structure-effects-table th").all_inner_texts()
    assert [h.strip() for h in headers][-1] == "DLA"
    first = page.locator("#structure-effects-table tbody tr:has(td)").nth(0).locator("td").all_inner_texts()
    head, dla = first[0].strip(), float(first[-1])
    assert dla == pytest.approx(x[labels.index(head)], abs=1e-4)
    ours, _ = split_dash_own(axe_violations(page))
    assert ours == [], "\n".join(f"{v['id']} ({v['impact']}): {v['help']} at {v['targets']}" for v in ours)
    assert page.console_errors == []
