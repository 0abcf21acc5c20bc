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


def test_every_dashboard_page_links_the_api_docs(open_dash, api_url):
    page = open_dash("/census")
    link = page.get_by_role("link", name="API docs")
    link.wait_for(timeout=30_000)
    assert link.get_attribute("href") == f"{api_url}/docs" and link.get_attribute("target") == "_blank"
    with page.context.expect_page(timeout=30_000) as opened:
        link.click()
    docs = opened.value
    docs.wait_for_selector(".swagger-ui .opblock", timeout=60_000)  # the API's own Swagger UI
    docs.close()
    page.click("nav >> text=Explore")  # in the header of every page: it stays after navigating
    page.wait_for_selector("#text-input", timeout=30_000)
    assert page.get_by_role("link", name="API docs").is_visible()
