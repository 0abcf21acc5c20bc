"""The class lens and direct attribution of a class logit, for classifiers (pre- or post-norm) read
through their anatomy (``backend.sites``: ``Unembed`` of kind ``classifier`` with its pooling and
pooler); derivation in ``docs/methods/direct-logit-attribution.md`` ("Classifiers").

A classifier reads its last stream ``x^L`` as

    pooled = sum_p w_p n(x^L_p),   logits = act(pooled @ W_P + b_P) @ W_U + b_U

with ``n`` the final norm (pre-norm families; none after a post-norm block, whose own LayerNorm
is the last operation), ``w_p`` the pooling weights (``cls``: position 0; ``mean``: ``1/n`` at
every position) and ``act`` the pooler's activation (BERT: ``tanh``; none without a pooler).

Freezing, on the clean run: every LayerNorm's scale at each position it reads (the final norm of a
pre-norm model; both norms of every post-norm block, whose stream passes through them), and the
pooler's activation as its *secant gain* ``g = tanh(z0) / z0`` at the clean pre-activation ``z0``,
so ``tanh(z) = g * z`` holds exactly there. The logit is then an affine function of every write,
read backwards through the frozen maps: a readout ``rho`` per position and block (``ClassDirections``).
The parts sum to the logit (float rounding only); each is what its write adds *given* the clean
scales and gain, not what removing it would change (see the method page).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnscope.models.sites import Norm, Sites, SitesUnavailableError
from attnscope.pipelines.writes.dla import Attribution, logit_direction
from attnscope.pipelines.writes.frozen_norm import FinalNorm
from attnscope.pipelines.writes.lens import LensRows, Unembedding, rows_of_logits
from attnscope.pipelines.writes.recorded import RecordedWrites


def frozen(norm: Norm) -> FinalNorm:
    """A site's norm as the frozen-scale readout (``rmsnorm1p`` with its ``1 + w`` multiplier)."""
    if norm.kind == "rmsnorm1p":
        return FinalNorm("rmsnorm", 1.0 + norm.weight.float(), None, norm.eps)
    return FinalNorm(norm.kind, norm.weight, norm.bias, norm.eps)


def classifier_sites(sites: Sites, feature: str) -> Sites:
    """``sites`` when a class readout can read them, else ``SitesUnavailableError`` naming what is
    missing (no classification head: an encoder that outputs an embedding, or an LM)."""
    sites.require("classifier", feature=feature)
    if any(b.ln_attn_out is not None or b.ln_mlp_out is not None for b in sites.blocks):
        raise SitesUnavailableError(f"{feature} cannot read the {sites.family} family's sandwich norms")
    if sites.norm_placement == "pre" and sites.final_norm is None:
        raise SitesUnavailableError(f"{feature} needs a pre-norm classifier's final norm; {sites.family} has none")
    return sites


def pooled_positions(sites: Sites, n_tokens: int) -> tuple[slice, torch.Tensor]:
    """``(positions, weights [len])``: the positions the classifier pools and their weights."""
    if sites.unembed.pooling == "cls":
        return slice(0, 1), torch.ones(1)
    return slice(0, n_tokens), torch.full((n_tokens,), 1.0 / n_tokens)


def _normed(sites: Sites, x: torch.Tensor) -> torch.Tensor:
    """The stream ``x [..., d_model]`` as the head reads it (through the final norm of a pre-norm model)."""
    return x.float() if sites.final_norm is None else frozen(sites.final_norm)(x)


@torch.inference_mode()
def class_logits(writes: RecordedWrites) -> torch.Tensor:
    """``[layer + 1, classes]``: the class lens, each layer's stream (row 0 the embedding, the last row
    the model's own output) pooled and read by the classifier head, each position through the final
    norm with its own scale (pre-norm) or as it is (post-norm: every block ends with a norm)."""
    sites = writes.sites
    pos, w = pooled_positions(sites, writes.n_tokens)
    normed = _normed(sites, writes.resid[:, pos])  # [layer + 1, pooled, d_model]
    pooled = torch.einsum("lpd,p->ld", normed, w.to(normed.device))
    return sites.unembed.logits(pooled.to(sites.unembed.W_U.dtype)).float()


def class_lens(writes: RecordedWrites, k: int, target: int | None = None) -> LensRows:
    """Top-``k`` classes of every layer's pooled stream, and the probability and rank of class
    ``target`` (default: the model's own predicted class) at each layer."""
    logits = class_logits(writes)
    t = int(logits[-1].argmax()) if target is None else int(target)
    return rows_of_logits(logits, k, torch.full((logits.shape[0],), t, dtype=torch.long))


@dataclass(frozen=True)
class _Direction:
    """The readout of the pooled vector: ``logit = pooled . r + bias`` (pooler gain frozen)."""

    r: torch.Tensor  # [d_model]
    bias: float
    logit: float  # the model's own logit (difference), from the clean pooled vector


def _direction(sites: Sites, pooled: torch.Tensor, target: int, contrast: int | None) -> _Direction:
    head = sites.unembed
    n_classes = int(head.W_U.shape[1])
    for name, c in (("class", target), ("contrast class", contrast)):
        if c is not None and not 0 <= int(c) < n_classes:
            raise ValueError(f"{name} {c} is outside [0, {n_classes})")
    u, b = logit_direction(Unembedding(head.W_U, head.b_U), target, contrast)  # [d_pool], float
    logits = head.logits(pooled.to(head.W_U.dtype)).float()
    logit = float(logits[int(target)] - (0.0 if contrast is None else logits[int(contrast)]))
    if head.pooler is None:
        return _Direction(u, b, logit)
    p = head.pooler
    z0 = p.pre_activation(pooled.to(p.W.dtype)).float()  # [d_pool]
    small = z0.abs() < 1e-4
    gain = torch.where(small, 1.0 - z0.pow(2) / 3.0, p.activate(z0) / torch.where(small, 1.0, z0))
    gu = gain * u  # [d_pool]
    bias = b + (0.0 if p.b is None else float(p.b.float() @ gu))
    return _Direction(p.W.float() @ gu, bias, logit)


def _project(norm: FinalNorm, rho: torch.Tensor, scale: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``rho [pos, d_model]`` read after ``norm`` -> ``(rho before it [pos, d_model], bias part [pos])``."""
    before = norm.readout(rho.T, scale).T  # [pos, d_model]
    return before, norm.bias_term(rho.T)


@torch.inference_mode()
def class_attribution(
    writes: RecordedWrites, target: int, contrast: int | None = None, split: bool = True
) -> Attribution:
    """Attribute the logit of class ``target`` (minus class ``contrast``) to the embedding, each head
    (split over its source positions when ``split``), each attention bias, each MLP, each block's norm
    biases (``norm_bias``, post-norm) and the bias term (final norm, pooler and head biases). Summed
    over the pooled positions; ``scale``: the last norm's frozen scale at the first pooled position."""
    sites = writes.sites
    pos, w = pooled_positions(sites, writes.n_tokens)
    w = w.to(writes.resid.device)
    last = writes.resid[-1, pos].float()  # [pooled, d_model]
    pooled = (_normed(sites, last) * w[:, None]).sum(0)
    d = _direction(sites, pooled, target, contrast)
    bias = d.bias
    rho = w[:, None] * d.r[None]  # [pooled, d_model]: readout of the normed stream
    if sites.final_norm is not None:
        fn = frozen(sites.final_norm)
        s_last = fn.scale(last)
        rho, beta = _project(fn, rho, s_last)
        bias += float(beta.sum())
    n_l = sites.n_layers
    heads, attn_bias, mlp, norm_bias, sources = [None] * n_l, [0.0] * n_l, [0.0] * n_l, [0.0] * n_l, [None] * n_l
    scale = None
    for layer in range(n_l - 1, -1, -1):
        blk = sites.block(layer)
        W_O, b_O = writes.output_projection(layer)  # [head, d_head, d_model], [d_model]
        z = writes.head_z[layer, pos].float()  # [pooled, head, d_head]
        m = writes.mlp_out[layer, pos].float()  # [pooled, d_model]
        rho_mlp = rho_attn = rho
        if sites.norm_placement == "post":
            pre = writes.resid[layer, pos].float()
            x1 = pre + torch.einsum("phd,hdm->pm", z, W_O) + (0.0 if b_O is None else b_O)
            ln1, ln2 = frozen(blk.ln_attn), frozen(blk.ln_mlp)
            x2 = ln1(x1) + m
            s2 = ln2.scale(x2)
            scale = s2[0] if scale is None else scale
            rho_mlp, beta2 = _project(ln2, rho, s2)
            rho_attn, beta1 = _project(ln1, rho_mlp, ln1.scale(x1))
            norm_bias[layer] = float(beta2.sum() + beta1.sum())
        mlp[layer] = float((m * rho_mlp).sum())
        ro = torch.einsum("hdm,pm->hpd", W_O, rho_attn)  # [head, pooled, d_head]
        heads[layer] = torch.einsum("phd,hpd->h", z, ro)
        attn_bias[layer] = 0.0 if b_O is None else float(b_O @ rho_attn.sum(0))
        if split:
            a = torch.as_tensor(writes.maps.block(layer, rows=pos).copy(), device=ro.device)  # [head, pooled, key]
            v = writes.values(layer)  # [kv_head, key, d_head]
            v = v.repeat_interleave(sites.n_heads // v.shape[0], dim=0)
            sources[layer] = (a.float() * torch.einsum("hkd,hpd->hpk", v, ro)).sum(1)  # [head, key]
        rho = rho_attn  # the stream entering the block is read as what the attention adds to it
    embed = float((writes.resid[0, pos].float() * rho).sum())
    out = Attribution(
        logit=d.logit,
        embed=embed,
        heads=torch.stack(heads).cpu().numpy(),
        attn_bias=np.asarray(attn_bias, dtype=np.float32),
        mlp=np.asarray(mlp, dtype=np.float32),
        bias=bias,
        sources=torch.stack(sources).cpu().numpy() if split else None,
        scale=float(s_last[0] if sites.final_norm is not None else scale),
        residual_error=0.0,
        norm_bias=np.asarray(norm_bias, dtype=np.float32) if sites.norm_placement == "post" else None,
    )
    return Attribution(**{**out.__dict__, "residual_error": d.logit - out.total()})
