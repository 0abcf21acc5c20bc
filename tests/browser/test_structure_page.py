"""Structure page in Chromium: the shift grid, a clicked head's kernel, evolution and rollout."""

import pytest

pytestmark = pytest.mark.browser


def test_structure_page_shows_shift_heads_kernel_and_rollout(dash_page, texts):
    page = dash_page
    page.fill("#text-input", "The cat sat on the mat and looked at the dog.")
    page.click("#run-button")
    page.wait_for_function("document.querySelectorAll('.head-thumb').length === 72", timeout=60_000)
    assert page.locator("#model-grid .head-thumb[title^='L0H2'] .badge").text_content() == "prev"
    page.click("a.nav-link:has-text('Structure')")
    page.wait_for_selector("#shift-grid .gtitle:has-text('Shift heads')", timeout=30_000)
    # the default kernel is the strongest shift head: L0H2, peaked at offset -1
    page.wait_for_selector("#kernel-figure .gtitle:has-text('L0H2')", timeout=30_000)
    page.wait_for_selector("#evolution-figure .gtitle:has-text('Sharpening')", timeout=30_000)
    page.wait_for_selector("#importance-figure .gtitle", timeout=30_000)
    assert "rollout" in texts(page, "#importance-figure .legendtext")
    assert "flow" in texts(page, "#importance-figure .legendtext")
    page.wait_for_selector("#importance-note:has-text('through layer 5')", timeout=30_000)
    last = page.evaluate("() => document.querySelector('#importance-figure .js-plotly-plot').data[0].y")
    page.click("#importance-layer")
    page.get_by_role("option", name="layer 0", exact=True).click()
    page.wait_for_selector("#importance-note:has-text('through layer 0')", timeout=30_000)
    first = page.evaluate("() => document.querySelector('#importance-figure .js-plotly-plot').data[0].y")
    assert len(first) == len(last) and first != last
    assert page.console_errors == []


def test_structure_state_lives_in_the_address(open_dash, dashboard_url):
    text = "The cat sat on the mat and looked at the dog."
    page = open_dash(f"/structure?model=minilm&text={text.replace(' ', '+')}&k=4&head=L1H3&through=2")
    page.wait_for_selector("#kernel-figure .gtitle:has-text('L1H3')", timeout=60_000)
    page.wait_for_selector("#importance-note:has-text('through layer 2')", timeout=30_000)
    assert page.input_value("#shift-k") == "4"
    page.wait_for_function("location.search.includes('run=')", timeout=10_000)
    url = page.url
    assert "k=4" in url and "head=L1H3" in url and "through=2" in url and "model=minilm" in url
    # a pasted link in a fresh page (no session) reopens the same view
    fresh = page.context.new_page()
    fresh.goto(url)
    fresh.wait_for_selector("#kernel-figure .gtitle:has-text('L1H3')", timeout=60_000)
    fresh.wait_for_selector("#importance-note:has-text('through layer 2')", timeout=30_000)
    assert "Run " in fresh.locator("#structure-run").text_content()
    # reload keeps it
    page.reload()
    page.wait_for_selector("#kernel-figure .gtitle:has-text('L1H3')", timeout=60_000)
    assert page.console_errors == []


def test_structure_bad_address_values_are_a_message(open_dash):
    page = open_dash("/structure?x=1&k=many&run=nope")
    page.wait_for_selector("#structure-url-problems:has-text(\"Unknown address parameter 'x'\")", timeout=30_000)
    assert "k='many' must be a whole number" in page.locator("#structure-url-problems").text_content()
    page.wait_for_selector("#structure-error:has-text('Run nope is not known')", timeout=30_000)
    assert page.locator("#structure-retry").is_visible()
    assert page.console_errors == []
