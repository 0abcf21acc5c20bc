"""A cancelled Census job in Chromium (issue 26 item 9): it stays listed with a Resume button; Resume
brings back the page's progress bar and status line, which follow the job from its saved shards to
its result."""

import pytest

pytestmark = pytest.mark.browser

PROGRESS = "Number(document.querySelector('#census-progress').value)"


def test_a_cancelled_job_is_listed_and_resumes_to_its_result(open_dash):
    page = open_dash("/census?n=60&dataset=sst2")
    page.wait_for_selector("#census-model :text('minilm')", timeout=30_000)
    page.click("#census-start")
    page.wait_for_function("new URLSearchParams(location.search).get('job')", timeout=30_000)
    job = page.evaluate("new URLSearchParams(location.search).get('job')")
    page.wait_for_selector("#census-cancel:not([disabled])", timeout=60_000)
    page.click("#census-cancel")
    page.wait_for_selector(f"#census-status:has-text('{job}: cancelled')", timeout=120_000)
    stopped = page.evaluate(PROGRESS)
    assert stopped < 1
    resume = page.get_by_role("button", name=f"resume job {job}")
    resume.wait_for(timeout=30_000)  # the past-jobs list (refreshed every few seconds) offers it
    resume.click()
    page.wait_for_selector(f"#census-status:has-text('{job}: running'), #census-status:has-text('{job}: done')",
                           timeout=60_000)  # fmt: skip
    page.wait_for_selector(f"#census-status:has-text('{job}: done')", timeout=300_000)
    page.wait_for_function(f"{PROGRESS} === 1", timeout=30_000)  # the progress bar followed it to the end
    assert page.locator("#census-status").inner_text().endswith("60/60")
    page.wait_for_selector("#census-figure .gtitle:has-text('Census: mean shift_score')", timeout=30_000)
    assert page.console_errors == []
