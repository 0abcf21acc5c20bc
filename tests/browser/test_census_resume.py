"""A cancelled Census job in Chromium (issue 26 item 9): it stays listed with a Resume button; Resume
brings back the page's progress bar and status line, which follow the job to its result.

The job is cancelled while it waits in the queue behind another job, so the cancel cannot lose a race
with the job's own end: with a running 60-sentence job, a loaded machine finished it before the Cancel
click reached the API, and with 300 a loaded machine needed more than five minutes after Resume. (The
API's tests cover a job cancelled mid-run resuming from its saved shards: tests/server/test_job_queue.py.)"""

import time

import httpx
import pytest

pytestmark = pytest.mark.browser

PROGRESS = "Number(document.querySelector('#census-progress').value)"
N = 40


def _status(api_url: str, job: str) -> str:
    return httpx.get(f"{api_url}/api/v1/jobs/{job}", timeout=30).json()["status"]


def _wait_for(api_url: str, job: str, states: tuple[str, ...], timeout: float = 300) -> str:
    """Poll the API until ``job`` is in one of ``states`` (a state, not a fixed time)."""
    deadline = time.monotonic() + timeout
    while (status := _status(api_url, job)) not in states:
        assert time.monotonic() < deadline, f"job {job} still {status}, waiting for {states}"
        time.sleep(0.2)
    return status


def test_a_cancelled_job_is_listed_and_resumes_to_its_result(open_dash, api_url):
    # a job that holds the (one) job worker, so the page's job waits in the queue
    blocker = httpx.post(
        f"{api_url}/api/v1/jobs",
        json={"kind": "census", "params": {"model": "minilm", "dataset": "sst2", "n": 300, "seed": 7}},
        timeout=30,
    ).json()["id"]
    _wait_for(api_url, blocker, ("running",), timeout=120)

    page = open_dash(f"/census?n={N}&dataset=sst2")
    page.wait_for_selector("#census-model :text('minilm')", timeout=30_000)
    page.click("#census-start")
    page.wait_for_function("new URLSearchParams(location.search).get('job')", timeout=30_000)
    job = page.evaluate("new URLSearchParams(location.search).get('job')")
    page.wait_for_selector(f"#census-status:has-text('{job}: queued')", timeout=60_000)
    page.wait_for_selector("#census-cancel:not([disabled])", timeout=60_000)
    page.click("#census-cancel")
    page.wait_for_selector(f"#census-status:has-text('{job}: cancelled')", timeout=120_000)
    assert page.evaluate(PROGRESS) < 1

    # free the worker, then Resume from the past-jobs list
    httpx.post(f"{api_url}/api/v1/jobs/{blocker}/cancel", timeout=30)
    _wait_for(api_url, blocker, ("cancelled", "done"), timeout=120)
    resume = page.get_by_role("button", name=f"resume job {job}")
    resume.wait_for(timeout=30_000)  # the past-jobs list (refreshed every few seconds) offers it
    resume.click()
    page.wait_for_selector(
        f"#census-status:has-text('{job}: queued'), #census-status:has-text('{job}: running'), "
        f"#census-status:has-text('{job}: done')",
        timeout=60_000,
    )
    page.wait_for_selector(f"#census-status:has-text('{job}: done')", timeout=300_000)
    page.wait_for_function(f"{PROGRESS} === 1", timeout=30_000)  # the progress bar followed it to the end
    assert page.locator("#census-status").inner_text().endswith(f"{N}/{N}")
    page.wait_for_selector("#census-figure .gtitle:has-text('Census: mean shift_score')", timeout=30_000)
    assert page.console_errors == []
