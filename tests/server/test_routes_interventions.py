"""Causal tests of heads through a real API server over HTTP: one intervention set and its altered
maps, the per-head grid beside attention-based importance, the head-effects job, every bad input a
clear 4xx, and concurrent requests that each equal their sequential value."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest

API = "/api/v1"
TEXT = "a gorgeous, witty, seductive movie."


@pytest.fixture(scope="module")
def api(api_url):
    with httpx.Client(base_url=api_url + API, timeout=600) as c:
        yield c


@pytest.fixture(scope="module")
def run(api):
    r = api.post("/runs", json={"model": "minilm-sst2", "text": TEXT})
    assert r.status_code == 201, r.text
    return r.json()


def post(api, run, body, what="interventions"):
    return api.post(f"/runs/{run['id']}/{what}", json=body)


def test_uniform_ablation_and_knockout_show_in_the_altered_maps(api, run):
    body = {
        "interventions": [
            {"kind": "ablate", "heads": [[2, 0]], "method": "uniform"},
            {"kind": "knockout", "layers": [1], "edges": [[0, 1], [3, 4]]},
        ]
    }
    r = post(api, run, body)
    assert r.status_code == 200, r.text
    res = r.json()
    assert res["metric"] == "prob" and set(res["effects"]) == {"prob", "logit_diff", "flip"}
    assert res["clean"]["probs"] == pytest.approx(run["prediction"]["probs"], abs=1e-5)
    assert res["shape"] == run["shape"]
    head = api.get(f"/runs/{res['altered_run_id']}/attention", params={"layer": 2, "head": 0}).json()
    n = len(run["tokens"])
    np.testing.assert_allclose(head["weights"], np.full((n, n), 1 / n), atol=1e-6)
    layer = np.asarray(api.get(f"/runs/{res['altered_run_id']}/attention", params={"layer": 1}).json()["weights"])
    assert np.all(layer[:, 0, 1] == 0) and np.all(layer[:, 3, 4] == 0)
    clean = np.asarray(api.get(f"/runs/{run['id']}/attention", params={"layer": 1}).json()["weights"])
    assert np.all(clean[:, 0, 1] > 0)  # the run itself is untouched


def test_zero_ablation_changes_the_prediction_and_patching_reads_the_corrupted_text(api, run):
    r = post(api, run, {"interventions": [{"kind": "ablate", "heads": [[l, h] for l in range(6) for h in range(12)]}]})
    assert r.status_code == 200, r.text
    assert r.json()["effects"]["prob"] < -0.01
    body = {
        "interventions": [{"kind": "patch_residual", "layer": 5, "positions": list(range(len(run["tokens"])))}],
        "corrupted": "a boring, witty, seductive movie.",
    }
    patched = post(api, run, body).json()
    corrupted = api.post("/runs", json={"model": "minilm-sst2", "text": body["corrupted"]}).json()
    assert patched["altered"]["probs"] == pytest.approx(corrupted["prediction"]["probs"], abs=1e-5)


def test_head_effect_grid_with_rank_agreement(api, run):
    r = post(api, run, {"method": "zero", "chunk": 24}, "head-effects")
    assert r.status_code == 200, r.text
    res = r.json()
    grid = np.asarray(res["effect"])
    assert grid.shape == (6, 12) and np.abs(grid).max() > 0
    assert np.asarray(res["importance"]).shape == (6, 12)
    assert res["rank_agreement"]["n"] == 72 and -1 <= res["rank_agreement"]["rho"] <= 1
    assert res["dla"] is None and res["dla_agreement"] is None  # a classifier's metric reads no logit of a token
    first = res["top"][0]
    assert abs(first["effect"]) == pytest.approx(np.abs(grid).max())
    single = post(api, run, {"interventions": [{"kind": "ablate", "heads": [[first["layer"], first["head"]]]}]})
    assert single.json()["effects"]["prob"] == pytest.approx(first["effect"], abs=1e-6)


def test_concurrent_requests_equal_their_sequential_values(api, run):
    bodies = [
        {"interventions": [{"kind": "ablate", "heads": [[i, i], [5, 11 - i]], "method": "mean"}]} for i in range(5)
    ]
    sequential = [post(api, run, b).json()["effects"]["logit_diff"] for b in bodies]
    with ThreadPoolExecutor(5) as pool:
        together = list(pool.map(lambda b: post(api, run, b), bodies))
    assert all(r.status_code == 200 for r in together), [r.text for r in together]
    assert [r.json()["effects"]["logit_diff"] for r in together] == pytest.approx(sequential, abs=1e-6)


@pytest.mark.parametrize(
    "body, status, message",
    [
        ({"interventions": []}, 422, "empty"),
        ({"interventions": [{"kind": "ablate", "heads": [[6, 0]]}]}, 422, "layer=6 is out of range"),
        ({"interventions": [{"kind": "ablate", "heads": [[0, 12]]}]}, 422, "head=12 is out of range"),
        ({"interventions": [{"kind": "ablate", "heads": [[0]]}]}, 422, "heads"),
        ({"interventions": [{"kind": "ablate", "heads": [[0, 0]], "method": "noise"}]}, 422, "method"),
        ({"interventions": [{"kind": "cut"}]}, 422, "kind"),
        ({"interventions": [{"kind": "knockout", "layers": [0], "edges": [[0, 99]]}]}, 422, "key=99"),
        ({"interventions": [{"kind": "patch_heads", "heads": [[0, 0]]}]}, 422, "needs a source"),
        (
            {"interventions": [{"kind": "patch_heads", "heads": [[0, 0]]}], "corrupted": "a much longer text, really"},
            422,
            "same number of tokens",
        ),
        ({"interventions": [{"kind": "ablate", "heads": [[0, 0]]}], "metric": "loss"}, 422, "does not fit"),
        ({"interventions": [{"kind": "ablate", "heads": [[0, 0]]}], "answers": ["a", "b"]}, 422, "causal LM"),
        ({"interventions": [{"kind": "ablate", "heads": [[0, 0]]}], "extra": 1}, 422, "extra"),
        ({"interventions": [{"kind": "ablate", "heads": [[0, 0]]}] * 65}, 422, "interventions"),
    ],
)
def test_bad_interventions_are_4xx_with_what_to_change(api, run, body, status, message):
    r = post(api, run, body)
    assert r.status_code == status, r.text
    assert message in r.json()["detail"] and r.json()["code"] == "invalid"


def test_bad_grid_requests_and_unknown_runs(api, run):
    assert post(api, run, {"chunk": 0}, "head-effects").status_code == 422
    r = post(api, run, {"method": "patch"}, "head-effects")
    assert r.status_code == 422 and "needs a source" in r.json()["detail"]
    r = api.post("/runs/nope/interventions", json={"interventions": [{"kind": "ablate", "heads": [[0, 0]]}]})
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    assert api.get("/health").status_code == 200  # still serving


def test_models_without_per_head_outputs_are_422(api):
    r = api.post("/runs", json={"model": "conv-attention", "sample": {"dataset": "mnist", "index": 0}})
    assert r.status_code == 201, r.text
    bad = api.post(f"/runs/{r.json()['id']}/head-effects", json={})
    assert bad.status_code == 422 and "no per-head attention output" in bad.json()["detail"]


def test_causal_lm_answers_must_be_single_tokens(api, smollm2):
    run = api.post("/runs", json={"model": "smollm2", "text": "The capital of France is"}).json()
    body = {"interventions": [{"kind": "ablate", "heads": [[0, 0]]}], "metric": "answer_logit_diff"}
    r = post(api, run, {**body, "answers": [" Paris", " New York City"]})
    assert r.status_code == 422 and "exactly one token" in r.json()["detail"]
    r = post(api, run, body)
    assert r.status_code == 422 and "two answer tokens" in r.json()["detail"]
    r = post(api, run, {**body, "answers": [" Paris", " London"]})
    assert r.status_code == 200, r.text
    assert r.json()["metric"] == "answer_logit_diff" and len(r.json()["answers"]) == 2
    r = post(api, run, {**body, "metric": "loss", "positions": [len(run["tokens"]) - 1]})
    assert r.status_code == 422 and "out of range" in r.json()["detail"]
    r = post(api, run, {"interventions": [{"kind": "knockout", "layers": [0], "edges": [[1, 3]]}]})
    assert r.status_code == 422 and "never sees the later key" in r.json()["detail"]


def test_head_effects_job_with_progress_json_and_csv(api):
    params = {"model": "minilm-sst2", "dataset": "sst2", "n": 3, "max_tokens": 12}
    r = api.post("/jobs", json={"kind": "head-effects", "params": params})
    assert r.status_code == 202, r.text
    job_id = r.json()["id"]
    import time

    deadline = time.time() + 600
    while (job := api.get(f"/jobs/{job_id}").json())["status"] not in ("done", "failed", "cancelled"):
        assert time.time() < deadline
        time.sleep(0.2)
    assert job["status"] == "done", job
    assert job["done"] == job["total"] == 3
    result = api.get(f"/jobs/{job_id}/result").json()
    assert result["n"] == 3 and np.asarray(result["mean_effect"]).shape == (6, 12)
    assert np.asarray(result["flip_rate"]).min() >= 0
    rhos = [e["rank_rho"] for e in result["examples"]]  # per example: |effect| vs attention importance
    assert len(rhos) == 3 and all(-1 <= r <= 1 for r in rhos)
    per = result["rank_agreement"]["per_example"]
    assert per["n"] == 3 and per["mean"] == pytest.approx(np.mean(rhos)) and per["std"] == pytest.approx(np.std(rhos))
    assert np.asarray(result["mean_importance"]).shape == (6, 12)
    csv = api.get(f"/jobs/{job_id}/result", params={"format": "csv"}).text.splitlines()
    assert csv[0] == (
        "head,layer,head_index,mean_effect,std_effect,n,flip_rate,mean_importance,effect_low,effect_high,p,p_holm,p_bh"
    )
    assert len(csv) == 73 and {r["n"] for r in result["rows"]} == {3}  # every row with its n
    # each example's grid is kept; the per-head tests recomputed from them with scipy agree
    from scipy.stats import ttest_1samp

    grids = np.asarray([e["effect"] for e in result["examples"]])  # [example, layer, head]
    assert grids.shape == (3, 6, 12)
    assert grids.mean(axis=0) == pytest.approx(np.asarray(result["mean_effect"]), abs=1e-5)
    p = np.array([[np.nan if r["p"] is None else r["p"] for r in result["rows"]]]).reshape(6, 12)
    ok = np.isfinite(p)
    with np.errstate(all="ignore"):
        want = ttest_1samp(grids, 0.0, axis=0).pvalue
    assert p[ok] == pytest.approx(want[ok], rel=1e-3, abs=1e-6)
    holm = np.array([np.nan if r["p_holm"] is None else r["p_holm"] for r in result["rows"]])
    assert np.all(holm[ok.reshape(-1)] >= p.reshape(-1)[ok.reshape(-1)] - 1e-12)
    out = result["standouts"]
    assert out["tested"] == int(ok.sum()) and out["holm"]["count"] == len(out["holm"]["heads"])
    assert out["holm"]["count"] == int((holm[np.isfinite(holm)] < 0.05).sum()) <= out["bh"]["count"]
    long = api.get(f"/jobs/{job_id}/result", params={"format": "csv", "table": "examples"}).text.splitlines()
    assert long[0] == "example,head,effect" and len(long) == 1 + 3 * 72
    bad = api.post("/jobs", json={"kind": "head-effects", "params": {**params, "max_tokens": 1000}})
    assert bad.status_code == 422 and "max_tokens" in bad.json()["detail"]
