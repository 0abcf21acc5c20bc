"""Real browser: the measure page's particle view (token hover, depth slider) and Lipschitz panel."""

import pytest

pytestmark = pytest.mark.browser

TEXT = "The cat sat on the mat."
TOKENS = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"]


@pytest.fixture
def measure_page(open_dash):
    page = open_dash("/measure")
    page.wait_for_selector("#measure-status:has-text('API')", timeout=30_000)
    page.fill("#measure-text", TEXT)
    page.click("#measure-run-button")
    page.wait_for_function(
        f"document.querySelectorAll('#particle-view .scatterlayer .trace:last-child .point').length === {len(TOKENS)}",
        timeout=60_000,
    )
    return page


def plot_data(page, graph_id):
    return page.evaluate(f"() => document.querySelector('#{graph_id} .js-plotly-plot').data")


def test_particle_view_shows_every_token_with_a_hover(measure_page):
    page = measure_page
    points = plot_data(page, "particle-view")[1]
    assert points["text"] == TOKENS
    box = page.locator("#particle-view .scatterlayer .trace:last-child .point").nth(2).bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_selector("#particle-view .hoverlayer .hovertext", timeout=10_000)
    hover = page.locator("#particle-view .hoverlayer .hovertext").first.text_content()
    assert "cat" in hover and "token 2" in hover and "embeddings" in hover
    # the depth slider has one step per depth and moving it moves the points
    assert page.locator("#particle-view .slider-label-group").count() == 7
    before = page.locator("#particle-view .scatterlayer .trace:last-child .point").nth(2).get_attribute("transform")
    tick = page.locator("#particle-view .slider-tick-rect").nth(6).bounding_box()  # the rail takes the click
    page.mouse.click(tick["x"] + tick["width"] / 2, tick["y"] + tick["height"] / 2)
    page.wait_for_selector("#particle-view .slider-label:has-text('depth: layer 5')", timeout=10_000)
    page.wait_for_function(
        "b => document.querySelectorAll('#particle-view .scatterlayer .trace:last-child .point')[2]"
        ".getAttribute('transform') !== b",
        arg=before,
        timeout=10_000,
    )
    bars = plot_data(page, "w1-profile")[0]
    assert len(bars["y"]) == 6 and min(bars["y"]) > 0
    assert "Maximum-entropy check" in page.locator("#maxent-summary").inner_text()
    assert page.console_errors == []


def test_lipschitz_panel_shows_bound_above_estimate_for_every_layer(measure_page):
    page = measure_page
    page.click("#lipschitz-button")
    # progress per layer while it computes (was: 9 s with no sign of life)
    page.wait_for_selector("#lipschitz-status:has-text('of 6')", timeout=30_000)
    page.wait_for_selector("#lipschitz-panel .gtitle:has-text('DERIVED bound vs estimate')", timeout=120_000)
    assert page.locator("#lipschitz-status").inner_text() == "6 of 6 layers done"
    bound, estimate = plot_data(page, "lipschitz-panel")
    assert bound["x"] == [f"L{l}" for l in range(6)]
    assert all(e <= b for e, b in zip(estimate["y"], bound["y"]))
    assert min(estimate["y"]) > 0  # L_hat > 1 on every MiniLM layer
    assert page.locator("#lipschitz-panel .legendtext").count() == 2
    assert page.console_errors == []


def test_ha_shared_block_shows_the_bound_along_its_orbit(open_dash):
    """An HA model: the shared block is the default, its iteration curve comes with the DERIVED bound
    panel (L_t against the observed step ratios) and the contraction condition in words."""
    from attnscope.models.zoo.manifest import read_manifest

    if read_manifest("text-ha") is None:
        pytest.skip("text-ha not trained")
    page = open_dash("/measure")
    page.wait_for_selector("#measure-status:has-text('API')", timeout=30_000)
    page.click("#measure-model")
    page.get_by_placeholder("Search").fill("text-ha")
    page.get_by_role("option", name="text-ha", exact=False).first.click()
    page.wait_for_selector("#measure-model:has-text('text-ha')")
    page.fill("#measure-text", "a slow , joyless film")
    page.click("#measure-run-button")
    page.wait_for_selector("#fixed-point-block:has-text('shared block (HA)')", timeout=60_000)
    page.click("#fixed-point-button")
    page.wait_for_selector("#fixed-point-summary:has-text('Contraction condition')", timeout=60_000)
    summary = page.inner_text("#fixed-point-summary")
    assert "not met" in summary and "drifts" in summary and "DERIVED" in summary
    traces = plot_data(page, "fixed-point-view")
    assert [t["name"] for t in traces] == [
        "W1 between iterates",
        "W1, standardised tokens",
        "log10 L_t (DERIVED bound)",
        "log10 observed step ratio",
    ]
    bound, observed = traces[2]["y"], traces[3]["y"]
    assert len(bound) == 29 and all(o is None or o <= b for o, b in zip(observed, bound))
    assert page.console_errors == []


def test_measure_run_and_dims_live_in_the_address(open_dash):
    page = open_dash(f"/measure?model=minilm&text={TEXT.replace(' ', '+')}&dims=3&bogus=1")
    page.wait_for_selector("#measure-url-problems:has-text(\"Unknown address parameter 'bogus'\")", timeout=30_000)
    three_d = (
        "((document.querySelector('#particle-view .js-plotly-plot') || {}).data || [])"
        ".some(t => t.type === 'scatter3d')"
    )
    page.wait_for_function(three_d, timeout=60_000)  # the 3D view the address asked for
    page.wait_for_function("location.search.includes('run=') && location.search.includes('dims=3')", timeout=30_000)
    link = page.url
    page.reload()
    page.wait_for_function(three_d, timeout=60_000)
    assert page.url == link
    assert page.locator("#measure-text").input_value() == TEXT
    assert page.console_errors == []
