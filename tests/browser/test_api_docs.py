"""Swagger UI at /docs renders the API's routes in Debian's Chromium with every request kept on the API's
host: a request to any other host (a CDN) is aborted and fails the test."""

from urllib.parse import urlparse

import pytest

pytestmark = pytest.mark.browser


def test_swagger_ui_renders_every_route_without_another_host(page, api_url):
    host = urlparse(api_url).netloc
    foreign = []

    def guard(route):
        if urlparse(route.request.url).netloc != host:
            foreign.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route("**/*", guard)
    page.goto(f"{api_url}/docs")
    page.wait_for_selector(".swagger-ui .opblock", timeout=60_000)
    paths = page.locator(".swagger-ui .opblock-summary-path").all_inner_texts()
    assert any(p.replace("\u200b", "") == "/api/v1/runs" for p in paths), paths[:5]
    assert len(paths) >= 20
    assert foreign == []
    assert errors == []
