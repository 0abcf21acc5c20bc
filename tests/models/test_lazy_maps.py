"""Lazy maps (queries and keys recorded by ``attnscope_qk``, maps computed on request) equal the
eager maps (``capture="eager"``, transformers' own probabilities) to 1e-5 in float32: MiniLM with a
padded batch, SmolLM2, and every tiny decoder architecture (GPT-2, Llama and Qwen2 with grouped-query
attention, Mistral's sliding window, Gemma 2's soft-capping with sliding and full layers, Phi's
partial rotary)."""

import numpy as np
import pytest
import torch

from attnscope.analysis.maps import AttentionMaps
from attnscope.models.capture import capture, capture_batch
from attnscope.models.loading import load_model

ATOL = 1e-5
TEXT = "The capital of France is Paris. The cat sat on the mat, and then it slept on the mat."


def _same(lazy: AttentionMaps, eager: AttentionMaps) -> float:
    assert lazy.is_lazy and not eager.is_lazy
    assert lazy.shape == eager.shape and lazy.tokens == eager.tokens
    worst = 0.0
    for layer in range(lazy.n_layers):
        worst = max(worst, float(np.abs(lazy.layer(layer) - eager.layer(layer)).max()))
    return worst


@pytest.fixture(scope="module")
def minilm_eager():
    return load_model("minilm", device="cpu", capture="eager")


def test_minilm_lazy_equals_eager_on_a_padded_batch(minilm, minilm_eager):
    assert minilm.capture == "lazy" and minilm.capture_refusal is None
    texts = ["A short one.", TEXT, "Another sentence of middling length for the batch."]
    for a, b in zip(capture_batch(minilm, texts), capture_batch(minilm_eager, texts)):
        assert _same(a.maps, b.maps) <= ATOL
        np.testing.assert_allclose(a.output["embedding"], b.output["embedding"], atol=1e-5)
        np.testing.assert_allclose(a.hidden_states, b.hidden_states, atol=1e-4)


def test_blocks_keep_the_full_row_normalisation(minilm, minilm_eager):
    a, b = capture(minilm, TEXT).maps, capture(minilm_eager, TEXT).maps
    block = a.block(3, [2, 7], slice(4, 11), slice(2, 9))
    np.testing.assert_allclose(block, b.weights[3][[2, 7]][:, 4:11, 2:9], atol=ATOL)
    assert block.sum(-1).max() < 1.0  # a column range of a row sums to less than the whole row
    np.testing.assert_allclose(a.head(5, 11), b.head(5, 11), atol=ATOL)
    sel = a.select(layers=[1, 4], heads=[0, 3])
    assert sel.is_lazy and sel.head_label(1, 1) == "L4H3"
    np.testing.assert_allclose(sel.weights, b.select(layers=[1, 4], heads=[0, 3]).weights, atol=ATOL)


def test_lazy_runs_hold_queries_and_keys_not_maps(minilm):
    maps = capture(minilm, TEXT).maps
    n = maps.n_tokens
    # 6 layers x (12 query + 12 key heads) x n x 32 float32, no mask (no padding)
    assert maps.nbytes == 6 * 24 * n * 32 * 4


@pytest.mark.parametrize("arch", ["gpt2", "llama", "qwen2", "mistral", "gemma2", "phi"])
def test_tiny_causal_architectures_lazy_equals_eager(arch, tiny_causal_lms, monkeypatch):
    root, _ = tiny_causal_lms
    monkeypatch.setenv("ATTNSCOPE_MODEL_DIRS", str(root))
    lazy = load_model(f"local:{arch}", device="cpu")
    eager = load_model(f"local:{arch}", device="cpu", capture="eager")
    assert lazy.capture == "lazy", lazy.capture_refusal
    a, b = lazy.run(lazy.encode_text(TEXT)), eager.run(eager.encode_text(TEXT))
    assert a.maps.n_tokens > 8  # longer than the sliding window of 4
    assert _same(a.maps, b.maps) <= ATOL
    assert np.all(np.triu(a.maps.layer(0), 1) == 0.0)
    assert a.hidden_states is None and b.hidden_states is not None  # the lazy run recomputes them
    np.testing.assert_allclose(a.hidden(), b.hidden_states, atol=1e-4)
    assert a.output["top_k"][-1][0]["token_id"] == b.output["top_k"][-1][0]["token_id"]


def test_gemma2_soft_capping_and_window_are_active(tiny_causal_lms, monkeypatch):
    """The check above would pass vacuously if capping or the window never changed a map."""
    root, _ = tiny_causal_lms
    monkeypatch.setenv("ATTNSCOPE_MODEL_DIRS", str(root))
    lm = load_model("local:gemma2", device="cpu")
    maps = lm.run(lm.encode_text(TEXT)).maps
    src = maps.source
    assert src.layers[0].softcap == 2.0 and src.layers[0].mask is not None  # sliding layer: a window mask
    w0 = maps.layer(0)
    rows = np.arange(maps.n_tokens)
    assert all(np.all(w0[:, i, : max(0, i - 3)] == 0.0) for i in rows)  # window of 4 keys
    assert np.any(maps.layer(1)[:, -1, : maps.n_tokens - 4] > 0)  # full layer sees far keys
    lay = src.layers[0]
    q, k = (t.float() for t in lay.queries_keys())
    raw = (q @ k.repeat_interleave(2, 0).transpose(1, 2)) * lay.scale
    assert raw.abs().max() > 2.0  # logits beyond the cap: capping changes them


def test_smollm2_lazy_equals_eager(smollm2):
    eager = load_model("smollm2", device="cpu", capture="eager")
    assert smollm2.capture == "lazy"
    a = smollm2.run(smollm2.encode_text(TEXT), hidden_states=False)
    b = eager.run(eager.encode_text(TEXT), hidden_states=False)
    assert _same(a.maps, b.maps) <= ATOL
    assert a.output["top_k"][-1][0]["token_id"] == b.output["top_k"][-1][0]["token_id"]


def test_eager_capture_is_the_setting_default_when_asked(monkeypatch):
    monkeypatch.setenv("ATTNSCOPE_CAPTURE", "eager")
    assert load_model("minilm", device="cpu").capture == "eager"
    monkeypatch.setenv("ATTNSCOPE_CAPTURE", "fast")
    with pytest.raises(ValueError, match="ATTNSCOPE_CAPTURE"):
        load_model("minilm", device="cpu")


def test_a_model_with_position_biases_is_refused_with_a_reason():
    from transformers import T5Config, T5EncoderModel

    from attnscope.models.attention_fn import refusal_reason

    torch.manual_seed(0)
    model = T5EncoderModel(T5Config(d_model=16, d_ff=32, num_layers=1, num_heads=2, d_kv=8, vocab_size=50))
    reason = refusal_reason(model)
    assert reason is not None and ("position" in reason or "AttentionInterface" in reason)


def _record(model, ids):
    from attnscope.models.attention_fn import QKRecorder, attention_context
    from attnscope.models.lazy_maps import QKMapSource

    rec = QKRecorder()
    with torch.no_grad(), attention_context(rec):
        model(ids)
    return QKMapSource.from_records(rec.ordered())


def _eager_attentions(model, ids):
    from attnscope.models.attention_fn import NAME

    model.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            return model(ids, output_attentions=True).attentions
    finally:
        model.set_attn_implementation(NAME)


def test_learned_sinks_are_reproduced():
    """GPT-OSS adds a learned sink logit per head to every row's softmax (rows then sum below 1),
    on a sliding-window layer and a full one."""
    from transformers import GptOssConfig, GptOssForCausalLM

    from attnscope.models.attention_fn import NAME, refusal_reason

    torch.manual_seed(0)
    config = GptOssConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        num_local_experts=2,
        num_experts_per_tok=1,
        sliding_window=4,
        layer_types=["sliding_attention", "full_attention"],
        max_position_embeddings=64,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
    )
    model = GptOssForCausalLM(config).eval()
    for layer in model.model.layers:
        layer.self_attn.sinks.data = torch.randn(4) * 2
    assert refusal_reason(model) is None
    model.set_attn_implementation(NAME)
    ids = torch.randint(0, 64, (1, 12), generator=torch.Generator().manual_seed(1))
    src = _record(model, ids)
    ref = _eager_attentions(model, ids)
    for layer in range(2):
        assert src.layers[layer].sinks is not None
        block = src.block(layer, range(4), slice(None), slice(None))
        assert np.abs(block - ref[layer][0].numpy()).max() <= ATOL
        assert block.sum(-1).max() < 1 - 1e-3  # the sink took its share of every row


@pytest.mark.parametrize("dtype, atol", [(torch.bfloat16, None), (torch.float16, 0.02)])
def test_half_precision_models_record_in_their_dtype(dtype, atol, tiny_causal_lms, tiny_tokenizer):
    """A model running in bfloat16/float16 keeps its queries and keys in that dtype (half the
    bytes of float32) and its lazy maps match its own eager maps to that precision: eager rounds
    the logits ``q k^T`` to the dtype (8 / 11 significant bits; these tiny models have logits of
    tens), the lazy block computes them in float32 from the same queries and keys. In bfloat16 that
    rounding moves weights by up to 0.3 here, so there the check is that both pick the same top key
    in nearly every row."""
    from transformers import AutoModelForCausalLM

    from attnscope.models.attention_fn import NAME

    _, folders = tiny_causal_lms
    model = AutoModelForCausalLM.from_pretrained(folders["llama"], attn_implementation=NAME, dtype=dtype).eval()
    ids = torch.tensor([tiny_tokenizer(TEXT)["input_ids"]])
    src = _record(model, ids)
    n, lay = ids.shape[1], src.layers[0]
    assert lay.query.dtype == dtype and lay.key.dtype == dtype
    heads, kv = lay.query.shape[0], lay.key.shape[0]
    dim = lay.query.shape[-1]
    assert src.nbytes == 2 * len(src.layers) * (heads + kv) * n * dim  # 2 bytes a value, no mask stored
    ref = _eager_attentions(model, ids)
    for layer in range(len(src.layers)):
        block = src.block(layer, range(heads), slice(None), slice(None))
        assert block.dtype == np.float32
        eager = ref[layer][0].float().numpy()
        np.testing.assert_allclose(block.sum(-1), 1.0, atol=1e-5)
        if atol is not None:
            assert np.abs(block - eager).max() <= atol
        else:
            assert np.mean(block.argmax(-1) == eager.argmax(-1)) >= 0.95


def test_a_lazy_smollm2_run_keeps_no_hidden_states_and_recomputes_them_exactly(smollm2):
    inp = smollm2.encode_text(TEXT)
    cap = smollm2.run(inp)
    assert cap.hidden_states is None and cap.recompute_hidden is not None
    with torch.inference_mode():
        out = smollm2.model(input_ids=inp.ids_tensor(), output_hidden_states=True, use_cache=False)
    own = torch.stack(out.hidden_states, dim=1)[0].numpy()  # [layer + 1, token, dim] of the same forward
    hidden = cap.hidden()
    assert hidden.dtype == np.float32 and hidden.shape == (31, len(inp), 576)
    np.testing.assert_allclose(hidden, own, rtol=0, atol=1e-6)
    assert smollm2.run(inp, hidden_states=False).hidden() is None


@pytest.mark.parametrize("arch", ["llama", "mistral"])
def test_generation_records_queries_and_keys_lazily(arch, tiny_causal_lms, monkeypatch):
    """A lazy generation's maps (one recorded forward after decoding) equal the eager step-by-step
    rows through the cache; its hidden states are recomputed, not kept."""
    from attnscope.models.backends.generation import GenerateOptions

    root, _ = tiny_causal_lms
    monkeypatch.setenv("ATTNSCOPE_MODEL_DIRS", str(root))
    lazy = load_model(f"local:{arch}", device="cpu")
    eager = load_model(f"local:{arch}", device="cpu", capture="eager")
    a = lazy.generate(lazy.encode_text(TEXT), GenerateOptions(5))
    b = eager.generate(eager.encode_text(TEXT), GenerateOptions(5))
    assert a.output["generation"]["token_ids"] == b.output["generation"]["token_ids"]
    assert a.maps.n_tokens == b.maps.n_tokens == len(a.token_ids)
    assert _same(a.maps, b.maps) <= 2 * ATOL  # the cache's step rows against one forward: float rounding
    assert a.hidden_states is None and b.hidden_states is not None
    np.testing.assert_allclose(a.hidden(), b.hidden_states, atol=1e-4)
