"""Every route and every bad input, through the HTTP client; the server keeps serving after each."""

import inspect

import numpy as np
import pytest

from attnscope.analysis.codec import MEDIA_TYPE, unpack
from attnscope.server.routes import attention as attention_routes
from attnscope.server.routes import runs as runs_routes

API = "/api/v1"


def test_health(client):
    body = client.get(f"{API}/health").json()
    assert body["status"] == "ok" and body["device"] in ("cpu", "cuda")


def test_models_lists_minilm_as_default(client):
    body = client.get(f"{API}/models").json()
    assert body["default"] == "minilm"
    minilm = next(m for m in body["models"] if m["name"] == "minilm")
    assert minilm["default"] and minilm["modality"] == "text" and minilm["max_tokens"] == 512


def test_create_and_read_run(client, run):
    assert run["shape"] == [6, 12, 9, 9]
    assert run["tokens"] == ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"]
    assert run["prediction"]["kind"] == "embedding" and run["prediction"]["dim"] == 384
    again = client.get(f"{API}/runs/{run['id']}").json()
    assert again["tokens"] == run["tokens"] and again["id"] == run["id"]


def test_same_content_gives_the_same_run_id(client, run):
    r = client.post(f"{API}/runs", json={"text": "The cat sat on the mat."})
    assert r.status_code == 201 and r.json()["id"] == run["id"]
    other = client.post(f"{API}/runs", json={"text": "The cat sat on the rug."}).json()
    assert other["id"] != run["id"]


def test_attention_one_head_json(client, run):
    body = client.get(f"{API}/runs/{run['id']}/attention", params={"layer": 0, "head": 2}).json()
    w = np.array(body["weights"])
    assert body["shape"] == [9, 9] and w.shape == (9, 9)
    np.testing.assert_allclose(w.sum(1), 1, atol=1e-5)
    assert w[3, 2] > 0.8  # "sat" looks at "cat": the previous-token head


def test_attention_one_layer_json(client, run):
    body = client.get(f"{API}/runs/{run['id']}/attention", params={"layer": 5}).json()
    assert body["shape"] == [12, 9, 9] and body["head"] is None


@pytest.mark.parametrize("how", ["param", "accept"])
def test_attention_binary_float16(client, run, how):
    ref = np.array(client.get(f"{API}/runs/{run['id']}/attention", params={"layer": 1}).json()["weights"])
    if how == "param":
        r = client.get(f"{API}/runs/{run['id']}/attention", params={"layer": 1, "format": "float16"})
    else:
        r = client.get(f"{API}/runs/{run['id']}/attention", params={"layer": 1}, headers={"Accept": MEDIA_TYPE})
    assert r.headers["content-type"] == MEDIA_TYPE
    arr, header = unpack(r.content)
    assert header["encoding"] == "float16" and header["tokens"] == run["tokens"]
    np.testing.assert_allclose(arr, ref, atol=1e-3)


def test_attention_binary_uint8_is_smaller(client, run):
    f16 = client.get(f"{API}/runs/{run['id']}/attention", params={"layer": 1, "format": "float16"}).content
    u8 = client.get(f"{API}/runs/{run['id']}/attention", params={"layer": 1, "format": "uint8"}).content
    assert len(u8) < len(f16)
    arr, _ = unpack(u8)
    assert arr.shape == (12, 9, 9)


def test_model_work_runs_off_the_event_loop():
    """Routes that run models hand their plain ``def`` body to the heavy executor (never the event
    loop, never the request threadpool); so do the lazy attention reads, which compute their slices
    and overviews (issue 29: bounded, 429 beyond the executor's queue)."""
    for route in (runs_routes.create_run, attention_routes.read_attention):
        assert inspect.iscoroutinefunction(route)
        assert not inspect.iscoroutinefunction(route.__heavy__)


BAD_INPUTS = [
    ("post", "/runs", {"json": {"text": ""}}, 422, "empty"),
    ("post", "/runs", {"json": {"text": "   \n\t "}}, 422, "empty or only whitespace"),
    ("post", "/runs", {"json": {"model": "minilm"}}, 422, "text"),
    ("post", "/runs", {"json": {"text": "word " * 600}}, 413, "at most 512"),
    ("post", "/runs", {"json": {"model": "no-such-model", "text": "hi"}}, 404, "known models"),
    ("post", "/runs", {"json": {"model": "/etc", "text": "hi"}}, 403, "ATTNSCOPE_MODEL_DIRS"),
    ("get", "/runs/does-not-exist", {}, 404, "no run with id"),
    ("get", "/runs/does-not-exist/attention?layer=0", {}, 404, "no run with id"),
]


@pytest.mark.parametrize("method, path, kw, code, message", BAD_INPUTS)
def test_bad_input_gets_a_clear_4xx_and_the_server_keeps_serving(client, method, path, kw, code, message):
    r = getattr(client, method)(API + path, **kw)
    assert r.status_code == code, r.text
    assert message in r.json()["detail"]
    assert client.get(f"{API}/health").status_code == 200


@pytest.mark.parametrize(
    "params, message",
    [
        ({"layer": 6}, "layer=6 is out of range"),
        ({"layer": -1}, "layer: Input should be greater than or equal to 0"),  # the schema's bound
        ({"layer": 0, "head": 12}, "head=12 is out of range: this model has 12 heads, use 0..11"),
        ({"layer": "x"}, "layer"),
        ({}, "layer"),
        ({"layer": 0, "format": "png"}, "format"),
    ],
)
def test_attention_out_of_range_is_422(client, run, params, message):
    r = client.get(f"{API}/runs/{run['id']}/attention", params=params)
    assert r.status_code == 422
    assert message in r.json()["detail"]
    assert client.get(f"{API}/runs/{run['id']}").status_code == 200


def test_openapi_documents_every_route(client):
    spec = client.get("/openapi.json").json()
    paths = set(spec["paths"])
    assert {
        f"{API}/health",
        f"{API}/models",
        f"{API}/runs",
        f"{API}/runs/{{run_id}}",
        f"{API}/runs/{{run_id}}/attention",
    } <= paths
    assert client.get("/docs").status_code == 200


def test_the_image_of_a_text_run_is_a_422_that_says_why(client, run):
    r = client.get(f"{API}/runs/{run['id']}/image")
    assert r.status_code == 422 and "text run and has no image" in r.json()["detail"], r.text
    assert client.get(f"{API}/runs/{run['id']}").status_code == 200  # the run itself is there
