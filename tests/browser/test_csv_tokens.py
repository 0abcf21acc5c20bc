"""The head detail's CSV export in Chromium (issue 26 item 12): its header row and first column are
the run's tokens (with their positions), not cell indices."""

import csv
import io

import pytest

pytestmark = pytest.mark.browser

DETAIL = "((document.querySelector('#head-detail .js-plotly-plot') || {}).data || [])[0]"
TOKENS = ["[CLS] (0)", "the (1)", "cat (2)", "sat (3)", ". (4)", "[SEP] (5)"]


def test_the_head_detail_csv_has_tokens_as_headers(dash_page):
    page = dash_page
    page.fill("#text-input", "The cat sat.")
    page.click("#run-button")
    page.wait_for_function(
        "new URLSearchParams(location.search).get('text') === 'The cat sat.'", timeout=60_000
    )  # the new run is shown
    page.wait_for_function(
        f"document.querySelectorAll('#head-detail .ytick').length === 6 && ({DETAIL} || {{}}).type === 'heatmap'",
        timeout=60_000,
    )
    with page.expect_download(timeout=30_000) as info:
        page.get_by_role("button", name="save head-detail as CSV").click()
    rows = list(csv.reader(io.StringIO(open(info.value.path()).read())))
    assert rows[0] == [""] + TOKENS
    assert [r[0] for r in rows[1:]] == TOKENS
    weights = [[float(v) for v in r[1:]] for r in rows[1:]]
    assert all(abs(sum(r) - 1) < 1e-3 for r in weights)  # each query row of a head's map sums to 1
    assert page.console_errors == []
