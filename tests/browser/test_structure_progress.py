"""The Structure page's progress and Cancel in Chromium (issue 26 item 3), and its head map's hide
switch. A gate on the API's real structure pass (the API runs in this process) holds the pass after
its first band, so the test sees, as states and never after a fixed time: every waiting panel's
progress line with the pass's bands (MiniLM: 6 layers, one band each), the Cancel button; after
Cancel, the panels' figures saying the pass was cancelled and the lines gone; after Retry, every
panel drawn and Cancel hidden. Then hiding the first token redraws the head's map with the choice
stated in its title and kept in the address."""

import threading
from urllib.parse import quote_plus

import pytest

from attnscope.server import structure_pass

pytestmark = pytest.mark.browser

TEXT = "The progress of a long pass is shown on every panel, and a cancel stops it for good."
VISIBLE = "(sel) => { const e = document.querySelector(sel); return !!e && e.offsetParent !== null; }"
HIDDEN = "(sel) => { const e = document.querySelector(sel); return !!e && e.offsetParent === null; }"
SAYS = """([id, words]) => { const gd = document.querySelector('#' + id + ' .js-plotly-plot');
    return !!gd && JSON.stringify(gd.layout.annotations || []).includes(words); }"""


def _gate(monkeypatch, name: str, **extra):
    """The first call in the API of ``structure_pass.<name>`` (the shared pass, or the walk over the head
    means) stops after its first band until ``go`` is set (``extra``: its further arguments, e.g. one
    worker so that one band is done when it stops); returns ``(started, go)``."""
    real = getattr(structure_pass, name)
    started, go, calls = threading.Event(), threading.Event(), []

    def gated(maps, what, progress=None, **kw):
        calls.append(1)
        if len(calls) > 1:
            return real(maps, what, progress=progress, **kw)

        def report(done, total):
            progress(done, total)
            started.set()
            go.wait(300)

        return real(maps, what, progress=report, **kw, **extra)

    monkeypatch.setattr(structure_pass, name, gated)
    return started, go


@pytest.fixture
def gated_pass(monkeypatch):
    """The first structure pass made in the API stops after its first band until ``go`` is set."""
    started, go = _gate(monkeypatch, "reduce_maps", workers=1)
    try:
        yield started, go
    finally:
        go.set()


def test_panels_show_the_pass_progress_and_cancel_stops_it(open_dash, gated_pass):
    started, go = gated_pass
    page = open_dash(f"/structure?model=minilm&text={quote_plus(TEXT)}")
    assert started.wait(120), "the page never started a structure pass"
    for panel in ("shift", "heads", "evolution", "importance"):
        page.wait_for_function(VISIBLE, arg=f"#{panel}-progress", timeout=60_000)
    page.wait_for_selector("#shift-progress:has-text('1 of 6 bands of rows')", timeout=60_000)
    page.wait_for_function(VISIBLE, arg="#structure-cancel", timeout=30_000)
    page.click("#structure-cancel")
    page.wait_for_selector("#structure-error:has-text('Cancelled')", timeout=30_000)
    go.set()  # the pass reaches its next band, sees the cancel and stops; its waiters answer 409
    page.wait_for_function(SAYS, arg=["shift-grid", "cancelled"], timeout=60_000)
    for panel in ("shift", "heads", "evolution", "importance"):
        page.wait_for_function(HIDDEN, arg=f"#{panel}-progress", timeout=60_000)
    assert "cancelled" in page.inner_text("#head-types-summary")
    page.click("#structure-retry")
    page.wait_for_selector("#shift-grid .gtitle:has-text('Shift heads')", timeout=120_000)
    page.wait_for_selector("#evolution-figure .gtitle:has-text('Sharpening')", timeout=60_000)
    page.wait_for_selector("#head-types-list", timeout=60_000)
    page.wait_for_function(HIDDEN, arg="#structure-cancel", timeout=30_000)
    assert not page.inner_text("#structure-error").strip()
    # the head's own map: hiding the first token is stated in its title and kept in the address
    page.wait_for_selector("#kernel-head-map .gtitle", timeout=60_000)
    assert "hidden" not in page.text_content("#kernel-head-map .gtitle")
    page.locator("#structure-hide").get_by_text("first token").click()
    page.wait_for_selector("#kernel-head-map .gtitle:has-text('first token hidden')", timeout=60_000)
    page.wait_for_function("location.search.includes('hide=first')", timeout=30_000)
    assert page.console_errors == []


def test_a_long_runs_evolution_and_rollout_show_the_walks_progress_and_cancel_stops_it(open_dash, monkeypatch):
    """Past ``MEAN_BYTES`` (lowered here, so that a MiniLM run is "long") evolution and rollout read a walk
    over the head means made after the shared pass: held after its first band, the evolution and
    rollout panels show its bands (6 layers, one band each) and Cancel; after Cancel they say so, and
    Retry draws them."""
    monkeypatch.setattr(structure_pass, "MEAN_BYTES", 0)
    started, go = _gate(monkeypatch, "walk_head_means")
    try:
        page = open_dash(f"/structure?model=minilm&text={quote_plus(TEXT + ' Walked.')}")
        assert started.wait(120), "the page never walked the head means"
        page.wait_for_selector("#shift-grid .gtitle:has-text('Shift heads')", timeout=120_000)  # the pass is done
        for panel in ("evolution", "importance"):
            page.wait_for_selector(f"#{panel}-progress:has-text('1 of 6 bands of rows')", timeout=60_000)
            page.wait_for_function(VISIBLE, arg=f"#{panel}-progress", timeout=60_000)
        page.wait_for_function(VISIBLE, arg="#structure-cancel", timeout=30_000)
        page.click("#structure-cancel")
        page.wait_for_selector("#structure-error:has-text('Cancelled')", timeout=30_000)
    finally:
        go.set()
    page.wait_for_function(SAYS, arg=["evolution-figure", "cancelled"], timeout=60_000)
    page.click("#structure-retry")
    page.wait_for_selector("#evolution-figure .gtitle:has-text('Sharpening')", timeout=120_000)
    page.wait_for_function(
        "() => { const gd = document.querySelector('#importance-figure .js-plotly-plot');"
        " return !!(gd && gd.data && gd.data.some(t => t.y)); }",
        timeout=60_000,
    )
    page.wait_for_function(HIDDEN, arg="#structure-cancel", timeout=30_000)
    assert page.console_errors == []
