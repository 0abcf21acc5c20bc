"""Census and probe jobs on MiniLM through the HTTP client, and the CLI writing JSON + CSV."""

import json
import subprocess
import sys

import numpy as np
import pytest

from attnscope.server.schemas import CensusResultPublic, ProbeResultPublic

API = "/api/v1"


def test_census_job_aggregates_per_head(client, wait_job):
    r = client.post(f"{API}/jobs", json={"kind": "census", "params": {"model": "minilm", "dataset": "sst2", "n": 6}})
    assert r.status_code == 202, r.text
    job = wait_job(client, r.json()["id"])
    assert job["status"] == "done", job
    assert job["done"] == job["total"] == 6
    result = client.get(f"{API}/jobs/{job['id']}/result").json()
    assert result["n"] == 6 and len(result["rows"]) == 72
    assert list(result) == ["kind", "model", "dataset", "split", "n", "seed", "metrics", "interval", "rows"]
    assert CensusResultPublic.model_validate(result).rows[2].head == "L0H2"
    prev = np.asarray(result["metrics"]["previous"]["mean"])
    assert prev.shape == (6, 12) and prev.argmax() == 2  # L0H2 leads on previous-token mass over SST-2
    assert np.asarray(result["metrics"]["norm_entropy"]["std"]).min() >= 0
    # each head's mean with its 95 % t interval over the 6 examples (sd with ddof 1: std * sqrt(6 / 5))
    ent = result["metrics"]["norm_entropy"]
    mean, std = np.asarray(ent["mean"]), np.asarray(ent["std"])
    half = 2.5705818 * std * np.sqrt(6 / 5) / np.sqrt(6)
    assert np.asarray(ent["low"]) == pytest.approx(mean - half, abs=1e-5)
    assert np.asarray(ent["high"]) == pytest.approx(mean + half, abs=1e-5)
    assert np.asarray(ent["n"]).min() == 6 and result["interval"]["method"] == "t"
    csv = client.get(f"{API}/jobs/{job['id']}/result", params={"format": "csv"}).text.splitlines()
    assert csv[0].startswith("head,layer,head_index,shift_score_mean") and len(csv) == 73


def test_probe_job_reports_accuracy_per_layer(client, wait_job):
    params = {"model": "minilm", "dataset": "sst2", "n": 24, "folds": 2, "size": 8}
    job = wait_job(client, client.post(f"{API}/jobs", json={"kind": "probe", "params": params}).json()["id"])
    assert job["status"] == "done", job
    result = client.get(f"{API}/jobs/{job['id']}/result").json()
    assert [r["layer"] for r in result["rows"]] == list(range(6))
    assert ProbeResultPublic.model_validate(result).rows[5].layer == 5
    assert all(0 <= r["accuracy"] <= 1 for r in result["rows"]) and 0.5 <= result["chance"] < 1
    assert result["classifier"] == "logistic"
    assert all(r["accuracy_low"] <= r["accuracy"] <= r["accuracy_high"] for r in result["rows"])  # Wilson, n = 24


def test_probe_job_with_the_cnn_classifier(client, wait_job):
    params = {"model": "minilm", "dataset": "sst2", "n": 24, "folds": 2, "size": 8, "classifier": "cnn"}
    job = wait_job(client, client.post(f"{API}/jobs", json={"kind": "probe", "params": params}).json()["id"])
    assert job["status"] == "done", job
    result = client.get(f"{API}/jobs/{job['id']}/result").json()
    assert result["classifier"] == "cnn" and len(result["rows"]) == 6
    assert all(0 <= r["accuracy"] <= 1 for r in result["rows"])
    bad = client.post(f"{API}/jobs", json={"kind": "probe", "params": {**params, "classifier": "svm"}})
    assert bad.status_code == 422 and "classifier" in bad.json()["detail"]


@pytest.mark.parametrize(
    "params, message",
    [
        ({"model": "nope"}, "unknown model 'nope'"),
        ({"dataset": "imdb"}, "params.dataset"),
        ({"n": 0}, "params.n"),
        ({"seed": -1}, "params.seed"),
        ({"dataset": "movies", "split": "dev"}, "not a movies split; use one of rationales, fold10"),
    ],
)
def test_bad_census_params_are_422(client, params, message):
    r = client.post(f"{API}/jobs", json={"kind": "census", "params": params})
    assert r.status_code == 422 and message in r.json()["detail"]


def test_cli_census_writes_json_and_csv(tmp_path):
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "attnscope.cli",
            "census",
            "--model",
            "minilm",
            "--dataset",
            "sst2",
            "--n",
            "3",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["n"] == 3 and result["kind"] == "census"
    assert out.with_suffix(".csv").read_text().count("\n") == 73
