"""WordPiece's ## drawn calmly in Chromium (issue 26 item 12): on the head detail's ticks the mark is
light grey, the word keeps the figure's ink, and the label reads as the token."""

import pytest

pytestmark = pytest.mark.browser


def test_wordpiece_marks_are_grey_on_the_head_detail(dash_page):
    page = dash_page
    page.fill("#text-input", "The cat was unbelievably sleepy.")
    page.click("#run-button")
    page.wait_for_function(
        "new URLSearchParams(location.search).get('text') === 'The cat was unbelievably sleepy.'", timeout=60_000
    )
    page.wait_for_function(
        "[...document.querySelectorAll('#head-detail .xtick text')].some(t => t.textContent.startsWith('##'))",
        timeout=60_000,
    )
    marks = page.evaluate(
        """() => [...document.querySelectorAll('#head-detail .xtick text')]
        .filter(t => t.textContent.startsWith('##'))
        .map(t => { const span = t.querySelector('tspan');
          return [t.textContent, span ? span.textContent : null, span ? getComputedStyle(span).fill : null]; })"""
    )
    assert marks, marks
    for text, mark, fill in marks:
        assert mark == "##" and fill == "rgb(154, 163, 173)", (text, mark, fill)  # MARK_COLOUR
    assert page.console_errors == []
