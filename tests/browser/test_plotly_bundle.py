"""The dashboard draws with its vendored cartesian plotly.js bundle (frontend/assets/vendor): Dash's
own 4.8 MB bundle is never fetched (evaluating it was every page's longest main-thread task), and
every trace type the dashboard's code makes (``go.Heatmap(`` ... in frontend/) is registered in the
bundle the page runs, so a figure of a type the partial bundle lacks fails here, not in a user's browser."""

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

FRONTEND = Path(__file__).resolve().parents[2] / "frontend"
NOT_TRACES = {"Figure", "Frame", "Layout"}


def _trace_types() -> set[str]:
    found = set()
    for path in FRONTEND.rglob("*.py"):
        found |= set(re.findall(r"\bgo\.([A-Z][A-Za-z]+)\(", path.read_text()))
    return {name.lower() for name in found - NOT_TRACES}


def test_pages_run_the_vendored_bundle_with_every_trace_type_the_dashboard_draws(open_dash):
    used = _trace_types()
    assert {"heatmap", "scatter", "bar"} <= used  # the scan found the dashboard's figures
    page = open_dash("/")
    fetched = []
    page.on("request", lambda r: fetched.append(r.url))
    for path in ("/", "/structure"):
        page = open_dash(path)
        page.wait_for_selector(".js-plotly-plot .main-svg", state="attached", timeout=60_000)
        version, registered = page.evaluate(
            "() => [window.Plotly.version, Object.keys(window.Plotly.PlotSchema.get().traces)]"
        )
        assert version == "4.1.1"
        assert used <= set(registered), f"trace types the bundle lacks: {sorted(used - set(registered))}"
    assert any("vendor/plotly-cartesian.min.js" in u for u in fetched), fetched
    assert not [u for u in fetched if "package_data/plotly" in u]
    assert page.console_errors == []
