"""One forward pass of a real model recorded for the readouts of this package, through the model's
anatomy (``backend.sites``, ``attnscope.models.sites``) and one request session
(``attnscope.models.session``): no per-kind code, nothing set on the shared model.

``record_writes(backend, inp)`` runs the backend's own forward inside a session that records, per
block, the residual stream entering it (``resid_pre``), the heads' outputs before the output
projection (``head_z``) and the MLP's output (``mlp_out``), and the last block's ``resid_post``; the
run's lazy maps (recorded queries and keys) give any head's attention row on request, and the
values ``v_j`` are recomputed from ``resid_pre`` through the block's own norm and ``W_V`` (the
values are a linear function of what the session recorded, so they need no recording of their own).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from attnscope.analysis.maps import AttentionMaps
from attnscope.models.session import SiteRecorder, session
from attnscope.models.sites import Sites, SitesUnavailableError
from attnscope.pipelines.writes.dla import Attribution, BlockWrites, direct_logit_attribution
from attnscope.pipelines.writes.frozen_norm import FinalNorm
from attnscope.pipelines.writes.lens import LensRows, Unembedding, logit_lens
from attnscope.pipelines.writes.value_maps import ValueWeightedSource, value_norms

RECORDED_SITES = ("resid_pre", "resid_post", "head_z", "mlp_out")


def readout_parts(sites: Sites, feature: str) -> tuple[FinalNorm, Unembedding]:
    """The final norm and unembedding of a causal LM's sites, or ``SitesUnavailableError`` naming what
    the model lacks (a classifier's pooled head, an encoder without an unembedding, a post-norm
    family whose every block renormalises the stream)."""
    sites.require("final_norm", "lm_head", feature=feature)
    if sites.norm_placement != "pre":
        raise SitesUnavailableError(
            f"{feature} needs a pre-norm model (the residual stream a sum of the blocks' writes); "
            f"the {sites.family} family normalises after each sub-layer"
        )
    n = sites.final_norm
    return FinalNorm(n.kind, n.weight, n.bias, n.eps), Unembedding(sites.unembed.W_U, sites.unembed.b_U)


def block_values(sites: Sites, layer: int, resid_pre: torch.Tensor) -> torch.Tensor:
    """``resid_pre [pos, d_model]`` (the stream entering block ``layer``) -> ``[kv_head, pos, d_head]``:
    ``v_j = ln_attn(resid_pre_j) @ W_V + b_V`` (``resid_pre_j`` itself for a post-norm block)."""
    blk = sites.block(layer)
    h = blk.ln_attn.apply(resid_pre) if sites.norm_placement == "pre" else resid_pre
    v = torch.einsum("pm,hmd->hpd", h.float(), blk.W_V.float())
    return v if blk.b_V is None else v + blk.b_V.float()[:, None, :]


def output_projection(sites: Sites, layer: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(W_O [head, d_head, d_model], b_O [d_model] | None)`` of block ``layer`` in float32, a layer
    scale after the projection (``out_scale``) folded in."""
    blk = sites.block(layer)
    W_O, b_O = blk.W_O.float(), None if blk.b_O is None else blk.b_O.float()
    if blk.out_scale is not None:
        W_O = W_O * blk.out_scale.float()
        b_O = None if b_O is None else b_O * blk.out_scale.float()
    return W_O, b_O


@torch.inference_mode()
def value_norm_tables(sites: Sites, resid_pre: Sequence[torch.Tensor]) -> list[np.ndarray]:
    """One float32 ``[head, key]`` table ``||v_j W_O[h]||`` per layer from the stream entering each
    block of one forward (``resid_pre[layer] [pos, d_model]``): the values are recomputed through
    each block's own norm and ``W_V``, so any forward (the clean one, an intervention's altered one)
    gives its own tables from what a session recorded at ``resid_pre``."""
    if len(resid_pre) != sites.n_layers:
        raise ValueError(f"{len(resid_pre)} recorded streams for {sites.n_layers} blocks")
    return [
        value_norms(block_values(sites, layer, x.float()), output_projection(sites, layer)[0]).cpu().numpy()
        for layer, x in enumerate(resid_pre)
    ]


@dataclass(frozen=True)
class RecordedWrites:
    """One example's recorded forward.

    ``resid [layer + 1, pos, d_model]``: the stream entering each block, then leaving the last (row
    0 is the embedding); ``head_z [layer, pos, head, d_head]``; ``mlp_out [layer, pos, d_model]``;
    ``maps``: the run's ``AttentionMaps`` ``[layer, head, query, key]`` (lazy for ``attnscope_qk``
    models); ``token_ids``; ``sites``.
    """

    sites: Sites
    resid: torch.Tensor
    head_z: torch.Tensor
    mlp_out: torch.Tensor
    maps: object
    token_ids: tuple[int, ...]

    @property
    def n_tokens(self) -> int:
        return int(self.resid.shape[1])

    @property
    def nbytes(self) -> int:
        """Bytes held: the recorded tensors and the maps (a lazy map's stored queries and keys)."""
        held = sum(t.numel() * t.element_size() for t in (self.resid, self.head_z, self.mlp_out))
        return held + int(getattr(self.maps, "nbytes", 0))

    def values(self, layer: int) -> torch.Tensor:
        """``[kv_head, pos, d_head]``: ``v_j = ln_attn(resid_pre_j) @ W_V + b_V`` of block ``layer``
        (``resid_pre_j`` itself for a post-norm block)."""
        return block_values(self.sites, layer, self.resid[layer])

    def output_projection(self, layer: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(W_O [head, d_head, d_model], b_O [d_model] | None)`` of block ``layer`` in float32, a layer
        scale after the projection (``out_scale``) folded in."""
        return output_projection(self.sites, layer)

    def value_norms(self, layer: int) -> np.ndarray:
        """float32 ``[head, key]``: ``||v_j W_O[h]||`` of block ``layer`` (``value_maps``)."""
        return value_norms(self.values(layer), self.output_projection(layer)[0]).cpu().numpy()

    def block_writes(self, layer: int, position: int, split: bool = True) -> BlockWrites:
        """What block ``layer`` wrote at ``position`` (``out_scale`` folded into ``W_O`` and ``b_O``)."""
        W_O, b_O = self.output_projection(layer)
        probs = values = None
        if split:
            keys = slice(0, position + 1) if self.maps.causal else slice(None)
            row = self.maps.block(layer, rows=slice(position, position + 1), cols=keys)[:, 0]  # [head, key]
            probs = torch.as_tensor(row.copy(), device=W_O.device)
            values = self.values(layer)[:, keys]
        return BlockWrites(self.head_z[layer, position], W_O, b_O, self.mlp_out[layer, position], probs, values)


@torch.inference_mode()
def record_writes(backend, inp) -> RecordedWrites:
    """Run ``inp`` (a text ``ModelInput``) through ``backend`` recording what the blocks write."""
    sites = backend.sites
    rec = SiteRecorder(RECORDED_SITES)
    with session(rec):
        maps = backend.run_maps(inp)  # the run's maps only: no prediction (its own unembedding of every position)
    pre = rec.stacked("resid_pre")[:, 0]  # [layer, pos, d]
    last = rec.values["resid_post"][sites.n_layers - 1][0]  # [pos, d]
    return RecordedWrites(
        sites=sites,
        resid=torch.cat([pre, last[None]]).float(),
        head_z=rec.stacked("head_z")[:, 0].float(),
        mlp_out=rec.stacked("mlp_out")[:, 0].float(),
        maps=maps,
        token_ids=() if inp.token_ids is None else tuple(inp.token_ids),
    )


def lens_grid(
    writes: RecordedWrites,
    positions: range,
    k: int,
    target: torch.Tensor | None = None,
    feature: str = "the logit lens",
) -> LensRows:
    """The lens of every layer at ``positions``: rows in ``[layer + 1, len(positions)]`` order
    (flattened); ``target [len(positions)]`` token ids per position (default: each row's top token)."""
    norm, unembed = readout_parts(writes.sites, feature)
    resid = writes.resid[:, positions.start : positions.stop]  # [layer + 1, npos, d]
    tgt = None if target is None else target.repeat(resid.shape[0])
    return logit_lens(resid.reshape(-1, resid.shape[-1]), norm, unembed, k, tgt)


def attribute(
    writes: RecordedWrites, position: int, target: int, contrast: int | None = None, split: bool = True
) -> Attribution:
    """Direct logit attribution of ``logit[target] (- logit[contrast])`` read at ``position``."""
    norm, unembed = readout_parts(writes.sites, "direct logit attribution")
    blocks = [writes.block_writes(layer, position, split) for layer in range(writes.sites.n_layers)]
    return direct_logit_attribution(
        writes.resid[0, position], blocks, writes.resid[-1, position], norm, unembed, target, contrast
    )


def value_weighted_source(writes: RecordedWrites, maps=None, normalize: bool = False) -> ValueWeightedSource:
    """Blocks ``[head, rows, cols]`` of the value-weighted maps ``a_ij ||v_j W_O||`` (Kobayashi et al.
    2020; ``normalize``: each row divided by its sum) of ``maps`` (default the recording's own; a run's
    maps of the same input give the same weights) and one ``[head, key]`` norm table per layer."""
    norms = [writes.value_norms(layer) for layer in range(writes.sites.n_layers)]
    return ValueWeightedSource(writes.maps if maps is None else maps, norms, normalize=normalize)


def value_weighted_maps(writes: RecordedWrites, maps=None) -> AttentionMaps:
    """The row-normalised value-weighted maps ``[layer, head, query, key]`` as an ``AttentionMaps``
    (rows sum to 1), so every analysis and view reads them as it reads the weights; computed block
    by block on request from ``maps`` (default the recording's own) and the norm tables."""
    maps = writes.maps if maps is None else maps
    return value_weighted_of_norms(maps, [writes.value_norms(layer) for layer in range(writes.sites.n_layers)])


def value_weighted_of_norms(maps, norms: Sequence[np.ndarray]) -> AttentionMaps:
    """The row-normalised value-weighted maps of ``maps`` (any ``[layer, head, query, key]`` maps
    with ``block``) and the norm tables of the forward that made them (``value_norm_tables``)."""
    src = ValueWeightedSource(maps, norms, normalize=True)
    return AttentionMaps.lazy(
        src, maps.tokens, grid=maps.grid, special=maps.special, model=maps.model, causal=maps.causal
    )
