"""Issue 15, rows 2-4 and 6: every expensive parameter bounded, the compute budget, the body limits.

Each test is one row of the issue's "measured on main" list, over HTTP (Starlette's client, or a
live uvicorn server where the connection itself matters: keep-alive, a body never sent).
"""

from __future__ import annotations

import http.client
import io
import json
import select
import socket
import struct
import zlib
from urllib.parse import urlparse

import httpx
import pytest
from fastapi.testclient import TestClient

from attnscope.server.config import Settings
from attnscope.server.main import create_app

API = "/api/v1"
TEXT = "a gripping , funny and moving film ."

# row 3: the six option values that gave a 500 on main, each now a 422 naming the field and its limit
SIX_500S = [
    ("occlusion", {"max_tokens": "abc"}, "options.occlusion.max_tokens"),
    ("flow", {"max_tokens": [1]}, "options.flow.max_tokens"),
    ("integrated_gradients", {"n_steps": 0}, "greater than or equal to 1"),
    ("integrated_gradients", {"n_steps": -5}, "greater than or equal to 1"),
    ("attention", {"layer": "1e400"}, "options.attention.layer"),
    ("flow", {"max_tokens": "1e400"}, "options.flow.max_tokens"),
]


def _raw_json(explainer: str, options: dict) -> str:
    """The body as a hostile client writes it: ``"1e400"`` becomes the bare number 1e400 (inf)."""
    body = json.dumps({"explainers": [explainer], "metrics": ["comprehensiveness"], "options": {explainer: options}})
    return body.replace('"1e400"', "1e400")


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(Settings(preload=[], max_runs=8, compute_budget=400_000))) as c:
        yield c


@pytest.fixture(scope="module")
def run_id(client):
    r = client.post(f"{API}/runs", json={"model": "minilm-sst2", "text": TEXT})
    assert r.status_code == 201, r.text
    return r.json()["id"]


@pytest.mark.parametrize(("explainer", "options", "says"), SIX_500S)
def test_the_six_option_values_that_gave_500_are_422_with_the_field(client, run_id, explainer, options, says):
    r = client.post(
        f"{API}/runs/{run_id}/faithfulness",
        content=_raw_json(explainer, options),
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "invalid" and says in r.json()["detail"]


@pytest.mark.parametrize(("explainer", "options", "says"), SIX_500S)
def test_the_six_keep_the_connection_alive_on_a_live_server(start_api, explainer, options, says):
    with start_api(Settings(preload=[], max_runs=4)) as url:
        u = urlparse(url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
        conn.request("POST", f"{API}/runs", json.dumps({"model": "minilm-sst2", "text": TEXT}), _JSON)
        run = json.loads(conn.getresponse().read())["id"]
        sock = conn.sock
        conn.request("POST", f"{API}/runs/{run}/faithfulness", _raw_json(explainer, options), _JSON)
        resp = conn.getresponse()
        assert resp.status == 422 and says in json.loads(resp.read())["detail"]
        assert resp.getheader("connection") != "close"
        conn.request("GET", f"{API}/health")  # the same socket answers the next request
        assert conn.getresponse().status == 200 and conn.sock is sock
        conn.close()


_JSON = {"content-type": "application/json"}


def test_integrated_gradients_8192_steps_is_refused_with_the_limit(client, run_id):
    """Row 2: n_steps = internal_batch_size = 8192 ran 503 s and took 18.8 GB on main."""
    body = {"explainers": ["integrated_gradients"], "options": {"integrated_gradients": {"n_steps": 8192}}}
    r = client.post(f"{API}/runs/{run_id}/faithfulness", json=body)
    assert r.status_code == 422 and "less than or equal to 256" in r.json()["detail"], r.text
    body["options"]["integrated_gradients"] = {"internal_batch_size": 8192}
    r = client.post(f"{API}/runs/{run_id}/faithfulness", json=body)
    assert r.status_code == 422 and "internal_batch_size" in r.json()["detail"]
    schema = client.get("/openapi.json").json()["components"]["schemas"]["IntegratedGradientsOptions"]
    assert schema["properties"]["n_steps"]["maximum"] == 256 and schema["properties"]["n_steps"]["minimum"] == 1


def test_job_params_take_the_same_bounds(client):
    params = {"explainers": ["integrated_gradients"], "options": {"integrated_gradients": {"n_steps": 8192}}}
    r = client.post(f"{API}/jobs", json={"kind": "faithfulness", "params": params})
    assert r.status_code == 422 and "params.options.integrated_gradients.n_steps" in r.json()["detail"], r.text
    r = client.post(f"{API}/jobs", json={"kind": "faithfulness", "params": {"optoins": {}}})
    assert r.status_code == 422 and "optoins" in r.json()["detail"]


def test_an_unknown_explainer_or_option_is_a_422_not_ignored(client, run_id):
    r = client.post(f"{API}/runs/{run_id}/faithfulness", json={"options": {"integrated_gradients": {"steps": 4}}})
    assert r.status_code == 422 and "steps" in r.json()["detail"]
    r = client.post(f"{API}/runs/{run_id}/faithfulness", json={"explainers": ["lime"]})
    assert r.status_code == 422 and "integrated_gradients" in r.json()["detail"]  # the choices


def test_over_the_compute_budget_is_413_saying_how_to_run_it_as_a_job(run_id):
    with TestClient(create_app(Settings(preload=[], max_runs=8, compute_budget=2_000))) as c:
        rid = c.post(f"{API}/runs", json={"model": "minilm-sst2", "text": TEXT}).json()["id"]
        body = {"explainers": ["integrated_gradients"], "metrics": ["comprehensiveness"]}
        body["options"] = {"integrated_gradients": {"n_steps": 200}}
        r = c.post(f"{API}/runs/{rid}/faithfulness", json=body)
        assert r.status_code == 413, r.text
        detail = r.json()["detail"]
        assert r.json()["code"] == "budget_exceeded"
        assert "ATTNSCOPE_COMPUTE_BUDGET" in detail and "POST /api/v1/jobs" in detail and "2000" in detail
        body["options"] = {"integrated_gradients": {"n_steps": 4}}  # under the budget: it runs
        assert c.post(f"{API}/runs/{rid}/faithfulness", json=body).status_code == 200


def test_a_batch_of_steps_times_tokens_is_bounded(client):
    long = " ".join(["good"] * 120)
    rid = client.post(f"{API}/runs", json={"model": "minilm-sst2", "text": long}).json()["id"]
    body = {"explainers": ["integrated_gradients"], "options": {"integrated_gradients": {"internal_batch_size": 256}}}
    r = client.post(f"{API}/runs/{rid}/faithfulness", json=body)
    assert r.status_code == 413 and "internal_batch_size" in r.json()["detail"], r.text


# ------------------------------------------------------------------ row 4: body limits


def _live(start_api, **kw):
    return start_api(Settings(preload=[], max_runs=4, **kw))


def test_a_300_mb_json_body_is_refused_before_it_is_read(start_api):
    """Only the headers are sent: the 413 comes back while the 300 MB are still unsent."""
    with _live(start_api) as url:
        u = urlparse(url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        conn.putrequest("POST", f"{API}/runs")
        conn.putheader("content-type", "application/json")
        conn.putheader("content-length", str(300 * 2**20))
        conn.endheaders()
        resp = conn.getresponse()
        body = json.loads(resp.read())
        assert resp.status == 413 and body["code"] == "too_large" and "ATTNSCOPE_MAX_BODY_BYTES" in body["detail"]
        conn.close()


def test_a_body_without_content_length_is_counted_and_refused(client):
    """Chunked (no Content-Length): the middleware counts what streams in and answers 413 at the limit."""
    with TestClient(create_app(Settings(preload=[], max_body_bytes=64 * 1024))) as c:
        r = c.post(f"{API}/runs", content=(b" " * 8192 for _ in range(20)), headers=_JSON)
        assert "content-length" not in r.request.headers
        assert r.status_code == 413 and "cut there" in r.json()["detail"]


def test_a_chunked_body_is_cut_at_the_limit_on_a_live_server(start_api):
    """The client streams up to 80 MB; the server stops reading just past the 64 KiB limit: it answers 413
    (or, when the client is still writing as it closes, resets the connection) and keeps serving."""
    with _live(start_api, max_body_bytes=64 * 1024) as url:
        u = urlparse(url)
        sock = socket.create_connection((u.hostname, u.port), timeout=30)
        sock.sendall(
            f"POST {API}/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n".encode()
        )
        chunk, sent, reply = b"2000\r\n" + b" " * 8192 + b"\r\n", 0, b""
        try:
            while sent < 80 * 2**20 and not select.select([sock], [], [], 0)[0]:
                sock.sendall(chunk)
                sent += 8192
            reply = sock.recv(65536)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            sock.close()
        assert sent < 16 * 2**20, f"the server read {sent} bytes"
        assert reply == b"" or reply.startswith(b"HTTP/1.1 413"), reply[:200]
        assert httpx.get(f"{url}{API}/health", timeout=10).status_code == 200


def test_an_upload_over_the_limit_is_refused_before_it_is_read(start_api):
    with _live(start_api) as url:
        u = urlparse(url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        conn.putrequest("POST", f"{API}/runs/image")
        conn.putheader("content-type", "multipart/form-data; boundary=x")
        conn.putheader("x-requested-with", "XMLHttpRequest")
        conn.putheader("content-length", str(200 * 2**20))
        conn.endheaders()
        resp = conn.getresponse()
        body = json.loads(resp.read())
        assert resp.status == 413 and "ATTNSCOPE_MAX_UPLOAD_BYTES" in body["detail"]
        conn.close()


def _png_header(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width x height`` pixels (a few hundred bytes on the wire)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def test_a_400_megapixel_png_is_413_not_415(client):
    files = {"file": ("bomb.png", io.BytesIO(_png_header(20_000, 20_000)), "image/png")}
    r = client.post(
        f"{API}/runs/image", data={"model": "gauss9-iso"}, files=files, headers={"X-Requested-With": "XMLHttpRequest"}
    )
    assert r.status_code == 413, r.text
    assert "pixels" in r.json()["detail"]


def test_a_model_name_is_bounded_and_not_echoed_back(client):
    """Issue 29 part 5: a 200,000-character model name was echoed back in the 404."""
    r = client.post(f"{API}/runs", json={"model": "m" * 200_000, "text": TEXT})
    assert r.status_code == 422 and "model" in r.json()["detail"] and "1024" in r.json()["detail"]
    assert len(r.content) < 2_000
    r = client.post(f"{API}/jobs", json={"kind": "census", "params": {"model": "m" * 5_000}})
    assert r.status_code == 422 and len(r.content) < 2_000


def test_a_corrupt_config_json_under_a_model_root_is_a_4xx(client, tmp_path, monkeypatch):
    """Issue 29 part 5: it answered 500."""
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "config.json").write_text("{not json")
    monkeypatch.setenv("ATTNSCOPE_MODEL_DIRS", str(tmp_path))
    for model in (str(folder), "local:broken"):
        r = client.post(f"{API}/runs", json={"model": model, "text": TEXT})
        assert r.status_code == 422, r.text
        assert "config.json cannot be read as JSON" in r.json()["detail"] and str(tmp_path) not in r.text
    assert client.get(f"{API}/models").status_code == 200
