"""Server settings (pydantic-settings): the ATTNSCOPE_* names, their defaults, comma-separated lists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from attnscope.models.settings import ModelSettings
from attnscope.server.config import DEFAULT_ALLOWED_HOSTS, Settings

NAMES = [
    "DEVICE", "MAX_RUNS", "MAX_RUN_BYTES", "DEFAULT_MODEL", "ALLOWED_ORIGINS", "API_TOKEN", "PRELOAD", "ALLOWED_HOSTS",
    "HEAVY_WORKERS", "HEAVY_QUEUE", "MAX_BODY_BYTES", "MAX_UPLOAD_BYTES", "COMPUTE_BUDGET", "RATE_LIMIT",
    "DATABASE_URL", "STATE_DIR", "MAX_QUEUED_JOBS", "RAY_ADDRESS", "RAY_WORKERS", "RAY_THREADS", "RAY_JOIN",
    "CAPTURE", "MODEL_DIRS", "MAX_CAUSAL_TOKENS", "CACHE_DIR", "TRAIN_THREADS",
    "API_HOST", "API_PORT", "DASH_HOST", "DASH_PORT", "API_URL", "TORCH_THREADS",
    "BLAS_THREADS",
]  # fmt: skip
ROOT = Path(__file__).resolve().parents[2]
# the settings classes; the container health check (standard library only); the data folder's data_dir()
# (issue #30 gives it a setting)
READERS = {
    "models/settings.py", "server/config.py", "deploy/healthcheck.py",
    "models/zoo/data.py", "pipelines/datasets.py", "server/db/engine.py",
}  # fmt: skip
ENV_READ = re.compile(r"""(environ(\.get)?\s*[(\[]|getenv\()\s*f?["']ATTNSCOPE_""")


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


def test_the_settings_extend_the_model_settings_and_name_every_field_in_the_docstring(clean_env):
    assert issubclass(Settings, ModelSettings)
    s = Settings(preload=[])
    assert (s.device, s.capture, s.model_dirs, s.max_causal_tokens, s.train_threads) == ("auto", "lazy", [], None, None)
    assert (s.api_host, s.api_port, s.dash_host, s.dash_port, s.api_url) == ("127.0.0.1", 8000, "127.0.0.1", 8050, None)
    for field in Settings.model_fields:
        assert f"ATTNSCOPE_{field.upper()}" in Settings.__doc__, field


def test_only_the_settings_read_attnscope_variables():
    """Every ``ATTNSCOPE_*`` variable of the application is read by ``Settings`` / ``ModelSettings``."""
    folders = ["analysis", "models", "pipelines", "server", "frontend", "experiments", "attnscope", "deploy"]
    readers = {
        str(path.relative_to(ROOT))
        for folder in folders
        for path in (ROOT / folder).rglob("*.py")
        if ENV_READ.search(path.read_text(encoding="utf-8"))
    }
    assert readers <= READERS, f"read these through the settings: {sorted(readers - READERS)}"
    for read in ('os.environ.get("ATTNSCOPE_X")', "os.environ['ATTNSCOPE_X']", 'os.getenv("ATTNSCOPE_X", "")'):
        assert ENV_READ.search(read), read  # the check sees each way of reading one


def test_a_malformed_variable_names_itself(clean_env):
    clean_env.setenv("ATTNSCOPE_MAX_RUNS", "lots")
    with pytest.raises(ValidationError, match="max_runs"):
        Settings()
    with pytest.raises(ValidationError, match="heavy_workers"):
        Settings(heavy_workers=0)


# where torch's thread count may be set: API start-up, a Ray actor's start, the training and experiment commands
THREAD_SETTERS = {
    "server/main.py", "server/jobs/ray_shards.py", "pipelines/train.py", "pipelines/finetune.py",
    "experiments/__main__.py", "experiments/dla_ablation.py", "experiments/dla_induction.py",
    # command-line entry points (--threads), once at the start of their own process
    "experiments/circuits_induction.py", "experiments/model_args.py", "attnscope/cli/circuits.py",
    "attnscope/cli/dla.py",
}  # fmt: skip


def test_torch_threads_are_set_once_at_start_up_and_by_no_request(tmp_path):
    import torch
    from fastapi.testclient import TestClient

    from attnscope.server.main import create_app

    setters = {
        str(path.relative_to(ROOT))
        for folder in ["analysis", "models", "pipelines", "server", "experiments", "attnscope"]
        for path in (ROOT / folder).rglob("*.py")
        if "set_num_threads(" in path.read_text(encoding="utf-8")
    }
    assert setters <= THREAD_SETTERS, f"no request may change torch's threads: {sorted(setters - THREAD_SETTERS)}"
    before = torch.get_num_threads()
    want = 1 if before != 1 else 2
    app = create_app(Settings(preload=[], state_dir=str(tmp_path), torch_threads=want))
    try:
        with TestClient(app) as c:
            assert c.get("/api/v1/health").status_code == 200
            fut, _token = app.state.executor.submit(torch.get_num_threads)  # where heavy requests run
            assert fut.result(timeout=60) == want
    finally:
        torch.set_num_threads(before)


def test_blas_threads_are_set_once_at_start_up_and_restored_at_shutdown(tmp_path):
    """numpy's BLAS runs single-threaded in the API by default (ATTNSCOPE_BLAS_THREADS=1): a multi-threaded
    LAPACK call held the GIL while waiting for its threads and stalled /health (docs/results/benchmarks.md)."""
    from fastapi.testclient import TestClient
    from threadpoolctl import threadpool_info

    from attnscope.server.main import create_app

    def blas_threads() -> set[int]:
        return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}

    assert Settings().blas_threads == 1
    before = blas_threads()
    if before == {1}:
        pytest.skip("numpy's BLAS runs one thread on this machine already")
    app = create_app(Settings(preload=[], state_dir=str(tmp_path)))
    with TestClient(app) as c:
        assert c.get("/api/v1/health").status_code == 200
        fut, _token = app.state.executor.submit(blas_threads)  # where heavy requests run
        assert fut.result(timeout=60) == {1}
    assert blas_threads() == before
    with TestClient(create_app(Settings(preload=[], state_dir=str(tmp_path), blas_threads=0))):
        assert blas_threads() == before  # 0: left as the library set it
