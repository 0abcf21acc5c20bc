"""Lens and attribution requests on one run, resolved against its model: answer strings to single
token ids, positions and bounds checked, one recorded forward, results typed for the API and the
command line (``docs/methods/direct-logit-attribution.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from attnscope.analysis.maps import AttentionMaps
from attnscope.pipelines.writes.dla import Attribution
from attnscope.pipelines.writes.lens import LensRows
from attnscope.pipelines.writes.recorded import (
    RecordedWrites,
    attribute,
    lens_grid,
    readout_parts,
    record_writes,
    value_weighted_maps,
)


class WritesInputError(ValueError):
    """A lens or attribution request that does not fit the run or the model (a 422 saying what to change)."""


def single_token_id(backend, text: str, what: str = "answer") -> int:
    """The id of ``text`` when it is exactly one token of the model (no special tokens added)."""
    ids = backend.tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) != 1:
        raise WritesInputError(
            f"{what} {text!r} is {len(ids)} tokens of model {backend.spec.name!r}; it must be exactly one token "
            "(a leading space usually belongs to the token: ' Paris')"
        )
    return int(ids[0])


def check_position(position: int, n_tokens: int) -> int:
    if not 0 <= int(position) < n_tokens:
        raise WritesInputError(f"position {position} is out of range: this run has positions 0..{n_tokens - 1}")
    return int(position)


def record_run(backend, token_ids: Sequence[int], feature: str) -> RecordedWrites:
    """One recorded forward over ``token_ids``; refuses (``SitesUnavailableError``) a model the
    readout cannot read before running anything."""
    readout_parts(backend.sites, feature)
    return record_writes(backend, backend.encode_ids(list(token_ids)))


@dataclass(frozen=True)
class LensGrid:
    """The lens of ``positions`` at every layer: ``rows`` in ``[layer + 1, len(positions)]`` order;
    ``layers`` = blocks + 1 (row 0: the embedding, row ``layers - 1``: the model's own output);
    ``target_ids [len(positions)]``: the token read in every cell of a position (the one asked, or
    the model's own top next token there); ``asked``: whether a target was asked."""

    layers: int
    positions: tuple[int, ...]
    rows: LensRows
    target_ids: tuple[int, ...]
    asked: bool

    def cell(self, layer: int, index: int) -> int:
        """Row of ``rows`` for ``layer`` and ``positions[index]``."""
        return layer * len(self.positions) + index

    def first_top_layer(self, index: int) -> int | None:
        """The first layer from which the target of ``positions[index]`` is the lens's top token at
        every later layer (None: not even at the last layer)."""
        ranks = [int(self.rows.target_rank[self.cell(layer, index)]) for layer in range(self.layers)]
        first = None
        for layer in range(self.layers - 1, -1, -1):
            if ranks[layer] != 0:
                break
            first = layer
        return first


Recording = Callable[[], RecordedWrites] | None


def lens_of_run(
    backend,
    token_ids: Sequence[int],
    start: int,
    stop: int,
    k: int,
    target: str | None = None,
    recording: Recording = None,
) -> LensGrid:
    """The logit lens of positions ``start..stop-1``: top-``k`` tokens and the probability and rank of
    ``target`` (one token, for every position; default each position's own top next token).
    ``recording`` (here and below): gives the run's recorded forward (a per-run cache,
    ``cache.RecordingCache``); default record it now."""
    n = len(token_ids)
    if stop <= start:
        raise WritesInputError(f"the position range {start}:{stop} is empty")
    check_position(start, n)
    check_position(stop - 1, n)
    sites = backend.sites
    norm, unembed = readout_parts(sites, "the logit lens")
    if not 1 <= k <= unembed.vocab:
        raise WritesInputError(f"k={k} is outside [1, {unembed.vocab}] (the vocabulary of {backend.spec.name!r})")
    tid = None if target is None else single_token_id(backend, target, "target")
    writes = recording() if recording is not None else record_run(backend, token_ids, "the logit lens")
    if tid is None:
        with torch.inference_mode():
            tgt = unembed.logits(norm(writes.resid[-1, start:stop])).argmax(-1)
    else:
        tgt = torch.full((stop - start,), tid, dtype=torch.long, device=writes.resid.device)
    rows = lens_grid(writes, range(start, stop), k, tgt)
    ids = tuple(int(t) for t in tgt.tolist())
    return LensGrid(sites.n_layers + 1, tuple(range(start, stop)), rows, ids, tid is not None)


@dataclass(frozen=True)
class AttributionResult:
    """An ``Attribution`` with its ids and the per-source splits of the heads asked for:
    ``split_heads`` ``[(layer, head)]`` and ``splits [len(split_heads), key]``."""

    position: int
    target_id: int
    contrast_id: int | None
    attribution: Attribution
    split_heads: tuple[tuple[int, int], ...]
    splits: np.ndarray | None


def attribution_of_run(
    backend,
    token_ids: Sequence[int],
    position: int,
    target: str | None = None,
    contrast: str | None = None,
    split_heads: Sequence[tuple[int, int]] | None = None,
    top_heads: int = 8,
    recording: Recording = None,
) -> AttributionResult:
    """Direct logit attribution at ``position`` of ``target`` (one token; default the model's own next
    token there) minus ``contrast`` (one token, optional). Splits over source positions: the heads in
    ``split_heads``, else the ``top_heads`` heads with the largest ``|part|``."""
    n = len(token_ids)
    check_position(position, n)
    sites = backend.sites
    readout_parts(sites, "direct logit attribution")
    for layer, head in split_heads or ():
        sites.block(layer)
        sites.check_head(head)
    cid = None if contrast is None else single_token_id(backend, contrast, "contrast")
    feature = "direct logit attribution"
    writes = recording() if recording is not None else record_run(backend, token_ids, feature)
    if target is None:
        norm, unembed = readout_parts(sites, "direct logit attribution")
        tid = int(unembed.logits(norm(writes.resid[-1, position])).argmax())
    else:
        tid = single_token_id(backend, target, "target")
    att = attribute(writes, position, tid, cid, split=True)
    if split_heads is None:
        order = np.argsort(-np.abs(att.heads), axis=None)[: max(0, top_heads)]
        split_heads = [tuple(int(i) for i in np.unravel_index(o, att.heads.shape)) for o in order]
    heads = tuple((int(a), int(b)) for a, b in split_heads)
    splits = np.stack([att.sources[a, b] for a, b in heads]) if heads else None
    return AttributionResult(position, tid, cid, att, heads, splits)


def value_weighted_of_run(backend, inp, maps: AttentionMaps, recording: Recording = None) -> AttentionMaps:
    """The row-normalised value-weighted maps of a run (``maps``, its attention ``[layer, head,
    query, key]``, and ``inp``, its model input): one recorded forward gives the values, the
    ``[head, key]`` norm tables are kept and the run's own maps give the weights, block by block."""
    backend.sites  # noqa: B018 - refuses (422) a model without an anatomy entry before running it
    writes = recording() if recording is not None else record_writes(backend, inp)
    if tuple(writes.maps.shape) != tuple(maps.shape):
        raise WritesInputError(f"the recorded forward has maps {writes.maps.shape}, the run {maps.shape}")
    return value_weighted_maps(writes, maps)
