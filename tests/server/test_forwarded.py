"""Issue 29 part 5: the rate limit was bypassed by a new ``X-Forwarded-For`` per request (uvicorn
trusts proxy headers from 127.0.0.1 by default). ``attnscope api`` now ignores them unless
``ATTNSCOPE_FORWARDED_ALLOW_IPS`` names the proxy; these tests serve the app with its options."""

from __future__ import annotations

import threading
import time

import httpx
import uvicorn

from attnscope.cli.serve import uvicorn_options
from attnscope.server.config import Settings
from attnscope.server.main import create_app
from tests.conftest import free_port

API = "/api/v1"


def _serve(settings: Settings):
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(settings), host="127.0.0.1", port=port, log_level="warning", **uvicorn_options(settings)
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 60
    while not server.started and time.time() < deadline:
        time.sleep(0.05)
    return server, thread, f"http://127.0.0.1:{port}"


def _statuses(url: str, forwarded: bool) -> list[int]:
    with httpx.Client(base_url=url, timeout=30) as c:
        return [
            c.get(f"{API}/models", headers={"X-Forwarded-For": f"203.0.113.{i}"} if forwarded else {}).status_code
            for i in range(5)
        ]


def test_a_new_x_forwarded_for_per_request_does_not_pass_the_rate_limit():
    server, thread, url = _serve(Settings(preload=[], rate_limit="3/minute"))
    try:
        assert _statuses(url, forwarded=True) == [200, 200, 200, 429, 429]
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_behind_a_named_proxy_each_forwarded_client_has_its_own_limit():
    server, thread, url = _serve(Settings(preload=[], rate_limit="3/minute", forwarded_allow_ips="127.0.0.1"))
    try:
        assert _statuses(url, forwarded=True) == [200] * 5  # five clients behind the proxy, one request each
        assert _statuses(url, forwarded=False) == [200, 200, 200, 429, 429]  # the proxy itself: one client
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_the_options_are_explicit():
    assert uvicorn_options(Settings(preload=[])) == {"proxy_headers": False}
    opts = uvicorn_options(Settings(preload=[], forwarded_allow_ips="10.0.0.2,10.0.0.3"))
    assert opts == {"proxy_headers": True, "forwarded_allow_ips": "10.0.0.2,10.0.0.3"}
