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


def test_model_cache_keeps_nothing_of_names_it_could_not_load():
    """Only loads in progress hold a per-name lock: a stream of bad names grows no table."""
    import threading

    cache = ModelCache(device="cpu")
    for i in range(50):
        with pytest.raises(UnknownModelError):
            cache.get(f"no-such-model-{i}")
    assert cache._loading == {} and cache.loaded_names() == []
    results, errors = [], []

    def load():
        try:
            results.append(cache.get("minilm"))
        except Exception as exc:  # reported by the assert below
            errors.append(exc)

    threads = [threading.Thread(target=load) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len({id(m) for m in results}) == 1  # one load, shared by the three callers
    assert cache._loading == {} and cache.loaded_names() == ["minilm"]


def _copy_checkpoint(src, dst):
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_a_file_linked_to_outside_the_roots_is_refused(tiny_checkpoint, tmp_path, monkeypatch):
    """Issue 29 part 5: folders were resolved and checked, the files in them were not."""
    from attnscope.models.registry import refused_local

    _, folder = tiny_checkpoint
    root = tmp_path / "root"
    linked = _copy_checkpoint(folder, root / "linked")
    outside = tmp_path / "outside" / "secret.txt"
    outside.parent.mkdir()
    outside.write_text("not yours")
    (linked / "model.safetensors").unlink()
    (linked / "model.safetensors").symlink_to(outside)
    inside = _copy_checkpoint(folder, root / "inside")  # a link that stays inside the root is fine
    (inside / "model.safetensors").unlink()
    (inside / "model.safetensors").symlink_to(linked.parent / "inside-weights.safetensors")
    (root / "inside-weights.safetensors").write_bytes((folder / "model.safetensors").read_bytes())
    monkeypatch.setenv("ATTNSCOPE_MODEL_DIRS", str(root))
    names = [s.name for s in list_specs()]
    assert "local:inside" in names and "local:linked" not in names
    assert "model.safetensors is a link to a file outside the model roots" in refused_local()["local:linked"]
    with pytest.raises(ModelOutsideRootsError, match="model.safetensors is a link"):
        get_spec(str(linked))


@pytest.mark.parametrize(
    "text, says",
    [("{not json", "cannot be read as JSON"), ("[1, 2]", "holds a list"), ('{"model_type": 5}', "model_type '5'")],
)
def test_a_corrupt_config_json_is_a_clear_unsupported_model(tiny_checkpoint, tmp_path, monkeypatch, text, says):
    """Issue 29 part 5: a corrupt config.json under a model root answered 500."""
    from attnscope.models.registry import UnsupportedModelError, refused_local

    _, folder = tiny_checkpoint
    broken = _copy_checkpoint(folder, tmp_path / "root" / "broken")
    (broken / "config.json").write_text(text)
    monkeypatch.setenv("ATTNSCOPE_MODEL_DIRS", str(tmp_path / "root"))
    with pytest.raises(UnsupportedModelError, match=says) as err:
        get_spec(str(broken))
    assert str(tmp_path) not in str(err.value)  # the name under the root, no server path
    assert says in refused_local()["local:broken"]


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
