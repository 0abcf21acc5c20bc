"""Server settings, read once from environment variables."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version

try:
    VERSION = version("attnscope")
except PackageNotFoundError:  # running from a source tree that was never installed
    VERSION = "0+unknown"


DEFAULT_ALLOWED_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]", "api", "dashboard", "testserver")


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


@dataclass(frozen=True)
class Settings:
    """All knobs of the API process.

    ATTNSCOPE_DEVICE          auto | cpu | cuda[:N]   (auto: CUDA when present)
    ATTNSCOPE_MAX_RUNS        runs kept in memory (LRU), default 256
    ATTNSCOPE_DEFAULT_MODEL   model used when a request names none, default minilm
    ATTNSCOPE_ALLOWED_ORIGINS comma-separated CORS origins (empty: same-origin only)
    ATTNSCOPE_API_TOKEN       when set, every route but /health needs "Authorization: Bearer <token>"
    ATTNSCOPE_PRELOAD         comma-separated models loaded at start-up, default minilm
    ATTNSCOPE_MODEL_DIRS      roots for local Hugging Face checkpoints (read by models.registry)
    ATTNSCOPE_ALLOWED_HOSTS   comma-separated Host names the API answers (DNS-rebinding guard; '*' = any),
                              default localhost, 127.0.0.1, ::1, the compose service names api and dashboard,
                              and testserver (Starlette's test client)
    ATTNSCOPE_HEAVY_WORKERS   threads running model work (heavy routes), default 2
    ATTNSCOPE_HEAVY_QUEUE     heavy requests waiting beyond those; one more gets 429 + Retry-After, default 32
    ATTNSCOPE_MAX_BODY_BYTES  largest JSON body, default 1 MiB (413 before the body is read)
    ATTNSCOPE_MAX_UPLOAD_BYTES largest multipart upload, default 11 MiB (a 10 MB image + form overhead)
    ATTNSCOPE_COMPUTE_BUDGET  per-request budget of tokens x steps x explainers (faithfulness), default 400000
    ATTNSCOPE_RATE_LIMIT      per-client rate limit (the limits package's syntax, e.g. "600/minute"); empty: off
    ATTNSCOPE_DATABASE_URL    SQLAlchemy URL of the database (default: an SQLite file in the state folder)
    ATTNSCOPE_STATE_DIR       folder of that SQLite file ($ATTNSCOPE_DATA_DIR/state, else ~/.local/state/attnscope)
    ATTNSCOPE_MAX_QUEUED_JOBS jobs waiting in the queue before POST /jobs answers 429, default 16
    ATTNSCOPE_RAY_ADDRESS     a Ray cluster (e.g. ray://head:10001 or head:6379): data-set jobs run there
    ATTNSCOPE_RAY_WORKERS     Ray actors (each holds the job's model), default 2
    ATTNSCOPE_RAY_THREADS     torch threads per Ray actor, default 0: as many as the API uses (the same numbers)
    ATTNSCOPE_RAY_JOIN        1: start a Ray node without CPUs here first (an API in its own container; a driver
                              must run on a node of the cluster), default 0
    """

    device: str = "auto"
    max_runs: int = 256
    default_model: str = "minilm"
    allowed_origins: list[str] = field(default_factory=list)
    api_token: str | None = None
    preload: list[str] = field(default_factory=list)
    allowed_hosts: list[str] = field(default_factory=lambda: list(DEFAULT_ALLOWED_HOSTS))
    heavy_workers: int = 2
    heavy_queue: int = 32
    max_body_bytes: int = 2**20
    max_upload_bytes: int = 11 * 2**20
    compute_budget: int = 400_000
    rate_limit: str | None = None
    database_url: str | None = None
    state_dir: str | None = None
    max_queued_jobs: int = 16
    ray_address: str | None = None
    ray_workers: int = 2
    ray_threads: int = 0
    ray_join: bool = False

    @classmethod
    def from_env(cls) -> Settings:
        env = os.environ
        return cls(
            device=env.get("ATTNSCOPE_DEVICE", "auto"),
            max_runs=int(env.get("ATTNSCOPE_MAX_RUNS", "256")),
            default_model=env.get("ATTNSCOPE_DEFAULT_MODEL", "minilm"),
            allowed_origins=_csv(env.get("ATTNSCOPE_ALLOWED_ORIGINS", "")),
            api_token=env.get("ATTNSCOPE_API_TOKEN") or None,
            preload=_csv(env.get("ATTNSCOPE_PRELOAD", "minilm")),
            allowed_hosts=_csv(env.get("ATTNSCOPE_ALLOWED_HOSTS", "")) or list(DEFAULT_ALLOWED_HOSTS),
            heavy_workers=int(env.get("ATTNSCOPE_HEAVY_WORKERS", "2")),
            heavy_queue=int(env.get("ATTNSCOPE_HEAVY_QUEUE", "32")),
            max_body_bytes=int(env.get("ATTNSCOPE_MAX_BODY_BYTES", str(2**20))),
            max_upload_bytes=int(env.get("ATTNSCOPE_MAX_UPLOAD_BYTES", str(11 * 2**20))),
            compute_budget=int(env.get("ATTNSCOPE_COMPUTE_BUDGET", "400000")),
            rate_limit=env.get("ATTNSCOPE_RATE_LIMIT") or None,
            database_url=env.get("ATTNSCOPE_DATABASE_URL") or None,
            state_dir=env.get("ATTNSCOPE_STATE_DIR") or None,
            max_queued_jobs=int(env.get("ATTNSCOPE_MAX_QUEUED_JOBS", "16")),
            ray_address=env.get("ATTNSCOPE_RAY_ADDRESS") or None,
            ray_workers=int(env.get("ATTNSCOPE_RAY_WORKERS", "2")),
            ray_threads=int(env.get("ATTNSCOPE_RAY_THREADS", "0")),
            ray_join=env.get("ATTNSCOPE_RAY_JOIN", "0").lower() in ("1", "true", "yes"),
        )
