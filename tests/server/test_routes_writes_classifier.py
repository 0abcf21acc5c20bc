"""The class lens and the attribution of a class logit over HTTP on the MiniLM SST-2 classifier (post-norm
BERT, [CLS] pooling, tanh pooler): the lens's last row is the run's own prediction, the parts (block
norm biases included) sum to the logit, the source splits to their head's part over every token; the
``dla`` job on SST-2 sentences conserves and its first example is the route's; the command line
prints the same; bad input and an encoder without a head are a 422 that says what to change."""

import json

import numpy as np
import pytest

from attnscope.server.schemas import DlaResultPublic

pytestmark = pytest.mark.slow
API = "/api/v1"
TEXT = "a gripping , funny and moving film"


@pytest.fixture(scope="module")
def review(client):
    r = client.post(f"{API}/runs", json={"model": "minilm-sst2", "text": TEXT})
    assert r.status_code == 201, r.text
    return r.json()


def _total(a: dict) -> float:
    blocks = sum(map(sum, a["heads"])) + sum(a["attn_bias"]) + sum(a["mlp"]) + sum(a["norm_bias"] or [])
    return a["embed"] + blocks + a["bias"]


def test_the_class_lens_ends_at_the_runs_prediction(client, review):
    r = client.post(f"{API}/runs/{review['id']}/lens", json={"k": 2, "target": "negative"})
    assert r.status_code == 200, r.text
    lens = r.json()
    assert lens["readout"] == "class" and lens["pooled"] == [0] and lens["positions"] == [0]
    assert lens["layers"] == 7 and all(len(row) == 1 for row in lens["cells"]) and lens["target"] == "negative"
    last = lens["cells"][-1][0]
    probs = dict(zip(review["prediction"]["labels"], review["prediction"]["probs"]))
    assert [t["token"] for t in last["top"]] == sorted(probs, key=probs.get, reverse=True)
    assert last["top"][0]["prob"] == pytest.approx(max(probs.values()), abs=1e-5)
    assert last["target_prob"] == pytest.approx(probs["negative"], abs=1e-5) and last["target_rank"] == 1


def test_the_class_logit_parts_sum_to_it_with_splits_over_every_token(client, review):
    body = {"target": "positive", "contrast": "negative", "top_heads": 3}
    r = client.post(f"{API}/runs/{review['id']}/attribution", json=body)
    assert r.status_code == 200, r.text
    a = r.json()
    assert a["readout"] == "class" and a["pooled"] == [0] and a["target"] == "positive" and a["contrast"] == "negative"
    assert _total(a) == pytest.approx(a["logit"], abs=1e-4) and abs(a["residual_error"]) < 1e-4
    assert len(a["norm_bias"]) == 6 and len(a["tokens"]) == review["shape"][-1]
    for s in a["splits"]:
        assert len(s["sources"]) == len(a["tokens"]) and sum(s["sources"]) == pytest.approx(s["part"], abs=1e-5)
    default = client.post(f"{API}/runs/{review['id']}/attribution", json={"top_heads": 0}).json()
    assert default["target"] == review["prediction"]["predicted"] and default["contrast"] is None


@pytest.mark.parametrize(
    "path, body, match",
    [
        ("lens", {"positions": "0:1"}, "a classifier's lens reads its pooled vector; leave positions out"),
        ("lens", {"target": "neutral"}, "'neutral' is not a class of model 'minilm-sst2'"),
        ("lens", {"k": 3}, "k=3 is outside [1, 2]"),
        ("attribution", {"position": 1}, "leave position out"),
        ("attribution", {"contrast": "great"}, "contrast 'great' is not a class"),
        ("attribution", {"split_heads": [[6, 0]]}, "layer 6 is out of range"),
        ("graph", {}, "an LM head"),
    ],
)
def test_bad_classifier_input_is_a_422_that_says_what_to_change(client, review, path, body, match):
    r = client.post(f"{API}/runs/{review['id']}/{path}", json=body)
    assert r.status_code == 422, r.text
    assert match in r.json()["detail"]


def test_an_encoder_without_a_head_is_a_422_naming_the_unembed_it_lacks(client):
    run = client.post(f"{API}/runs", json={"model": "minilm", "text": TEXT}).json()
    for path in ("lens", "attribution"):
        r = client.post(f"{API}/runs/{run['id']}/{path}", json={})
        assert r.status_code == 422, r.text
        assert "needs an unembed (an LM head or a classification head)" in r.json()["detail"]


def test_the_dla_job_on_sst2_conserves_and_its_example_is_the_routes(client, wait_job, tmp_path, capsys):
    from attnscope.cli import main
    from attnscope.pipelines.dataset_runs import pick_examples

    # max_tokens above every picked sentence (the full SST-2 dev set gives one of 40 tokens): the route runs the
    # whole text, so a job that cut it would read another logit
    params = {"model": "minilm-sst2", "dataset": "sst2", "n": 4, "max_tokens": 128, "target": "label"}
    r = client.post(f"{API}/jobs", json={"kind": "dla", "params": params})
    assert r.status_code == 202, r.text
    job = wait_job(client, r.json()["id"])
    assert job["status"] == "done", job
    res = client.get(f"{API}/jobs/{job['id']}/result").json()
    DlaResultPublic.model_validate(res)
    assert res["n"] == 4 and res["target"] == "label" and len(res["norm_bias"]["mean"]) == 6
    mean = np.asarray(res["heads"]["mean"])
    assert mean.shape == (6, 12)
    blocks = mean.sum() + sum(res["attn_bias"]["mean"]) + sum(res["mlp"]["mean"]) + sum(res["norm_bias"]["mean"])
    assert res["embed"]["mean"] + blocks + res["bias"]["mean"] == pytest.approx(res["logit"]["mean"], abs=1e-4)
    examples = {e.id: e for e in pick_examples("sst2", 4, None, 0)}
    ex = res["examples"][0]
    gold = examples[ex["id"]]
    assert ex["target"] == gold.labels[gold.label]
    run = client.post(f"{API}/runs", json={"model": "minilm-sst2", "text": gold.text}).json()
    att = client.post(f"{API}/runs/{run['id']}/attribution", json={"target": ex["target"], "top_heads": 0}).json()
    assert att["logit"] == pytest.approx(ex["logit"], abs=1e-5)
    assert np.asarray(att["heads"]) == pytest.approx(np.asarray(ex["heads"]), abs=1e-5)
    out = tmp_path / "dla.json"
    argv = ["dla", "--model", "minilm-sst2", "--n", "4", "--max-tokens", "128", "--target", "label", "--out", str(out)]
    assert main(argv) == 0
    cli = json.loads(out.read_text())
    assert np.asarray(cli["heads"]["mean"]) == pytest.approx(mean, abs=1e-6)
    assert "direct logit attribution of minilm-sst2 over 4 sst2 examples (target: label" in capsys.readouterr().out


def test_lens_and_attribute_on_the_command_line_read_the_classifier(tmp_path, capsys):
    from attnscope.cli import main

    out = tmp_path / "lens.json"
    assert main(["lens", "--model", "minilm-sst2", "--text", TEXT, "--k", "2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "class lens of minilm-sst2 (its head reads positions [0])" in printed and "top class from layer" in printed
    lens = json.loads(out.read_text())
    assert lens["readout"] == "class" and len(lens["layers"]) == 7 and lens["layers"][-1]["target_rank"] == 0
    out = tmp_path / "att.json"
    argv = ["attribute", "--model", "minilm-sst2", "--text", TEXT, "--target", "positive", "--contrast", "negative"]
    assert main([*argv, "--top", "2", "--out", str(out)]) == 0
    assert "block norm biases" in capsys.readouterr().out
    att = json.loads(out.read_text())
    assert _total(att) == pytest.approx(att["logit"], abs=1e-4) and len(att["splits"]) == 2
    assert main(["attribute", "--model", "minilm-sst2", "--text", TEXT, "--position", "2"]) == 2
    assert "leave position out" in capsys.readouterr().err
