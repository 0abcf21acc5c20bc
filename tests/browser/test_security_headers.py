"""Issue 15 row 7 in Chromium: the dashboard's Content-Security-Policy is enforced and every page still
works under it (Dash's inline start-up script is allowed by its hash, nothing else inline runs)."""

import pytest

pytestmark = pytest.mark.browser


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    """The policy enforced here (the other browser tests bypass it for Playwright's eval-based waits)."""
    return {**browser_context_args, "bypass_csp": False}


WATCH = """
window.__csp = [];
document.addEventListener('securitypolicyviolation',
    e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
"""


@pytest.mark.parametrize("path", ["/", "/vision", "/structure", "/census", "/faithfulness", "/measure"])
def test_pages_render_under_the_policy_without_a_violation(page, dashboard_url, path):
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.add_init_script(WATCH)
    response = page.goto(dashboard_url + path)
    csp = response.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "'sha256-" in csp
    assert response.headers["x-content-type-options"] == "nosniff"
    page.wait_for_selector("#main .panel", timeout=30_000)
    page.wait_for_load_state("networkidle")
    assert page.evaluate("window.__csp") == []
    assert errors == []


def test_the_policy_blocks_an_injected_inline_script(open_dash):
    page = open_dash("/")
    page.wait_for_selector("#main .panel", timeout=30_000)
    ran = page.evaluate(
        """() => new Promise(done => {
            document.addEventListener('securitypolicyviolation', () => done('blocked'));
            const s = document.createElement('script');
            s.textContent = 'window.__injected = true';
            document.body.appendChild(s);
            setTimeout(() => done(window.__injected ? 'ran' : 'blocked'), 500);
        })"""
    )
    assert ran == "blocked"


def test_plotly_draws_webgl_3d_and_heatmaps_under_the_policy(page, dashboard_url):
    """The measure page's 3D particles (scatter3d, WebGL) and the heatmaps need no eval."""
    page.add_init_script(WATCH)
    page.goto(dashboard_url + "/measure")
    page.wait_for_selector("#main .panel", timeout=30_000)
    page.wait_for_load_state("networkidle")
    drawn = page.evaluate(
        """async () => {
            const div = document.createElement('div');
            document.body.appendChild(div);
            await Plotly.newPlot(div, [{type: 'scatter3d', mode: 'markers', x: [1, 2, 3], y: [3, 1, 2], z: [2, 3, 1]}]);
            const hm = document.createElement('div');
            document.body.appendChild(hm);
            await Plotly.newPlot(hm, [{type: 'heatmap', z: [[1, 2], [3, 4]]}]);
            return div.querySelectorAll('canvas').length + hm.querySelectorAll('.hm, image').length;
        }"""
    )
    assert drawn >= 2
    assert page.evaluate("window.__csp") == []
