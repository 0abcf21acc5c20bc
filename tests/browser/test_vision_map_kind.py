"""The map kind on the Vision page (issue 23 item 3), in Chromium with the zoo's ViT on an MNIST
digit: the switch redraws every head's query-pixel view and the model view's thumbnails from the run's
value-weighted maps as the API serves them (``POST /runs/{id}/value-weighted``: the ViT's values
through the zoo family's ``Sites``), the title and the map note say so, the address keeps ``map=`` and
a pasted link reopens the same view.
Every wait is for a state of the page."""

import numpy as np
import pytest

from attnscope.frontend.api_client import ApiClient
from attnscope.frontend.figures import thumbnail_src
from attnscope.frontend.map_kind import VALUE_WEIGHTED_NOTE
from attnscope.frontend.vision_figures import attention_on_grid, query_index
from attnscope.models.zoo import data
from attnscope.models.zoo.manifest import read_manifest

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(read_manifest("vit") is None, reason="zoo not trained; run make zoo"),
    pytest.mark.skipif(not data.available(), reason="data folder not found; set ATTNSCOPE_DATA_DIR"),
]

HEATMAPS = """() => document.querySelector('#query-pixel-view .js-plotly-plot').calcdata
    .filter(cd => cd[0].trace.type === 'heatmap')
    .map(cd => Array.from(cd[0].z, r => Array.from(r, v => Number.isFinite(v) ? v : null)))"""
NOTE = VALUE_WEIGHTED_NOTE.split(" ‖")[0]
LAYER, CELL = 1, (3, 2)


def _heatmaps(page) -> np.ndarray:
    return np.asarray(page.evaluate(HEATMAPS), dtype=float)


def _expected(layer_maps: np.ndarray, run) -> np.ndarray:
    grid = tuple(run.grid)
    return attention_on_grid(layer_maps, query_index(CELL, grid, run.special), grid, run.special)


def test_vision_map_kind_draws_the_runs_value_weighted_maps(open_dash, api_url):
    api = ApiClient(api_url)
    run = api.create_sample_run("vit", "mnist", 0)
    page = open_dash(f"/vision?model=vit&sample=0&run={run.id}&layer={LAYER}&row={CELL[0]}&col={CELL[1]}")
    title = f"Query pixel (row {CELL[0]}, col {CELL[1]}) · layer {LAYER}"
    page.wait_for_selector(f"#query-pixel-view .gtitle:has-text('{title}')", timeout=120_000)
    weights = api.attention(run.id, LAYER)
    np.testing.assert_allclose(_heatmaps(page), _expected(weights, run), atol=1e-6)
    page.wait_for_selector("#vision-map-note:has-text('attention weights')", timeout=60_000)

    page.locator("#vision-map-kind").get_by_label("value-weighted", exact=True).check()
    page.wait_for_selector(f"#query-pixel-view .gtitle:has-text('{NOTE}')", timeout=120_000)
    assert title in page.text_content("#query-pixel-view .gtitle")  # the layer and the cell stay
    vw = api.attention(api.value_weighted(run.id), LAYER)
    assert np.abs(vw - weights).max() > 1e-3
    np.testing.assert_allclose(_heatmaps(page), _expected(vw, run), atol=1e-6)
    page.wait_for_selector(f"#vision-map-note:has-text('{NOTE}')", timeout=60_000)  # with the model view's thumbnails
    vw_id = api.value_weighted(run.id)
    for layer, head in ((0, 0), (LAYER, 1)):
        src = page.get_attribute(f"#vision-model-grid img[alt='L{layer}H{head}']", "src")
        assert src == thumbnail_src(api.attention(vw_id, layer, encoding="uint8")[head])
        assert src != thumbnail_src(api.attention(run.id, layer, encoding="uint8")[head])
    page.wait_for_function("location.search.includes('map=value-weighted')", timeout=30_000)
    assert f"run={run.id}" in page.url

    fresh = page.context.browser.new_page()
    fresh.goto(page.url)
    fresh.wait_for_selector(f"#query-pixel-view .gtitle:has-text('{NOTE}')", timeout=120_000)
    assert fresh.locator("#vision-map-kind input[value='value-weighted']").is_checked()
    np.testing.assert_allclose(_heatmaps(fresh), _expected(vw, run), atol=1e-6)
    fresh.close()
    api.close()
    assert page.console_errors == []
