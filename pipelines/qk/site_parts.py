"""The QK math on a loaded model, through its ``Sites`` and the recording session only
(``attnscope.models.sites``, ``attnscope.models.session``; ``docs/methods/qk-attribution.md``).

One recorded forward pass gives the residual stream entering each block, the heads' outputs before
the output projection and the MLP outputs; from these the stream entering layer ``l`` at a position is
rebuilt as a sum of parts (``emb``, ``L{m}H{h}``, ``MLP{m}``, ``bias``, and for a post-norm model
``norm bias``, every earlier norm frozen at its clean divisor), at the two positions asked only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attnscope.models.attention_fn import LayerRecord
from attnscope.models.session import SiteRecorder, StopAt, session
from attnscope.models.sites import BlockSites, Norm, Sites
from attnscope.pipelines.qk.linear_maps import FrozenNorm
from attnscope.pipelines.qk.qk_attribution import NORM_BIAS
from attnscope.pipelines.qk.qk_view import HeadQK

F64 = torch.float64
RECORDED = ("resid_pre", "resid_mid", "head_z", "attn_out", "mlp_out")


def frozen_norm(norm: Norm) -> FrozenNorm:
    """A ``Sites`` norm as the QK math's ``FrozenNorm`` (the same formula, its divisor to be frozen)."""
    if norm.kind == "layernorm":
        return FrozenNorm(kind="layer", weight=norm.weight, bias=norm.bias, eps=norm.eps)
    # rmsnorm1p (Gemma): x / rms * (1 + weight); Gemma's weights start at zero, so reading them as a plain
    # gain gave all-zero queries and keys
    offset = 1.0 if norm.kind == "rmsnorm1p" else 0.0
    return FrozenNorm(kind="rms", weight=norm.weight, bias=norm.bias, eps=norm.eps, weight_offset=offset)


@dataclass(frozen=True)
class SiteRope:
    """A block's rotary embedding as ``rope(x, position)`` of the QK math: ``x [..., d_head]`` at an int
    position, or ``x [token, d_head]`` at ``[token]`` positions, rotated as the model rotates its queries."""

    blk: BlockSites

    def __call__(self, x: torch.Tensor, position: int | torch.Tensor) -> torch.Tensor:
        d = x.shape[-1]
        if isinstance(position, torch.Tensor):
            flat = x.reshape(1, 1, -1, d)  # [batch, head, pos, d]
            pos = position.reshape(1, -1)
        else:
            flat = x.reshape(1, -1, 1, d)
            pos = torch.full((1, 1), int(position), dtype=torch.long)
        q, _ = self.blk.rope.apply(flat, flat, pos.to(x.device))
        return q.reshape(x.shape)


def head_qk(sites: Sites, layer: int, head: int, scale: float) -> HeadQK:
    """Query head ``head`` of ``layer`` as ``HeadQK`` (its key/value head's key weights), read off the
    sites; ``SiteOutOfRangeError`` for a layer or head outside the model, ``SitesUnavailableError`` for
    content-free heads."""
    blk = sites.block(layer)
    sites.check_head(head)
    sites.require("W_Q", "W_K", feature="the query/key view")
    kv = sites.kv_head_of(head)
    return HeadQK(
        w_q=blk.W_Q[head],
        b_q=None if blk.b_Q is None else blk.b_Q[head],
        w_k=blk.W_K[kv],
        b_k=None if blk.b_K is None else blk.b_K[kv],
        kv_head=kv,
        scale=scale,
        rope=SiteRope(blk) if blk.rope is not None else _identity,
    )


def _identity(x: torch.Tensor, position: int | torch.Tensor) -> torch.Tensor:
    return x


def attention_norm(sites: Sites, layer: int) -> FrozenNorm | None:
    """The norm between the stream and the layer's attention: ``ln_attn`` (pre-norm) or None (post-norm)."""
    return frozen_norm(sites.block(layer).ln_attn) if sites.norm_placement == "pre" else None


@dataclass
class RowProbe:
    """An attention hook that keeps the model's own logits of one row, ``[key]`` float32 after scale,
    soft-cap and mask (masked keys ``-inf``), as the layer soft-maxes them; ``row`` None where the model's
    attention does not call hooks. Under ``attnscope_qk`` the row is computed from the layer's queries and
    keys (``read_qk``: one query against every key, ``[key]`` memory), so the layer keeps its fused kernel;
    the zoo's attention, which does not call ``read_qk``, hands it the layer's logits (``edit_logits``)."""

    layer: int
    head: int
    query: int
    row: torch.Tensor | None = None

    def layer_edits(self, layer: int) -> tuple[bool, bool]:
        return layer == self.layer and self.row is None, False

    def read_qk(self, layer: int, rec: LayerRecord) -> None:
        if layer == self.layer:
            self.row = row_logits(rec, self.head, self.query)

    def edit_logits(self, layer: int, logits: torch.Tensor) -> torch.Tensor:
        if layer == self.layer and self.row is None:  # a soft-capped layer, explicit anyway, read it already
            self.row = logits[0, self.head, self.query].detach().float().cpu().clone()
        return logits


def row_logits(rec: LayerRecord, head: int, query: int) -> torch.Tensor:
    """``[key]`` float32 on the host: the logits of row ``query`` of query head ``head`` (example 0) from
    a recorded layer, as ``attnscope_qk``'s explicit attention computes them (``q k^T`` in the model's
    dtype, then float32 times the scale, soft-cap, mask), without any other row."""
    group = rec.query.shape[1] // rec.key.shape[1]
    q = rec.query[0, head, query]  # [dim]
    k = rec.key[0, head // group]  # [key, dim]
    logits = torch.matmul(k, q).float() * rec.scale
    if rec.softcap is not None:
        logits = rec.softcap * torch.tanh(logits / rec.softcap)
    if rec.mask is not None:
        m = rec.mask[0, head if rec.mask.shape[1] > 1 else 0, query]
        logits = logits.masked_fill(~m, float("-inf")) if m.dtype == torch.bool else logits + m.float()
    elif rec.is_causal and rec.query.shape[2] > 1:
        logits[query + 1 :] = float("-inf")
    return logits.detach().cpu().clone()


def record(backend, inp, layer: int, hooks: Sequence = (), probe: RowProbe | None = None) -> SiteRecorder:
    """One forward pass of ``backend.run(inp)`` through block ``layer`` (stopped at the stream entering
    the next one), recording the sites the parts need (blocks ``0..layer``), with attention ``hooks``
    (interventions) applied, then ``probe`` reading the layer's logits."""
    rec = SiteRecorder(RECORDED, layers=range(layer + 1))
    stop = StopAt("resid_pre", layer + 1) if layer + 1 < backend.sites.n_layers else None
    with torch.inference_mode(), session(rec, hooks=[*hooks, *([probe] if probe else [])], stop_at=stop):
        backend.run(inp, hidden_states=False)
    return rec


def _heads_written(blk: BlockSites, z: torch.Tensor) -> torch.Tensor:
    """``z [pos, head, d_head]`` -> ``[head, pos, d_model]`` what each head wrote (times a layer scale)."""
    out = torch.einsum("phd,hdm->hpm", z.to(F64), blk.W_O.to(F64))
    return out if blk.out_scale is None else out * blk.out_scale.to(F64)


def stream_parts(
    sites: Sites, rec: SiteRecorder, layer: int, positions: Sequence[int]
) -> tuple[torch.Tensor, list[str], torch.Tensor]:
    """The stream entering ``layer`` at ``positions`` as parts: ``[part, len(positions), d_model]``
    float64, their labels, and the recorded stream ``[len(positions), d_model]`` they rebuild."""
    v = rec.values
    pos = list(positions)

    def at(site: str, m: int) -> torch.Tensor:
        return v[site][m][0, pos].to(F64)

    parts, labels = [at("resid_pre", 0)], ["emb"]
    bias = torch.zeros_like(parts[0])
    norm_bias = torch.zeros_like(parts[0]) if sites.norm_placement == "post" else None
    for m in range(layer):
        blk = sites.blocks[m]
        heads = _heads_written(blk, v["head_z"][m][0, pos])
        b = torch.zeros_like(parts[0])
        if blk.b_O is not None:
            b = b + (blk.b_O.to(F64) if blk.out_scale is None else blk.b_O.to(F64) * blk.out_scale.to(F64))
        if blk.ln_attn_out is not None:  # a sandwich norm (Gemma 2) after the output projection, frozen too
            heads, b = _sandwiched(blk.ln_attn_out, heads, b)
        parts.extend(heads.unbind(0))
        labels.extend(f"L{m}H{h}" for h in range(sites.n_heads))
        bias = bias + b
        if sites.norm_placement == "post":
            total = at("resid_pre", m) + at("attn_out", m)
            parts, bias, norm_bias = _through_norm(blk.ln_attn, parts, bias, norm_bias, total)
        parts.append(at("mlp_out", m))
        labels.append(f"MLP{m}")
        if sites.norm_placement == "post":
            total = at("resid_mid", m) + at("mlp_out", m)
            parts, bias, norm_bias = _through_norm(blk.ln_mlp, parts, bias, norm_bias, total)
    stack = torch.stack([*parts, bias] + ([] if norm_bias is None else [norm_bias]))
    labels = [*labels, "bias"] + ([] if norm_bias is None else [NORM_BIAS])
    return stack, labels, at("resid_pre", layer)


def _sandwiched(norm: Norm, heads: torch.Tensor, bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``heads [head, pos, d_model]`` and ``bias [pos, d_model]`` (the output projection's terms) through
    ``norm`` frozen at their sum's divisor: the attention output as parts again (its bias joins ``bias``)."""
    normed, b = frozen_norm(norm).apply_to_parts(torch.cat([heads, bias[None]]), heads.sum(0) + bias)
    return normed[:-1], normed[-1] + (0 if b is None else b.to(F64))


def _through_norm(norm: Norm, parts, bias, norm_bias, total):
    """Every part (the biases too) through ``norm`` frozen at ``total``'s divisor; its bias joins ``norm bias``."""
    frozen = frozen_norm(norm)
    stack = torch.stack([*parts, bias, norm_bias])
    normed, b = frozen.apply_to_parts(stack, total)
    new_norm_bias = normed[-1] + (0 if b is None else b)
    return list(normed[:-2].unbind(0)), normed[-2], new_norm_bias
