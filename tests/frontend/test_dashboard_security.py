"""The dashboard's doors, over HTTP against real running dashboards: the open one of the session
(werkzeug, no credential) and ``attnscope dashboard`` (gunicorn) in front of a token-protected API."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from attnscope.frontend.login import _safe_next
from attnscope.frontend.security import (
    CSRF_COOKIE,
    DEFAULT_ALLOWED_HOSTS,
    SESSION_COOKIE,
    check_exposure,
    host_allowed,
)

ROOT = Path(__file__).resolve().parents[2]
BANNER = "api-banner.className"


def callback_body(base: str, client: httpx.Client | None = None) -> dict:
    """A real callback request: the API banner's health poll (its output key read from the dashboard)."""
    get = (client or httpx).get
    deps = get(f"{base}/_dash-dependencies", timeout=30).json()
    key = next(d["output"] for d in deps if BANNER in d["output"])
    outputs = [
        {"id": part.rsplit(".", 1)[0], "property": part.rsplit(".", 1)[1]} for part in key.strip(".").split("...")
    ]
    return {
        "output": key,
        "outputs": outputs,
        "inputs": [
            {"id": "api-health-poll", "property": "n_intervals", "value": 1},
            {"id": "api-banner-retry", "property": "n_clicks", "value": 0},
        ],
        "changedPropIds": ["api-health-poll.n_intervals"],
        "state": [],
    }


# ------------------------------------------------------------------ pure rules
def test_the_default_host_list_is_the_apis():
    from attnscope.server.config import DEFAULT_ALLOWED_HOSTS as API_HOSTS

    assert DEFAULT_ALLOWED_HOSTS == API_HOSTS


def test_host_rule_strips_the_port_and_matches_domains():
    hosts = ("localhost", "127.0.0.1", "[::1]", "*.example.org")
    assert host_allowed("127.0.0.1:8050", hosts)
    assert host_allowed("[::1]:8050", hosts)
    assert host_allowed("a.example.org", hosts)
    assert not host_allowed("evil.attacker.example", hosts)
    assert not host_allowed("example.org.evil", hosts)
    assert host_allowed("anything", ("*",))


def test_no_credential_on_a_public_address_is_refused_unless_opted_in():
    check_exposure("127.0.0.1", None, allow_open=False)
    check_exposure("::1", None, allow_open=False)
    check_exposure("0.0.0.0", "token", allow_open=False)
    check_exposure("0.0.0.0", None, allow_open=True)
    check_exposure("0.0.0.0", None, allow_open=False, exposed_on="127.0.0.1")  # compose on loopback
    with pytest.raises(ValueError, match="ATTNSCOPE_DASH_ALLOW_OPEN=1"):
        check_exposure("0.0.0.0", None, allow_open=False)
    with pytest.raises(ValueError, match="ATTNSCOPE_API_TOKEN"):
        check_exposure("127.0.0.1", None, allow_open=False, exposed_on="0.0.0.0")


def test_log_in_redirects_only_to_paths_of_this_server():
    assert _safe_next("/measure?run=1") == "/measure?run=1"
    for bad in ("//evil.example/x", "https://evil.example/", "\\\\evil", "", None, "evil"):
        assert _safe_next(bad) == "/"


def test_the_dashboard_refuses_to_start_open_on_a_public_address():
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("ATTNSCOPE_DASH")}
    env.pop("ATTNSCOPE_API_TOKEN", None)
    out = subprocess.run(
        [sys.executable, "-m", "attnscope.cli", "dashboard", "--dash-host", "0.0.0.0", "--dash-port", "1"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2, out.stderr[-2000:]
    assert "ATTNSCOPE_DASH_ALLOW_OPEN=1" in out.stderr


# ------------------------------------------------------------------ the open dashboard (no credential)
def test_a_foreign_host_header_is_refused(dashboard_url):
    r = httpx.get(f"{dashboard_url}/", headers={"Host": "evil.attacker.example"}, timeout=30)
    assert r.status_code == 400
    assert "ATTNSCOPE_ALLOWED_HOSTS" in r.json()["detail"]
    r = httpx.post(
        f"{dashboard_url}/_dash-update-component",
        headers={"Host": "evil.attacker.example"},
        json=callback_body(dashboard_url),
        timeout=30,
    )
    assert r.status_code == 400 and r.json()["code"] == "bad_host"


def test_a_well_formed_callback_answers(dashboard_url):
    r = httpx.post(f"{dashboard_url}/_dash-update-component", json=callback_body(dashboard_url), timeout=60)
    assert r.status_code == 200, r.text
    assert "api-banner" in r.json()["response"]


def test_an_oversized_callback_is_refused_before_its_body_is_read(dashboard_url):
    """Content-Length 300 MB and no body sent: the answer comes without the server waiting for it."""
    parts = urlsplit(dashboard_url)
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as s:
        s.sendall(
            (
                "POST /_dash-update-component HTTP/1.1\r\n"
                f"Host: {parts.netloc}\r\nContent-Type: application/json\r\n"
                "Content-Length: 300000000\r\nConnection: close\r\n\r\n"
            ).encode()
        )
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.split(b" ", 2)[1] == b"413", head
    assert b"ATTNSCOPE_DASH_MAX_CALLBACK_BYTES" in body


@pytest.mark.parametrize(
    "content, ctype",
    [
        (b"{not json", "application/json"),
        (b"[1, 2, 3]", "application/json"),
        (b'"a string"', "application/json"),
        (b'{"output": "nobody.children", "outputs": [], "inputs": []}', "application/json"),
        (b"\xff\xfe\x00garbage", "application/json"),
        (b"output=x", "text/plain"),
        (b'{"output": "x"}', "text/plain"),
        (b"", "application/x-www-form-urlencoded"),
    ],
)
def test_malformed_callback_bodies_get_4xx(dashboard_url, content, ctype):
    r = httpx.post(
        f"{dashboard_url}/_dash-update-component", content=content, headers={"Content-Type": ctype}, timeout=30
    )
    assert r.status_code == (400 if ctype == "application/json" else 415), r.text
    assert r.json()["code"] == "bad_callback"


@pytest.mark.parametrize(
    "change",
    [
        {"outputs": "x"},
        {"inputs": {"a": 1}},
        {"inputs": [1, 2]},
        {"inputs": [{"id": "api-health-poll"}]},
        {"state": 7},
        {"changedPropIds": [1]},
        {"outputs": [{"id": "api-banner"}]},
    ],
)
def test_callback_bodies_of_the_wrong_shape_get_4xx_never_500(dashboard_url, change):
    body = {**callback_body(dashboard_url), **change}
    r = httpx.post(f"{dashboard_url}/_dash-update-component", json=body, timeout=60)
    assert 400 <= r.status_code < 500, r.text
    assert r.json()["code"] in ("bad_callback", "callback_failed")


def test_a_post_from_another_site_is_refused(dashboard_url):
    r = httpx.post(
        f"{dashboard_url}/_dash-update-component",
        json=callback_body(dashboard_url),
        headers={"Origin": "http://evil.attacker.example"},
        timeout=30,
    )
    assert r.status_code == 403 and r.json()["code"] == "cross_origin"


# ------------------------------------------------------------------ log-in (gunicorn, token-protected API)
def test_without_a_session_pages_redirect_to_the_login_and_callbacks_get_401(secured_dashboard):
    url, _ = secured_dashboard
    r = httpx.get(f"{url}/measure?run=abc", timeout=30)
    assert r.status_code == 303 and r.headers["location"].startswith("/login?next=/measure")
    for path in ("/_dash-layout", "/_dash-dependencies"):
        assert httpx.get(f"{url}{path}", timeout=30).status_code == 401
    r = httpx.post(f"{url}/_dash-update-component", json={"output": "x"}, timeout=30)
    assert r.status_code == 401 and "/login" in r.json()["detail"]
    assert httpx.get(f"{url}/assets/style.css", timeout=30).status_code == 200  # the login page's style


def test_a_wrong_token_does_not_log_in(secured_dashboard):
    url, token = secured_dashboard
    r = httpx.post(f"{url}/login", data={"token": token + "x"}, timeout=30)
    assert r.status_code == 401 and SESSION_COOKIE not in r.cookies
    assert "not the dashboard" in r.text


def test_log_in_sets_a_strict_httponly_session_and_callbacks_need_the_csrf_header(secured_dashboard):
    url, token = secured_dashboard
    with httpx.Client(base_url=url, timeout=60) as client:
        r = client.post("/login?next=/measure", data={"token": token})
        assert r.status_code == 303 and r.headers["location"] == "/measure"
        cookies = {c.split("=", 1)[0]: c.lower() for c in r.headers.get_list("set-cookie")}
        assert "httponly" in cookies[SESSION_COOKIE] and "samesite=strict" in cookies[SESSION_COOKIE]
        assert "httponly" not in cookies[CSRF_COOKIE] and "samesite=strict" in cookies[CSRF_COOKIE]
        assert "secure" not in cookies[SESSION_COOKIE]  # plain http here; https sets Secure
        assert client.get("/").status_code == 200
        body = callback_body(url, client)
        r = client.post("/_dash-update-component", json=body)
        assert r.status_code == 403 and r.json()["code"] == "csrf_failed"
        r = client.post("/_dash-update-component", json=body, headers={"X-CSRFToken": "guessed"})
        assert r.status_code == 403
        r = client.post("/_dash-update-component", json=body, headers={"X-CSRFToken": client.cookies[CSRF_COOKIE]})
        assert r.status_code == 200, r.text
        assert "api-banner" in r.json()["response"]  # the dashboard reached the token-protected API
        client.get("/logout")
        assert client.get("/_dash-layout").status_code == 401


def test_a_forged_session_cookie_is_refused(secured_dashboard):
    url, _ = secured_dashboard
    r = httpx.get(f"{url}/_dash-layout", cookies={SESSION_COOKIE: "eyJjc3JmIjoieCJ9.forged.sig"}, timeout=30)
    assert r.status_code == 401


def test_a_script_may_send_the_token_as_a_bearer_header(secured_dashboard):
    url, token = secured_dashboard
    auth = {"Authorization": f"Bearer {token}"}
    assert httpx.get(f"{url}/_dash-layout", headers=auth, timeout=30).status_code == 200
    body = callback_body(url, httpx.Client(headers=auth))
    assert httpx.post(f"{url}/_dash-update-component", json=body, headers=auth, timeout=60).status_code == 200
    wrong = {"Authorization": f"Bearer {token}x"}
    assert httpx.get(f"{url}/_dash-layout", headers=wrong, timeout=30).status_code == 401


def test_a_chunked_callback_body_is_cut_at_the_limit(secured_dashboard):
    """No Content-Length: the body is counted as it streams and refused past 64 KiB (the setting)."""
    url, token = secured_dashboard

    def chunks():
        for _ in range(64):
            yield b" " * 4096

    r = httpx.post(
        f"{url}/_dash-update-component",
        content=chunks(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        timeout=60,
    )
    assert r.status_code == 413, r.text
    assert "ATTNSCOPE_DASH_MAX_CALLBACK_BYTES" in r.json()["detail"]
