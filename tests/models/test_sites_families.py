"""A new family is one table entry plus this test: two tiny random architectures that attnscope did
not support before ``Sites`` (GPT-NeoX: fused per-head QKV, parallel residual, partial rotary;
Gemma: ``(1 + weight)`` RMS norms), built here (no download). Each: the stream is conserved, the
final norm and unembedding give the logits, lazy maps equal eager maps, and a zero ablation through
the interventions equals a hand-written hook on a copy of the model."""

import copy

import numpy as np
import pytest
import torch

from attnscope.models.session import SiteRecorder, session
from attnscope.pipelines.interventions import HeadAblation, InterventionSet, intervene

TEXT = "The cat sat on the mat. The cat sat on the"


def _configs(vocab: int) -> dict:
    from transformers import GemmaConfig, GPTNeoXConfig

    common = dict(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4)
    return {
        "neox": GPTNeoXConfig(**common, max_position_embeddings=64, rotary_pct=0.5, use_parallel_residual=True),
        "gemma": GemmaConfig(**common, num_key_value_heads=2, head_dim=8, max_position_embeddings=64),
    }


@pytest.fixture(scope="module")
def root(tmp_path_factory, tiny_tokenizer):
    from transformers import AutoModelForCausalLM

    root = tmp_path_factory.mktemp("new-families")
    for arch, config in _configs(len(tiny_tokenizer)).items():
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(config)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if p.dim() == 2 and ("q_proj" in name or "k_proj" in name or "query_key_value" in name):
                    p.mul_(20.0)  # attention far from uniform
                if "norm" in name and p.dim() == 1:
                    p.add_(0.3 * torch.randn_like(p))  # norms that are not the identity
        model.save_pretrained(root / arch)
        tiny_tokenizer.save_pretrained(root / arch)
    return root


@pytest.fixture(params=["neox", "gemma"])
def arch(request, root, monkeypatch):
    monkeypatch.setenv("ATTNSCOPE_MODEL_DIRS", str(root))
    return request.param


def _load(arch, capture="lazy"):
    from attnscope.models.loading import load_model

    return load_model(f"local:{arch}", device="cpu", capture=capture)


def test_the_stream_is_conserved_and_gives_the_logits(arch):
    backend = _load(arch)
    sites = backend.sites
    assert sites.family == {"neox": "gpt_neox", "gemma": "gemma"}[arch]
    assert sites.parallel == (arch == "neox")
    ids = backend.encode_text(TEXT).ids_tensor()
    rec = SiteRecorder()
    with torch.inference_mode(), session(rec):
        out = backend.model(input_ids=ids, use_cache=False)
    v = rec.values
    for layer, blk in enumerate(sites.blocks):
        pre, attn, mlp, post = (v[s][layer].double() for s in ("resid_pre", "attn_out", "mlp_out", "resid_post"))
        torch.testing.assert_close(post, pre + attn + mlp, atol=1e-5, rtol=0)
        heads = torch.einsum("bphd,hdm->bpm", v["head_z"][layer].double(), blk.W_O.double())
        torch.testing.assert_close(attn, heads + (0 if blk.b_O is None else blk.b_O.double()), atol=1e-5, rtol=0)
        if not sites.parallel:
            torch.testing.assert_close(v["resid_mid"][layer].double(), pre + attn, atol=1e-5, rtol=0)
    logits = sites.unembed.logits(sites.final_norm.apply(v["resid_post"][sites.n_layers - 1]))
    torch.testing.assert_close(logits, out.logits, atol=1e-5, rtol=1e-5)


def test_lazy_maps_equal_eager_maps(arch):
    lazy, eager = _load(arch, "lazy"), _load(arch, "eager")
    assert lazy.capture == "lazy" and eager.capture == "eager"
    inp = lazy.encode_text(TEXT)
    a, b = lazy.run(inp).maps.weights, eager.run(inp).maps.weights
    assert a.shape == b.shape == (2, 4, len(inp), len(inp)) and np.abs(b - 1 / len(inp)).max() > 0.05
    np.testing.assert_allclose(a, b, atol=1e-5)  # float32 rounding of two computations (as test_lazy_maps)


def test_a_zero_ablation_equals_a_hand_written_hook(arch):
    backend = _load(arch)
    inp = backend.encode_text(TEXT)
    layer, head, d = 1, 2, backend.sites.d_head
    res = intervene(backend, inp, InterventionSet((HeadAblation(((layer, head),), "zero"),)), want_maps=False)
    ref = copy.deepcopy(backend.model)  # a private copy: a hook on it touches no shared model
    out_proj = ref.get_submodule(
        {"neox": "gpt_neox.layers.1.attention.dense", "gemma": "model.layers.1.self_attn.o_proj"}[arch]
    )

    def zero_head(module, args):
        x = args[0].clone()
        x[..., head * d : (head + 1) * d] = 0
        return (x,)

    out_proj.register_forward_pre_hook(zero_head)
    with torch.no_grad():
        logits = ref(input_ids=inp.ids_tensor(), use_cache=False).logits[0, -1].float()
    logp = torch.log_softmax(logits, -1)
    for top in res["altered"]["top_k"][0]:
        assert np.log(top["prob"]) == pytest.approx(float(logp[top["token_id"]]), abs=1e-5)
    with torch.no_grad():
        clean = backend.model(input_ids=inp.ids_tensor(), use_cache=False).logits[0, -1].float()
    assert (logits - clean).abs().max() > 1e-3  # the ablation changes the prediction
