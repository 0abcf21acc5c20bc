"""The head selected in Explore's grid marked on the DLA bar, in Chromium, for a SmolLM2 run of "The
capital of France is": the head named in the address is outlined (or, outside the 20 bars, named) on
the bar once drawn, its title giving the head's share, part and rank equal to the attribution route's;
a click on a thumbnail, on a bar, or an arrow key in the grid moves the outline and the title line.
No selection asks the dashboard for the attribution again: no update of the bar's callback
(``writes-dla.figure`` with ``dla-store``) is sent after the bar is drawn, and the bars are unchanged."""

from urllib.parse import quote

import httpx
import pytest
from settle import settle, track

pytestmark = pytest.mark.browser

PROMPT = "The capital of France is"

# the bar marks ``label`` (``L{layer}H{head}``): that bar alone outlined (none when it is not a bar), the title
# naming it
MARKED = """(label) => {
    const gd = document.querySelector('#writes-dla .js-plotly-plot');
    if (!gd || !gd.data || !gd.data.length || !gd.layout.title) return false;
    const t = gd.data[0], w = t.marker && t.marker.line && t.marker.line.width;
    if (!w || !t.y || w.length !== t.y.length) return false;
    return Array.from(t.y).every((y, i) => w[i] === (y === label ? 3 : 0))
        && String(gd.layout.title.text).includes('selected ' + label + ':');
}"""

TOP_BAR_HOVERED = """() => {
    const gd = document.querySelector('#writes-dla .js-plotly-plot'), h = gd && gd._hoverdata;
    return !!(h && h.length && h[0].curveNumber === 0 && h[0].pointNumber === gd.data[0].y.length - 1);
}"""


def _dla(page, path: str):
    return page.evaluate(f"() => document.querySelector('#writes-dla .js-plotly-plot').{path}")


def _wait_marked(page, label: str) -> str:
    """Wait until the bar marks ``label`` (a state); the title's line about it."""
    page.wait_for_function(MARKED, arg=label, timeout=60_000)
    title = _dla(page, "layout.title.text")
    return next(line for line in title.split("<br>") if f"selected {label}:" in line)


def _expected(parts: dict, label: str, bars: list[str]) -> str:
    """The title line of ``label`` from the attribution route's parts (``{label: part}``)."""
    part = parts[label]
    total = sum(abs(v) for v in parts.values())
    rank = 1 + sum(abs(v) > abs(part) for v in parts.values())
    where = "(outlined)" if label in bars else "(not among the bars)"
    return (
        f"<sub>selected {label}: {100 * part / total:.1f} % of the heads' direct write, part {part:+.3f}, "
        f"rank {rank} by |part| {where}</sub>"
    )


def _dash_outputs(page) -> list:
    """The outputs of every Dash update the page asks for from here on."""
    seen: list = []
    page.on(
        "request",
        lambda r: seen.append(r.post_data_json["output"]) if "_dash-update-component" in r.url else None,
    )
    return seen


def _select(page, label: str) -> None:
    layer, head = label[1:].split("H")
    page.click(f"#model-grid .head-thumb[data-layer='{layer}'][data-head='{head}']")


def test_the_head_selected_in_the_grid_is_marked_on_the_dla_bar_without_asking_again(
    page, open_dash, smollm2_converted, api_url
):
    open_dash(f"/?model=smollm2&text={quote(PROMPT)}&head=L3H4")  # the address selects L3H4
    page.wait_for_selector("#dla-section:not(.llm-hidden)", timeout=120_000)
    page.wait_for_function("document.querySelectorAll('#model-grid .head-thumb').length === 270", timeout=180_000)
    page.wait_for_selector("#model-grid .head-thumb.selected[data-layer='3'][data-head='4']", timeout=60_000)
    page.click("#dla-button")
    page.wait_for_selector("#writes-dla .gtitle:has-text('Paris')", timeout=180_000)
    page.wait_for_function("location.search.includes('run=')", timeout=60_000)
    run_id = page.evaluate("() => new URLSearchParams(location.search).get('run')")
    api = httpx.post(f"{api_url}/api/v1/runs/{run_id}/attribution", json={"top_heads": 1}, timeout=120).json()
    parts = {f"L{la}H{h}": v for la, row in enumerate(api["heads"]) for h, v in enumerate(row)}
    bars = list(_dla(page, "data[0].y"))
    shares = list(_dla(page, "data[0].x"))
    assert len(bars) == 20 and page.locator("#dla-error").inner_text() == ""
    assert _wait_marked(page, "L3H4") == _expected(parts, "L3H4", bars)

    # from here on, selections only: the bar's callback is never asked again
    outputs = _dash_outputs(page)
    track(page)
    second = bars[-2]  # the second largest bar's head, by a click on its thumbnail
    assert _wait_marked_after(page, second, lambda: _select(page, second)) == _expected(parts, second, bars)
    assert f"{shares[-2]:.1f} %" in _expected(parts, second, bars)  # the line's share is the bar's

    outside = min(parts, key=lambda label: abs(parts[label]))  # the smallest head: not a bar
    assert outside not in bars
    assert _wait_marked_after(page, outside, lambda: _select(page, outside)) == _expected(parts, outside, bars)

    top = bars[-1]  # a click on the top bar selects its head in the grid
    bar = page.locator("#writes-dla .point").last.bounding_box()

    def click_bar():  # Plotly clicks the point it hovers: the click waits until that is the top bar
        page.mouse.move(bar["x"] + bar["width"] / 2, bar["y"] + bar["height"] / 2)
        page.wait_for_function(TOP_BAR_HOVERED, timeout=30_000)
        page.mouse.click(bar["x"] + bar["width"] / 2, bar["y"] + bar["height"] / 2)

    assert _wait_marked_after(page, top, click_bar) == _expected(parts, top, bars)
    layer, head = (int(x) for x in top[1:].split("H"))
    page.wait_for_selector(f"#model-grid .head-thumb.selected[data-layer='{layer}'][data-head='{head}']")

    key, step = ("ArrowDown", 1) if layer + 1 < len(api["heads"]) else ("ArrowUp", -1)
    near = f"L{layer + step}H{head}"  # an arrow key in the grid: the same head a layer down (or up)
    page.focus(f"#model-grid .head-thumb[data-layer='{layer}'][data-head='{head}']")
    assert _wait_marked_after(page, near, lambda: page.keyboard.press(key)) == _expected(parts, near, bars)

    settle(page)  # every callback of the selections answered (a state)
    asked = [out for out in outputs if "writes-dla.figure" in out or "dla-store" in out]
    assert asked == [], asked  # no selection asked for the attribution (the outline is drawn in the browser)
    assert list(_dla(page, "data[0].y")) == bars and list(_dla(page, "data[0].x")) == shares
    assert page.console_errors == []


def _wait_marked_after(page, label: str, act) -> str:
    act()
    return _wait_marked(page, label)
