"""``RunRecord``: what the dashboard stores about a run, built from the API's typed answer (a real
server over HTTP), through JSON and back, and what it does with stores it cannot read."""

import json

import pytest

from attnscope.frontend.api_client import ApiClient
from attnscope.frontend.run_record import RunRecord, StaleRunRecord, load_run, stored_run
from attnscope.frontend.run_state import NO_RUN, resolve_record, resolve_run, run_query


@pytest.fixture(scope="module")
def client(api_url):
    c = ApiClient(api_url)
    yield c
    c.close()


@pytest.fixture(scope="module")
def sst2_run(client):
    return client.create_run("minilm-sst2", "A wonderful, moving film.")


def _through_json(data: dict) -> dict:
    return json.loads(json.dumps(data))  # what a dcc.Store gives back


def test_the_record_keeps_the_run_and_its_prediction_through_the_store(sst2_run):
    record = RunRecord.from_run(sst2_run)
    back = RunRecord.from_store(_through_json(record.to_store()))
    assert back == record
    assert (back.id, back.model, back.tokens) == (sst2_run.id, "minilm-sst2", sst2_run.tokens)
    assert (back.n_layers, back.n_heads, back.n_tokens) == tuple(sst2_run.shape[:3])
    pred = back.prediction
    assert pred.kind == "classification" and pred.labels == sst2_run.prediction.labels
    assert pred.predicted == sst2_run.prediction.predicted and pred.probs == pytest.approx(sst2_run.prediction.probs)
    assert "top_k" not in record.to_store()["prediction"] and "embedding" not in record.to_store()["prediction"]


def test_a_causal_runs_record_leaves_the_per_position_arrays_out(client):
    run = client.create_run("smollm2", "The capital of France is")
    assert run.prediction.top_k and run.prediction.loss
    record = RunRecord.from_run(run)
    assert record.causal and record.kv_head_of == run.kv_head_of and record.kv_heads == run.kv_heads
    assert record.prediction.kind == "next-token" and record.prediction.predicted == run.prediction.predicted
    assert set(record.to_store()["prediction"]) & {"top_k", "loss", "embedding"} == set()


def test_an_older_store_without_the_prediction_or_newer_fields_still_loads(sst2_run):
    old = sst2_run.model_dump(mode="json", exclude={"prediction", "chat", "generation", "kv_heads", "kv_head_of"})
    record, message = load_run(_through_json(old))
    assert message == "" and record.id == sst2_run.id and record.prediction is None and record.chat is False
    full = sst2_run.model_dump(mode="json")  # what the Vision page kept: the whole RunPublic
    assert RunRecord.from_store(full).prediction.predicted == sst2_run.prediction.predicted


@pytest.mark.parametrize(
    ("garbled", "phrase"),
    [
        ("a string", "a str, not a run"),
        ([1, 2], "a list, not a run"),
        ({"id": "r1", "model": "minilm", "tokens": ["a"], "shape": [1, 2, 3]}, "shape"),
        ({"id": "r1", "model": "minilm", "shape": [1, 2, 3, 3]}, "tokens"),
        ({"id": "", "model": "minilm", "tokens": [], "shape": [1, 1, 1, 1]}, "id"),
    ],
)
def test_a_garbled_store_is_no_run_with_a_message(garbled, phrase):
    with pytest.raises(StaleRunRecord, match="could not be read"):
        RunRecord.from_store(garbled)
    record, message = load_run(garbled)
    assert record is None and phrase in message and "run the text again" in message
    assert stored_run(garbled) is None and run_query(garbled) == {}


def test_empty_stores_are_no_run_without_a_message():
    assert load_run(None) == (None, "") and load_run({}) == (None, "")


def test_resolve_discards_a_stale_store_and_prefers_the_address(client, sst2_run):
    assert resolve_record(client, None, None, None, None) == (None, NO_RUN)
    record, message = resolve_record(client, None, None, None, {"garbage": True})
    assert record is None and "could not be read" in message
    record, message = resolve_record(client, sst2_run.id, None, None, "garbage")
    assert message == "" and record.id == sst2_run.id and record.prediction.kind == "classification"
    kept = RunRecord.from_run(sst2_run).to_store()
    assert resolve_record(client, None, None, None, kept) == (RunRecord.from_store(kept), "")
    as_dict, _ = resolve_run(client, sst2_run.id, None, None, None)  # the Interventions page's form
    assert as_dict == kept
    assert run_query(record) == run_query(kept) == {"run": sst2_run.id, "model": "minilm-sst2", "text": sst2_run.text}
