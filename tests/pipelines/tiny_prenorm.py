"""A tiny pre-norm decoder written from the equations, for the tests of ``attnscope.pipelines.writes``:
it records every residual stream, head output, attention row, value and MLP output of one forward.

``x_0 = E[ids] + P``; per block ``x += attn(norm1(x)) + 0`` then ``x += mlp(norm2(x))``; logits
``= norm_f(x_L) @ W_U + b_U``. Norms are torch's own ``layer_norm`` / ``rms_norm``, so the library's
``FinalNorm`` is checked against them, not against itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F


@dataclass
class TinyParams:
    vocab: int = 13
    d_model: int = 8
    n_heads: int = 4
    n_kv: int = 2
    d_head: int = 3
    n_layers: int = 3
    d_mlp: int = 16
    n_ctx: int = 16
    norm: str = "layernorm"  # or "rmsnorm"
    eps: float = 1e-5
    seed: int = 0
    w: dict = field(default_factory=dict)

    def __post_init__(self):
        g = torch.Generator().manual_seed(self.seed)

        def r(*shape, s=0.5):
            return torch.randn(*shape, generator=g) * s

        ln = self.norm == "layernorm"
        self.w = {
            "E": r(self.vocab, self.d_model, s=1.0),
            "P": r(self.n_ctx, self.d_model, s=0.3),
            "W_U": r(self.d_model, self.vocab, s=1.0),
            "b_U": r(self.vocab, s=0.2) if ln else None,
            "nf_w": 1 + r(self.d_model, s=0.2),
            "nf_b": r(self.d_model, s=0.2) if ln else None,
        }
        for layer in range(self.n_layers):
            self.w[layer] = {
                "n1_w": 1 + r(self.d_model, s=0.2),
                "n1_b": r(self.d_model, s=0.1) if ln else None,
                "n2_w": 1 + r(self.d_model, s=0.2),
                "n2_b": r(self.d_model, s=0.1) if ln else None,
                "W_Q": r(self.d_model, self.n_heads, self.d_head),
                "W_K": r(self.d_model, self.n_kv, self.d_head),
                "W_V": r(self.d_model, self.n_kv, self.d_head),
                "b_V": r(self.n_kv, self.d_head, s=0.1),
                "W_O": r(self.n_heads, self.d_head, self.d_model),
                "b_O": r(self.d_model, s=0.1),
                "W_in": r(self.d_model, self.d_mlp),
                "b_in": r(self.d_mlp, s=0.1),
                "W_out": r(self.d_mlp, self.d_model, s=0.3),
                "b_out": r(self.d_model, s=0.1),
            }


def _norm(p: TinyParams, x, w, b):
    if p.norm == "layernorm":
        return F.layer_norm(x, (p.d_model,), w, b, p.eps)
    return F.rms_norm(x, (p.d_model,), w, p.eps)


def forward(p: TinyParams, ids: torch.Tensor) -> dict:
    """``ids [pos]`` -> dict: ``logits [pos, vocab]``, ``resid`` (``n_layers + 1`` x ``[pos, d_model]``:
    entering each block, then leaving the last), ``z`` (``[pos, head, d_head]`` per block), ``probs``
    (``[head, pos, pos]``), ``query`` (``[head, pos, d_head]``), ``key``/``values`` (``[kv, pos,
    d_head]``), ``mlp`` (``[pos, d_model]``)."""
    n = ids.shape[0]
    x = p.w["E"][ids] + p.w["P"][:n]
    rec = {"resid": [x], "z": [], "probs": [], "query": [], "key": [], "values": [], "mlp": []}
    rep = p.n_heads // p.n_kv
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    for layer in range(p.n_layers):
        w = p.w[layer]
        h = _norm(p, x, w["n1_w"], w["n1_b"])
        q = torch.einsum("pm,mhd->hpd", h, w["W_Q"])
        k = torch.einsum("pm,mhd->hpd", h, w["W_K"])
        v = torch.einsum("pm,mhd->hpd", h, w["W_V"]) + w["b_V"][:, None, :]
        kk, vv = k.repeat_interleave(rep, 0), v.repeat_interleave(rep, 0)
        scores = (q @ kk.transpose(1, 2)) / p.d_head**0.5
        a = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)  # [head, pos, pos]
        z = (a @ vv).transpose(0, 1)  # [pos, head, d_head]
        x = x + torch.einsum("phd,hdm->pm", z, w["W_O"]) + w["b_O"]
        h2 = _norm(p, x, w["n2_w"], w["n2_b"])
        mlp = F.gelu(h2 @ w["W_in"] + w["b_in"]) @ w["W_out"] + w["b_out"]
        x = x + mlp
        rec["z"].append(z)
        rec["probs"].append(a)
        rec["query"].append(q)
        rec["key"].append(k)
        rec["values"].append(v)
        rec["mlp"].append(mlp)
        rec["resid"].append(x)
    logits = _norm(p, x, p.w["nf_w"], p.w["nf_b"]) @ p.w["W_U"]
    rec["logits"] = logits if p.w["b_U"] is None else logits + p.w["b_U"]
    return rec
