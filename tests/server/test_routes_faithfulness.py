"""POST /runs/{id}/faithfulness and the faithfulness job, through the HTTP client, every bad input."""

import time

import numpy as np
import pytest

from attnscope.server.schemas import FaithfulnessResultPublic

API = "/api/v1"
TEXT = "a gripping , funny and deeply moving film ."


@pytest.fixture(scope="module")
def clf_run(client):
    r = client.post(f"{API}/runs", json={"model": "minilm-sst2", "text": TEXT})
    assert r.status_code == 201, r.text
    return r.json()


def post(client, run_id, **body):
    return client.post(f"{API}/runs/{run_id}/faithfulness", json=body)


def test_explain_and_score_a_run(client, clf_run):
    r = post(client, clf_run["id"], explainers=["rollout", "attention", "random"], k=0.3)
    assert r.status_code == 200, r.text
    out = r.json()
    n = len(clf_run["tokens"])
    assert out["tokens"] == clf_run["tokens"] and out["labels"] == ["negative", "positive"]
    assert out["bins"] == [0.01, 0.05, 0.1, 0.2, 0.5] and out["convention"] == "eraser"
    assert out["target"] == max(range(2), key=lambda i: out["probs"][i])
    for e in out["explainers"]:
        assert len(e["scores"]) == n and len(e["comp_curve"]) == 5 and len(e["suff_curve"]) == 5
        assert -1 <= e["comprehensiveness"] <= 1 and -1 <= e["sufficiency"] <= 1
        assert len(e["rationale"]) == 3  # ceil(0.3 * 9 non-special tokens)
        assert e["token_f1"] is None  # no human rationale given
    curve = out["explainers"][0]["comp_curve"]
    assert out["explainers"][0]["aopc_comprehensiveness"] == pytest.approx(sum(curve) / 5)


def test_counting_rule_is_an_option_and_is_reported(client, clf_run):
    # 9 non-special tokens, k = 0.5: eraser-code removes 9 - int(4.5) = 5 and keeps int(4.5) = 4; ceil removes
    # and keeps 5; ferret removes and keeps 4 (the rationale reported is the removed set)
    got = {}
    for count in (None, "eraser-code", "ceil", "ferret"):
        r = post(client, clf_run["id"], explainers=["attention"], k=0.5, **({"count": count} if count else {}))
        assert r.status_code == 200, r.text
        got[count] = r.json()
    assert got[None]["count"] == "eraser-code" and got["ceil"]["count"] == "ceil"
    sizes = {c: len(out["explainers"][0]["rationale"]) for c, out in got.items()}
    assert sizes == {None: 5, "eraser-code": 5, "ceil": 5, "ferret": 4}
    e_code, e_ceil = got["eraser-code"]["explainers"][0], got["ceil"]["explainers"][0]
    assert e_code["comprehensiveness"] == pytest.approx(e_ceil["comprehensiveness"])  # same 5 removed
    assert e_code["sufficiency"] != pytest.approx(e_ceil["sufficiency"])  # 4 kept vs 5 kept


def test_eraser_order_keeps_eraser_code_counts_and_refuses_masking(client, clf_run):
    code = post(client, clf_run["id"], explainers=["attention"], k=0.5, count="eraser-code").json()
    r = post(client, clf_run["id"], explainers=["attention"], k=0.5, count="eraser-order")
    assert r.status_code == 200, r.text
    order = r.json()
    assert order["count"] == "eraser-order"
    assert order["explainers"][0]["rationale"] == code["explainers"][0]["rationale"]  # same tokens removed
    bad = post(client, clf_run["id"], explainers=["attention"], removal="mask", count="eraser-order")
    assert bad.status_code == 422 and "needs removal 'delete'" in bad.text


def test_entropy_and_kl_variants_on_request(client, clf_run):
    r = post(
        client,
        clf_run["id"],
        explainers=["attention", "random"],
        metrics=["comprehensiveness", "comprehensiveness_kl", "sufficiency_entropy", "sufficiency_kl"],
    )
    assert r.status_code == 200, r.text
    for e in r.json()["explainers"]:
        assert e["comprehensiveness_kl"] >= 0 and e["sufficiency_kl"] >= 0  # KL is never negative
        assert e["sufficiency_entropy"] is not None and e["comprehensiveness_entropy"] is None  # not asked
        assert e["aopc_sufficiency"] is None
    # the default set stays ERASER's headline metrics
    plain = post(client, clf_run["id"], explainers=["random"]).json()["explainers"][0]
    assert plain["comprehensiveness"] is not None and plain["comprehensiveness_kl"] is None


def test_zoo_text_classifiers_are_explained_and_vision_runs_refused(client):
    from attnscope.models.zoo.manifest import read_manifest

    if read_manifest("text-shift") is None:
        pytest.skip("zoo not trained")
    rid = client.post(f"{API}/runs", json={"model": "text-shift", "text": "a gripping , funny film"}).json()["id"]
    r = post(
        client, rid, explainers=["attention", "attn_grad", "integrated_gradients", "random"], human_spans=[[2, 10]]
    )
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["tokens"][:2] == ["[CLS]", "a"] and out["human_rationale"] == [0, 0, 1, 0, 0, 0]
    assert all(len(e["scores"]) == 6 and e["token_f1"] is not None for e in out["explainers"])
    vid = client.post(f"{API}/runs", json={"model": "vit", "sample": {"dataset": "mnist", "index": 0}}).json()["id"]
    r = post(client, vid, explainers=["rollout"])
    assert r.status_code == 422 and "text classifiers" in r.json()["detail"]


def test_human_spans_give_plausibility_and_ferret_convention_has_ten_bins(client, clf_run):
    start = TEXT.index("gripping")
    r = post(
        client,
        clf_run["id"],
        explainers=["rollout", "random"],
        convention="ferret",
        human_spans=[[start, start + len("gripping")], [TEXT.index("funny"), TEXT.index("funny") + 5]],
    )
    assert r.status_code == 200, r.text
    out = r.json()
    assert len(out["bins"]) == 10 and out["human_rationale"] == [0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0]
    for e in out["explainers"]:
        assert 0 <= e["token_f1"] <= 1 and 0 <= e["auprc"] <= 1 and e["iou_f1"] is not None


def test_explainers_are_listed(client):
    names = [e["name"] for e in client.get(f"{API}/faithfulness/explainers").json()]
    assert {
        "attention",
        "rollout",
        "flow",
        "attn_grad",
        "integrated_gradients",
        "saliency",
        "input_x_gradient",
        "deeplift",
        "occlusion",
        "random",
    } == set(names)


def test_flow_runs_on_short_inputs_and_is_refused_on_long_ones(client, clf_run):
    r = post(client, clf_run["id"], explainers=["flow"], metrics=["comprehensiveness"])
    assert r.status_code == 200, r.text
    long = client.post(f"{API}/runs", json={"model": "minilm-sst2", "text": "good " * 80}).json()
    r = post(client, long["id"], explainers=["flow"])
    assert r.status_code == 413 and "limited to 64 tokens" in r.json()["detail"]


def test_occlusion_is_capped_interactively_and_the_cap_can_be_raised(client, clf_run):
    long = client.post(f"{API}/runs", json={"model": "minilm-sst2", "text": "good " * 140}).json()
    r = post(client, long["id"], explainers=["occlusion"], metrics=["comprehensiveness"])
    assert r.status_code == 413
    assert "one forward pass per token" in r.json()["detail"] and "options.occlusion.max_tokens" in r.json()["detail"]
    r = post(
        client,
        long["id"],
        explainers=["occlusion"],
        metrics=["comprehensiveness"],
        options={"occlusion": {"max_tokens": 512}},
    )
    assert r.status_code == 200, r.text
    assert post(client, clf_run["id"], explainers=["occlusion"], metrics=["sufficiency"]).status_code == 200


@pytest.mark.parametrize(
    "body, fragment",
    [
        ({"explainers": ["lime"]}, "explainers.0: Input should be 'attention', 'rollout'"),
        ({"metrics": ["accuracy"]}, "metrics.0: Input should be 'comprehensiveness'"),
        ({"convention": "mine"}, "convention"),
        ({"k": 0}, "k"),
        ({"k": 1.5}, "k"),
        ({"explainers": []}, "explainers"),
        ({"target": 5}, "target=5 is out of range"),
        ({"human_rationale": [1, 0]}, "0/1 for each of the run's 11 tokens"),
        ({"human_spans": [[5, 500]]}, "not [start, end) character ranges"),
        ({"human_spans": [[0, 2]], "human_rationale": [0] * 11}, "not both"),
        ({"explainers": ["attention"], "options": {"attention": {"layer": 9}}}, "this model has 6 layers"),
        ({"removal": "shred"}, "removal"),
        ({"count": "round"}, "count"),
    ],
)
def test_bad_bodies_get_422_with_what_to_change(client, clf_run, body, fragment):
    r = post(client, clf_run["id"], **body)
    assert r.status_code == 422, r.text
    assert fragment in r.json()["detail"]


def test_embedding_model_runs_and_unknown_runs_are_refused(client, run):
    r = post(client, run["id"])  # the module's MiniLM (embedding) run
    assert r.status_code == 422 and "minilm-sst2" in r.json()["detail"]
    r = post(client, "nope")
    assert r.status_code == 404


def wait_done(client, job_id, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        job = client.get(f"{API}/jobs/{job_id}").json()
        if job["status"] not in ("queued", "running"):
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not finish: {job}")


def test_dataset_job_gives_json_and_csv(client):
    params = {"dataset": "sst2", "n": 3, "explainers": ["rollout", "random"]}
    r = client.post(f"{API}/jobs", json={"kind": "faithfulness", "params": params})
    assert r.status_code == 202, r.text
    job = wait_done(client, r.json()["id"])
    assert job["status"] == "done" and job["done"] == job["total"] == 3 and job["result_formats"] == ["json", "csv"]
    result = client.get(f"{API}/jobs/{job['id']}/result").json()
    assert [row["explainer"] for row in result["rows"]] == ["rollout", "random"]
    assert result["n"] == 3 and 0 <= result["accuracy"] <= 1 and result["k"] == 0.2
    assert result["rows"][0]["token_f1"] is None  # SST-2 has no human rationale
    typed = FaithfulnessResultPublic.model_validate(result)
    assert typed.kind == "faithfulness" and typed.truncation.human_fraction_lost is None
    assert set(typed.curves) == {"rollout", "random"} and typed.rows[1].explainer == "random"
    csv_text = client.get(f"{API}/jobs/{job['id']}/result", params={"format": "csv"}).text
    assert csv_text.splitlines()[0].startswith("explainer,n,comprehensiveness,sufficiency")
    assert len(csv_text.strip().splitlines()) == 3
    # every mean keeps its examples, its interval over them and n; random's paired difference is 0 on itself
    assert typed.interval.method == "BCa" and typed.interval.over == "examples" and typed.interval.level == 0.95
    values = result["per_example"]["values"]
    assert result["per_example"]["index"] == [0, 1, 2]
    for row in result["rows"]:
        e = row["explainer"]
        comp = values[e]["comprehensiveness"]
        assert len(comp) == 3 and np.mean(comp) == pytest.approx(row["comprehensiveness"], abs=1e-4)
        iv = result["intervals"][e]["comprehensiveness"]
        assert iv["n"] == 3 and iv["mean"] == pytest.approx(row["comprehensiveness"], abs=1e-4)
        assert iv["low"] <= iv["mean"] <= iv["high"]
    assert set(result["vs_random"]) == {"rollout"}
    diff = result["vs_random"]["rollout"]["sufficiency"]
    want = np.mean(values["rollout"]["sufficiency"]) - np.mean(values["random"]["sufficiency"])
    assert diff["mean"] == pytest.approx(want, abs=1e-4) and diff["n"] == 3
    long = client.get(f"{API}/jobs/{job['id']}/result", params={"format": "csv", "table": "examples"}).text
    lines = long.strip().splitlines()
    assert lines[0] == "example,explainer,metric,value"
    n_values = sum(v is not None for by_m in values.values() for vs in by_m.values() for v in vs)
    assert len(lines) == 1 + n_values


@pytest.mark.parametrize(
    "params, fragment",
    [
        ({"dataset": "hatexplain"}, "params.allow_offensive: hatexplain holds hate speech"),
        ({"explainers": ["lime"]}, "unknown explainer"),
        ({"dataset": "imdb"}, "dataset"),
        ({"n": 0}, "params.n"),
        ({"model": "minilm"}, "needs a text classifier"),
        ({"model": "vit"}, "vision classification model"),
        ({"model": "nope"}, "unknown model"),
        ({"dataset": "sst2", "split": "test"}, "not a sst2 split; use one of dev, train"),
    ],
)
def test_bad_job_params_get_422(client, params, fragment):
    r = client.post(f"{API}/jobs", json={"kind": "faithfulness", "params": params})
    assert r.status_code == 422 and fragment in r.json()["detail"]
