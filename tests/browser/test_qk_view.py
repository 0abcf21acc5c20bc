"""Explore's "why this head attends" panel in Chromium (issue 24): a click on a cell of the head detail
explains the selected head at that (query, key): the attribution heatmap, the key-side shares and the
query/key product, with the numbers the API serves for the pair; a typed key replaces the clicked one;
the view lives in the address (a reload reopens it); composition scores of the selected head (MiniLM:
post-norm; a zoo model from a pasted link)."""

from urllib.parse import parse_qs, urlparse

import httpx
import pytest

pytestmark = pytest.mark.browser

TEXT = "The cat sat on the mat because the cat was tired."
N_HEADS_MINILM = "document.querySelectorAll('#model-grid .head-thumb').length === 72"


def _note(page) -> str:
    return page.locator("#qk-note").inner_text()


def _address(page) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def test_a_click_on_the_head_detail_explains_the_pair_and_the_link_keeps_it(open_dash, api_url):
    page = open_dash("/")
    page.wait_for_selector("#api-status:has-text('API')", timeout=30_000)
    page.fill("#text-input", TEXT)
    page.click("#run-button")
    page.wait_for_function(N_HEADS_MINILM, timeout=60_000)
    assert "Click a cell" in _note(page)  # nothing is computed before a query is chosen
    page.locator(".head-thumb[title^='L2H3']").click()
    page.wait_for_selector("#head-detail .gtitle:has-text('L2H3')", timeout=30_000)
    heat = page.locator("#head-detail .nsewdrag").first
    heat.scroll_into_view_if_needed()
    box = heat.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.25, box["y"] + box["height"] * 0.75)
    page.wait_for_selector("#qk-note:has-text('L2H3 (kv head 3): query')", timeout=60_000)
    page.wait_for_function("new URLSearchParams(location.search).has('qk_query')", timeout=10_000)
    address = _address(page)
    query, key = int(address["qk_query"]), int(address["qk_key"])
    n = int(page.evaluate("document.querySelector('#head-detail .js-plotly-plot').layout.xaxis.range[1]") + 0.5)
    assert query > n // 2 > key  # the lower-left quarter of the map
    served = httpx.get(
        f"{api_url}/api/v1/runs/{address['run']}/qk",
        params=dict(layer=2, head=3, query=query, key=key, parts=16),
        timeout=120,
    ).json()
    note = _note(page)
    assert f"query {query} " in note and f"-> key {key} " in note and f"score {served['view']['score']:.4g}" in note
    assert f"comes from {served['attribution']['top_key_part']} at the key" in note
    matrix = page.evaluate("document.querySelector('#qk-matrix .js-plotly-plot').data[0]")
    assert matrix["x"] == [f"{p} -> key" for p in served["attribution"]["key_parts"]]
    assert sum(map(sum, matrix["z"])) == pytest.approx(served["view"]["score"], abs=1e-4)
    page.wait_for_selector("#qk-key-parts .gtitle:has-text('what makes L2H3 attend to key')", timeout=10_000)
    page.wait_for_selector("#qk-product .gtitle:has-text('query * key by dimension')", timeout=10_000)
    # composition scores of the selected head with every earlier head (MiniLM: through its post-norms)
    page.wait_for_selector("#qk-composition .gtitle:has-text('K-composition into L2H3')", timeout=60_000)
    heat = page.evaluate("document.querySelector('#qk-composition .js-plotly-plot').data[0]")
    assert heat["y"] == ["L0", "L1"] and len(heat["x"]) == 12
    # a typed key replaces the clicked one, and the address follows
    page.fill("#qk-key", "1")
    page.press("#qk-key", "Enter")
    page.wait_for_function(
        f"(document.getElementById('qk-note').textContent || '').includes('query {query} ') && "
        "document.getElementById('qk-note').textContent.includes('-> key 1 ')",
        timeout=60_000,
    )
    page.wait_for_function("new URLSearchParams(location.search).get('qk_key') === '1'", timeout=10_000)
    # a reload reopens the same explanation
    page.reload()
    page.wait_for_function(N_HEADS_MINILM, timeout=60_000)
    page.wait_for_selector(f"#qk-note:has-text('L2H3 (kv head 3): query {query} ')", timeout=60_000)
    assert "-> key 1 " in _note(page) and page.locator("#qk-query").input_value() == str(query)
    assert page.console_errors == []


def test_without_a_key_the_view_explains_the_strongest_and_shows_composition(open_dash):
    # a pre-norm zoo model from a pasted link: the query's strongest key, and the head's composition scores
    page = open_dash(f"/?model=text-vanilla&text={TEXT.replace(' ', '+')}&head=L1H2&qk_query=4&qk_mode=v")
    page.wait_for_selector('#qk-note:has-text("the query\'s strongest key")', timeout=90_000)
    assert "L1H2" in _note(page) and "query 4 " in _note(page)
    page.wait_for_selector("#qk-composition .gtitle:has-text('V-composition into L1H2')", timeout=60_000)
    heat = page.evaluate("document.querySelector('#qk-composition .js-plotly-plot').data[0]")
    assert heat["y"] == ["L0"] and len(heat["z"][0]) == len(heat["x"]) and min(heat["z"][0]) > 0
    page.wait_for_selector("#qk-composition-layers .gtitle:has-text('V-composition between layers')", timeout=60_000)
    pairs = page.evaluate("document.querySelector('#qk-composition-layers .js-plotly-plot').data[0]")
    assert pairs["z"][0][0] is None and pairs["z"][0][1] >= max(heat["z"][0]) - 1e-9  # L0 -> L1: over every L1 head
    assert page.locator("#qk-mode input[value='v']").is_checked()
    assert page.console_errors == []
