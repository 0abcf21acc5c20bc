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
    keys = ["kind", "model", "dataset", "split", "n", "seed", "metrics", "interval", "rows", "per_example"]
    keys.append("example_ids")
    assert list(result) == keys
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
    assert csv[0].startswith("head,layer,head_index,shift_score_mean,shift_score_std,shift_score_low")
    assert len(csv) == 73
    # every row carries each metric's interval and n (the table compares heads)
    row = result["rows"][2]
    assert row["previous_low"] == result["metrics"]["previous"]["low"][0][2] and row["previous_n"] == 6
    # every example's [layer][head] values are kept: their mean and sd are the per-head statistics
    pe = result["per_example"]
    assert len(pe["id"]) == 6 and len(set(pe["id"])) == 6
    assert result["example_ids"] == pe["id"]  # the seeded sample's ids, in order (kept apart from the values)
    for metric in ("previous", "norm_entropy", "shift_score"):
        values = np.asarray(pe["values"][metric], dtype=float)
        assert values.shape == (6, 6, 12)
        assert values.mean(0) == pytest.approx(np.asarray(result["metrics"][metric]["mean"]), abs=2e-6)
        assert values.std(0) == pytest.approx(np.asarray(result["metrics"][metric]["std"]), abs=2e-6)
    # ... and in long format: one row per example and head, a column per metric
    long = client.get(f"{API}/jobs/{job['id']}/result", params={"format": "csv", "table": "examples"}).text
    lines = long.splitlines()
    assert lines[0].startswith("example,head,layer,head_index,shift_score,best_mass") and len(lines) == 1 + 6 * 72
    first = dict(zip(lines[0].split(","), lines[1 + 2].split(",")))  # the first example, L0H2
    assert first["example"] == pe["id"][0] and float(first["previous"]) == pe["values"]["previous"][0][0][2]


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
    assert all(r["n"] == 24 for r in result["rows"])
    # each example's held-out outcome per layer: the share right is the accuracy (2 folds of 12)
    pe = result["per_example"]
    correct = np.asarray(pe["correct"], dtype=float)
    assert correct.shape == (6, 24) and len(pe["id"]) == len(pe["label"]) == 24
    assert correct.mean(1) == pytest.approx([r["accuracy"] for r in result["rows"]], abs=1e-4)
    # the Wilson interval of k right of 24 (closed form), k from the kept outcomes
    k, z = correct[3].sum(), 1.959963985
    centre, half = (k + z * z / 2) / (24 + z * z), z * np.sqrt(k * (24 - k) / 24 + z * z / 4) / (24 + z * z)
    assert result["rows"][3]["accuracy_low"] == pytest.approx(centre - half, abs=1e-4)
    long = client.get(f"{API}/jobs/{job['id']}/result", params={"format": "csv", "table": "examples"}).text
    lines = long.splitlines()
    assert lines[0] == "example,label,layer,correct" and len(lines) == 1 + 24 * 6
    assert sum(int(line.rsplit(",", 1)[1]) for line in lines[1:] if line.split(",")[2] == "3") == k


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
    long = (tmp_path / "results-examples.csv").read_text().splitlines()  # every example's values, long format
    assert long[0].startswith("example,head,layer,head_index,shift_score") and len(long) == 1 + 3 * 72


def test_a_census_over_the_per_example_budget_keeps_statistics_only(client, wait_job, monkeypatch):
    """At a lowered bound (4 examples x 72 heads x 10 metrics = 2,880 values > 2,000) no shard keeps its
    examples: per_example is None, the intervals stay, and the long-format table is a clear 422."""
    monkeypatch.setattr("attnscope.pipelines.dataset_examples.PER_EXAMPLE_VALUES", 2000)
    r = client.post(f"{API}/jobs", json={"kind": "census", "params": {"model": "minilm", "dataset": "sst2", "n": 4}})
    job = wait_job(client, r.json()["id"])
    assert job["status"] == "done", job
    result = client.get(f"{API}/jobs/{job['id']}/result").json()
    assert result["per_example"] is None and result["rows"][0]["sink_n"] == 4
    from attnscope.pipelines.dataset_runs import pick_examples

    assert result["example_ids"] == [e.id for e in pick_examples("sst2", 4)]  # each can still be opened
    bad = client.get(f"{API}/jobs/{job['id']}/result", params={"format": "csv", "table": "examples"})
    assert bad.status_code == 422 and "per-example" in bad.json()["detail"]
