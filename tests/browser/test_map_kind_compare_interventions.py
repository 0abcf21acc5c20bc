"""The map kind (attention weights | value-weighted, Kobayashi et al. 2020) on Compare's and
Interventions' maps (issue 23 item 3), in Chromium on MiniLM:

- Compare: chosen, A, B and A − B are drawn from A's and B's value-weighted maps' runs as the API
  serves them (not the weights), the head stays, the titles say so, the address keeps ``map=`` and a
  pasted link reopens the same maps;
- Interventions: the map before is the clean run's value-weighted map and the map after the altered
  run's (the altered weights times the altered forward's own value norms), each equal to what the API
  serves, both titles and the note line say so, and the "largest change" still measures the weights.

Every wait is for a state of the page."""

import numpy as np
import pytest

from attnscope.frontend.api_client import ApiClient
from attnscope.frontend.map_kind import VALUE_WEIGHTED_NOTE

pytestmark = pytest.mark.browser

Z = """(id) => Array.from(document.querySelector('#' + id + ' .js-plotly-plot').calcdata[0][0].z,
    r => Array.from(r, v => Number.isFinite(v) ? v : null))"""
NOTE = VALUE_WEIGHTED_NOTE.split(" ‖")[0]  # "value-weighted maps": the note as the title shows it


def _z(page, graph: str) -> np.ndarray:
    return np.asarray(page.evaluate(Z, graph), dtype=float)


def _param(page, name: str) -> str:
    return page.evaluate(f"() => new URLSearchParams(location.search).get('{name}')")


def test_compare_draws_a_b_and_the_difference_from_the_value_weighted_maps(open_dash, api_url):
    page = open_dash("/compare?head=L2H3")
    page.wait_for_selector("#compare-detail-a .gtitle:has-text('A · L2H3 · minilm')", timeout=120_000)
    page.wait_for_function("location.search.includes('a=') && location.search.includes('b=')", timeout=30_000)
    api = ApiClient(api_url)
    run_a, run_b = _param(page, "a"), _param(page, "b")
    weights_a = api.attention(run_a, 2, 3, encoding="json")
    np.testing.assert_allclose(_z(page, "compare-detail-a"), weights_a, atol=1e-6)

    page.locator("#compare-map-kind").get_by_label("value-weighted", exact=True).check()
    for graph in ("compare-detail-a", "compare-detail-b", "compare-detail-diff"):
        page.wait_for_selector(f"#{graph} .gtitle:has-text('{NOTE}')", timeout=120_000)
    assert "L2H3" in page.text_content("#compare-detail-a .gtitle")  # the selected head stays
    vw_a = api.attention(api.value_weighted(run_a), 2, 3, encoding="json")
    vw_b = api.attention(api.value_weighted(run_b), 2, 3, encoding="json")
    assert np.abs(vw_a - weights_a).max() > 1e-3
    np.testing.assert_allclose(_z(page, "compare-detail-a"), vw_a, atol=1e-6)
    np.testing.assert_allclose(_z(page, "compare-detail-b"), vw_b, atol=1e-6)
    np.testing.assert_allclose(_z(page, "compare-detail-diff"), vw_a - vw_b, atol=1e-5)
    page.wait_for_selector("#compare-about:has-text('Maps: value-weighted')", timeout=30_000)
    page.wait_for_function("location.search.includes('map=value-weighted')", timeout=30_000)
    assert (_param(page, "a"), _param(page, "b")) == (run_a, run_b)  # the address names the runs compared

    fresh = page.context.browser.new_page()
    fresh.goto(page.url)
    fresh.wait_for_selector(f"#compare-detail-a .gtitle:has-text('{NOTE}')", timeout=120_000)
    assert "A · L2H3" in fresh.text_content("#compare-detail-a .gtitle")
    assert fresh.locator("#compare-map-kind input[value='value-weighted']").is_checked()
    np.testing.assert_allclose(_z(fresh, "compare-detail-a"), vw_a, atol=1e-6)
    fresh.close()
    api.close()
    assert page.console_errors == []


def test_interventions_draws_the_maps_before_and_after_value_weighted(open_dash, api_url):
    text = "a gorgeous, witty, seductive movie."
    page = open_dash(f"/interventions?model=minilm-sst2&text={text.replace(' ', '+')}&heads=L2H0&vlayer=3")
    page.wait_for_selector("#interventions-altered-map .gtitle:has-text('L3H0 · after')", timeout=120_000)
    page.wait_for_function("location.search.includes('run=')", timeout=30_000)
    run_id = _param(page, "run")
    api = ApiClient(api_url)
    res = api.intervene(run_id, {"interventions": [{"kind": "ablate", "heads": [[2, 0]]}]})
    weights_after = api.attention(res.altered_run_id, 3, 0, encoding="json")
    np.testing.assert_allclose(_z(page, "interventions-altered-map"), weights_after, atol=1e-6)

    page.locator("#interventions-map-kind").get_by_label("value-weighted", exact=True).check()
    page.wait_for_selector(f"#interventions-clean-map .gtitle:has-text('{NOTE}')", timeout=120_000)
    page.wait_for_selector(f"#interventions-altered-map .gtitle:has-text('{NOTE}')", timeout=120_000)
    vw = api.attention(api.value_weighted(run_id), 3, 0, encoding="json")
    assert np.abs(vw - api.attention(run_id, 3, 0, encoding="json")).max() > 1e-3
    np.testing.assert_allclose(_z(page, "interventions-clean-map"), vw, atol=1e-6)
    vw_after = api.attention(api.value_weighted(res.altered_run_id), 3, 0, encoding="json")
    assert np.abs(vw_after - weights_after).max() > 1e-3 and np.abs(vw_after - vw).max() > 1e-4
    np.testing.assert_allclose(_z(page, "interventions-altered-map"), vw_after, atol=1e-6)
    note = page.text_content("#interventions-map-note")
    assert "largest change of a weight" in note and "Both maps: value-weighted" in note
    page.wait_for_function("location.search.includes('map=value-weighted')", timeout=30_000)

    fresh = page.context.browser.new_page()
    fresh.goto(page.url)
    fresh.wait_for_selector(f"#interventions-altered-map .gtitle:has-text('{NOTE}')", timeout=120_000)
    np.testing.assert_allclose(_z(fresh, "interventions-clean-map"), vw, atol=1e-6)
    np.testing.assert_allclose(_z(fresh, "interventions-altered-map"), vw_after, atol=1e-6)
    fresh.close()
    api.close()
    assert page.console_errors == []
