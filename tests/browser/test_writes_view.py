"""What heads write on Explore, in Chromium, for a SmolLM2 run of "The capital of France is":

- a click on a token opens the logit lens of the prediction after it: a layers x top-k grid (31
  layers, the last layer's top token " Paris" after " is") beside the target's rank by layer, equal
  to the lens route's answer; k and the target are controls kept in the address, a copied link
  reopens the lens, and the Prediction panel's position menu (the keyboard path) moves it;
- beside the model view, the bar of each head's share of the prediction's direct logit attribution
  (the API's parts over the sum of every head's |part|); a click on a bar selects that head in the
  grid and shows its split over the source tokens as coloured text (the attribution route's
  ``splits``), and so does a click on a head of the grid;
- the head detail's map kind (attention weights | value-weighted) switched, kept in the address and
  reopened from a copied link.

axe-core finds no critical or serious violation of ours with the lens, the bar and the split shown."""

from urllib.parse import quote

import httpx
import pytest
from axe_harness import axe_violations, install_axe, split_dash_own

pytestmark = pytest.mark.browser

PROMPT = "The capital of France is"


def _layout(page, graph: str, path: str):
    return page.evaluate(f"() => document.querySelector('#{graph} .js-plotly-plot').{path}")


def _run_id(page) -> str:
    page.wait_for_function("location.search.includes('run=')", timeout=30_000)
    return page.evaluate("() => new URLSearchParams(location.search).get('run')")


def _no_serious_axe_violation(page):
    ours, _ = split_dash_own(axe_violations(page))
    assert ours == [], "\n".join(f"{v['id']} ({v['impact']}): {v['help']} at {v['targets']}" for v in ours)


def test_a_click_on_a_token_opens_its_logit_lens_kept_in_the_address(page, open_dash, smollm2_converted, api_url):
    install_axe(page)
    open_dash(f"/?model=smollm2&text={quote(PROMPT)}")
    page.wait_for_selector("#writes-section:not(.llm-hidden)", timeout=120_000)
    page.wait_for_function("document.querySelectorAll('#lens-tokens .lens-token').length === 5", timeout=60_000)
    assert "lens_k" not in page.url  # closed until asked: the first lens records the run's forward pass

    page.locator("#lens-tokens .lens-token").nth(4).click()  # " is"
    page.wait_for_selector("#writes-lens .gtitle:has-text('Logit lens after position 4')", timeout=120_000)
    page.wait_for_function("location.search.includes('lens_k=5')", timeout=10_000)
    assert page.locator("#writes-error").inner_text() == ""
    tops = _layout(page, "writes-lens", "data[0].customdata")
    probs = _layout(page, "writes-lens", "data[0].z")
    ranks = _layout(page, "writes-lens", "data[1].x")
    api = httpx.post(f"{api_url}/api/v1/runs/{_run_id(page)}/lens", json={"positions": "4:5", "k": 5}, timeout=120)
    cells = [row[0] for row in api.json()["cells"]]
    assert len(tops) == 31 and all(len(row) == 5 for row in tops) and tops[-1][0] == " Paris"
    assert tops == [[t["token"] for t in c["top"]] for c in cells]
    assert probs == [pytest.approx([t["prob"] for t in c["top"]], abs=1e-9) for c in cells]
    assert ranks == [c["target_rank"] + 1 for c in cells] and ranks[-1] == 1
    assert page.locator("#lens-tokens .lens-token.selected").inner_text() == "␣is"

    page.fill("#lens-k", "3")
    page.press("#lens-k", "Enter")
    page.fill("#lens-target", " London")
    page.press("#lens-target", "Enter")
    page.wait_for_selector("#writes-lens .gtitle:has-text(\"target ' London'\")", timeout=60_000)
    page.wait_for_function("location.search.includes('lens_target=+London')", timeout=10_000)
    assert all(len(row) == 3 for row in _layout(page, "writes-lens", "data[0].customdata"))
    assert "lens_k=3" in page.url
    _no_serious_axe_violation(page)

    link = page.url
    context = page.context.browser.new_context(bypass_csp=True, viewport={"width": 1400, "height": 1000})
    fresh = context.new_page()  # the link pasted in another browser: nothing of the session comes with it
    errors = []
    fresh.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    fresh.goto(link)  # reopens the lens, its k and target
    fresh.wait_for_selector("#writes-lens .gtitle:has-text(\"target ' London'\")", timeout=180_000)
    assert fresh.input_value("#lens-k") == "3" and fresh.input_value("#lens-target") == " London"

    # the keyboard path: the Prediction panel's position menu moves the open lens
    fresh.wait_for_selector("#prediction-position-box:not(.llm-hidden)", timeout=120_000)
    fresh.click("#prediction-position")
    fresh.get_by_role("option", name="3 · ␣France", exact=True).click()
    fresh.wait_for_selector("#writes-lens .gtitle:has-text('Logit lens after position 3')", timeout=60_000)
    fresh.wait_for_function("location.search.includes('position=3')", timeout=10_000)

    fresh.click("#lens-close")
    fresh.wait_for_function("!location.search.includes('lens_k')", timeout=10_000)
    context.close()

    page.goto(link)  # reopened in the same session (its run already the session's): the same lens, the menu
    page.wait_for_selector("#writes-lens .gtitle:has-text(\"target ' London'\")", timeout=120_000)
    page.wait_for_selector("#prediction-position-box:not(.llm-hidden)", timeout=120_000)
    assert page.console_errors == [] and errors == []


def test_dla_share_beside_the_grid_and_a_heads_split_over_source_tokens(page, open_dash, smollm2_converted, api_url):
    install_axe(page)
    open_dash(f"/?model=smollm2&text={quote(PROMPT)}")
    page.wait_for_selector("#dla-section:not(.llm-hidden)", timeout=120_000)
    page.wait_for_function("document.querySelectorAll('#model-grid .head-thumb').length === 270", timeout=180_000)
    grid, dla = page.locator("#model-grid").bounding_box(), page.locator("#dla-section").bounding_box()
    assert dla["x"] >= grid["x"] + grid["width"] - 1 and dla["y"] < grid["y"] + grid["height"]  # beside it

    page.click("#dla-button")
    page.wait_for_selector("#writes-dla .gtitle:has-text('Paris')", timeout=180_000)
    assert page.locator("#dla-error").inner_text() == ""
    heads = _layout(page, "writes-dla", "data[0].y")
    shares = _layout(page, "writes-dla", "data[0].x")
    run_id = _run_id(page)
    api = httpx.post(f"{api_url}/api/v1/runs/{run_id}/attribution", json={"top_heads": 1}, timeout=120).json()
    total = sum(abs(v) for row in api["heads"] for v in row)
    parts = sorted(((abs(v), f"L{la}H{h}", v) for la, row in enumerate(api["heads"]) for h, v in enumerate(row)))
    assert len(heads) == 20 and heads[::-1] == [label for _, label, _ in parts[::-1][:20]]
    assert shares[-1] == pytest.approx(100 * parts[-1][2] / total, abs=1e-6)  # the top bar: the largest |part|

    top = parts[-1][1]
    layer, head = (int(x) for x in top[1:].split("H"))
    bar = page.locator("#writes-dla .point").last.bounding_box()  # the top bar (under Plotly's drag layer)
    page.mouse.move(bar["x"] + bar["width"] / 2, bar["y"] + bar["height"] / 2)
    page.mouse.click(bar["x"] + bar["width"] / 2, bar["y"] + bar["height"] / 2)
    page.wait_for_selector(f"#dla-split-title:has-text('{top}')", timeout=60_000)
    page.wait_for_selector(f"#model-grid .head-thumb.selected[data-layer='{layer}'][data-head='{head}']")
    split = httpx.post(
        f"{api_url}/api/v1/runs/{run_id}/attribution", json={"split_heads": [[layer, head]]}, timeout=120
    ).json()["splits"][0]
    values = page.locator("#dla-split .src").evaluate_all("els => els.map(e => Number(e.dataset.value))")
    assert values == pytest.approx(split["sources"], rel=1e-5, abs=1e-9) and len(values) == 5
    summary = page.locator("#dla-split .dla-split-summary").inner_text()
    assert summary.startswith(f"{top} writes {split['part']:+.3f} into the logit")
    _no_serious_axe_violation(page)

    page.click("#model-grid .head-thumb[data-layer='3'][data-head='4']")  # a head of the grid
    page.wait_for_selector("#dla-split-title:has-text('L3H4')", timeout=60_000)
    assert page.locator("#dla-split .src").count() == 5
    assert page.console_errors == []


def test_the_value_weighted_map_kind_of_the_head_detail_is_kept_in_the_address(page, open_dash, smollm2_converted):
    open_dash(f"/?model=smollm2&text={quote(PROMPT)}&head=L3H4")
    page.wait_for_selector("#head-detail .gtitle:has-text('L3H4')", timeout=120_000)
    assert "value-weighted" not in _layout(page, "head-detail", "layout.title.text")
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
