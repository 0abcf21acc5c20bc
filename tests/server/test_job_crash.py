"""Kill -9 of the API process in the middle of a census job: the restarted API (same database) shows
the job ``interrupted``, resumes it from the next shard, and ends with the same table as an
uninterrupted run: no example lost, none counted twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from attnscope.server.db.engine import open_database
from attnscope.server.jobs.records import JobRecords
from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
API = "/api/v1"
PARAMS = {"model": "minilm", "dataset": "sst2", "n": 50, "seed": 5}  # two shards of 25


class ApiProcess:
    """``attnscope api`` in a child process on a free port."""

    def __init__(self, env: dict, log: Path):
        self.port = free_port()
        self.log = open(log, "ab")  # noqa: SIM115  (closed in stop)
        self.url = f"http://127.0.0.1:{self.port}{API}"
        cmd = [sys.executable, "-m", "attnscope.cli", "api", "--host", "127.0.0.1", "--port", str(self.port)]
        self.proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.time() + 180
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the API exited: {log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError("the API did not start")

    def get(self, path: str):
        return httpx.get(f"{self.url}{path}", timeout=30)

    def post(self, path: str, **kw):
        return httpx.post(f"{self.url}{path}", timeout=30, **kw)

    def wait(self, job_id: str, *states: str, timeout: float = 900) -> dict:
        deadline, job = time.time() + timeout, None
        while time.time() < deadline:
            job = self.get(f"/jobs/{job_id}").json()
            if job["status"] in states:
                return job
            time.sleep(0.05)
        raise AssertionError(f"job {job_id} never reached {states}: {job}")

    def kill9(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture
def api_env(tmp_path):
    return {**os.environ, "ATTNSCOPE_STATE_DIR": str(tmp_path), "ATTNSCOPE_PRELOAD": "", "HF_HUB_OFFLINE": "1"}


def test_kill_9_mid_census_then_resume_gives_the_uninterrupted_table(api_env, tmp_path):
    api = ApiProcess(api_env, tmp_path / "api.log")
    try:
        job_id = api.post("/jobs", json={"kind": "census", "params": PARAMS}).json()["id"]
        deadline = time.time() + 900
        while time.time() < deadline:
            job = api.get(f"/jobs/{job_id}").json()
            if job["shards_done"] >= 1 or job["status"] not in ("queued", "running"):
                break
            time.sleep(0.02)
        assert job["status"] == "running" and job["shards_done"] == 1, job
        api.kill9()  # no shutdown handler runs: the database says "running"
    finally:
        api.stop()
    db = open_database(None, tmp_path)
    saved_before = [(s.index, s.start, s.stop) for s in JobRecords(db).shards(job_id)]
    assert JobRecords(db).get(job_id).status == "running"
    db.close()

    api = ApiProcess(api_env, tmp_path / "api.log")
    try:
        job = api.get(f"/jobs/{job_id}").json()
        assert job["status"] == "interrupted" and f"/jobs/{job_id}/resume" in job["message"]
        assert job["shards_done"] == len(saved_before) and job["done"] >= 25 * len(saved_before)
        assert api.post(f"/jobs/{job_id}/resume").status_code == 202
        job = api.wait(job_id, "done", "failed")
        assert job["status"] == "done" and job["done"] == job["total"] == 50
        resumed = api.get(f"/jobs/{job_id}/result").json()
        again = api.post("/jobs", json={"kind": "census", "params": PARAMS}).json()["id"]
        api.wait(again, "done")
        uninterrupted = api.get(f"/jobs/{again}/result").json()
    finally:
        api.stop()
    assert resumed == uninterrupted and resumed["n"] == 50
    db = open_database(None, tmp_path)
    shards = JobRecords(db).shards(job_id)
    db.close()
    assert [(s.start, s.stop) for s in shards] == [(0, 25), (25, 50)]  # each example once
    assert [(s.index, s.start, s.stop) for s in shards[: len(saved_before)]] == saved_before  # not run again


def _kill_after_shards(api: ApiProcess, job_id: str, shards: int) -> None:
    deadline = time.time() + 900
    while time.time() < deadline:
        job = api.get(f"/jobs/{job_id}").json()
        if job["shards_done"] >= shards or job["status"] not in ("queued", "running"):
            break
        time.sleep(0.02)
    assert job["status"] == "running" and job["shards_done"] == shards, job
    api.kill9()


def test_kill_9_during_a_resume_loses_nothing_and_the_next_start_names_it(api_env, tmp_path):
    """A job killed after shard 1, resumed, killed again after shard 2 (mid-resume), resumed again: the
    second start-up marks it interrupted again (its log names the job), and the table equals an
    uninterrupted run's, each example counted once."""
    params = {**PARAMS, "n": 75}  # three shards of 25
    log = tmp_path / "api.log"
    api = ApiProcess(api_env, log)
    try:
        job_id = api.post("/jobs", json={"kind": "census", "params": params}).json()["id"]
        _kill_after_shards(api, job_id, 1)
    finally:
        api.stop()
    api = ApiProcess(api_env, log)
    try:
        assert api.get(f"/jobs/{job_id}").json()["status"] == "interrupted"
        assert api.post(f"/jobs/{job_id}/resume").status_code == 202
        _kill_after_shards(api, job_id, 2)  # the resumed run, killed mid-way
    finally:
        api.stop()
    db = open_database(None, tmp_path)
    saved = [(s.index, s.start, s.stop) for s in JobRecords(db).shards(job_id)]
    db.close()
    assert saved == [(0, 0, 25), (1, 25, 50)]

    before = log.read_text()
    api = ApiProcess(api_env, log)
    try:
        job = api.get(f"/jobs/{job_id}").json()
        assert job["status"] == "interrupted" and f"/jobs/{job_id}/resume" in job["message"]
        assert job["shards_done"] == 2 and job["done"] == 50
        assert (
            f"job {job_id} was running when the process stopped: marked interrupted" in log.read_text()[len(before) :]
        )
        assert api.post(f"/jobs/{job_id}/resume").status_code == 202
        job = api.wait(job_id, "done", "failed")
        assert job["status"] == "done" and job["done"] == job["total"] == 75
        resumed = api.get(f"/jobs/{job_id}/result").json()
        again = api.post("/jobs", json={"kind": "census", "params": params}).json()["id"]
        api.wait(again, "done")
        uninterrupted = api.get(f"/jobs/{again}/result").json()
    finally:
        api.stop()
    assert resumed == uninterrupted and resumed["n"] == 75
    db = open_database(None, tmp_path)
    shards = JobRecords(db).shards(job_id)
    db.close()
    assert [(s.start, s.stop) for s in shards] == [(0, 25), (25, 50), (50, 75)]
    assert [(s.index, s.start, s.stop) for s in shards[:2]] == saved  # not run again
