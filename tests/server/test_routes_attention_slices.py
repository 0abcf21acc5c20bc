"""GET /runs/{id}/attention for long inputs, over HTTP: row/column windows, pooled overviews,
per-row top-k keys, each in JSON and in the compact binary encoding, checked against the full
head read from the same route; every bad range, stride, k and oversized slice is a 4xx naming the
limit, and the server keeps serving."""

import numpy as np
import pytest

from attnscope.analysis.codec import MEDIA_TYPE, unpack, unpack_top_k
from attnscope.analysis.slices import pool_blocks, top_k
from attnscope.server.schemas import MAX_SLICE_BYTES

API = "/api/v1"
TEXT = " ".join(f"word{i} and the cat sat on the mat" for i in range(12))  # about 100 tokens


@pytest.fixture(scope="module")
def long_run(client):
    r = client.post(f"{API}/runs", json={"model": "minilm", "text": TEXT})
    assert r.status_code == 201, r.text
    return r.json()


def _get(client, run, **params):
    return client.get(f"{API}/runs/{run['id']}/attention", params={"layer": 2, **params})


@pytest.fixture(scope="module")
def full_head(client, long_run):
    return np.array(_get(client, long_run, head=5).json()["weights"], dtype=np.float32)


def test_a_window_is_the_full_map_cut(client, long_run, full_head):
    body = _get(client, long_run, head=5, rows="10:30", cols="4:60").json()
    assert body["rows"] == [10, 30] and body["cols"] == [4, 60] and body["shape"] == [20, 56]
    np.testing.assert_allclose(body["weights"], full_head[10:30, 4:60], atol=1e-7)
    blob = _get(client, long_run, head=5, rows="10:30", cols="4:", format="float16").content
    arr, header = unpack(blob)
    assert header["rows"] == [10, 30] and header["cols"] == [4, long_run["shape"][2]]
    np.testing.assert_allclose(arr, full_head[10:30, 4:], atol=1e-3)


@pytest.mark.parametrize("pool", ["max", "mean"])
def test_a_pooled_overview_pools_the_full_map(client, long_run, full_head, pool):
    body = _get(client, long_run, head=5, stride=8, pool=pool).json()
    expected = pool_blocks(full_head, 8, pool)
    assert body["stride"] == 8 and body["pool"] == pool and body["shape"] == list(expected.shape)
    np.testing.assert_allclose(body["weights"], expected, atol=1e-6)
    r = client.get(
        f"{API}/runs/{long_run['id']}/attention",
        params={"layer": 2, "head": 5, "stride": 8, "pool": pool},
        headers={"Accept": MEDIA_TYPE},
    )
    arr, header = unpack(r.content)
    assert header["stride"] == 8 and header["pool"] == pool
    np.testing.assert_allclose(arr, expected, atol=2e-3)


def test_a_layer_can_be_pooled_too(client, long_run):
    layer = np.array(_get(client, long_run).json()["weights"], dtype=np.float32)
    body = _get(client, long_run, stride=16, rows="16:80").json()
    np.testing.assert_allclose(body["weights"], pool_blocks(layer[:, 16:80], 16, "max"), atol=1e-6)


def test_top_k_keys_per_row_in_json_and_binary(client, long_run, full_head):
    body = _get(client, long_run, head=5, format="topk", k=4, rows="0:50").json()
    idx, w = top_k(full_head[:50], 4)
    assert body["shape"] == [50, 4] and body["k"] == 4
    np.testing.assert_array_equal(np.array(body["weights"]), w)
    np.testing.assert_array_equal(np.sort(body["indices"], axis=1), np.sort(idx, axis=1))  # float ties
    r = client.get(
        f"{API}/runs/{long_run['id']}/attention",
        params={"layer": 2, "head": 5, "format": "topk", "k": 4, "cols": "20:40"},
        headers={"Accept": MEDIA_TYPE},
    )
    b_idx, b_w, header = unpack_top_k(r.content)
    assert header["index_dtype"] == "uint16" and b_idx.shape == (long_run["shape"][2], 4)
    assert b_idx.min() >= 20 and b_idx.max() < 40
    np.testing.assert_allclose(b_w, top_k(full_head[:, 20:40], 4)[1], atol=1e-3)
    assert len(r.content) < 1000 + b_idx.size * 4  # 2 bytes of index and 2 of weight per entry


@pytest.mark.parametrize(
    "params, status, message",
    [
        ({"rows": "30:10"}, 422, "reversed"),
        ({"rows": "5:5"}, 422, "empty"),
        ({"cols": "0:100000"}, 422, "out of bounds"),
        ({"rows": "a:b"}, 422, "rows"),
        ({"stride": 0}, 422, "greater than or equal to 1"),
        ({"stride": -3}, 422, "greater than or equal to 1"),
        ({"stride": 10**6}, 422, "less than or equal to 4096"),
        ({"pool": "median"}, 422, "pool"),
        ({"format": "topk", "k": 0}, 422, "greater than or equal to 1"),
        ({"format": "topk", "k": 300}, 422, "less than or equal to 256"),
        ({"format": "topk", "k": 30, "cols": "0:20"}, 422, "more than the 20 keys"),
        ({"format": "topk", "stride": 2}, 422, "stride=1"),
    ],
)
def test_bad_slices_name_the_limit(client, long_run, params, status, message):
    r = _get(client, long_run, head=0, **params)
    assert r.status_code == status, r.text
    assert message in r.json()["detail"]
    assert _get(client, long_run, head=0, rows="0:4").status_code == 200


def test_a_slice_over_the_byte_cap_is_413(client, long_run, monkeypatch):
    from attnscope.server.routes import attention as attention_routes

    n = long_run["shape"][2]
    monkeypatch.setattr(attention_routes, "MAX_SLICE_BYTES", 4 * n * n)  # one head fits, a layer does not
    assert _get(client, long_run, head=1).status_code == 200
    r = _get(client, long_run)
    assert r.status_code == 413 and f"{4 * n * n} bytes" in r.json()["detail"] and "stride" in r.json()["detail"]
    assert _get(client, long_run, stride=4).status_code == 200


def test_the_schema_states_every_bound(client):
    spec = client.get("/openapi.json").json()
    params = {p["name"]: p for p in spec["paths"][f"{API}/runs/{{run_id}}/attention"]["get"]["parameters"]}
    assert params["stride"]["schema"]["minimum"] == 1 and params["stride"]["schema"]["maximum"] == 4096
    assert params["k"]["schema"]["minimum"] == 1 and params["k"]["schema"]["maximum"] == 256
    rows = params["rows"]["schema"]["anyOf"][0]
    assert rows["pattern"] and rows["maxLength"] == 13
    assert set(params["pool"]["schema"]["enum"]) == {"max", "mean"}
    assert "topk" in params["format"]["schema"]["anyOf"][0]["enum"]
    assert str(MAX_SLICE_BYTES) in str(spec["paths"][f"{API}/runs/{{run_id}}/attention"]["get"]["responses"]["413"])
