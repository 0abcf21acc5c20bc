"""Queries and keys rebuilt from the stream entering each block (``docs/methods/lazy-maps.md``,
"Recording the stream instead").

A lazy causal-LM run can keep, per layer, the residual stream entering the block, ``resid_pre
[token, d_model]``, instead of the post-RoPE queries ``[head, token, d_head]`` and keys ``[kv_head,
token, d_head]``. Under grouped-query attention the stream is the size of the queries, so the keys'
bytes go (SmolLM2 at 1,024 tokens: 94.4 -> 70.8 MB); with as many key heads as query heads it is
half. A map request projects the heads it reads again, through the block's ``Sites``::

    x   = ln_attn(resid_pre)                         (pre-norm; post-norm: x = resid_pre)
    q_h = rope(x W_Q[h] + b_Q[h], positions)          [token, d_head]
    k_g = rope(x W_K[g] + b_K[g], positions)

the operations the model's attention ran, so the maps equal those from recorded queries and keys to
float rounding. ``refusal`` checks that on a short forward at load; a model for which it does not hold
(an attention that normalises its queries and keys, anything ``Sites`` does not describe) keeps
recording queries and keys. Weights are the model's own (views, read only); nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnscope.models.attention_fn import QKRecorder
from attnscope.models.session import SiteRecorder, session
from attnscope.models.sites import BlockSites, Sites

CHECK_TOKENS = 12  # the length of the forward ``refusal`` compares on


@dataclass(frozen=True)
class StreamQK:
    """One example's stream entering one block, ``stream [token, d_model]`` (the model's dtype and
    device), with the block whose attention reads it; ``pre_norm``: the attention reads
    ``ln_attn(stream)`` (else the stream itself, post-norm)."""

    stream: torch.Tensor
    block: BlockSites
    pre_norm: bool

    @property
    def n_heads(self) -> int:
        return int(self.block.W_Q.shape[0])

    @property
    def n_kv_heads(self) -> int:
        return int(self.block.W_K.shape[0])

    @property
    def n_tokens(self) -> int:
        return int(self.stream.shape[0])

    def rebuild(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(queries [head, token, d_head], keys [kv_head, token, d_head])`` post-RoPE, in the
        model's dtype: the norm once, each projection as the model's one matrix product over every
        head, the family's own rotation of both."""
        blk = self.block
        x = blk.ln_attn.apply(self.stream) if self.pre_norm else self.stream  # [token, d_model]
        q, k = _project(x, blk.W_Q, blk.b_Q), _project(x, blk.W_K, blk.b_K)
        if blk.rope is None:
            return q, k
        positions = torch.arange(q.shape[1], device=q.device)[None]
        q, k = blk.rope.apply(q[None], k[None], positions)
        return q[0], k[0]


def _project(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    """``x [token, d_model]`` through ``W [head, d_model, d_head]`` (+ ``b [head, d_head]``) ->
    ``[head, token, d_head]``: one ``[d_model, head * d_head]`` product, the model's weight seen as
    its projection sees it (a view where the layout allows)."""
    h, d, dh = W.shape
    out = x @ W.permute(1, 0, 2).reshape(d, h * dh)  # [token, head * d_head]
    if b is not None:
        out = out + b.reshape(h * dh)
    return out.view(-1, h, dh).transpose(0, 1)


def streams_of(sites: Sites, values: dict[int, torch.Tensor], index: int, length: int) -> dict[int, StreamQK]:
    """``{layer: StreamQK}`` of example ``index`` cut to its first ``length`` positions, from a
    ``SiteRecorder``'s ``resid_pre`` values ``{layer: [batch, token, d_model]}`` (a copy only where
    the example is not the whole tensor)."""
    out = {}
    for layer, v in values.items():
        x = v[index, :length]
        if x.untyped_storage().nbytes() != x.numel() * x.element_size():
            x = x.clone(memory_format=torch.contiguous_format)
        out[layer] = StreamQK(x, sites.blocks[layer], sites.norm_placement == "pre")
    return out


@torch.inference_mode()
def refusal(model: torch.nn.Module, sites: Sites | None, device: torch.device | str = "cpu") -> str | None:
    """Why a lazy run of ``model`` (an ``attnscope_qk`` causal LM, its ``base_model`` running the body)
    must record queries and keys rather than the stream (None: the stream rebuilds them). Runs one
    forward of ``CHECK_TOKENS`` tokens recording both and compares every layer's rebuilt queries and
    keys with the recorded ones, to ``1e-4`` of their largest magnitude in float32 (``2e-2`` in a
    half-precision dtype)."""
    if sites is None:
        return "the model's family has no Sites entry"
    if sites.shared or any(b.W_Q is None or b.W_K is None or b.scores != "content" for b in sites.blocks):
        return "its attention logits are not q k^T of projections Sites describes"
    vocab = int(getattr(model.config, "vocab_size", 2))
    ids = (torch.arange(CHECK_TOKENS, device=device) * 7 + 3).remainder(vocab)[None]
    qk, site = QKRecorder(), SiteRecorder({"resid_pre"})
    with session(site, recorder=qk):
        model.base_model(input_ids=ids, use_cache=False)
    records, streams = qk.ordered(), site.values.get("resid_pre", {})
    if len(records) != sites.n_layers or sorted(streams) != list(range(sites.n_layers)):
        return f"{len(records)} attention calls and {len(streams)} block inputs for {sites.n_layers} layers"
    for rec, (layer, s) in zip(records, sorted(streams_of(sites, streams, 0, CHECK_TOKENS).items())):
        if rec.layer != layer:
            return f"the attention call of block {layer} says layer {rec.layer}"
        q, k = s.rebuild()
        for name, want, got in (("queries", rec.query[0], q), ("keys", rec.key[0], k)):
            tol = (1e-4 if want.dtype == torch.float32 else 2e-2) * max(1.0, float(want.float().abs().max()))
            if want.shape != got.shape:
                return f"layer {layer}: {name} rebuilt as {tuple(got.shape)}, recorded {tuple(want.shape)}"
            err = float((want.float() - got.float()).abs().max())
            if not err <= tol:
                return f"layer {layer}: {name} rebuilt from the stream differ by {err:.2e} (> {tol:.1e})"
    return None
