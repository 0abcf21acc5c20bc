"""Past jobs on the Census and Faithfulness pages, in Chromium: listed from the API's database with
their status, still there after a reload, downloadable, and an ``interrupted`` job (as a dead API
leaves it: marked at start-up by the same code) resumed with its Resume button until it is done."""

from __future__ import annotations

import json
import time
import uuid

import httpx
import pytest
from settle import JOB_WAIT_MS

from attnscope.server.config import Settings
from attnscope.server.db.engine import open_database
from attnscope.server.jobs.records import JobRecords

pytestmark = pytest.mark.browser


def _interrupted_job(kind: str, params: dict, total: int) -> str:
    """A job left ``running`` by a process that died, then marked ``interrupted`` (what start-up does),
    in the database of the tests' API (``ATTNSCOPE_STATE_DIR``)."""
    settings = Settings()  # the tests' API reads the same ATTNSCOPE_STATE_DIR (tests/conftest.py)
    db = open_database(settings.database_url, settings.state_dir)
    try:
        records = JobRecords(db)
        job_id = uuid.uuid4().hex[:16]
        records.create(job_id, kind, params)
        assert records.start(job_id, "in-process@a-dead-process", total, 1, 0)
        assert records.interrupt(job_id)
        return job_id
    finally:
        db.close()


def _row(page, job_id: str):
    return page.locator(f"tr:has(code:text-is('{job_id}'))")


def _wait_done(api_url: str, job_id: str, timeout: float = 600) -> dict:
    """Poll the job until it leaves queued/running; ``timeout`` bounds a hang only (a loaded machine is slow)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        job = httpx.get(f"{api_url}/api/v1/jobs/{job_id}", timeout=10).json()
        if job["status"] not in ("queued", "running"):
            return job
        time.sleep(0.2)
    raise AssertionError(job)


def test_census_page_lists_jobs_resumes_an_interrupted_one_and_downloads_it(open_dash, api_url):
    params = {"model": "minilm", "dataset": "sst2", "n": 3, "seed": 11}
    job_id = _interrupted_job("census", params, 3)
    page = open_dash("/census")
    row = _row(page, job_id)
    row.wait_for(timeout=30_000)
    assert row.locator(".job-status").inner_text() == "interrupted"
    assert "resume" in row.locator(".job-status").get_attribute("title")
    page.reload()  # the list comes from the database, not from the page's memory
    row = _row(page, job_id)
    row.get_by_role("button", name=f"resume job {job_id}").click()
    page.wait_for_selector("#census-status:has-text('done')", timeout=JOB_WAIT_MS)
    page.wait_for_selector("#census-figure .gtitle:has-text('Census: mean shift_score')", timeout=30_000)
    row = _row(page, job_id)
    page.wait_for_function(
        f"() => [...document.querySelectorAll('tr')].some(r => r.textContent.includes('{job_id}') "
        "&& r.querySelector('.job-status').textContent === 'done')",
        timeout=30_000,
    )
    with page.expect_download() as download:
        _row(page, job_id).get_by_role("button", name=f"download CSV of job {job_id}").click()
    lines = open(download.value.path()).read().splitlines()
    assert lines[0].startswith("head,layer") and len(lines) == 73
    result = httpx.get(f"{api_url}/api/v1/jobs/{job_id}/result", timeout=10).json()
    assert result["n"] == 3 and result["seed"] == 11
    assert page.console_errors == []


def test_faithfulness_page_lists_past_jobs_after_a_reload_and_shows_one(open_dash, api_url):
    params = {"dataset": "sst2", "n": 2, "explainers": ["random"]}
    r = httpx.post(f"{api_url}/api/v1/jobs", json={"kind": "faithfulness", "params": params}, timeout=10)
    done_id = r.json()["id"]
    assert _wait_done(api_url, done_id)["status"] == "done"
    waiting_id = _interrupted_job("faithfulness", {**params, "n": 1}, 1)
    page = open_dash("/faithfulness")
    _row(page, done_id).wait_for(timeout=30_000)
    page.reload()
    _row(page, done_id).wait_for(timeout=30_000)
    assert _row(page, waiting_id).get_by_role("button", name=f"resume job {waiting_id}").count() == 1
    _row(page, done_id).get_by_role("button", name=f"show job {done_id}").click()
    page.wait_for_selector("#faith-dataset-table td:has-text('random')", timeout=60_000)
    with page.expect_download() as download:
        _row(page, done_id).get_by_role("button", name=f"download JSON of job {done_id}").click()
    body = json.loads(open(download.value.path()).read())
    assert body["n"] == 2 and [row["explainer"] for row in body["rows"]] == ["random"]
    assert page.console_errors == []
