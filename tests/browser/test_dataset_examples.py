"""A data-set result's examples open in Explore (issue 26 item 11): Census (a census job) and
Faithfulness (a data-set job) list the result's examples ten at a time with their text, as the API's
``GET /datasets/{name}/examples/{key}`` gives it, each with a link whose address runs that text on
the result's model; following one, Explore holds the text and draws the run's grid, and its edit
links to Compare (``test_counterfactual_link.py`` follows that one). The Interventions data-set
panel's table is checked in ``test_interventions_dataset.py``. Jobs are made through the API and
waited for as states; every wait in the page is for a state."""

from urllib.parse import parse_qs, urlparse

import httpx
import pytest

pytestmark = pytest.mark.browser

ROWS = "#{p}-examples tbody tr"


def _example(api_url: str, dataset: str, key) -> dict:
    r = httpx.get(f"{api_url}/api/v1/datasets/{dataset}/examples/{key}", timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def test_a_census_example_opens_in_explore(open_dash, api_url, finished_job):
    job_id = finished_job("census", {"model": "minilm", "dataset": "sst2", "n": 12})
    ids = httpx.get(f"{api_url}/api/v1/jobs/{job_id}/result", timeout=60).json()["example_ids"]
    page = open_dash(f"/census?job={job_id}")
    rows = page.locator(ROWS.format(p="census"))
    page.wait_for_selector("#census-examples-status:has-text('examples 1–10 of 12')", timeout=120_000)
    assert rows.count() == 10
    assert [rows.nth(i).locator("td").first.inner_text() for i in range(10)] == ids[:10]
    page.click("#census-examples-next")
    page.wait_for_selector("#census-examples-status:has-text('examples 11–12 of 12')", timeout=60_000)
    assert rows.count() == 2 and page.locator("#census-examples-next").is_disabled()
    example = _example(api_url, "sst2", ids[11])
    link = rows.nth(1).get_by_role("link", name=f"open example {ids[11]} in Explore")
    assert parse_qs(urlparse(link.get_attribute("href")).query) == {"model": ["minilm"], "text": [example["text"]]}
    assert rows.nth(1).locator("td").nth(1).inner_text() == example["label_name"]
    link.click()
    page.wait_for_url("**/?model=**", timeout=30_000)
    page.wait_for_function("document.querySelectorAll('.head-thumb').length === 72", timeout=120_000)
    assert page.input_value("#text-input") == example["text"]
    page.fill("#text-input", example["text"] + " Not really.")  # the counterfactual edit links to Compare
    page.locator("#explore-counterfactual").wait_for(state="visible", timeout=30_000)
    assert page.console_errors == []


def test_a_faithfulness_example_opens_in_explore_and_a_cancelled_job_keeps_the_table(open_dash, api_url, finished_job):
    params = {"model": "minilm-sst2", "dataset": "sst2", "n": 3, "start": 5, "explainers": ["random"]}
    job_id = finished_job("faithfulness", params)
    page = open_dash(f"/faithfulness?job={job_id}")
    rows = page.locator(ROWS.format(p="faith"))
    page.wait_for_selector("#faith-examples-status:has-text('examples 1–3 of 3')", timeout=120_000)
    example = _example(api_url, "sst2", 5)  # the faithfulness result names examples by index
    assert rows.first.locator("td").first.inner_text() == example["id"]
    href = rows.first.get_by_role("link").get_attribute("href")
    assert parse_qs(urlparse(href).query) == {"model": ["minilm-sst2"], "text": [example["text"]]}
    table = page.locator("#faith-dataset-table td.dash-cell")
    assert table.count() > 0
    # a job cancelled before its result leaves the last one (table, examples) on screen (was: cleared)
    page.fill("#faith-n", "500")
    page.click("#faith-job-start")
    page.wait_for_function(f"location.search.includes('job=') && !location.search.includes('job={job_id}')")
    new_id = page.evaluate("new URLSearchParams(location.search).get('job')")
    assert httpx.post(f"{api_url}/api/v1/jobs/{new_id}/cancel", timeout=60).status_code == 200
    page.wait_for_selector("#faith-job-status:has-text('cancelled')", timeout=120_000)
    assert table.count() > 0 and rows.count() == 3
    with page.expect_download() as download:  # the export is the shown result's
        page.click("#faith-export")
    assert download.value.suggested_filename == f"attnscope-faithfulness-{job_id}.csv"
    rows.first.get_by_role("link").click()
    page.wait_for_url("**/?model=**", timeout=30_000)
    page.wait_for_function("document.querySelectorAll('.head-thumb').length === 72", timeout=120_000)
    assert page.input_value("#text-input") == example["text"]
    assert page.console_errors == []
