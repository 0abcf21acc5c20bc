"""No figure offers Plotly's cloud (issue 26 item 1): plotly.js 3 draws a "Share chart" button that
uploads the chart to Plotly Cloud unless the graph's config turns it off. Every page is walked and
every modebar button read; private data stays local."""

import re

import pytest

pytestmark = pytest.mark.browser

PAGES = [
    "/",
    "/vision",
    "/compare",
    "/structure",
    "/census",
    "/faithfulness",
    "/measure",
    "/interventions",
    "/circuits",
]  # /workspace draws no figure; tests/frontend/test_plot_config.py checks every page layout's graphs
CLOUD = re.compile(r"share|cloud|chart studio|upload", re.IGNORECASE)


@pytest.mark.parametrize("path", PAGES)
def test_no_figure_on_the_page_has_a_cloud_or_share_control(open_dash, path):
    page = open_dash(path)
    page.wait_for_selector("#main .panel", timeout=30_000)
    # the modebars exist in the DOM once plotly has drawn (shown on hover); wait for them all
    page.wait_for_selector(".js-plotly-plot .modebar-btn", state="attached", timeout=60_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.js-plotly-plot')].every(p => p.querySelector('.modebar'))",
        timeout=60_000,
    )
    buttons = page.locator(".modebar-btn").evaluate_all(
        "els => els.map(e => [e.getAttribute('data-title') || '', e.getAttribute('data-attr') || ''])"
    )
    assert buttons, "no modebar drawn: the check would be empty"
    assert any(t.startswith("Download plot") for t, _ in buttons)  # the modebar is real, just not the cloud
    clouds = sorted({t for t, a in buttons if CLOUD.search(t) or CLOUD.search(a)})
    assert clouds == [], f"{path}: cloud/share controls {clouds}"
    links = page.locator("a[href*='plot.ly'], a[href*='plotly.com'], a[href*='chart-studio']").count()
    assert links == 0
