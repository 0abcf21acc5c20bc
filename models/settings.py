"""The settings that code below the server reads (models, pipelines, experiments), from ``ATTNSCOPE_*``.

``model_settings()`` reads them from the environment on each call (pydantic-settings: typed and
checked), so a variable set in-process (a test, a benchmark raising the causal token cap) counts at
once. The server's ``attnscope.server.config.Settings`` extends ``ModelSettings``: the API validates
these variables with its own at start-up (a malformed one stops it, naming the field) and documents
them in one place (``docs/guide/configuration.md``). Why a class here rather than arguments passed
down from the server: the same knobs serve the command line, the benchmarks and the experiments,
which run models without the server, and the dependency rule (analysis <- models <- pipelines <-
server) lets pipelines and experiments read models but never the server.

    ATTNSCOPE_DEVICE             auto | cpu | cuda[:N] (auto: CUDA when present)
    ATTNSCOPE_CAPTURE            lazy | eager: how Hugging Face models capture attention, default lazy
    ATTNSCOPE_LAZY_RECORD        stream | qk: what a lazy causal-LM run keeps per layer, the stream entering
                                 the block (default; the keys' bytes go, each layer's queries and keys are
                                 rebuilt on request) or its queries and keys (``attnscope.models.stream_qk``)
    ATTNSCOPE_MODEL_DIRS         roots for local Hugging Face checkpoints (os.pathsep-separated)
    ATTNSCOPE_MAX_CAUSAL_TOKENS  longest causal-LM run (prompt + generated tokens), default 4096 (512 eager)
    ATTNSCOPE_CACHE_DIR          converted checkpoints (SmolLM2 from GGUF, DINOv2), default ~/.cache/attnscope
    ATTNSCOPE_TRAIN_THREADS      torch threads when training the zoo or running the experiments
                                 (default: 2 for training, 1 for the experiments)
    ATTNSCOPE_MALLOC_MMAP_THRESHOLD  glibc malloc's mmap threshold in bytes, fixed at model load (default
                                 1 MiB, so big temporary tensors return to the OS; 0: glibc's default;
                                 ``attnscope.models.allocator``)

    ATTNSCOPE_DATA_DIR           the data folder (``attnscope.models.data_registry.data_dir()``; default
                                 ``$XDG_DATA_HOME/attnscope/data``, else ``~/.local/share/attnscope/data``)
    ATTNSCOPE_DATA_SOURCE        where ``attnscope data fetch`` copies the data sets from (a folder or an
                                 archive; empty: the pinned download addresses)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_core import PydanticUseDefault
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

DEFAULT_MMAP_THRESHOLD = 1 << 20
MAX_MMAP_THRESHOLD = 32 << 20  # glibc's HEAP_MAX_SIZE / 2 on 64-bit: mallopt refuses more

# lazy capture keeps the stream or queries and keys (a 4,096-token SmolLM2 run: 0.29 GB); eager capture materialises
# every map (SmolLM2 at 512 tokens: 283 MB, 18 GB at 4,096), hence its lower default
DEFAULT_CAUSAL_TOKENS = 4096
DEFAULT_EAGER_CAUSAL_TOKENS = 512


def _default_cache_dir() -> Path:
    return Path.home() / ".cache" / "attnscope"


class ModelSettings(BaseSettings):
    """The knobs of model loading and capture (see the module docstring for the variables)."""

    model_config = SettingsConfigDict(env_prefix="ATTNSCOPE_", frozen=True, extra="ignore")

    device: str = "auto"
    capture: str = "lazy"  # checked by attnscope.models.loading.capture_setting (its message names the variable)
    lazy_record: Literal["stream", "qk"] = "stream"
    model_dirs: Annotated[list[str], NoDecode] = Field(default_factory=list)
    max_causal_tokens: int | None = Field(None, ge=1)  # None: the capture's default (registry.causal_token_cap)
    cache_dir: Path = Field(default_factory=_default_cache_dir)
    train_threads: int | None = Field(None, ge=1)
    data_dir: Path | None = None
    data_source: str = ""
    malloc_mmap_threshold: int = Field(DEFAULT_MMAP_THRESHOLD, ge=0, le=MAX_MMAP_THRESHOLD)

    @field_validator("model_dirs", mode="before")
    @classmethod
    def _split_paths(cls, value):
        if isinstance(value, str):
            return [part.strip() for part in value.split(os.pathsep) if part.strip()]
        return value

    @field_validator(
        "device",
        "capture",
        "lazy_record",
        "max_causal_tokens",
        "cache_dir",
        "train_threads",
        "data_dir",
        "malloc_mmap_threshold",
        mode="before",
    )
    @classmethod
    def _empty_model_value_is_default(cls, value):
        """``ATTNSCOPE_DEVICE=`` (set but empty, as compose passes an unset host variable) keeps the default."""
        if isinstance(value, str) and not value.strip():
            raise PydanticUseDefault()
        return value


def model_settings() -> ModelSettings:
    """The settings as the environment holds them now (read on each call; cheap next to model work)."""
    return ModelSettings()


# Prompt plus generated tokens of a causal-LM run stay within ATTNSCOPE_MAX_CAUSAL_TOKENS. Lazy capture
# (the default) keeps each layer's input stream (or queries and keys), not maps: a 4,096-token SmolLM2 run holds 0.29 GB
# (bench/lazy.py), so the run store (a quarter of memory by default) holds several. Eager capture
# (ATTNSCOPE_CAPTURE=eager) materialises [layer, head, token, token]: SmolLM2 at 512 tokens holds 283 MB
# (18 GB at 4,096), so it keeps 512. The defaults are the constants above.


def causal_token_cap() -> int:
    """Longest causal-LM run (prompt + generated tokens): ``ATTNSCOPE_MAX_CAUSAL_TOKENS``, default
    4,096 (512 when ``ATTNSCOPE_CAPTURE=eager`` materialises every map); the model's context caps it."""
    s = model_settings()
    if s.max_causal_tokens is not None:
        return s.max_causal_tokens
    return DEFAULT_EAGER_CAUSAL_TOKENS if s.capture.strip().lower() == "eager" else DEFAULT_CAUSAL_TOKENS
