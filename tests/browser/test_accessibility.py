"""axe-core on every page (1440 px and 390 px wide): no critical or serious violation caused by the
project's own markup; those that come from Dash's components are listed with their upstream issue
(``axe_harness.DASH_OWN``). Also: one ``main`` landmark, ``lang`` on ``<html>``, no horizontal page scroll
at 390 px."""

import pytest
from axe_harness import axe_violations, install_axe, split_dash_own

pytestmark = pytest.mark.browser

PAGES = [
    "/",
    "/structure",
    "/faithfulness",
    "/census",
    "/measure",
    "/vision",
    "/compare",
    "/interventions",
    "/circuits",
    "/workspace",
]


@pytest.mark.parametrize("path", PAGES)
def test_page_has_no_serious_axe_violation_of_ours(page, dashboard_url, path):
    install_axe(page)
    page.goto(dashboard_url + path)
    page.wait_for_selector("#main .panel", timeout=30_000)
    page.wait_for_load_state("networkidle")
    assert page.evaluate("document.documentElement.lang") == "en"
    assert page.locator("main").count() == 1
    ours, theirs = split_dash_own(axe_violations(page))
    print("\n".join(["Dash's own:"] + theirs) if theirs else "no violation from Dash's components")
    assert ours == [], "\n".join(f"{v['id']} ({v['impact']}): {v['help']} at {v['targets']}" for v in ours)


@pytest.mark.parametrize("path", PAGES)
def test_page_fits_390_px(page, dashboard_url, path):
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(dashboard_url + path)
    page.wait_for_selector("#main .panel", timeout=30_000)
    page.wait_for_load_state("networkidle")
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"{path}: the page scrolls sideways by {overflow} px at 390 px"
