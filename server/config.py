"""Server settings, read once from environment variables."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version

try:
    VERSION = version("attnscope")
except PackageNotFoundError:  # running from a source tree that was never installed
    VERSION = "0+unknown"


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
    """

    device: str = "auto"
    max_runs: int = 256
    default_model: str = "minilm"
    allowed_origins: list[str] = field(default_factory=list)
    api_token: str | None = None
    preload: list[str] = field(default_factory=list)

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
        )
