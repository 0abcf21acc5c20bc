"""What every page shares, in Chromium: compressed JavaScript, address problems as a message (never
a blank page), the API-down banner that retries by itself."""

import socket

import pytest

from attnscope.frontend.api_client import ApiClient

pytestmark = pytest.mark.browser

JS_BUDGET = 3_000_000  # bytes of JavaScript on the wire for a first page load (issue 16)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_first_load_transfers_under_3_mb_of_compressed_javascript(page, dashboard_url):
    encodings = {}
    page.on(
        "response",
        lambda r: encodings.__setitem__(r.url, r.headers.get("content-encoding")) if ".js" in r.url else None,
    )
    page.goto(dashboard_url + "/")
    page.wait_for_selector("#main .panel", timeout=30_000)
    page.wait_for_load_state("networkidle")
    sizes = page.evaluate(
        """() => performance.getEntriesByType('resource')
            .filter(e => e.name.split('?')[0].endsWith('.js'))
            .map(e => [e.name, e.transferSize, e.decodedBodySize])"""
    )
    wire = sum(s[1] for s in sizes)
    raw = sum(s[2] for s in sizes)
    big = [u for u, _, d in sizes if d > 100_000]
    assert big and all(encodings.get(u) in ("gzip", "br", "deflate", "zstd") for u in big), encodings
    assert wire <= JS_BUDGET, f"{wire / 1e6:.2f} MB of JavaScript on the wire ({raw / 1e6:.2f} MB decoded)"
    assert wire < raw / 2


@pytest.mark.parametrize(
    "path",
    [
        "/?model=nope",
        "/structure?x=1",
        "/census?n=zero",
        "/measure?layer=-3",
        "/faithfulness?k=9",
        "/vision?sample=-1",
        "/compare?model_a=nope&x=1",
    ],
)
def test_a_bad_address_gives_the_page_and_a_message_not_a_blank(open_dash, path):
    page = open_dash(path)
    page.wait_for_selector("#main .panel", timeout=30_000)
    page.wait_for_selector(".notice:not(.empty)", timeout=30_000)  # says what in the address was not usable
    assert page.locator("header nav a").count() >= 7
    assert page.console_errors == []


def test_api_down_banner_appears_and_clears_by_itself(page, dashboard_url, dashboard_app):
    config = dashboard_app.server.config
    real = config["ATTNSCOPE_CLIENT"]
    config["ATTNSCOPE_CLIENT"] = ApiClient(f"http://127.0.0.1:{_closed_port()}", timeout=2)
    try:
        page.goto(dashboard_url + "/census")
        page.wait_for_selector("#api-banner:not(.hidden)", timeout=30_000)
        assert "not answering" in page.locator("#api-banner-text").text_content()
    finally:
        config["ATTNSCOPE_CLIENT"] = real
    # no click: the banner retries by itself every few seconds and disappears once the API answers
    page.wait_for_selector("#api-banner.hidden", state="attached", timeout=15_000)
