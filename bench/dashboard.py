"""Dashboard speed in headless Chromium (issue 16 targets at 128 tokens, issue 12's at 512): a new
text, Run -> every head of the model view drawn and the first head detail; a head click at once (the
run's head view may still be drawing) -> its detail; a click on a settled page (the head view drawn,
no Dash update in flight) -> its detail; and the JavaScript a first page load transfers (compressed)
against what it decodes to.

    .venv/bin/python bench/dashboard.py [--repeats 5] [--tokens 128]

Starts the API (MiniLM preloaded) and the dashboard on free loopback ports, drives Debian's
Chromium through Playwright, prints medians. The first Run of a text is timed (a new run each time:
the text changes), after one untimed warm-up run.

    .venv/bin/python bench/dashboard.py --structure 1024 [4096 ...]

instead times the Structure page (issue 26) on SmolLM2 runs of about that many tokens (random
words): the run is made through the API first (its time printed apart), then ``/structure?run=ID`` is
opened and the time to each panel's first drawn figure is printed (``bench/structure_page.py``).

    .venv/bin/python bench/dashboard.py --long 4096 [--clicks 5] [--trace trace.json]

instead times Explore on a SmolLM2 run of about that many tokens (``bench/explore_long.py``): the
run made as Explore makes it (with its thumbnails), then the first grid after the run exists, head
clicks on a settled page and the longest main-thread task (targets at 4,096: 10 s, 1 s, 1 s).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import tempfile
import threading
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ATTNSCOPE_STATE_DIR", tempfile.mkdtemp(prefix="attnscope-bench-"))

WORDS = "the quick brown fox jumps over a lazy dog while seven small birds sing in tall green trees".split()


# the page counts its Dash updates in flight and notes each head-view draw (Plotly's afterplot)
WATCH = """() => {
    window.dashInFlight = 0;
    const fetch0 = window.fetch;
    window.fetch = function (url, opts) {
        const dash = String(url).includes('_dash-update-component');
        if (dash) { window.dashInFlight++; }
        const done = () => { if (dash) { window.dashInFlight--; } };
        return fetch0.apply(this, arguments).then(r => { done(); return r; }, e => { done(); throw e; });
    };
    setInterval(() => {
        const gd = document.querySelector('#head-view .js-plotly-plot');
        if (gd && gd.on && !gd._benchWatch) {
            gd._benchWatch = true;
            gd.on('plotly_afterplot', () => { window.headViewDrawn = true; });
        }
    }, 20);
}"""
SETTLED = "() => window.headViewDrawn && window.dashInFlight === 0"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _text(n_words: int, seed: int) -> str:
    return " ".join(WORDS[(seed + i) % len(WORDS)] for i in range(n_words))


def _serve(preload: str = "minilm"):
    import uvicorn
    from werkzeug.serving import make_server

    from attnscope.frontend.app import create_dash_app
    from attnscope.server.config import Settings
    from attnscope.server.main import create_app

    api_port, dash_port = _port(), _port()
    api = uvicorn.Server(
        uvicorn.Config(create_app(Settings(preload=[preload])), host="127.0.0.1", port=api_port, log_level="error")
    )
    threading.Thread(target=api.run, daemon=True).start()
    while not api.started:
        time.sleep(0.05)
    web = make_server("127.0.0.1", dash_port, create_dash_app(f"http://127.0.0.1:{api_port}").server, threaded=True)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{dash_port}", f"http://127.0.0.1:{api_port}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--structure", type=int, nargs="*", help="time the Structure page on SmolLM2 runs of these sizes")
    ap.add_argument("--long", type=int, help="time Explore on a SmolLM2 run of about this many tokens")
    ap.add_argument("--clicks", type=int, default=5, help="--long: heads clicked")
    ap.add_argument("--trace", help="--long: record a Chromium trace here and summarise its long tasks")
    args = ap.parse_args()
    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    from playwright.sync_api import sync_playwright

    if args.long:
        from explore_long import time_explore

        os.environ["ATTNSCOPE_MAX_CAUSAL_TOKENS"] = str(max(args.long, 512))
        os.environ.setdefault("ATTNSCOPE_REQUEST_DEADLINE", "0")  # a loaded machine's forward may take minutes
        url, api = _serve("smollm2")
        with sync_playwright() as p:
            time_explore(p, url, api, args.long, args.clicks, args.trace)
        return
    if args.structure:
        from structure_page import time_structure

        url, api = _serve("smollm2")
        with sync_playwright() as p:
            time_structure(p, url, api, args.structure)
        return
    url, _ = _serve()
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=os.environ.get("ATTNSCOPE_CHROMIUM", "/usr/bin/chromium"),
            args=["--headless", "--no-sandbox", "--disable-gpu"],
        )
        page = browser.new_page(viewport={"width": 1440, "height": 900}, bypass_csp=True)  # string predicates
        page.goto(url + "/")
        page.wait_for_selector("#api-status:has-text('API')", timeout=60_000)
        page.wait_for_load_state("networkidle")
        sizes = page.evaluate(
            """() => performance.getEntriesByType('resource')
                .filter(e => e.name.split('?')[0].endsWith('.js')).map(e => [e.transferSize, e.decodedBodySize])"""
        )
        wire, raw = sum(s[0] for s in sizes), sum(s[1] for s in sizes)
        page.evaluate(WATCH)
        runs, clicks, busy_clicks, n_tokens = [], [], [], 0
        for i in range(args.repeats + 1):
            words = args.tokens - 2  # [CLS] and [SEP]; each word here is one MiniLM token
            page.fill("#text-input", _text(words, i))
            page.evaluate(
                "window.oldThumb = (document.querySelector('#model-grid .head-thumb') || {style: {}})"
                ".style.backgroundImage"
            )
            page.evaluate("window.headViewDrawn = false")
            t = time.perf_counter()
            page.click("#run-button")
            page.wait_for_function(
                "() => document.querySelectorAll('#model-grid .head-thumb').length === 72 && "
                "document.querySelector('#model-grid .head-thumb').style.backgroundImage !== window.oldThumb",
                timeout=120_000,
            )
            page.wait_for_selector("#head-detail .gtitle:has-text('L0H0 ')", timeout=120_000)
            elapsed = time.perf_counter() - t
            n_tokens = page.evaluate("document.querySelectorAll('#head-detail .ytick').length")
            # a click at once, while the run's head view may still be drawing ...
            head = f"L{(i % 6)}H{(i * 5 + 1) % 12}"
            t = time.perf_counter()
            page.locator(f".head-thumb[title^='{head} ']").click()
            page.wait_for_selector(f"#head-detail .gtitle:has-text('{head} ')", timeout=60_000)
            clicked_busy = time.perf_counter() - t
            # ... and one on a settled page (the head view drawn, no Dash update in flight)
            page.wait_for_function(SETTLED, timeout=120_000)
            head = f"L{(i + 3) % 6}H{(i * 7 + 4) % 12}"
            t = time.perf_counter()
            page.locator(f".head-thumb[title^='{head} ']").click()
            page.wait_for_selector(f"#head-detail .gtitle:has-text('{head} ')", timeout=60_000)
            clicked = time.perf_counter() - t
            if i:  # the first round warms up (tokenizer, caches, Plotly's first render)
                runs.append(elapsed)
                clicks.append(clicked)
                busy_clicks.append(clicked_busy)
        browser.close()
    print(f"tokens per run: {args.tokens} (head detail shows {n_tokens} tick labels)")
    print(f"Run -> grid and first detail, median of {args.repeats}: {statistics.median(runs):.3f} s (target <= 1.0)")
    print(f"head click -> detail, median of {args.repeats}: {statistics.median(clicks):.3f} s (target <= 0.3)")
    print(
        f"head click -> detail right after Run (the head view may still draw), median of {args.repeats}: "
        f"{statistics.median(busy_clicks):.3f} s"
    )
    print(f"first load JavaScript: {wire / 1e6:.2f} MB transferred, {raw / 1e6:.2f} MB decoded (target <= 3 MB)")


if __name__ == "__main__":
    main()
