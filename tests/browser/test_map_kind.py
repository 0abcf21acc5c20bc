"""The map kind (attention weights | value-weighted, Kobayashi et al. 2020) in Chromium, on MiniLM:

- Explore's model view draws its thumbnails from the chosen kind: each value-weighted thumbnail is the
  image of the value-weighted maps' run as the API serves it, a note says so, the address keeps it,
  and switching back draws the weights again;
- Structure offers the kind (in the address): its shift grid is the API's shift analysis of the
  value-weighted maps' run, of the run itself again when switched back."""

from urllib.parse import quote

import httpx
import pytest

from attnscope.frontend.api_client import ApiClient
from attnscope.frontend.figures import thumbnail_src

pytestmark = pytest.mark.browser

TEXT = "The quick brown fox jumps over the lazy dog."
THUMB = "#model-grid .head-thumb[data-layer='2'][data-head='5']"


def _background(page) -> str:
    return page.locator(THUMB).evaluate("e => e.style.backgroundImage")


def _src(api: ApiClient, run_id: str) -> str:
    return f'url("{thumbnail_src(api.attention(run_id, 2, stride=1, pool="mean")[5])}")'


# the shift grid's z as Plotly holds it after decoding the figure's binary arrays
Z = "document.querySelector('#shift-grid .js-plotly-plot')._fullData[0].z"


def _shift_z(page) -> list:
    return page.evaluate(f"() => Array.from({Z}, row => Array.from(row))")


def test_explore_thumbnails_follow_the_map_kind(open_dash, api_url):
    page = open_dash(f"/?model=minilm&text={quote(TEXT)}")
    page.wait_for_function("document.querySelectorAll('#model-grid .head-thumb').length === 72", timeout=120_000)
    page.wait_for_function("location.search.includes('run=')", timeout=30_000)
    run_id = page.evaluate("() => new URLSearchParams(location.search).get('run')")
    api = ApiClient(api_url)
    weights = _src(api, run_id)
    assert _background(page) == weights

    page.get_by_label("value-weighted").check()
    page.wait_for_selector("#grid-kind-note:has-text('value-weighted maps')", timeout=120_000)
    vw_id = api.value_weighted(run_id)
    valued = _src(api, vw_id)
    assert valued != weights and _background(page) == valued
    page.wait_for_function("location.search.includes('map=value-weighted')", timeout=10_000)

    page.get_by_label("attention weights").check()
    page.wait_for_function(
        f'document.querySelector("{THUMB}").style.backgroundImage.length === {len(weights)}', timeout=60_000
    )
    assert _background(page) == weights and page.locator("#grid-kind-note").count() == 0
    api.close()
    assert page.console_errors == []


def test_structure_offers_the_map_kind_in_its_address(open_dash, api_url):
    page = open_dash(f"/structure?model=minilm&text={quote(TEXT)}&map=value-weighted")
    page.wait_for_selector("#structure-map-note:has-text('Value-weighted maps')", timeout=120_000)
    page.wait_for_selector("#shift-grid .gtitle:has-text('Shift heads')", timeout=120_000)
    page.wait_for_function("location.search.includes('run=')", timeout=30_000)
    run_id = page.evaluate("() => new URLSearchParams(location.search).get('run')")
    vw_id = httpx.post(f"{api_url}/api/v1/runs/{run_id}/value-weighted", timeout=120).json()["value_weighted_run_id"]

    def shift_of(rid):
        return httpx.get(f"{api_url}/api/v1/runs/{rid}/shift", params={"k": 8, "threshold": 0.5}, timeout=120).json()

    z = _shift_z(page)
    valued, weights = shift_of(vw_id)["shift_score"], shift_of(run_id)["shift_score"]
    assert z == [pytest.approx(row, abs=1e-9) for row in valued] and valued != weights
    assert page.locator("#structure-map-kind input[value='value-weighted']").is_checked()

    page.get_by_label("attention weights").check()
    page.wait_for_function("!location.search.includes('map=')", timeout=30_000)
    page.wait_for_function(
        f"() => {{ const z = {Z};"
        f" return Math.abs(z[0][0] - {weights[0][0]}) < 1e-9 && Math.abs(z[1][1] - {weights[1][1]}) < 1e-9; }}",
        timeout=120_000,
    )
    z = _shift_z(page)
    assert z == [pytest.approx(row, abs=1e-9) for row in weights]
    assert page.locator("#structure-map-note").inner_text() == ""
    assert page.console_errors == []
