"""Real browser: the faithfulness page explains a marked sentence, then runs and exports a data-set table."""

import re

import pytest
from settle import JOB_WAIT_MS

pytestmark = pytest.mark.browser


@pytest.fixture
def faith_page(open_dash):
    page = open_dash("/faithfulness")
    page.wait_for_selector("#faith-model:has-text('minilm-sst2')", timeout=30_000)
    return page


def test_explain_a_marked_sentence(faith_page, texts):
    page = faith_page
    page.fill("#faith-text", "a [[gripping]] , [[funny]] film with a [[dull]] ending .")
    page.click("#faith-run")
    page.wait_for_function("document.querySelectorAll('.faith-row').length === 5", timeout=90_000)
    names = texts(page, ".faith-name")
    assert names == ["attention", "rollout", "attn_grad", "integrated_gradients", "random"]
    first_row = page.locator(".faith-row").first
    assert first_row.locator(".tok").evaluate_all("els => els.map(e => e.textContent)") == [
        "[CLS]",
        "a",
        "gripping",
        ",",
        "funny",
        "film",
        "with",
        "a",
        "dull",
        "ending",
        ".",
        "[SEP]",
    ]
    assert texts(page, ".faith-row >> nth=0 >> .tok.human") == ["gripping", "funny", "dull"]
    assert page.locator(".faith-row >> nth=0 >> .tok.hard").count() == 2  # ceil(0.2 * 10 words)
    page.wait_for_selector("#faith-curves .scatterlayer .trace", timeout=30_000)
    assert page.locator("#faith-curves .scatterlayer .trace").count() == 10  # 5 explainers x 2 panels
    table = page.locator("#faith-table").inner_text()
    assert "random (baseline)" in table and "token F1" in table and "AOPC comp." in table
    assert page.console_errors == []


def test_empty_text_shows_the_apis_message(faith_page):
    page = faith_page
    page.fill("#faith-text", "   ")
    page.click("#faith-run")
    page.wait_for_selector("#faith-error:has-text('empty')", timeout=30_000)
    assert not [e for e in page.console_errors if not re.search(r"status of 4\d\d", e)]


def test_dataset_job_shows_progress_table_and_exports_csv(faith_page):
    page = faith_page
    page.fill("#faith-n", "2")
    page.click("#faith-job-start")
    page.wait_for_selector("#faith-job-status:has-text('done: 2/2')", timeout=JOB_WAIT_MS)
    page.wait_for_selector("#faith-dataset-table:has-text('random (baseline)')", timeout=30_000)
    assert "accuracy" in page.locator("#faith-dataset-summary").inner_text()
    headers = page.evaluate(
        "() => [...document.querySelectorAll('#faith-dataset-table th .column-header-name')].map(e => e.textContent)"
    )
    assert headers[:2] == ["explainer", "n"]  # each row's count beside its intervals
    counts = page.evaluate(
        """() => [...document.querySelectorAll('#faith-dataset-table td[data-dash-column="n"]')]
        .map(e => e.textContent.trim())"""
    )
    assert counts and set(counts) <= {"1", "2"}
    with page.expect_download(timeout=30_000) as info:
        page.click("#faith-export")
    csv_text = open(info.value.path()).read()
    assert csv_text.splitlines()[0].startswith("explainer,n,comprehensiveness")
    assert len(csv_text.strip().splitlines()) == 6  # header + 5 explainers
    assert page.console_errors == []


def test_raw_attention_options_reach_the_api(faith_page):
    """Layer/heads/row controls go into the attention explainer's options: a layer out of range
    comes back as the API's message; a malformed head list is refused before any request."""
    page = faith_page
    page.fill("#faith-attn-heads", "0, x")
    page.click("#faith-run")
    page.wait_for_selector("#faith-error:has-text('comma-separated head numbers')", timeout=30_000)
    page.fill("#faith-attn-heads", "0,3")
    page.fill("#faith-attn-layer", "9")
    page.click("#faith-run")
    page.wait_for_selector("#faith-error:has-text('this model has 6 layers')", timeout=60_000)
    page.fill("#faith-attn-layer", "0")
    page.click("#faith-run")
    page.wait_for_function("document.querySelectorAll('.faith-row').length === 5", timeout=90_000)
    assert page.inner_text("#faith-error") == ""
    assert not [e for e in page.console_errors if not re.search(r"status of 4\d\d", e)]


def test_hatexplain_needs_the_opt_in_and_its_classifier(faith_page):
    page = faith_page
    page.click("#faith-dataset")
    page.get_by_role("option", name="HateXplain test").click()
    page.fill("#faith-n", "2")
    page.click("#faith-job-start")
    page.wait_for_selector("#faith-job-error:has-text('allow_offensive')", timeout=30_000)
    page.locator("#faith-allow-offensive input").check()
    page.click("#faith-job-start")  # still the SST-2 classifier: its labels do not fit
    page.wait_for_selector("#faith-job-status:has-text('predicts')", timeout=JOB_WAIT_MS)
    page.click("#faith-model")
    page.get_by_placeholder("Search").fill("hatexplain")
    page.get_by_role("option", name="minilm-hatexplain", exact=False).first.click()
    page.wait_for_selector("#faith-model:has-text('minilm-hatexplain')")
    page.click("#faith-job-start")
    page.wait_for_selector("#faith-job-status:has-text('done: 2/2')", timeout=JOB_WAIT_MS)
    page.wait_for_selector("#faith-dataset-table:has-text('random (baseline)')", timeout=30_000)
    assert "token F1" in page.locator("#faith-dataset-table").inner_text()
    assert not [e for e in page.console_errors if not re.search(r"status of 4\d\d", e)]


def test_a_link_explains_its_text_with_its_settings_and_the_table_fits(open_dash):
    """The address holds the text and settings (a link explains on open); unknown explainers are a
    note; each explainer keeps its colour on the sufficiency panel; the metric table fits its panel."""
    page = open_dash("/faithfulness?text=a+[[gripping]]+film+.&explainers=attention,random,bogus&k=0.3")
    page.wait_for_selector("#faith-table td", timeout=JOB_WAIT_MS)
    page.wait_for_selector("#faith-notes:has-text('Unknown explainer(s) bogus')", timeout=10_000)
    page.wait_for_function("location.search.includes('text=a+%5B%5Bgripping')", timeout=10_000)
    assert "explainers=attention%2Crandom" in page.url and "k=0.3" in page.url
    assert page.locator("#faith-k").input_value() == "0.3"
    curves = page.evaluate("document.querySelector('#faith-curves .js-plotly-plot').data")
    colour = {}
    for trace in curves:
        assert colour.setdefault(trace["name"], trace["line"]["color"]) == trace["line"]["color"], trace["name"]
    assert len(set(colour.values())) == len(colour) == 2
    fits = page.evaluate(
        """(() => { const c = document.querySelector('#faith-table .dash-spreadsheet-container');
        return c.scrollWidth <= c.clientWidth + 1; })()"""
    )
    assert fits, "the metric table is wider than its panel"
    assert page.console_errors == []
