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
