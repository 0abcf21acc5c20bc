"""``ModelSettings``: the ATTNSCOPE_* variables that code below the server reads, typed and checked."""

from __future__ import annotations

import os

import pytest
from pydantic import ValidationError

from attnscope.models.device import pick_device
from attnscope.models.loading import capture_setting
from attnscope.models.registry import causal_token_cap, model_roots
from attnscope.models.settings import DEFAULT_CAUSAL_TOKENS, model_settings

NAMES = ["DEVICE", "CAPTURE", "MODEL_DIRS", "MAX_CAUSAL_TOKENS", "CACHE_DIR", "TRAIN_THREADS"]


@pytest.fixture
def clean_env(monkeypatch):
    for name in NAMES:
        monkeypatch.delenv(f"ATTNSCOPE_{name}", raising=False)
    return monkeypatch


def test_defaults(clean_env):
    s = model_settings()
    assert (s.device, s.capture, s.model_dirs, s.max_causal_tokens, s.train_threads) == ("auto", "lazy", [], None, None)
    assert s.cache_dir.parts[-2:] == (".cache", "attnscope")
    assert causal_token_cap() == DEFAULT_CAUSAL_TOKENS and capture_setting() == "lazy"


def test_a_variable_set_in_process_counts_at_once(clean_env, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    clean_env.setenv("ATTNSCOPE_MAX_CAUSAL_TOKENS", "16")
    clean_env.setenv("ATTNSCOPE_MODEL_DIRS", f"{a}{os.pathsep} {b} {os.pathsep}{tmp_path / 'missing'}")
    clean_env.setenv("ATTNSCOPE_CAPTURE", "eager")
    clean_env.setenv("ATTNSCOPE_DEVICE", "cpu")
    clean_env.setenv("ATTNSCOPE_CACHE_DIR", str(tmp_path))
    clean_env.setenv("ATTNSCOPE_TRAIN_THREADS", "3")
    s = model_settings()
    assert s.model_dirs == [str(a), str(b), str(tmp_path / "missing")] and s.cache_dir == tmp_path
    assert s.train_threads == 3
    assert causal_token_cap() == 16 and capture_setting() == "eager" and pick_device().type == "cpu"
    assert model_roots() == [a.resolve(), b.resolve()]  # existing folders only
    clean_env.setenv("ATTNSCOPE_MAX_CAUSAL_TOKENS", "32")
    assert causal_token_cap() == 32


def test_empty_values_keep_the_defaults(clean_env):
    for name in NAMES:
        clean_env.setenv(f"ATTNSCOPE_{name}", "")  # compose passes an unset host variable as empty
    s = model_settings()
    assert (s.device, s.capture, s.model_dirs, s.max_causal_tokens, s.train_threads) == ("auto", "lazy", [], None, None)


def test_a_malformed_variable_names_its_field(clean_env):
    clean_env.setenv("ATTNSCOPE_MAX_CAUSAL_TOKENS", "lots")
    with pytest.raises(ValidationError, match="max_causal_tokens"):
        causal_token_cap()
    clean_env.setenv("ATTNSCOPE_MAX_CAUSAL_TOKENS", "0")
    with pytest.raises(ValidationError, match="max_causal_tokens"):
        model_settings()
    clean_env.delenv("ATTNSCOPE_MAX_CAUSAL_TOKENS")
    clean_env.setenv("ATTNSCOPE_CAPTURE", "fast")
    with pytest.raises(ValueError, match="ATTNSCOPE_CAPTURE"):
        capture_setting()
