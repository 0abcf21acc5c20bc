"""Explore on a long SmolLM2 run, for ``bench/dashboard.py --long N`` (issue 26 targets at 4,096
tokens: first grid <= 10 s after the run exists, a head click <= 1 s, the longest main-thread task
<= 1 s). The run is made through the API as Explore makes it (``thumbnails: true``; its time is
printed apart), then ``/?run=ID`` is opened in Chromium and timed to every thumbnail of the model
view and the selected head's detail; then ``--clicks`` heads are clicked one after the other on a
settled page, each timed in the page from the click to the new detail title. The Long Tasks API
records every main-thread task over 50 ms from the page's first script on."""

from __future__ import annotations

import os
import statistics
import time

import httpx

PARAGRAPH = (
    "Attention maps show which earlier tokens each position reads. A long context lets a model "
    "copy a name it saw pages ago, count items in a list, or close a bracket opened far back. "
)  # 38 SmolLM2 tokens (tests/browser/test_long_views_4096.py)
LONG_TASKS = """window.longTasks = [];
    new PerformanceObserver(list => list.getEntries().forEach(e => window.longTasks.push(e.duration)))
        .observe({type: 'longtask', buffered: true});
    window.dashInFlight = 0;
    const fetch0 = window.fetch;
    window.fetch = function (...args) {
        const url = String(args[0] && args[0].url || args[0]);
        if (!url.includes('_dash-update-component')) return fetch0.apply(this, args);
        window.dashInFlight += 1;
        return fetch0.apply(this, args).finally(() => { window.dashInFlight -= 1; });
    };"""
WATCH = """(part) => { window.detailShownAt = null;
    const el = document.getElementById('head-detail');
    window.detailObserver && window.detailObserver.disconnect();
    window.detailObserver = new MutationObserver(() => {
        const t = el.querySelector('.gtitle');
        if (t && t.textContent.includes(part) && window.detailShownAt === null) {
            window.detailShownAt = performance.now(); }
    });
    window.detailObserver.observe(el, {childList: true, subtree: true, characterData: true}); }"""
SETTLED = """() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() =>
    done(window.dashInFlight === 0 && document.querySelector('[data-dash-is-loading="true"]') === null))))"""
CLICKS = [(5, 3), (20, 7), (11, 0), (27, 5), (2, 8), (16, 4), (8, 6)]


def _longest(page) -> float:
    """The longest task since the last call (ms), and forget them."""
    return page.evaluate("() => { const m = Math.max(0, ...window.longTasks); window.longTasks = []; return m; }")


def time_explore(p, url: str, api: str, n_tokens: int, clicks: int, trace: str | None = None) -> None:
    """Print the figures; with ``trace`` also record a Chromium trace of the page there and print what
    its longest main-thread tasks spent their time on (``trace_summary``)."""
    text = PARAGRAPH * max(1, n_tokens // 38)  # 107 paragraphs: 4,067 tokens
    t = time.perf_counter()
    r = httpx.post(f"{api}/api/v1/runs", json={"model": "smollm2", "text": text, "thumbnails": True}, timeout=3600)
    r.raise_for_status()
    run, made = r.json(), time.perf_counter() - t
    n, (n_layers, n_heads) = len(run["tokens"]), run["shape"][:2]
    print(f"SmolLM2 {n} tokens: run made through the API with its thumbnails in {made:.1f} s", flush=True)
    browser = p.chromium.launch(
        executable_path=os.environ.get("ATTNSCOPE_CHROMIUM", "/usr/bin/chromium"),
        args=["--headless", "--no-sandbox", "--disable-gpu"],
    )
    try:
        # bypass_csp: Playwright's wait_for_function evaluates strings, which the dashboard's policy refuses
        page = browser.new_page(viewport={"width": 1440, "height": 900}, bypass_csp=True)
        page.add_init_script(LONG_TASKS)
        if trace:
            browser.start_tracing(page=page, path=trace, categories=["devtools.timeline", "v8.execute"])
        load0 = os.getloadavg()[0]
        t = time.perf_counter()
        page.goto(f"{url}/?run={run['id']}&model=smollm2&head=L2H1")
        page.wait_for_function(
            f"document.querySelectorAll('.head-thumb').length === {n_layers * n_heads}", timeout=1_800_000
        )
        page.wait_for_selector("#head-detail .gtitle:has-text('L2H1')", timeout=600_000)
        grid = time.perf_counter() - t
        page.wait_for_function(SETTLED, timeout=600_000, polling=100)
        loading = _longest(page)
        times = []
        for layer, head in CLICKS[:clicks]:
            label = f"L{layer}H{head}"
            page.evaluate(WATCH, label)
            started = page.evaluate("() => performance.now()")
            page.locator(f".head-thumb[data-layer='{layer}'][data-head='{head}']").click()
            page.wait_for_function("window.detailShownAt !== null", timeout=600_000)
            times.append((page.evaluate("window.detailShownAt") - started) / 1000)
            page.wait_for_function(SETTLED, timeout=600_000, polling=100)
        after = _longest(page)
        load1 = os.getloadavg()[0]
        if trace:
            browser.stop_tracing()
    finally:
        browser.close()
    print(
        f"  first grid ({n_layers * n_heads} thumbnails) and detail after the run exists: {grid:.1f} s (target <= 10)"
    )
    print(
        f"  head click -> detail, median of {len(times)}: {statistics.median(times):.2f} s "
        f"(max {max(times):.2f} s; target <= 1.0)"
    )
    longest = max(loading, after)
    print(f"  longest main-thread task: {longest:.0f} ms (loading {loading:.0f}, clicks {after:.0f}; target <= 1000)")
    print(f"  load average (1 min) at the page's start and end: {load0:.1f}, {load1:.1f}")
    if trace:
        from trace_summary import summarise

        print("\n".join(summarise(trace)))
