"""Waiting for the dashboard to settle as a state, not a time (issue 26 item 13): ``track(page)``
counts the page's Dash callback requests in flight (a wrapper around ``window.fetch``, installed once
per document); ``settle(page)`` waits until none is in flight and no component shows Dash's loading
state across two animation frames (a callback chained on a response is sent before then)."""

# how long a test waits for a data-set job to finish in the page: a bound on a hang, not a speed target (the API
# runs one job at a time; at load ~17 on two cores a 12-example CNN probe and a 2-example faithfulness job with
# five explainers each took over two minutes)
JOB_WAIT_MS = 600_000

TRACK = """() => { if (window.__dashInflight !== undefined) return;
    window.__dashInflight = 0; const real = window.fetch;
    window.fetch = function (...args) {
        const url = String(args[0] && args[0].url || args[0]);
        if (!url.includes('_dash-update-component')) return real.apply(this, args);
        window.__dashInflight += 1;
        return real.apply(this, args).finally(() => { window.__dashInflight -= 1; });
    }; }"""
SETTLED = """() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done(
    window.__dashInflight === 0 && document.querySelector('[data-dash-is-loading="true"]') === null))))"""


def track(page) -> None:
    """Count the page's Dash callback requests from now on (call before the action to wait out)."""
    page.evaluate(TRACK)


def settle(page, timeout: int = 300_000) -> None:
    """Wait until no Dash callback of the page is in flight or loading (``track`` called before);
    ``timeout`` (ms) bounds a hang only."""
    page.wait_for_function(SETTLED, timeout=timeout, polling=100)
