"""The documentation site builds with --strict and is self-contained: no script, stylesheet, font or
image is fetched from another host, every formula is MathML, and the REST reference and the shipped
OpenAPI document are the application's own."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _docs_hooks import ROOT

pytestmark = pytest.mark.slow

# attributes that make a browser fetch something (links in <a href> are navigation, not fetches)
FETCH = re.compile(r"<(script|link|img|iframe|source|embed)\b[^>]*?\b(?:src|href)=\"(https?:)?//", re.I)
CSS_URL = re.compile(r"(@import|url\()\s*[\"']?(https?:)?//", re.I)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return out


def test_no_page_fetches_anything_from_another_host(site):
    pages = list(site.rglob("*.html"))
    assert len(pages) > 30
    for page in pages:
        hit = FETCH.search(page.read_text())
        assert hit is None, f"{page.relative_to(site)} fetches {hit.group(0)!r}"
    for sheet in site.rglob("*.css"):
        hit = CSS_URL.search(sheet.read_text())
        assert hit is None, f"{sheet.relative_to(site)} imports {hit.group(0)!r}"


def test_formulas_are_mathml_and_none_is_left_as_tex(site):
    methods = list((site / "methods").glob("*.html"))
    assert sum(p.read_text().count("<math") for p in methods) > 200
    for page in site.rglob("*.html"):
        assert 'class="arithmatex"' not in page.read_text(), page


def test_the_rest_reference_is_the_applications_openapi_document(site):
    from attnscope.server.main import create_app

    spec = create_app().openapi()
    assert json.loads((site / "reference" / "openapi.json").read_text()) == spec
    page = (site / "reference" / "rest-api.html").read_text()
    for path, item in spec["paths"].items():
        for method in item:
            anchor = re.sub(r"[^a-z0-9]+", "-", f"{method} {path}".lower()).strip("-")
            assert f'id="{anchor}"' in page, f"{method.upper()} {path}"


def test_the_python_reference_documents_the_notebook_entry_points(site):
    page = (site / "reference" / "python" / "attnscope.html").read_text()
    for name in ("attnscope.load", "attnscope.attention", "attnscope.capture"):
        assert f'id="{name}"' in page
    maps = (site / "reference" / "python" / "maps.html").read_text()
    assert 'id="attnscope.analysis.maps.AttentionMaps"' in maps
