"""The query/key view on the tiny Gemma 2 (``(1 + weight)`` RMS norms, sandwich norms, logit soft-cap,
sliding and full layers, grouped-query heads) and Phi (LayerNorm with bias, parallel attention and
MLP, partial rotary) checkpoints of ``tests/conftest.py``: the query and key equal those computed here
by hand from transformers' own hidden states and the checkpoint's weights and those ``attnscope_qk``
recorded, the weight equals the
model's own (eager) attention map, the terms sum to the score, and Gemma 2's soft-capped score is the
layer's own logit. (Gemma's norm weights start at zero: reading them as a plain gain once gave all-zero
queries and keys.)"""

from __future__ import annotations

import pytest
import torch

from attnscope.pipelines.qk.explain import explain_pair, sites_composition
from tests.conftest import recorded_qk

PROMPT = "The capital of France is Paris, and the cat sat on the mat."


@pytest.fixture(scope="module", params=["gemma2", "phi"])
def family(request, tiny_causal_lms):
    """``(arch, backend, eager transformers model, tokenizer)`` for one tiny checkpoint."""
    from transformers import AutoModelForCausalLM

    from attnscope.models.loading import load_model

    root, folders = tiny_causal_lms
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATTNSCOPE_MODEL_DIRS", str(root))
        backend = load_model(f"local:{request.param}", device="cpu")
    eager = AutoModelForCausalLM.from_pretrained(
        folders[request.param], attn_implementation="eager", dtype=torch.float32
    ).eval()
    return request.param, backend, eager


def _rotate(x: torch.Tensor, pos: int, rot: int, theta: float) -> torch.Tensor:
    """RoPE by hand ("rotate half" layout) on the first ``rot`` dimensions of ``x [d_head]``."""
    inv = 1.0 / theta ** (torch.arange(0, rot, 2, dtype=torch.float64) / rot)
    ang = torch.cat([pos * inv, pos * inv])
    r, rest = x[:rot].double(), x[rot:].double()
    half = rot // 2
    rotated = r * ang.cos() + torch.cat([-r[half:], r[:half]]) * ang.sin()
    return torch.cat([rotated, rest])


def _by_hand(arch, eager, hidden: torch.Tensor, layer: int, head: int, i: int, j: int):
    """The rotated query at ``i`` and key at ``j`` of ``head``, and the scale, from the stream entering
    ``layer`` (``hidden [token, d_model]``) and the checkpoint's weights, without attnscope."""
    cfg = eager.config
    blk = eager.model.layers[layer]
    ln = blk.input_layernorm
    x = hidden.double()
    if arch == "gemma2":
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + cfg.rms_norm_eps) * (1.0 + ln.weight.double())
    else:
        x = torch.nn.functional.layer_norm(x, x.shape[-1:], ln.weight.double(), ln.bias.double(), ln.eps)
    d = cfg.head_dim if arch == "gemma2" else cfg.hidden_size // cfg.num_attention_heads
    kv = head // (cfg.num_attention_heads // cfg.num_key_value_heads)
    att = blk.self_attn

    def proj(lin, h, at):
        w = lin.weight.double()[h * d : (h + 1) * d]
        y = x[at] @ w.T
        return y if lin.bias is None else y + lin.bias.double()[h * d : (h + 1) * d]

    rope = cfg.rope_parameters
    rot = int(d * rope.get("partial_rotary_factor", 1.0))
    q = _rotate(proj(att.q_proj, head, i), i, rot, rope["rope_theta"])
    k = _rotate(proj(att.k_proj, kv, j), j, rot, rope["rope_theta"])
    scale = cfg.query_pre_attn_scalar**-0.5 if arch == "gemma2" else d**-0.5
    return q, k, kv, scale


def test_the_view_equals_a_computation_by_hand_and_the_models_own_map(family, tiny_causal_lms):
    arch, backend, eager = family
    inp = backend.encode_text(PROMPT)
    n = len(inp)
    with torch.inference_mode():
        out = eager(input_ids=inp.ids_tensor(), output_hidden_states=True, output_attentions=True, use_cache=False)
    lazy = recorded_qk(backend, inp)  # the queries and keys the model's attention was given
    # layer 0 of Gemma 2 is a sliding layer (window 4): keys within it; layer 1 is full
    for layer, head, i, j in [(0, 3, n - 1, n - 2), (1, 1, n - 1, 2), (1, 2, n - 3, n - 3), (0, 0, 5, 3)]:
        ex = explain_pair(backend, inp, layer, head, i, j)
        q, k, kv, scale = _by_hand(arch, eager, out.hidden_states[layer][0], layer, head, i, j)
        assert float(ex.view.query.norm()) > 1.0  # not the all-zero view the (1 + weight) bug gave
        torch.testing.assert_close(ex.view.query.double(), q, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(ex.view.key.double(), k, atol=1e-4, rtol=1e-4)
        assert ex.view.kv_head == kv and ex.view.scale == pytest.approx(scale)
        rec = lazy.layers[layer]
        torch.testing.assert_close(ex.view.query, rec.query[head, i].float(), atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(ex.view.key, rec.key[kv, j].float(), atol=1e-4, rtol=1e-4)
        score = float((q @ k).detach()) * scale
        tol = 1e-4 * max(1.0, abs(score))
        assert ex.view.score == pytest.approx(score, abs=tol)
        assert float(ex.attribution.matrix.sum()) == pytest.approx(score, abs=tol)
        assert ex.attribution.conservation_error < tol and ex.attribution.residual_error < 1e-3
        assert ex.view.weight == pytest.approx(float(out.attentions[layer][0, head, i, j]), abs=1e-5)
        assert ex.model_score == pytest.approx(ex.capped_score, abs=tol)  # the layer's own logit
        if arch == "gemma2":
            assert ex.softcap == 2.0 and abs(ex.capped_score) < 2.0
        else:
            assert ex.softcap is None and ex.capped_score == ex.view.score


def test_composition_reads_gemma_norms_as_one_plus_weight(family):
    arch, backend, _ = family
    s = sites_composition(backend, modes=("k",), samples=4).scores["k"]
    assert s.shape == (2, 4, 2, 4) and float(s[0, :, 1].min()) > 0.0 and float(s[:, :, 0].abs().max()) == 0.0
