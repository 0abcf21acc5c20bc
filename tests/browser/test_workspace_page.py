"""The workspace in Chromium: runs made in another session are listed; one is renamed and one
pinned (pinned first), two are compared from the list, one is opened in Explore, and one is deleted
after a confirmation that Cancel can refuse. Every step waits for the state it needs."""

import uuid

import httpx
import pytest
from axe_harness import axe_violations, install_axe, split_dash_own
from settle import settle, track

pytestmark = pytest.mark.browser

GRID = "document.querySelectorAll('#compare-grid .head-thumb').length === 72"


def _row(run_id: str) -> str:
    return f"#workspace-table tr[data-run='{run_id}']"


def _first_row_is(run_id: str) -> str:
    return f"(document.querySelector('#workspace-table tbody tr') || {{dataset: {{}}}}).dataset.run === '{run_id}'"


def test_runs_are_named_pinned_compared_opened_and_deleted(page, open_dash, api_url, browser):
    word = "ws" + uuid.uuid4().hex[:8]  # this test's runs only (the session's database holds others)
    made = []
    for text in (f"The cat {word} sat on the mat.", f"The dog {word} sat on the mat."):
        r = httpx.post(f"{api_url}/api/v1/runs", json={"model": "minilm", "text": text}, timeout=120)
        assert r.status_code == 201, r.text
        made.append(r.json())
    cat, dog = made  # made over HTTP: another session than this browser's

    install_axe(page)
    page = open_dash(f"/workspace?q={word}")
    track(page)  # the pages below are reached by in-app links: one document, its Dash requests counted
    page.wait_for_selector(_row(cat["id"]), timeout=60_000)
    page.wait_for_selector(_row(dog["id"]))
    page.wait_for_function(_first_row_is(dog["id"]))  # newest first
    assert page.locator(f"{_row(cat['id'])} td.num").inner_text() == str(len(cat["tokens"]))
    assert "minilm" in page.locator(_row(cat["id"])).inner_text()
    page.wait_for_selector("#workspace-count:has-text('Runs 1–2 of 2')")
    page.wait_for_selector(f"{_row(cat['id'])} [role=listbox][aria-label^='tick']")  # named by its cell's title
    ours, _ = split_dash_own(axe_violations(page))
    assert ours == [], "\n".join(f"{v['id']} ({v['impact']}): {v['help']} at {v['targets']}" for v in ours)

    page.fill(f"{_row(cat['id'])} .ws-name input", "the cat one")
    page.click(f"{_row(cat['id'])} .ws-name button")
    page.wait_for_selector("#workspace-message:has-text('Renamed')", timeout=30_000)
    page.click(f"{_row(cat['id'])} .ws-pin")
    page.wait_for_selector(f"{_row(cat['id'])}.pinned .ws-pin[aria-pressed='true']", timeout=30_000)
    page.wait_for_function(_first_row_is(cat["id"]))  # pinned first
    listed = httpx.get(f"{api_url}/api/v1/runs", params={"q": word}).json()["items"]
    assert [(s["id"], s["name"], s["pinned"]) for s in listed] == [
        (cat["id"], "the cat one", True),
        (dog["id"], None, False),
    ]

    other = browser.new_context(viewport={"width": 1400, "height": 1000})  # another browser session
    fresh = other.new_page()
    fresh.goto(page.url)
    fresh.wait_for_selector(f"{_row(cat['id'])}.pinned", timeout=60_000)
    assert fresh.locator(f"{_row(cat['id'])} .ws-name input").input_value() == "the cat one"
    other.close()

    page.check(f"{_row(cat['id'])} .ws-select input")
    page.wait_for_selector("#workspace-compare-hint:has-text('Tick two runs')")
    page.check(f"{_row(dog['id'])} .ws-select input")
    page.wait_for_selector("#workspace-compare.run-button", timeout=30_000)
    page.click("#workspace-compare")
    page.wait_for_function(GRID, timeout=120_000)
    about = page.locator("#compare-about").inner_text()
    assert cat["id"] in about and dog["id"] in about

    settle(page)  # a callback still running when its page goes logs Dash's 'running component not found'
    page.go_back()
    page.wait_for_selector(_row(cat["id"]), timeout=60_000)
    page.click(f"{_row(cat['id'])} .ws-open")
    page.wait_for_function("document.querySelectorAll('#model-grid .head-thumb').length === 72", timeout=120_000)
    assert f"run={cat['id']}" in page.url

    settle(page)  # a callback still running when its page goes logs Dash's 'running component not found'
    page.go_back()
    page.wait_for_selector(_row(dog["id"]), timeout=60_000)
    page.click(f"{_row(dog['id'])} .ws-delete")
    page.wait_for_selector("#workspace-confirm:not(.empty):has-text('cannot be undone')", timeout=30_000)
    assert dog["id"] in page.locator("#workspace-confirm-text").inner_text()
    page.click("#workspace-confirm-no")
    page.wait_for_selector("#workspace-message:has-text('Nothing deleted')")
    assert page.locator("#workspace-confirm").get_attribute("class") == "notice empty"
    assert httpx.get(f"{api_url}/api/v1/runs/{dog['id']}").status_code == 200
    page.click(f"{_row(dog['id'])} .ws-delete")
    page.click("#workspace-confirm-yes")
    page.wait_for_selector(f"#workspace-message:has-text('Deleted run {dog['id']}')", timeout=30_000)
    page.wait_for_selector(_row(dog["id"]), state="detached", timeout=30_000)
    assert httpx.get(f"{api_url}/api/v1/runs/{dog['id']}").status_code == 404
    page.wait_for_selector("#workspace-count:has-text('of 1')")
    assert page.console_errors == [], page.console_errors
