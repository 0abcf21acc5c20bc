"""Issue 15, rows 5-7: security defaults, the contract's details, work bounded in time.

Host check (DNS rebinding), CSRF-safe form posts, security headers on the API and the dashboard,
the optional rate limit, no server path in any answer, the 409 detail, Allow headers, the 422
body, the heavy executor's 429 and cancellation.
"""

from __future__ import annotations

import threading
import time

import pytest
from fastapi.testclient import TestClient

from attnscope.models.cancel import Cancelled, check_cancelled
from attnscope.server.config import Settings
from attnscope.server.main import create_app
from attnscope.server.request_executor import ExecutorBusy, HeavyExecutor

API = "/api/v1"
FORM = {"data": {"model": "gauss9-iso"}, "files": {"file": ("x.png", b"\x89PNG", "image/png")}}


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(Settings(preload=[], max_runs=8))) as c:
        yield c


def test_a_foreign_host_header_is_refused_in_the_error_model(client):
    """DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends Host: evil.example."""
    r = client.get(f"{API}/models", headers={"host": "evil.example"})
    assert r.status_code == 400 and r.json()["code"] == "bad_host"
    assert "ATTNSCOPE_ALLOWED_HOSTS" in r.json()["detail"]
    assert client.get(f"{API}/models", headers={"host": "localhost:8000"}).status_code == 200


def test_allowed_hosts_come_from_the_setting():
    with TestClient(create_app(Settings(preload=[], allowed_hosts=["attnscope.example"]))) as c:
        assert c.get(f"{API}/health", headers={"host": "attnscope.example"}).status_code == 200
        assert c.get(f"{API}/health", headers={"host": "localhost"}).status_code == 400


def test_a_cross_site_form_post_is_refused_and_the_header_lets_it_through(client):
    r = client.post(f"{API}/runs/image", **FORM)
    assert r.status_code == 400 and r.json()["code"] == "csrf_header_missing"
    r = client.post(f"{API}/runs/image", **FORM, headers={"X-Requested-With": "XMLHttpRequest"})
    assert r.status_code in (415, 422), r.text  # past the guard: the (fake) image itself is refused
    r = client.post(f"{API}/runs", content=b'{"text": "hi"}', headers={"content-type": "text/plain"})
    assert r.status_code == 400 and r.json()["code"] == "csrf_header_missing"
    doc = client.get("/openapi.json").json()["paths"][f"{API}/runs/image"]["post"]
    assert {"name": "X-Requested-With", "in": "header", "required": True}.items() <= doc["parameters"][0].items()


@pytest.mark.parametrize("path", [f"{API}/health", f"{API}/models", f"{API}/runs/nope", "/openapi.json"])
def test_security_headers_on_every_api_answer(client, path):
    r = client.get(path)
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "no-referrer"
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
    assert r.headers["x-frame-options"] == "DENY"


def test_the_docs_pages_get_a_policy_that_runs_their_local_scripts(client):
    csp = client.get("/docs").headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "http" not in csp


def test_security_headers_on_the_dashboard(dashboard_app):
    """Flask's own client on the Dash server: the headers and a CSP that names Dash's inline scripts."""
    r = dashboard_app.server.test_client().get("/")
    assert r.status_code == 200
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert r.headers["X-Frame-Options"] == "DENY"
    csp = r.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in csp and "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
    assert "'sha256-" in csp


def test_the_rate_limit_answers_429_rate_limited_with_retry_after():
    with TestClient(create_app(Settings(preload=[], rate_limit="3/minute"))) as c:
        codes = [c.get(f"{API}/models").status_code for _ in range(4)]
        assert codes == [200, 200, 200, 429]
        r = c.get(f"{API}/datasets")
        assert r.status_code == 429 and r.json()["code"] == "rate_limited" and int(r.headers["retry-after"]) >= 1
        assert c.get(f"{API}/health").status_code == 200  # probes are never limited


def test_a_bad_rate_limit_setting_stops_start_up_with_its_name():
    with pytest.raises(ValueError, match="rate_limit"):
        Settings(rate_limit="lots")


def test_no_absolute_server_path_in_models_or_error_details(client, tmp_path):
    import re

    text = client.get(f"{API}/models").text + client.get(f"{API}/models/%2Fetc%2Fpasswd/structure").text
    text += client.post(f"{API}/runs", json={"model": f"local:{tmp_path}", "text": "hi"}).text
    assert not re.search(r"(?<![\w.:/])/(?!api/v\d+/)(?:[\w.@+-]+/)+[\w.@+-]*", text.replace("\\/", "/")), text


def test_the_409_detail_names_the_job_not_a_placeholder(tmp_path):
    with TestClient(create_app(Settings(preload=[], state_dir=str(tmp_path)))) as c:  # a database of its own
        job = c.app.state.jobs.records.create("j15409", "census", {"model": "minilm"})  # queued, never started
        r = c.get(f"{API}/jobs/{job.id}/result")
        assert r.status_code == 409 and "{id}" not in r.json()["detail"] and job.id in r.json()["detail"]


def test_allow_headers_list_every_method_of_the_path_and_only_those(client):
    r = client.request("OPTIONS", f"{API}/jobs/abc")
    assert r.status_code == 405 and set(r.headers["allow"].split(", ")) == {"GET", "HEAD"}
    assert client.request("OPTIONS", f"{API}/jobs/abc/cancel").headers["allow"] == "POST"
    assert client.request("OPTIONS", f"{API}/jobs/kinds").headers["allow"] == "GET, HEAD"
    assert client.request("PUT", f"{API}/runs/image").headers["allow"] == "POST"


def test_validation_errors_are_one_string_and_the_schema_says_so(client):
    rid = client.post(f"{API}/runs", json={"model": "minilm", "text": "hi there"}).json()["id"]
    r = client.get(f"{API}/runs/{rid}/attention", params={"layer": 0, "head": -1803})
    assert r.status_code == 422 and isinstance(r.json()["detail"], str)
    doc = client.get("/openapi.json").json()
    head = next(p for p in doc["paths"][f"{API}/runs/{{run_id}}/attention"]["get"]["parameters"] if p["name"] == "head")
    assert head["schema"]["anyOf"][0]["minimum"] == 0
    unprocessable = doc["paths"][f"{API}/runs"]["post"]["responses"]["422"]["content"]["application/json"]
    assert unprocessable["schema"] == {"$ref": "#/components/schemas/ErrorBody"}


def test_unknown_json_fields_are_refused(client):
    r = client.post(f"{API}/runs", json={"model": "minilm", "text": "hi", "temprature": 0.5})
    assert r.status_code == 422 and "temprature" in r.json()["detail"]


def test_the_document_names_the_bearer_scheme_only_when_a_token_is_set(client):
    assert "securitySchemes" not in client.get("/openapi.json").json()["components"]
    with TestClient(create_app(Settings(preload=[], api_token="s3cret"))) as c:
        doc = c.get("/openapi.json", headers={"Authorization": "Bearer s3cret"}).json()
        assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
        assert "401" in doc["paths"][f"{API}/models"]["get"]["responses"]


def test_with_a_token_the_schema_and_the_docs_need_it_too():
    """Issue 29 part 5: /openapi.json and /docs answered anyone while every route wanted the token."""
    with TestClient(create_app(Settings(preload=[], api_token="s3cret"))) as c:
        for path in ("/openapi.json", "/docs", "/redoc", "/docs/oauth2-redirect"):
            r = c.get(path)
            assert r.status_code == 401 and r.json()["code"] == "unauthorized", path
            assert r.headers["www-authenticate"] == "Bearer"
            assert c.get(path, headers={"Authorization": "Bearer s3cretx"}).status_code == 401
            assert c.get(path, headers={"Authorization": "Bearer s3cret"}).status_code == 200, path
        assert c.get(f"{API}/health").status_code == 200  # still open


def test_a_job_error_names_no_server_path():
    """Issue 29 part 5: a failed job's error printed a server path (public_message was not applied)."""
    from attnscope.server.jobs.kinds import Job
    from attnscope.server.routes.jobs import to_public

    job = Job(
        id="j1",
        kind="census",
        params={},
        status="failed",
        message="reading /home/alice/secret/data/sst2/dev.tsv",
        error="FileNotFoundError: [Errno 2] No such file: '/home/alice/secret/data/sst2/dev.tsv'",
    )
    public = to_public(job)
    assert "/home/alice" not in public.error and ".../dev.tsv" in public.error
    assert "/home/alice" not in public.message


# ------------------------------------------------------------------ row 5: the heavy executor


def test_a_full_executor_answers_429_with_retry_after():
    ex = HeavyExecutor(workers=1, queue_limit=1)
    gate = threading.Event()
    try:
        ex.submit(gate.wait)
        ex.submit(gate.wait)
        while ex._queue.qsize() > 1:  # the worker took the first: one waits
            time.sleep(0.01)
        with pytest.raises(ExecutorBusy) as err:
            ex.submit(gate.wait)
        # no work has finished: 2 s per item, for the one waiting and this one (tests/server/test_deadline.py
        # checks the estimate from measured run times)
        assert err.value.status_code == 429 and err.value.headers["Retry-After"] == "4"
    finally:
        gate.set()
        ex.shutdown()


def test_cancelled_work_stops_at_its_next_check():
    ex = HeavyExecutor(workers=1, queue_limit=0)
    steps = []

    def long_loop():
        for i in range(10_000):
            check_cancelled()
            steps.append(i)
            time.sleep(0.01)

    fut, token = ex.submit(long_loop)
    while not steps:
        time.sleep(0.01)
    token.cancel("the client disconnected")
    with pytest.raises(Cancelled):
        fut.result(timeout=10)
    assert len(steps) < 10_000
    ex.shutdown()


def test_work_stops_when_its_client_leaves(start_api):
    """Row 5: a Lipschitz estimate of 480 tokens (200 steps, 20 draws) ran 152 s after its client left."""
    import http.client
    from urllib.parse import urlencode, urlparse

    import httpx

    with start_api(Settings(preload=[], max_runs=4)) as url:
        u = urlparse(url)
        query = urlencode({"layer": 0, "steps": 200, "draws": 20, "text": " ".join(["word"] * 480)})
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
        conn.request("GET", f"{API}/models/minilm/lipschitz?{query}")
        in_flight = lambda: httpx.get(f"{url}{API}/health", timeout=10).json()["heavy_in_flight"]  # noqa: E731
        deadline = time.time() + 120
        while in_flight() == 0 and time.time() < deadline:
            time.sleep(0.2)
        assert in_flight() == 1
        conn.sock.close()  # the client leaves
        conn.close()
        deadline = time.time() + 60
        while in_flight() and time.time() < deadline:
            time.sleep(0.5)
        assert in_flight() == 0  # cancelled at its next step, long before the estimate would end
