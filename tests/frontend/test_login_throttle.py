"""Issue 29 (dashboard log-in): wrong tokens from one address are throttled, 429 with ``Retry-After``,
over HTTP against a real Dash app behind ``install_security`` (its own app and credential, so the
throttle it trips does not reach the session's shared dashboards)."""

from __future__ import annotations

import threading

import dash
import httpx
import pytest
from dash import html
from werkzeug.serving import make_server

from attnscope.frontend.login import LOGIN_FAILURES, SESSION_COOKIE
from attnscope.frontend.security import DashSecurity, install_security

TOKEN = "the-right-token-for-this-test"


@pytest.fixture()
def guarded_url():
    from tests.conftest import free_port

    app = dash.Dash(__name__)
    app.layout = html.Div("inside", id="inside")
    install_security(app, DashSecurity(credential=TOKEN))
    port = free_port()
    server = make_server("127.0.0.1", port, app.server, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}"
    server.shutdown()
    thread.join(timeout=10)


def test_repeated_wrong_tokens_are_throttled_with_retry_after(guarded_url):
    allowed = int(LOGIN_FAILURES.split("/")[0])
    with httpx.Client(base_url=guarded_url, timeout=30) as c:
        ok = c.post("/login", data={"token": TOKEN})  # a right token is never counted
        assert ok.status_code == 303 and SESSION_COOKIE in ok.cookies
    with httpx.Client(base_url=guarded_url, timeout=30) as c:
        codes = [c.post("/login", data={"token": f"guess-{i}"}).status_code for i in range(allowed)]
        assert codes == [401] * allowed
        r = c.post("/login", data={"token": "guess-again"})
        assert r.status_code == 429 and r.json()["code"] == "login_throttled", r.text
        assert 1 <= int(r.headers["Retry-After"]) <= 60
        # throttled before the comparison: the right token waits too, and no session is made
        r = c.post("/login", data={"token": TOKEN})
        assert r.status_code == 429 and SESSION_COOKIE not in r.cookies
        assert c.get("/login").status_code == 200  # the page itself still answers
