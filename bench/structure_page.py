"""The Structure page's timing for ``bench/dashboard.py --structure N...`` (issue 26): per size, a
SmolLM2 run made through the API (timed apart), then ``/structure?run=ID`` opened in Chromium and the
time from navigation to each panel's first drawn figure (a Plotly graph holding data), and the API's
structure passes (``GET /runs/{id}/shift`` etc. share one, ``server/structure_pass.py``)."""

from __future__ import annotations

import os
import time

import httpx

WORDS = "the quick brown fox jumps over a lazy dog while seven small birds sing in tall green trees".split()
PANELS = {
    "shift grid": "shift-grid",
    "kernel": "kernel-figure",
    "head map": "kernel-head-map",
    "head types": "head-type-figure",
    "evolution": "evolution-figure",
    "entropy": "entropy-heatmap",
    "rollout": "importance-figure",
}
# the progress line each panel shows while it waits (frontend/pages/structure_progress.py); the head's
# own map is one attention slice, no pass
PROGRESS = {
    "shift grid": "shift-progress",
    "kernel": "kernel-progress",
    "head types": "heads-progress",
    "evolution": "evolution-progress",
    "entropy": "evolution-progress",
    "rollout": "importance-progress",
}
LINE = """(id) => { const e = document.getElementById(id);
    return e && e.offsetParent !== null ? e.textContent : null; }"""
SETTLED = "() => document.querySelector('[data-dash-is-loading=\"true\"]') === null"
DRAWN = """(id) => { const gd = document.querySelector('#' + id + ' .js-plotly-plot');
    return !!(gd && gd.data && gd.data.length && gd.data.some(t => t.z || t.y)); }"""


def _run(api: str, n: int, seed: int) -> tuple[str, int, float]:
    """A SmolLM2 run of about ``n`` tokens: ``(id, tokens, seconds)``."""
    import random

    rng = random.Random(seed)
    text = " ".join(rng.choice(WORDS) for _ in range(n - 1))
    t = time.perf_counter()
    r = httpx.post(f"{api}/api/v1/runs", json={"model": "smollm2", "text": text}, timeout=1800)
    r.raise_for_status()
    body = r.json()
    return body["id"], int(body.get("n_tokens") or len(body.get("tokens", []))), time.perf_counter() - t


def time_structure(p, url: str, api: str, sizes) -> None:
    browser = p.chromium.launch(
        executable_path=os.environ.get("ATTNSCOPE_CHROMIUM", "/usr/bin/chromium"),
        args=["--headless", "--no-sandbox", "--disable-gpu"],
    )
    try:
        for i, n in enumerate(sizes):
            rid, tokens, made = _run(api, n, i)
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            started: dict[int, float] = {}
            calls: list[tuple[float, float, str]] = []  # (start, end, outputs) of each Dash callback

            def begin(request, started=started):
                started[id(request)] = time.perf_counter()

            def end(request, started=started, calls=calls):
                if "_dash-update-component" in request.url and id(request) in started:
                    out = str((request.post_data_json or {}).get("output", ""))
                    calls.append((started.pop(id(request)), time.perf_counter(), out[:70]))

            page.on("request", begin)
            page.on("requestfinished", end)
            t = time.perf_counter()
            page.goto(f"{url}/structure?run={rid}")
            seen: dict[str, float] = {}
            lines: dict[str, str] = {}  # the last progress line each panel showed before it was drawn
            deadline, idle = t + 1800, 0
            while len(seen) < len(PANELS) and time.perf_counter() < deadline and idle < 25:
                for name, gid in PANELS.items():
                    if name not in seen and page.evaluate(DRAWN, gid):
                        seen[name] = time.perf_counter() - t
                    elif name not in seen and name in PROGRESS:
                        line = page.evaluate(LINE, PROGRESS[name])
                        if line:  # the pass's bands while it runs, then "done; drawing…" while the panel waits
                            lines[name if "bands" in line else f"{name} after"] = line
                idle = idle + 1 if seen and page.evaluate(SETTLED) else 0  # 5 s settled: the rest failed
                page.wait_for_timeout(200)
            missing = {name: page.text_content(f"#{PANELS[name]}") for name in PANELS if name not in seen}
            page.close()
            first = min(seen.values()) if seen else float("nan")
            print(f"{tokens} tokens (run made in {made:.1f} s): first panel {first:.1f} s (target <= 20 s at 1,024)")
            for name in PANELS:
                shown = f"{seen[name]:7.1f} s" if name in seen else f"not drawn: {missing[name]!r}"
                progress = lines.get(name, "no progress line seen" if name in PROGRESS else "(one slice, no pass)")
                if f"{name} after" in lines:
                    progress += f"; last: {lines[f'{name} after']}"
                print(f"  {name:10s} {shown}   progress: {progress}")
            print("  callbacks over 2 s (from navigation: start -> end, outputs):")
            for start, stop, out in sorted(calls):
                if stop - start > 2:
                    print(f"    {start - t:6.1f} -> {stop - t:6.1f} s  {out}")
    finally:
        browser.close()
