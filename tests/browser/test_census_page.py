"""Census page in Chromium: start a small job, watch it finish, see the heatmap and table, export CSV."""

import pytest

pytestmark = pytest.mark.browser


def test_census_job_runs_from_the_browser(dash_page, dashboard_url, texts):
    page = dash_page
    page.goto(f"{dashboard_url}/census")
    page.wait_for_selector("#census-model .Select-value, #census-model :text('minilm')", timeout=30_000)
    page.fill("#census-n", "4")
    page.click("#census-start")
    page.wait_for_selector("#census-status:has-text('done')", timeout=120_000)
    page.wait_for_selector("#census-figure .gtitle:has-text('Census: mean shift_score')", timeout=30_000)
    assert page.locator("#census-table tbody tr").count() > 1
    with page.expect_download() as download:
        page.click("#census-csv")
    path = download.value.path()
    lines = open(path).read().splitlines()
    assert lines[0].startswith("head,layer") and len(lines) == 73
    assert page.console_errors == []


def test_cnn_probe_job_from_the_browser(dash_page, dashboard_url):
    page = dash_page
    page.goto(f"{dashboard_url}/census")
    page.wait_for_selector("#census-model .Select-value, #census-model :text('minilm')", timeout=30_000)
    page.click("#census-kind")
    page.get_by_role("option", name="probe (2-layer CNN)").click()
    page.fill("#census-n", "12")
    page.click("#census-start")
    page.wait_for_selector("#census-status:has-text('done')", timeout=120_000)
    page.wait_for_selector("#census-figure .gtitle:has-text('Probe (cnn)')", timeout=30_000)
    bars = page.evaluate("() => document.querySelector('#census-figure .js-plotly-plot').data[0]")
    assert bars["x"] == list(range(6)) and all(0 <= v <= 1 for v in bars["y"])
    assert page.console_errors == []
