"""Explore in Chromium (issue 26 items 4 and 5): the head view follows the selected head, and the
"hide" switch blanks the special tokens' columns of the head detail and the head view's lines to
them, renormalises every row over the rest, says so on both figures and keeps the choice in the
address (a pasted link reopens it)."""

import pytest

pytestmark = pytest.mark.browser

TEXT = "The cat sat on the mat."  # [CLS] the cat sat on the mat . [SEP]: 9 tokens, specials 0 and 8
N_HEADS = "document.querySelectorAll('#model-grid .head-thumb').length === 72"
DETAIL = "document.querySelector('#head-detail .js-plotly-plot')"
VIEW = "document.querySelector('#head-view .js-plotly-plot')"


def _legend(page) -> list[str]:
    return page.evaluate(f"() => {VIEW}.data.filter(t => t.showlegend).map(t => t.name)")


def _detail_rows(page) -> list[list]:
    """The head detail's drawn cells, row by row (NaN as None)."""
    return page.evaluate(f"() => {DETAIL}.calcdata[0][0].z.map(r => Array.from(r, v => Number.isFinite(v) ? v : null))")


def test_the_head_view_follows_the_head_and_hiding_specials_renormalises_the_rest(open_dash):
    page = open_dash(f"/?model=minilm&text={TEXT.replace(' ', '+')}")
    page.wait_for_function(N_HEADS, timeout=60_000)
    page.wait_for_function(f"{VIEW} && {VIEW}.data.some(t => t.name === 'head 0')", timeout=30_000)
    assert _legend(page) == ["head 0"]  # L0H0 is selected: the head view draws it alone
    page.locator(".head-thumb[title^='L2H3']").click()
    page.wait_for_selector("#head-detail .gtitle:has-text('L2H3')", timeout=30_000)
    page.wait_for_function(f"{VIEW}.layout.title.text === 'Head view · layer 2'", timeout=30_000)
    page.wait_for_function(f"{VIEW}.data.filter(t => t.showlegend).length === 1", timeout=30_000)
    assert _legend(page) == ["head 3"]
    # the layer's other heads: one tick each
    page.locator("#head-checklist").get_by_label("H5", exact=True).check()
    page.wait_for_function(f"{VIEW}.data.filter(t => t.showlegend).length === 2", timeout=30_000)
    assert _legend(page) == ["head 3", "head 5"]

    thumb = page.locator(".head-thumb[title^='L0H0']")
    image = thumb.evaluate("e => e.style.backgroundImage")
    before = _detail_rows(page)
    assert all(abs(sum(r) - 1) < 0.01 for r in before)  # global scaling at full resolution: the weights
    page.locator("#head-hide").get_by_label("special tokens", exact=True).check()
    page.wait_for_selector("#head-detail .gtitle:has-text('special tokens hidden')", timeout=30_000)
    page.wait_for_selector("#head-view .gtitle:has-text('special tokens hidden')", timeout=30_000)
    assert "rows renormalised over the rest" in page.locator("#head-detail .gtitle").text_content()
    # the model view's thumbnails too (a grey column where a hidden key was), the selection kept
    page.wait_for_selector("#grid-hide-note:has-text('special tokens hidden')", timeout=30_000)
    assert thumb.evaluate("e => e.style.backgroundImage") != image
    assert page.locator(".head-thumb.selected").get_attribute("title").startswith("L2H3")
    after = _detail_rows(page)
    assert all(r[0] is None and r[-1] is None for r in after)  # [CLS] and [SEP] blank
    for old, new in zip(before, after):  # each row over the 7 words, renormalised: sums to 1
        rest = sum(old[1:-1])
        assert abs(sum(new[1:-1]) - 1) < 0.01 and abs(new[1] - old[1] / rest) < 0.01
    page.wait_for_function("location.search.includes('hide=special')", timeout=10_000)
    assert "head=L2H3" in page.url

    fresh = page.context.browser.new_page(bypass_csp=True, viewport={"width": 1400, "height": 1000})
    fresh.goto(page.url)
    fresh.wait_for_selector("#head-detail .gtitle:has-text('special tokens hidden')", timeout=60_000)
    assert fresh.locator("#head-hide").get_by_label("special tokens", exact=True).is_checked()
    assert "L2H3" in fresh.locator("#head-detail .gtitle").text_content()
    fresh.close()
    assert page.console_errors == []
