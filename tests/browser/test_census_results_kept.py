"""Census jobs in Chromium (issue 26 item 9): past jobs say their model, data set, N and start time; a
finished job's link shows its result; starting a new job keeps the last result on screen (table and
figure) until the new one has its own. A MutationObserver records every state the table goes
through, so a blank moment between the two results is caught however fast the new job runs."""

import pytest

pytestmark = pytest.mark.browser

ROWS = "document.querySelectorAll('#census-table td.dash-cell').length"


def test_a_job_link_shows_its_result_and_a_new_job_keeps_it_until_its_own(open_dash, finished_job):
    job_id = finished_job("census", {"model": "minilm", "n": 2})
    page = open_dash(f"/census?job={job_id}&n=3")
    page.wait_for_function(f"{ROWS} > 0", timeout=120_000)
    page.wait_for_selector("#census-figure .gtitle:has-text('Census: mean shift_score')", timeout=60_000)
    row = page.locator(f"#census-past tr:has(code:text-is('{job_id}'))")
    row.wait_for(timeout=30_000)
    assert [row.locator(c).inner_text() for c in (".job-model", ".job-dataset", ".job-n")] == ["minilm", "sst2", "2"]
    assert row.locator(".job-started").inner_text()[:2] == "20"  # a date, not "queued ..."

    page.evaluate(
        f"""() => {{ window.rowCounts = []; window.titles = [];
        const note = () => {{ window.rowCounts.push({ROWS});
            const t = document.querySelector('#census-figure .gtitle'); window.titles.push(t ? t.textContent : ''); }};
        new MutationObserver(note).observe(document.getElementById('main'),
            {{childList: true, subtree: true, characterData: true}}); }}"""
    )
    page.click("#census-start")
    page.wait_for_function(f"location.search.includes('job=') && !location.search.includes('job={job_id}')")
    new_id = page.evaluate("new URLSearchParams(location.search).get('job')")
    page.wait_for_selector(f"#census-status:has-text('{new_id}'):has-text('done')", timeout=300_000)
    page.wait_for_selector(f"#census-past tr:has(code:text-is('{new_id}')) .job-n:text-is('3')", timeout=60_000)
    assert min(page.evaluate("window.rowCounts")) > 0, "the table was blank between the two results"
    assert all(t.startswith("Census: mean") for t in page.evaluate("window.titles")), "the figure was blank"
    assert page.console_errors == [], page.console_errors
