"""The dashboard's HTTP client against a real API server."""

import json
import time

import httpx
import numpy as np
import pytest

from attnscope.frontend.api_client import ApiClient, ApiError
from attnscope.server.schemas import CensusResultPublic


@pytest.fixture(scope="module")
def client(api_url):
    c = ApiClient(api_url)
    yield c
    c.close()


def test_models_and_run(client):
    assert client.models().default == "minilm"
    run = client.create_run("minilm", "Attention is all you need.")
    assert run.shape[:2] == [6, 12] and client.run(run.id).tokens == run.tokens


@pytest.mark.parametrize("encoding, atol", [("float16", 1e-3), ("uint8", 4e-3)])
def test_binary_slices_match_json(client, encoding, atol):
    run = client.create_run("minilm", "Attention is all you need.")
    ref = client.attention(run.id, 2, encoding="json")
    got = client.attention(run.id, 2, encoding=encoding)
    assert got.shape == ref.shape == (12, run.shape[2], run.shape[3])
    np.testing.assert_allclose(got, ref, atol=atol)


def test_errors_carry_the_apis_message(client):
    with pytest.raises(ApiError, match="empty") as exc:
        client.create_run("minilm", " ")
    assert exc.value.status == 422
    with pytest.raises(ApiError, match="known models"):
        client.create_run("nope", "hi")


def test_unreachable_api_is_reported_not_raised_raw():
    c = ApiClient("http://127.0.0.1:9", timeout=2)
    with pytest.raises(ApiError, match="cannot reach"):
        c.health()


def test_job_result_is_its_kinds_model(client, api_url):
    """A census job's result comes back as ``CensusResultPublic`` (attributes, nested rows), and its
    JSON again is the API's JSON; the CSV is the rows."""
    job = client.create_job("census", {"model": "minilm", "dataset": "sst2", "n": 2})
    deadline = time.time() + 120
    while job.status in ("queued", "running") and time.time() < deadline:
        time.sleep(0.2)
        job = client.job(job.id)
    assert job.status == "done", job
    result = client.job_result(job.id)
    assert isinstance(result, CensusResultPublic) and result.n == 2 and result.dataset == "sst2"
    assert len(result.rows) == 72 and result.rows[13].head == "L1H1" and result.rows[13].layer == 1
    assert np.asarray(result.metrics["previous"].mean).shape == (6, 12)
    raw = httpx.get(f"{api_url}/api/v1/jobs/{job.id}/result").json()
    assert json.loads(result.model_dump_json(exclude_unset=True)) == raw
    csv_lines = client.job_result_csv(job.id).splitlines()
    assert csv_lines[0].startswith("head,layer,head_index,shift_score_mean") and len(csv_lines) == 73


def test_a_data_set_example_by_id_or_index_and_the_run_an_example_address_makes(client):
    """``dataset_example`` reads an example by index or id (an id with characters a path must escape
    too); ``resolve_record`` with ``example=DATASET:KEY`` (the examples table's link for a long text)
    runs that example's text; a malformed or unknown one is a sentence, not a crash."""
    from attnscope.frontend.run_state import resolve_record

    first = client.dataset_example("sst2", 0)
    assert client.dataset_example("sst2", first.id) == first and first.index == 0
    with pytest.raises(ApiError) as missing:
        client.dataset_example("sst2", "sst2-dev-0/../1 x")
    assert missing.value.status == 404
    run, message = resolve_record(client, None, "minilm", None, None, example=f"sst2:{first.id}")
    assert message == "" and run.text == first.text and run.model == "minilm"
    for bad in ("sst2", "sst2:nope"):
        run, message = resolve_record(client, None, "minilm", None, None, example=bad)
        assert run is None and message.startswith(f"Could not read example {bad}:")
