"""The token-centred view in Chromium (issue 26 item 5): hovering a token shows its weights as
coloured tokens (what it reads, for the head view's heads), a click locks the view against further
hovering, the keyboard does the same (one tab stop, arrow keys, Enter, Escape), the other direction
shows who reads it, the locked token is in the address and a pasted link reopens it; the colours are
the API's weights; axe finds nothing critical or serious in the panel."""

import httpx
import numpy as np
import pytest
from axe_harness import axe_violations, install_axe, split_dash_own
from settle import settle, track

pytestmark = pytest.mark.browser

TEXT = "The cat sat on the mat."  # [CLS] the cat sat on the mat . [SEP]: 9 tokens
TOKENS = "#token-text .tv-tok"


def _shown(page) -> tuple[int | None, bool]:
    """(the token whose weights are drawn, whether it is locked)."""
    focus = page.evaluate(
        "() => { const s = document.querySelector('#token-text .tv-focus'); return s ? +s.dataset.i : null; }"
    )
    return focus, page.locator("#token-text .tv-locked").count() == 1


def _wait_shown(page, i: int, locked: bool) -> None:
    cls = "tv-locked" if locked else "tv-focus"
    page.wait_for_selector(f"#token-text .tv-tok.{cls}[data-i='{i}']", timeout=60_000)
    if not locked:
        page.wait_for_selector("#token-text .tv-locked", state="detached", timeout=60_000)


def test_hover_click_and_keys_show_and_lock_a_tokens_weights(page, open_dash, api_url):
    install_axe(page)
    open_dash(f"/?model=minilm&text={TEXT.replace(' ', '+')}")
    page.wait_for_function("document.querySelectorAll('#model-grid .head-thumb').length === 72", timeout=60_000)
    page.locator("#token-text").scroll_into_view_if_needed()  # the tokens are drawn once near the screen
    page.wait_for_function(f"document.querySelectorAll('{TOKENS}').length === 9", timeout=60_000)
    page.wait_for_function("location.search.includes('run=')", timeout=120_000)  # the address syncs after the grid
    run_id = page.evaluate("() => new URLSearchParams(location.search).get('run')")
    assert page.locator(TOKENS).nth(2).text_content() == "cat"

    # hover "cat": its row of L0H0 (the head view's head), strongest first in the summary
    page.locator(TOKENS).nth(2).hover()
    _wait_shown(page, 2, locked=False)
    page.wait_for_selector("#token-summary:has-text('cat@2 reads most')", timeout=60_000)
    assert "layer 0, head H0" in page.inner_text("#token-summary")
    row = httpx.get(f"{api_url}/api/v1/runs/{run_id}/attention", params={"layer": 0, "head": 0, "rows": "2:3"})
    want = np.array(row.json()["weights"][0])
    colours = page.locator(TOKENS).evaluate_all("els => els.map(e => e.title)")
    drawn = np.array([float(t.split("·")[1]) for t in colours])
    np.testing.assert_allclose(drawn, want, atol=1e-3)  # read as float16, drawn to 4 places

    # a click locks it: hovering another token no longer changes the view
    track(page)
    page.locator(TOKENS).nth(3).click()
    _wait_shown(page, 3, locked=True)
    page.wait_for_function("location.search.includes('token=3')", timeout=30_000)
    page.locator(TOKENS).nth(5).hover()
    settle(page)
    assert _shown(page) == (3, True)

    # the keyboard: one tab stop (the locked token), arrow keys move, Enter locks, Escape unlocks
    assert page.locator(f"{TOKENS}[tabindex='0']").count() == 1
    page.locator(TOKENS).nth(3).focus()
    page.keyboard.press("ArrowRight")
    assert page.evaluate("() => document.activeElement.dataset.i") == "4"
    page.keyboard.press("Enter")
    _wait_shown(page, 4, locked=True)
    assert page.locator(TOKENS).nth(4).get_attribute("aria-pressed") == "true"
    page.keyboard.press("Escape")
    _wait_shown(page, 4, locked=False)
    page.wait_for_function("!location.search.includes('token=')", timeout=30_000)

    # the other direction: who reads "on" (a column of the map)
    page.locator(TOKENS).nth(4).click()
    _wait_shown(page, 4, locked=True)
    page.locator("#token-dir").get_by_label("to the token (who reads it)").check()
    page.wait_for_selector("#token-summary:has-text('on@4 is read most by')", timeout=60_000)
    page.wait_for_function("location.search.includes('token_dir=to')", timeout=30_000)
    ours, _ = split_dash_own(axe_violations(page))
    assert ours == [], "\n".join(f"{v['id']} ({v['impact']}): {v['help']} at {v['targets']}" for v in ours)

    fresh = page.context.browser.new_page(bypass_csp=True, viewport={"width": 1400, "height": 1000})
    fresh.goto(page.url)
    fresh.wait_for_selector("#token-summary:has-text('on@4 is read most by')", timeout=60_000)
    fresh.locator("#token-text").scroll_into_view_if_needed()
    assert fresh.locator("#token-text .tv-locked").get_attribute("data-i") == "4"
    fresh.close()
    assert page.console_errors == []
