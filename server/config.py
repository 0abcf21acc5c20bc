"""Server settings, read once from environment variables (``pydantic-settings``: typed and checked at start-up)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Annotated

from pydantic import Field, field_validator
from pydantic_core import PydanticUseDefault
from pydantic_settings import NoDecode, SettingsConfigDict

from attnscope.models.settings import ModelSettings

try:
    VERSION = version("attnscope")
except PackageNotFoundError:  # running from a source tree that was never installed
    VERSION = "0+unknown"


DEFAULT_ALLOWED_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]", "api", "dashboard", "testserver")

CsvList = Annotated[list[str], NoDecode]  # the env var is "a,b,c", not JSON


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


class Settings(ModelSettings):
    """All knobs of the API process, the command line and the dashboard it starts; the only reader of
    ``ATTNSCOPE_*`` variables besides ``ModelSettings`` (``attnscope.models.settings``), which it extends.

    ATTNSCOPE_DEVICE          auto | cpu | cuda[:N]   (auto: CUDA when present)
    ATTNSCOPE_CAPTURE         lazy | eager: how Hugging Face models capture attention, default lazy
    ATTNSCOPE_LAZY_RECORD     stream | qk: a lazy causal-LM run keeps the stream entering each block (default)
                              or its queries and keys
    ATTNSCOPE_MAX_CAUSAL_TOKENS longest causal-LM run (prompt + generated tokens), default 4096 (512 eager)
    ATTNSCOPE_CACHE_DIR       converted checkpoints (SmolLM2 from GGUF, DINOv2), default ~/.cache/attnscope
    ATTNSCOPE_TRAIN_THREADS   torch threads of zoo training and the experiments (default 2 and 1)
    ATTNSCOPE_MALLOC_MMAP_THRESHOLD glibc malloc's mmap threshold fixed at model load, default 1 MiB (0: glibc's)
    ATTNSCOPE_MAX_RUNS        runs kept in memory (LRU), default 256
    ATTNSCOPE_MAX_RUN_BYTES   bytes the runs kept in memory may hold (LRU by bytes: stored queries/keys of lazy
                              maps, eager maps, hidden states, outputs), default a quarter of physical memory
    ATTNSCOPE_MAX_RECORDING_BYTES bytes of recorded forwards kept per run for the lens, attribution, value-weighted
                              maps and contribution graph (LRU by bytes), default 2 GiB
    ATTNSCOPE_DEFAULT_MODEL   model used when a request names none, default minilm
    ATTNSCOPE_ALLOWED_ORIGINS comma-separated CORS origins (empty: same-origin only)
    ATTNSCOPE_API_TOKEN       when set, every route but /health needs "Authorization: Bearer <token>"
    ATTNSCOPE_PRELOAD         comma-separated models loaded at start-up, default minilm (empty: none)
    ATTNSCOPE_MODEL_DIRS      roots for local Hugging Face checkpoints (os.pathsep-separated)
    ATTNSCOPE_DATA_DIR        the data folder, default ~/.local/share/attnscope/data (read by models.data_registry;
                              filled by `attnscope data fetch`, docs/guide/data.md)
    ATTNSCOPE_DATA_SOURCE     where `attnscope data fetch` copies the data sets from (a folder or an archive;
                              empty: the pinned download addresses)
    ATTNSCOPE_ALLOWED_HOSTS   comma-separated Host names the API answers (DNS-rebinding guard; '*' = any),
                              default localhost, 127.0.0.1, ::1, the compose service names api and dashboard,
                              and testserver (Starlette's test client)
    ATTNSCOPE_HEAVY_WORKERS   threads running model work (heavy routes), default 2
    ATTNSCOPE_TORCH_THREADS   torch intra-op threads of the API process, set once at start-up (no request
                              changes them), default 0: torch's own default (the machine's cores)
    ATTNSCOPE_BLAS_THREADS    threads of numpy's and scipy's BLAS (OpenBLAS) in the API process, set once at start-up,
                              default 1: their small linear algebra (Lipschitz bounds, analyses) gains nothing from
                              more, and under load a multi-threaded call waits for its own threads to be scheduled
                              while it holds the GIL, stalling the event loop (/health); 0: the library's default
    ATTNSCOPE_HEAVY_QUEUE     heavy requests waiting beyond those; one more gets 429 + Retry-After, default 32
    ATTNSCOPE_MAX_BODY_BYTES  largest JSON body, default 1 MiB (413 before the body is read)
    ATTNSCOPE_MAX_UPLOAD_BYTES largest multipart upload, default 11 MiB (a 10 MB image + form overhead)
    ATTNSCOPE_COMPUTE_BUDGET  per-request budget of tokens x steps x explainers (faithfulness), default 400000
    ATTNSCOPE_REQUEST_DEADLINE seconds a heavy request may run (queue wait included) before it is cancelled
                              and answered 504 (run it as a job instead), default 180; 0: none
    ATTNSCOPE_FORWARDED_ALLOW_IPS addresses of the reverse proxies whose X-Forwarded-For names the client
                              (the rate limit's key); unset: proxy headers are ignored
    ATTNSCOPE_RATE_LIMIT      per-client rate limit (the limits package's syntax, e.g. "600/minute"); empty: off
    ATTNSCOPE_DATABASE_URL    SQLAlchemy URL of the database (default: an SQLite file in the state folder)
    ATTNSCOPE_STATE_DIR       folder of that SQLite file ($ATTNSCOPE_DATA_DIR/state, else ~/.local/state/attnscope)
    ATTNSCOPE_MAX_QUEUED_JOBS jobs waiting in the queue before POST /jobs answers 429, default 16
    ATTNSCOPE_RAY_ADDRESS     a Ray cluster (e.g. ray://head:10001 or head:6379): data-set jobs run there
    ATTNSCOPE_RAY_WORKERS     Ray actors (each holds the job's model), default 2
    ATTNSCOPE_RAY_THREADS     torch threads per Ray actor, default 0: as many as the API uses (the same numbers)
    ATTNSCOPE_RAY_JOIN        1: start a Ray node without CPUs here first (an API in its own container; a driver
                              must run on a node of the cluster), default 0
    ATTNSCOPE_API_HOST        where ``attnscope serve|api`` binds the API, default 127.0.0.1
    ATTNSCOPE_API_PORT        its port, default 8000
    ATTNSCOPE_DASH_HOST       where ``attnscope serve|dashboard`` binds the dashboard, default 127.0.0.1
    ATTNSCOPE_DASH_PORT       its port, default 8050
    ATTNSCOPE_API_URL         the API the dashboard talks to (default: http://<api host>:<api port>)
    ATTNSCOPE_DASH_TOKEN      the token the dashboard's log-in asks for (default: ATTNSCOPE_API_TOKEN; neither: none)
    ATTNSCOPE_DASH_SECRET     key signing the dashboard's session cookies (default: random per process)
    ATTNSCOPE_DASH_SECURE_COOKIE 1: the session cookie is always Secure (behind a proxy ending TLS); default: over https
    ATTNSCOPE_DASH_MAX_CALLBACK_BYTES largest dashboard callback body, default 16 MiB (413 above)
    ATTNSCOPE_DASH_ALLOW_OPEN 1: serve the dashboard without a token on an address that is not loopback
    ATTNSCOPE_DASH_EXPOSED_ON where the dashboard is reachable when not at its bind address (compose: ATTNSCOPE_BIND)

    ``Settings()`` reads these variables; keyword arguments win over them (``Settings(preload=[])``).
    A malformed value (``ATTNSCOPE_MAX_RUNS=lots``) stops start-up with the variable's name.
    """

    model_config = SettingsConfigDict(env_prefix="ATTNSCOPE_", frozen=True, extra="ignore")

    max_runs: int = Field(256, ge=1)
    max_run_bytes: int | None = Field(None, ge=1)  # None: attnscope.server.store.default_max_bytes()
    max_recording_bytes: int = Field(2 * 2**30, ge=1)  # attnscope.pipelines.writes.cache.RecordingCache
    default_model: str = "minilm"
    allowed_origins: CsvList = Field(default_factory=list)
    api_token: str | None = None
    preload: CsvList = Field(default_factory=lambda: ["minilm"])
    allowed_hosts: CsvList = Field(default_factory=lambda: list(DEFAULT_ALLOWED_HOSTS))
    heavy_workers: int = Field(2, ge=1)
    heavy_queue: int = Field(32, ge=0)
    torch_threads: int = Field(0, ge=0)
    blas_threads: int = Field(1, ge=0)
    max_body_bytes: int = Field(2**20, ge=1024)
    max_upload_bytes: int = Field(11 * 2**20, ge=1024)
    compute_budget: int = Field(400_000, ge=1)
    request_deadline: float | None = Field(180.0, ge=0)  # 0 or None: no deadline
    rate_limit: str | None = None
    forwarded_allow_ips: str | None = None
    database_url: str | None = None
    state_dir: str | None = None
    max_queued_jobs: int = Field(16, ge=0)
    ray_address: str | None = None
    ray_workers: int = Field(2, ge=1)
    ray_threads: int = Field(0, ge=0)
    ray_join: bool = False
    api_host: str = "127.0.0.1"
    api_port: int = Field(8000, ge=1, le=65535)
    dash_host: str = "127.0.0.1"
    dash_port: int = Field(8050, ge=1, le=65535)
    api_url: str | None = None
    dash_token: str | None = None
    dash_secret: str | None = None
    dash_secure_cookie: bool | None = None
    dash_max_callback_bytes: int = Field(16 * 2**20, ge=1024)
    dash_allow_open: bool = False
    dash_exposed_on: str | None = None

    @field_validator("allowed_origins", "preload", "allowed_hosts", mode="before")
    @classmethod
    def _split_csv(cls, value):
        return _csv(value) if isinstance(value, str) else value

    @field_validator(
        "max_runs",
        "max_run_bytes",
        "max_recording_bytes",
        "heavy_workers",
        "heavy_queue",
        "torch_threads",
        "blas_threads",
        "max_body_bytes",
        "max_upload_bytes",
        "compute_budget",
        "request_deadline",
        "max_queued_jobs",
        "ray_workers",
        "ray_threads",
        "ray_join",
        "default_model",
        "api_host",
        "api_port",
        "dash_host",
        "dash_port",
        "dash_max_callback_bytes",
        "dash_allow_open",
        mode="before",
    )
    @classmethod
    def _empty_is_default(cls, value):
        """``ATTNSCOPE_MAX_RUNS=`` (set but empty, as compose passes an unset host variable) keeps the default."""
        if isinstance(value, str) and not value.strip():
            raise PydanticUseDefault()
        return value

    @field_validator(
        "api_token",
        "rate_limit",
        "forwarded_allow_ips",
        "database_url",
        "state_dir",
        "ray_address",
        "api_url",
        "dash_token",
        "dash_secret",
        "dash_secure_cookie",
        "dash_exposed_on",
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, value):
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("request_deadline", mode="after")
    @classmethod
    def _zero_is_none(cls, value: float | None) -> float | None:
        return value or None

    @field_validator("allowed_hosts", mode="after")
    @classmethod
    def _some_host(cls, value: list[str]) -> list[str]:
        return value or list(DEFAULT_ALLOWED_HOSTS)

    @field_validator("rate_limit", mode="after")
    @classmethod
    def _rate_syntax(cls, value: str | None) -> str | None:
        if value:
            from limits import parse_many

            try:
                parse_many(value)
            except ValueError:
                raise ValueError(
                    f"{value!r} is no rate limit; write e.g. '600/minute' or '10/second;300/minute'"
                ) from None
        return value

    @classmethod
    def from_env(cls) -> Settings:
        """The settings from the environment (same as ``Settings()``; kept for callers of the old API)."""
        return cls()
