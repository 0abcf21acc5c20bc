"""In Chromium: a dashboard in front of a token-protected API asks for a log-in, and once logged in its
pages work (every callback carries the CSRF header Dash's renderer copies from the cookie)."""

import pytest

pytestmark = pytest.mark.browser


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    """The Content-Security-Policy enforced: the log-in page must work under it."""
    return {**browser_context_args, "bypass_csp": False}


def test_log_in_with_the_token_then_the_explore_page_talks_to_the_api(page, secured_dashboard):
    url, token = secured_dashboard
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{url}/structure")
    assert page.url.startswith(f"{url}/login?next=/structure")
    page.fill("#token", token + "-wrong")
    page.click("#login-button")
    page.wait_for_selector("text=not the dashboard's access token")
    errors.clear()  # the refused log-in's 401 is logged by the browser
    page.fill("#token", token)
    page.click("#login-button")
    page.wait_for_url(f"{url}/structure")
    page.wait_for_selector("#main .panel", timeout=30_000)
    page.goto(f"{url}/")
    page.wait_for_selector("#api-status:has-text('API')", timeout=30_000)  # a callback reached the API
    page.wait_for_load_state("networkidle")
    assert "cannot reach" not in page.inner_text("#api-status")
    assert errors == []
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert cookies["attnscope_session"]["httpOnly"] and cookies["attnscope_session"]["sameSite"] == "Strict"
