"""plotly.js bundles side by side in headless Chromium: the longest main-thread task of loading Dash's
full bundle (``plotly/package_data/plotly.min.js``) and the dashboard's vendored cartesian bundle
(``frontend/assets/vendor/plotly-cartesian.min.js``) into a blank page, then one heatmap-and-bar draw,
alternated ``--rounds`` times so both see the same machine load.

    .venv/bin/python bench/plotly_bundle.py [--rounds 6]
"""

from __future__ import annotations

import argparse
import os
import statistics
from pathlib import Path

import plotly

ROOT = Path(__file__).resolve().parents[1]
BUNDLES = {
    "full (Dash's)": Path(plotly.__file__).parent / "package_data" / "plotly.min.js",
    "cartesian (vendored)": ROOT / "frontend" / "assets" / "vendor" / "plotly-cartesian.min.js",
}
OBSERVE = """() => { window.lt = [];
    new PerformanceObserver(l => l.getEntries().forEach(e => window.lt.push(e.duration)))
        .observe({type: 'longtask', buffered: true}); }"""
DRAW = """() => { const t0 = performance.now();
    Plotly.newPlot('g', [{type: 'heatmap', z: [[1, 2], [3, 4]]}, {type: 'bar', y: [1, 2, 3]}]);
    return performance.now() - t0; }"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    loads, draws = {k: [] for k in BUNDLES}, {k: [] for k in BUNDLES}
    load_avg = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=os.environ.get("ATTNSCOPE_CHROMIUM", "/usr/bin/chromium"),
            args=["--headless", "--no-sandbox", "--disable-gpu"],
        )
        for _ in range(args.rounds):
            load_avg.append(os.getloadavg()[0])
            for name, path in BUNDLES.items():
                page = browser.new_page()
                page.set_content("<html><body><div id=g></div></body></html>")
                page.evaluate(OBSERVE)
                page.add_script_tag(path=str(path))
                page.wait_for_function("() => window.Plotly !== undefined")
                page.wait_for_timeout(200)  # the long-task entry is queued after the task ends
                loads[name].append(max(page.evaluate("window.lt") or [0.0]))
                draws[name].append(page.evaluate(DRAW))
                page.close()
        browser.close()
    print(f"{args.rounds} rounds, load average (1 min) {min(load_avg):.1f}-{max(load_avg):.1f}")
    for name, path in BUNDLES.items():
        mb = path.stat().st_size / 1e6
        print(
            f"  {name:22s} {mb:4.1f} MB  longest task while loading: median {statistics.median(loads[name]):6.0f} ms "
            f"(min {min(loads[name]):.0f}, max {max(loads[name]):.0f}); "
            f"first draw median {statistics.median(draws[name]):.0f} ms"
        )
    full, cart = (statistics.median(loads[k]) for k in BUNDLES)
    ratios = [c / f for f, c in zip(*loads.values(), strict=True) if f > 0]
    print(f"  ratio cartesian/full of the medians: {cart / full:.2f} (per round {min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
