"""End-to-end checks against a running attnscope stack (called by deploy/docker-test.sh).

Talks to the containers only over loopback: the API's REST endpoints with urllib, and the
dashboard through headless Chromium driven by Playwright (submit a sentence, wait for the
72-thumbnail head grid of MiniLM).

    python deploy/e2e_check.py --api-url http://127.0.0.1:18000 --dash-url http://127.0.0.1:18050 \
        [--token TOKEN] [--screenshot out.png]

Exit status 0 when every check passes; each check prints one line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request

SENTENCE = "The keys to the cabinet are on the table near the window."
# Runs are keyed by model and text: the dashboard gets a sentence of its own, so that its run is new.
DASH_SENTENCE = "A dashboard in a container drew every head of this sentence."
MINILM_LAYERS, MINILM_HEADS = 6, 12
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class CheckFailed(AssertionError):
    pass


def check(cond: bool, message: str) -> None:
    if not cond:
        raise CheckFailed(message)


def http(
    method: str,
    url: str,
    *,
    token: str | None = None,
    body: dict | None = None,
    headers: dict | None = None,
    timeout: float = 180.0,
) -> tuple[int, dict, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 (loopback URL)
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def check_api(api: str, token: str | None, dash_origin: str) -> str:
    status, _, raw = http("GET", f"{api}/api/v1/health")
    check(status == 200, f"GET /api/v1/health answered {status}: {raw[:200]!r}")
    health = json.loads(raw)
    check(health.get("status") == "ok", f"health is not ok: {health}")
    print(f"ok  health: {health}")

    if token:
        status, _, raw = http("POST", f"{api}/api/v1/runs", body={"model": "minilm", "text": SENTENCE})
        check(status == 401, f"POST /runs without the bearer token answered {status}, expected 401")
        print("ok  API token enforced: POST /runs without a token -> 401")

    status, _, raw = http("GET", f"{api}/api/v1/models", token=token)
    check(status == 200, f"GET /models answered {status}: {raw[:200]!r}")
    names = [m["name"] for m in json.loads(raw)["models"]]
    check("minilm" in names, f"minilm is not among the models: {names}")
    print(f"ok  models: {names}")

    t0 = time.monotonic()
    status, _, raw = http("POST", f"{api}/api/v1/runs", token=token, body={"model": "minilm", "text": SENTENCE})
    check(status == 201, f"POST /runs answered {status}: {raw[:300]!r}")
    run = json.loads(raw)
    shape = run["shape"]
    check(shape[:2] == [MINILM_LAYERS, MINILM_HEADS], f"MiniLM run has shape {shape}, expected [6, 12, n, n]")
    check(shape[2] == shape[3] == len(run["tokens"]), f"shape {shape} does not match {len(run['tokens'])} tokens")
    print(f"ok  run {run['id']} on minilm: shape {shape}, {len(run['tokens'])} tokens ({time.monotonic() - t0:.1f} s)")

    status, _, raw = http("GET", f"{api}/api/v1/runs/{run['id']}/attention?layer=5&head=11", token=token)
    check(status == 200, f"GET attention answered {status}: {raw[:200]!r}")
    weights = json.loads(raw)["weights"]
    sums = [sum(row) for row in weights]
    check(all(abs(s - 1.0) < 1e-3 for s in sums), f"attention rows do not sum to 1: {sums}")
    print(f"ok  attention layer 5 head 11: {len(weights)}x{len(weights[0])}, rows sum to 1")

    status, headers, _ = http(
        "OPTIONS",
        f"{api}/api/v1/runs",
        headers={
            "Origin": dash_origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type",
        },
    )
    allowed = {k.lower(): v for k, v in headers.items()}.get("access-control-allow-origin")
    check(
        status == 200 and allowed in (dash_origin, "*"),
        f"CORS preflight from {dash_origin}: status {status}, allow-origin {allowed!r}",
    )
    print(f"ok  CORS preflight from {dash_origin} allowed")
    return run["id"]


def _is_run_callback(response) -> bool:
    """Dash's POST for the callback fired by a click on the run button."""
    if "_dash-update-component" not in response.url or response.request.method != "POST":
        return False
    try:
        body = json.loads(response.request.post_data or "")
    except ValueError:
        return False
    return any(
        isinstance(i, dict)
        and i.get("id") == "run-button"
        and i.get("property") == "n_clicks"
        and (i.get("value") or 0) >= 1
        for i in body.get("inputs", [])
    )


def runs_stored(api: str) -> int:
    status, _, raw = http("GET", f"{api}/api/v1/health", timeout=10)
    check(status == 200, f"GET /api/v1/health answered {status}")
    return int(json.loads(raw)["runs_stored"])


def check_dashboard(api: str, dash: str, screenshot: str | None, token: str | None = None) -> None:
    from playwright.sync_api import sync_playwright

    expected = MINILM_LAYERS * MINILM_HEADS
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(60_000)
            page.goto(dash, wait_until="domcontentloaded")
            if "/login" in page.url:  # a dashboard in front of a token-protected API asks for a log-in
                check(token is not None, "the dashboard asks for a log-in and no --token was given")
                page.fill("#token", token)
                page.click("#login-button")
                print("ok  dashboard: asked for a log-in, logged in with the token")
            page.wait_for_selector("#text-input")
            page.wait_for_selector("#run-button")
            # the model list arrives from the API after the page loads: wait until MiniLM is picked
            page.wait_for_function(
                "() => { const d = document.querySelector('#model-dropdown');"
                " return d !== null && d.innerText.includes('minilm'); }"
            )
            before = runs_stored(api)
            page.fill("#text-input", DASH_SENTENCE)
            t0 = time.monotonic()
            try:
                # the answer of the run button's own callback (not a stale message from page load)
                with page.expect_response(_is_run_callback, timeout=180_000) as answer:
                    page.click("#run-button")
                response = answer.value
                check(response.ok, f"the dashboard's run callback answered HTTP {response.status}")
                shown = ((response.json().get("response") or {}).get("run-error") or {}).get("children")
                check(not shown, f"the dashboard answered the click with {shown!r}")
                # the click reached the API (a new run there) and ends in the full head grid
                after = runs_stored(api)
                check(after > before, f"the API holds {after} runs after the click, as before")
                page.wait_for_function(
                    "n => document.querySelectorAll('.head-thumb').length >= n", arg=expected, timeout=180_000
                )
            except Exception as exc:
                if screenshot:
                    page.screenshot(path=screenshot, full_page=True)
                raise CheckFailed(f"the head grid did not appear: {exc}") from exc
            count = page.locator(".head-thumb").count()
            check(count == expected, f"{count} head thumbnails, expected {expected}")
            error = page.locator("#run-error").inner_text().strip() if page.locator("#run-error").count() else ""
            check(not error, f"the dashboard shows an error: {error!r}")
            print(
                f"ok  dashboard: submitted a sentence, the API stored a new run, {count} head thumbnails "
                f"({time.monotonic() - t0:.1f} s)"
            )
            if screenshot:
                page.screenshot(path=screenshot, full_page=True)
                print(f"    screenshot: {screenshot}")
        finally:
            browser.close()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--api-url", required=True)
    p.add_argument("--dash-url", required=True)
    p.add_argument("--token", default=None)
    p.add_argument("--screenshot", default=None)
    args = p.parse_args()
    api, dash = args.api_url.rstrip("/"), args.dash_url.rstrip("/")
    try:
        check_api(api, args.token, dash)
        check_dashboard(api, dash + "/", args.screenshot, args.token)
    except CheckFailed as exc:
        print(f"FAIL {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
