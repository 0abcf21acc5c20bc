"""Registry: built-in MiniLM, local checkpoints only under configured roots, device choice."""

import numpy as np
import pytest
import torch

from attnscope.models.device import pick_device
from attnscope.models.loading import ModelCache, load_model
from attnscope.models.registry import (
    ModelOutsideRootsError,
    UnknownModelError,
    check_under_roots,
    get_spec,
    list_specs,
    smollm2_gguf,
)


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    """A small random BERT with MiniLM's tokenizer, saved as a local HF checkpoint folder."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    from attnscope.models.registry import _minilm_path

    root = tmp_path_factory.mktemp("roots")
    folder = root / "tiny-bert"
    cfg = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    BertModel(cfg).save_pretrained(folder)
    AutoTokenizer.from_pretrained(_minilm_path()).save_pretrained(folder)
    return root, folder


def test_minilm_is_the_default_and_listed():
    names = [s.name for s in list_specs()]
    assert names[0] == "minilm"
    assert get_spec("minilm").source == "package"


def test_unknown_model_names_the_known_ones():
    with pytest.raises(UnknownModelError, match="known models: minilm"):
        get_spec("gpt-17")


def test_local_checkpoint_under_a_root_is_discovered_and_runs(tiny_checkpoint, monkeypatch):
    from attnscope.models.capture import capture

    root, folder = tiny_checkpoint
    monkeypatch.setenv("ATTNSCOPE_MODEL_DIRS", str(root))
    assert "local:tiny-bert" in [s.name for s in list_specs()]
    loaded = load_model("local:tiny-bert", device="cpu")
    maps = capture(loaded, "hello world").maps
    assert maps.shape == (2, 4, 4, 4)
    np.testing.assert_allclose(maps.weights.sum(-1), 1, atol=1e-5)
    assert get_spec(str(folder)).name == "local:tiny-bert"  # a path under a root works too
    with pytest.raises(Exception, match="at most 64"):
        capture(loaded, "word " * 80)


def test_paths_outside_the_roots_are_refused(tiny_checkpoint, tmp_path, monkeypatch):
    root, folder = tiny_checkpoint
    monkeypatch.setenv("ATTNSCOPE_MODEL_DIRS", str(tmp_path))
    with pytest.raises(ModelOutsideRootsError, match="outside the configured model roots"):
        check_under_roots(folder)
    with pytest.raises(ModelOutsideRootsError, match="outside"):
        get_spec(str(folder))
    monkeypatch.setenv("ATTNSCOPE_MODEL_DIRS", str(root))
    with pytest.raises(ModelOutsideRootsError):
        check_under_roots(root / ".." / ".." / "etc")  # traversal is resolved, then refused


def test_no_roots_configured_is_refused_with_advice(tiny_checkpoint, monkeypatch):
    monkeypatch.delenv("ATTNSCOPE_MODEL_DIRS", raising=False)
    with pytest.raises(ModelOutsideRootsError, match="ATTNSCOPE_MODEL_DIRS"):
        check_under_roots(tiny_checkpoint[1])


def test_device_choice(monkeypatch):
    monkeypatch.delenv("ATTNSCOPE_DEVICE", raising=False)
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert pick_device().type == expected
    assert pick_device("cpu").type == "cpu"
    monkeypatch.setenv("ATTNSCOPE_DEVICE", "cpu")
    assert pick_device().type == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            pick_device("cuda")


def test_model_cache_loads_once(minilm):
    cache = ModelCache(device="cpu")
    a = cache.get("minilm")
    b = cache.get("minilm")
    assert a is b and cache.loaded_names() == ["minilm"]


def test_model_cache_keeps_at_most_max_models(minilm):
    cache = ModelCache(device="cpu", max_models=1)
    first = cache.get("minilm")
    cache.get("minilm-sst2")
    assert cache.loaded_names() == ["minilm-sst2"]  # the least recently used one went
    assert cache.get("minilm") is not first and cache.loaded_names() == ["minilm"]


def test_the_causal_token_cap_defaults_to_4096_lazy_and_512_eager(monkeypatch):
    """Lazy capture keeps queries and keys (a 4,096-token SmolLM2 run: 0.39 GB), so long runs are the
    default; eager capture materialises every map and keeps 512; the variable wins over both."""
    from attnscope.models.registry import causal_token_cap

    monkeypatch.delenv("ATTNSCOPE_MAX_CAUSAL_TOKENS", raising=False)
    monkeypatch.delenv("ATTNSCOPE_CAPTURE", raising=False)
    assert causal_token_cap() == 4096
    if smollm2_gguf() is not None:  # its context is 8,192: the cap applies
        assert get_spec("smollm2").max_tokens == 4096
    monkeypatch.setenv("ATTNSCOPE_CAPTURE", "eager")
    assert causal_token_cap() == 512
    monkeypatch.setenv("ATTNSCOPE_MAX_CAUSAL_TOKENS", "1500")
    assert causal_token_cap() == 1500
    monkeypatch.setenv("ATTNSCOPE_MAX_CAUSAL_TOKENS", "lots")  # not a count: the default
    assert causal_token_cap() == 512
