"""The interactive API docs (/docs, /redoc) load every script, style and icon from the app, none from a CDN."""

import re
from urllib.parse import urlparse

import pytest
from fastapi.testclient import TestClient

from attnscope.server.config import Settings
from attnscope.server.main import DOCS_ASSETS, create_app


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(Settings(preload=[], max_runs=8))) as c:
        yield c


def _asset_urls(html: str) -> list[str]:
    """Every URL the page loads: src/href attributes and the JavaScript strings that name a url."""
    attrs = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", html)
    script = re.findall(r"""url\s*:\s*['"]([^'"]+)['"]""", html)
    return attrs + script


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_load_only_local_assets(client, page):
    r = client.get(page)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    urls = _asset_urls(r.text)
    assert any(u.endswith(".js") for u in urls), urls
    foreign = [u for u in urls if urlparse(u).netloc]
    assert foreign == [], f"{page} loads from another host: {foreign}"
    assert "cdn" not in r.text.lower() and "fonts.googleapis" not in r.text
    for url in urls:
        asset = client.get(url)
        assert asset.status_code == 200, (url, asset.status_code)
        assert len(asset.content) > 100, url


def test_swagger_ui_assets_are_the_apps_own_files(client):
    js = client.get(f"{DOCS_ASSETS}/swagger-ui-bundle.js")
    css = client.get(f"{DOCS_ASSETS}/swagger-ui.css")
    assert js.status_code == 200 and "javascript" in js.headers["content-type"]
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert b"SwaggerUIBundle" in js.content
    # the OpenAPI document is 3.1 (FastAPI), which needs Swagger UI 5 or later
    assert client.get("/openapi.json").json()["openapi"].startswith("3.1")
    assert re.search(rb'"5\.\d+\.\d+"', js.content)


def test_asset_folder_does_not_list_or_escape(client):
    assert client.get(f"{DOCS_ASSETS}/").status_code == 404
    assert client.get(f"{DOCS_ASSETS}/../pyproject.toml").status_code == 404
    assert client.get(f"{DOCS_ASSETS}/%2e%2e/core.py").status_code == 404
