"""Census in Chromium (issue 26 item 12): an N beyond the data set's size is said on the status line
as soon as the job has started (both numbers), then the job is cancelled (it need not run to the end)."""

import re

import pytest

pytestmark = pytest.mark.browser


def test_an_n_beyond_the_data_set_says_so(open_dash):
    page = open_dash("/census?n=5000&dataset=sst2")
    page.wait_for_selector("#census-model :text('minilm')", timeout=30_000)
    page.click("#census-start")
    page.wait_for_selector("#census-status:has-text('N = 5000 asked, but the sst2 data set has')", timeout=120_000)
    line = page.locator("#census-status").inner_text()
    m = re.search(r"/(\d+) · N = 5000 asked, but the sst2 data set has (\d+) examples: the job uses all (\d+)", line)
    assert m and m[1] == m[2] == m[3] and int(m[2]) < 5000, line
    page.wait_for_selector("#census-cancel:not([disabled])", timeout=30_000)
    page.click("#census-cancel")
    page.wait_for_selector("#census-status:has-text('cancelled')", timeout=120_000)
    assert page.console_errors == []
