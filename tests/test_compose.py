"""docker-compose.yml read as YAML (``make docker-test`` validates and runs it with Docker): the
``ray`` profile starts a Ray head and workers from the API's image, the API can reach them, the
default stack is unchanged by the profile, and the API's database lies on a writable volume."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_ray_profile_has_a_head_and_workers_from_the_api_image(compose):
    services = compose["services"]
    head, worker, api = services["ray-head"], services["ray-worker"], services["api"]
    assert head["profiles"] == ["ray"] and worker["profiles"] == ["ray"]
    assert head["image"] == worker["image"] == api["image"]  # one image: the same attnscope and Ray on every node
    assert head["entrypoint"] == worker["entrypoint"] == ["ray"]
    assert {"start", "--head", "--port=6379", "--block", "--include-dashboard=false"} <= set(head["command"])
    assert "--address=ray-head:6379" in worker["command"] and "--block" in worker["command"]
    assert any(c.startswith("--object-store-memory=") for c in head["command"] + worker["command"])
    assert worker["depends_on"]["ray-head"]["condition"] == "service_healthy"
    assert head["healthcheck"]["test"][1:3] == worker["healthcheck"]["test"][1:3] == ["ray", "health-check"]
    assert "ray-head:6379" in worker["healthcheck"]["test"]
    assert api["build"]["args"]["EXTRAS"] == "${ATTNSCOPE_IMAGE_EXTRAS:-}"  # ray installed only when asked


def test_the_api_is_configured_for_ray_and_the_default_stack_has_no_profile(compose):
    services = compose["services"]
    env = services["api"]["environment"]
    assert "ATTNSCOPE_RAY_ADDRESS" in env and env["ATTNSCOPE_RAY_ADDRESS"] is None  # passed on when set
    assert env["ATTNSCOPE_RAY_JOIN"] == "${ATTNSCOPE_RAY_JOIN:-1}"
    assert "profiles" not in services["api"] and "profiles" not in services["dashboard"]
    assert not services["ray-head"].get("ports") and not services["ray-worker"].get("ports")


def test_the_api_database_lies_on_a_writable_volume(compose):
    """The containers' root file system is read-only: the SQLite file must be on a mounted volume."""
    api = compose["services"]["api"]
    assert api["read_only"] is True
    state = api["environment"]["ATTNSCOPE_STATE_DIR"]
    mounts = [v.split(":")[1] for v in api["volumes"] if not v.endswith(":ro")]
    assert any(state == m or state.startswith(m.rstrip("/") + "/") for m in mounts), (state, mounts)


def test_dockerfile_extras_default_to_none():
    text = (ROOT / "Dockerfile").read_text()
    assert 'ARG EXTRAS=""' in text and 'optional-dependencies"][e.strip()]' in text


@pytest.mark.skipif(
    shutil.which("docker") is None
    or subprocess.run(["docker", "compose", "version"], capture_output=True).returncode != 0,
    reason="no docker compose here (make docker-test validates the files with its own)",
)
def test_compose_config_is_valid_with_the_ray_profile():
    for args in ([], ["--profile", "ray"]):
        proc = subprocess.run(
            ["docker", "compose", "-f", "docker-compose.yml", *args, "config", "--quiet"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr
