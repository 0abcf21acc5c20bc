"""Take the README's dashboard screenshot: a real API and dashboard, Debian's Chromium through Playwright.

Run: ``.venv/bin/python docs/_tools/screenshot.py [--out docs/images/dashboard.png]``. Starts ``attnscope
api`` and ``attnscope dashboard`` on free loopback ports, runs a sentence on the Explore page, opens one
head (L0H2, the previous-token head) and saves a PNG of the page. Nothing is downloaded.

``--llm`` (``--out docs/images/explore-llm.png``): SmolLM2 instead; generates 8 tokens after "The capital
of France is", shows step 2 in layer 18 and saves the top of the page (prediction, generation, the first
rows of the kv-grouped model view).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM = os.environ.get("ATTNSCOPE_CHROMIUM", "/usr/bin/chromium")
TEXT = "The cat sat on the mat and looked at the dog."


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(url: str, seconds: float = 180.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(url, timeout=5):
                return
        time.sleep(1.0)
    raise SystemExit(f"{url} did not answer within {seconds:.0f} s")


def _llm(page, out: str) -> None:
    page.click("#model-dropdown")
    page.get_by_placeholder("Search").fill("smollm2")
    page.get_by_role("option", name="smollm2 · llama · causal-lm").click()
    page.wait_for_selector("#generate-section:not(.llm-hidden)", timeout=60_000)
    page.fill("#text-input", "The capital of France is")
    page.fill("#gen-max-new", "8")
    page.click("#generate-button")
    page.wait_for_function("document.querySelectorAll('.head-thumb').length === 270", timeout=600_000)
    page.click("#gen-layer")
    page.get_by_role("option", name="layer 18", exact=True).click()
    page.locator("#gen-step").focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#gen-step-figure .gtitle:has-text('Step 2/8')", timeout=60_000)
    page.wait_for_selector("#gen-step-figure .gtitle:has-text('layer 18')", timeout=60_000)
    time.sleep(2.0)  # let the plots finish their transitions
    page.screenshot(path=out, full_page=True, clip={"x": 0, "y": 0, "width": 1400, "height": 1150})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="default: docs/images/dashboard.png (--llm: explore-llm.png)")
    ap.add_argument("--llm", action="store_true", help="SmolLM2: Generate and step through the tokens")
    args = ap.parse_args()
    args.out = args.out or ("docs/images/explore-llm.png" if args.llm else "docs/images/dashboard.png")
    cli = str(Path(sys.executable).with_name("attnscope"))
    api_port, dash_port = _free_port(), _free_port()
    api_url, dash_url = f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{dash_port}"
    env = {**os.environ, "ATTNSCOPE_PRELOAD": "smollm2" if args.llm else "minilm"}
    procs = [
        subprocess.Popen([cli, "api", "--host", "127.0.0.1", "--port", str(api_port)], env=env),
        subprocess.Popen(
            [cli, "dashboard", "--dash-host", "127.0.0.1", "--dash-port", str(dash_port), "--api-url", api_url],
            env=env,
        ),
    ]
    try:
        _wait(api_url + "/api/v1/health")
        _wait(dash_url + "/")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(dash_url + "/")
            page.wait_for_selector("#api-status:has-text('API')", timeout=60_000)
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            if args.llm:
                _llm(page, args.out)
            else:
                page.fill("#text-input", TEXT)
                page.click("#run-button")
                page.wait_for_function("document.querySelectorAll('.head-thumb').length === 72", timeout=120_000)
                page.locator("#model-grid .head-thumb[title^='L0H2']").click()
                page.wait_for_selector("#head-detail .gtitle:has-text('L0H2')", timeout=60_000)
                page.wait_for_selector("#head-view .gtitle:has-text('layer 0')", timeout=60_000)
                time.sleep(2.0)  # let the plots finish their transitions
                page.screenshot(path=args.out, full_page=True)
            browser.close()
        print(f"wrote {args.out}")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)


if __name__ == "__main__":
    main()
