"""The model view grid with the keyboard, in Chromium (issue 26 item 12): the whole grid is one tab
stop (roving tabindex: the selected head takes Tab, was 72 stops on MiniLM), arrow keys move inside
it, and Tab leaves it in one press."""

import pytest

pytestmark = pytest.mark.browser

N_HEADS = "document.querySelectorAll('#model-grid .head-thumb').length === 72"
FOCUSED = "(document.activeElement && document.activeElement.closest('#model-grid .head-thumb'))"


def _focused_head(page):
    return page.evaluate(f"() => {{ const b = {FOCUSED}; return b ? [b.dataset.layer, b.dataset.head] : null; }}")


def test_the_grid_is_one_tab_stop_with_arrow_keys_inside(dash_page):
    page = dash_page
    page.fill("#text-input", "The cat sat on the mat.")
    page.click("#run-button")
    page.wait_for_function(N_HEADS, timeout=60_000)
    page.wait_for_function(
        "document.querySelectorAll('#model-grid .head-thumb[tabindex=\"0\"]').length === 1", timeout=30_000
    )
    stops = page.evaluate("() => document.querySelectorAll('#model-grid .head-thumb:not([tabindex=\"-1\"])').length")
    assert stops == 1
    page.focus("#run-button")
    for _ in range(40):  # Tab from Run until the grid has focus (the controls between are few)
        page.keyboard.press("Tab")
        if _focused_head(page):
            break
    start = _focused_head(page)
    assert start is not None
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"{FOCUSED} && {FOCUSED}.dataset.head === '{int(start[1]) + 1}'", timeout=10_000)
    page.keyboard.press("ArrowDown")
    page.wait_for_function(f"{FOCUSED} && {FOCUSED}.dataset.layer === '{int(start[0]) + 1}'", timeout=10_000)
    moved = _focused_head(page)
    page.wait_for_function(  # the tab stop follows the selection
        f"document.querySelector('#model-grid .head-thumb[tabindex=\"0\"]').dataset.head === '{moved[1]}'",
        timeout=10_000,
    )
    page.keyboard.press("Tab")  # one press leaves the grid
    assert _focused_head(page) is None
    page.keyboard.press("Shift+Tab")  # and one comes back, onto the selected head
    assert _focused_head(page) == moved
    assert page.console_errors == []
