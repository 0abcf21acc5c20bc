"""What the docs must cover, checked against the code so that neither drifts: every analysis module has
a Python reference entry, every target of the reference exists, every dashboard page has a user-guide
page in the navigation, and CONTRIBUTING.md is part of the site."""

from __future__ import annotations

import importlib.util
import re

from _docs_hooks import ROOT

DOCS = ROOT / "docs"
REFERENCE = DOCS / "reference" / "python"
MKDOCS = (ROOT / "mkdocs.yml").read_text()


def _targets() -> set[str]:
    found = set()
    for page in REFERENCE.glob("*.md"):
        found |= set(re.findall(r"^::: ([\w.]+)", page.read_text(), re.M))
    return found


def test_every_analysis_module_is_in_the_python_reference():
    modules = {f"attnscope.analysis.{p.stem}" for p in (ROOT / "analysis").glob("*.py") if not p.stem.startswith("_")}
    missing = modules - _targets()
    assert not missing, f"add these to a page under docs/reference/python/: {sorted(missing)}"


def test_every_reference_target_exists():
    for target in _targets():
        assert importlib.util.find_spec(target) is not None, f"{target} (docs/reference/python) no longer exists"


def test_the_notebook_api_models_registry_loading_and_capture_are_documented():
    assert {"attnscope", "attnscope.models.registry", "attnscope.models.loading", "attnscope.models.capture"} <= (
        _targets()
    )


def test_every_dashboard_page_has_a_user_guide_page_in_the_nav():
    pages = []
    for source in (ROOT / "frontend" / "pages").glob("*.py"):
        m = re.search(r'register_page\([^)]*name="([^"]+)"', source.read_text())
        if m:
            pages.append(m.group(1))
    assert len(pages) >= 6
    for name in pages:
        guide = f"guide/{name.lower()}.md"
        assert (DOCS / guide).is_file(), f"dashboard page {name!r} has no {guide}"
        assert f"{name}: {guide}" in MKDOCS, f"{guide} is not in mkdocs.yml's nav"


def test_contributing_is_included_in_the_site():
    assert '--8<-- "CONTRIBUTING.md"' in (DOCS / "contributing.md").read_text()
    assert (ROOT / "CONTRIBUTING.md").is_file()
