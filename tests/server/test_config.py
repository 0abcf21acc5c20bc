"""Server settings (pydantic-settings): the ATTNSCOPE_* names, their defaults, comma-separated lists."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from attnscope.server.config import DEFAULT_ALLOWED_HOSTS, Settings

NAMES = [
    "DEVICE", "MAX_RUNS", "MAX_RUN_BYTES", "DEFAULT_MODEL", "ALLOWED_ORIGINS", "API_TOKEN", "PRELOAD", "ALLOWED_HOSTS",
    "HEAVY_WORKERS", "HEAVY_QUEUE", "MAX_BODY_BYTES", "MAX_UPLOAD_BYTES", "COMPUTE_BUDGET", "RATE_LIMIT",
    "DATABASE_URL", "STATE_DIR", "MAX_QUEUED_JOBS", "RAY_ADDRESS", "RAY_WORKERS",
]  # fmt: skip


@pytest.fixture
def clean_env(monkeypatch):
    for name in NAMES:
        monkeypatch.delenv(f"ATTNSCOPE_{name}", raising=False)
    return monkeypatch


def test_defaults(clean_env):
    s = Settings()
    assert (s.device, s.max_runs, s.default_model, s.preload) == ("auto", 256, "minilm", ["minilm"])
    assert s.allowed_hosts == list(DEFAULT_ALLOWED_HOSTS) and s.allowed_origins == [] and s.api_token is None
    assert (s.heavy_workers, s.heavy_queue, s.max_queued_jobs, s.ray_workers) == (2, 32, 16, 2)
    assert (s.max_body_bytes, s.max_upload_bytes, s.compute_budget) == (2**20, 11 * 2**20, 400_000)
    assert s.rate_limit is None and s.database_url is None and s.ray_address is None


def test_every_documented_variable_is_read_and_named_in_the_docstring(clean_env):
    for name in NAMES:
        assert f"ATTNSCOPE_{name}" in Settings.__doc__
    clean_env.setenv("ATTNSCOPE_MAX_RUNS", "7")
    clean_env.setenv("ATTNSCOPE_PRELOAD", "minilm, smollm2")
    clean_env.setenv("ATTNSCOPE_ALLOWED_HOSTS", "a.example,*.b.example")
    clean_env.setenv("ATTNSCOPE_RATE_LIMIT", "10/second;300/minute")
    clean_env.setenv("ATTNSCOPE_API_TOKEN", "")
    s = Settings.from_env()  # the old name is an alias of Settings()
    assert s.max_runs == 7 and s.preload == ["minilm", "smollm2"]
    assert s.allowed_hosts == ["a.example", "*.b.example"] and s.rate_limit == "10/second;300/minute"
    assert s.api_token is None


def test_empty_values_and_keyword_arguments(clean_env):
    clean_env.setenv("ATTNSCOPE_PRELOAD", "")  # empty: load nothing at start-up
    clean_env.setenv("ATTNSCOPE_MAX_RUNS", "")  # empty number: the default
    clean_env.setenv("ATTNSCOPE_HEAVY_WORKERS", "5")
    s = Settings(heavy_workers=3)
    assert s.preload == [] and s.max_runs == 256 and s.heavy_workers == 3


def test_a_malformed_variable_names_itself(clean_env):
    clean_env.setenv("ATTNSCOPE_MAX_RUNS", "lots")
    with pytest.raises(ValidationError, match="max_runs"):
        Settings()
    with pytest.raises(ValidationError, match="heavy_workers"):
        Settings(heavy_workers=0)
