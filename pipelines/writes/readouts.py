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
from attnscope.models.sites import SitesUnavailableError
from attnscope.pipelines.writes.class_readout import (
    class_attribution,
    class_lens,
    class_logits,
    classifier_sites,
    pooled_positions,
)
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


def is_classifier(sites, feature: str = "this readout") -> bool:
    """Whether the model's stream is read by a pooled classification head (``Unembed.kind``); a model
    with neither that nor an LM head (an encoder that outputs an embedding) is refused, naming what it
    lacks (``SitesUnavailableError``)."""
    if sites.unembed is None:
        raise SitesUnavailableError(
            f"{feature} needs an unembed (an LM head or a classification head) to read the stream through; the "
            f"{sites.family} model outputs its last stream as an embedding"
        )
    return sites.unembed.kind == "classifier"


def class_id(backend, label: str, what: str = "target") -> int:
    """The index of class ``label`` (its name, or its index written as digits)."""
    labels = list(backend.labels or [])
    if label in labels:
        return labels.index(label)
    if label.isdigit() and int(label) < len(labels):
        return int(label)
    raise WritesInputError(f"{what} {label!r} is not a class of model {backend.spec.name!r}; use one of {labels}")


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
    the model's own top next token there); ``asked``: whether a target was asked. A class lens
    (``labels``: the class names; ids are class indices) has one column, the classifier's pooled
    readout of ``pooled`` positions, anchored at ``positions[0]``."""

    layers: int
    positions: tuple[int, ...]
    rows: LensRows
    target_ids: tuple[int, ...]
    asked: bool
    labels: tuple[str, ...] | None = None
    pooled: tuple[int, ...] | None = None

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
DEFAULT_K = 5  # top tokens of a logit-lens cell when none is asked


def lens_of_run(
    backend,
    token_ids: Sequence[int],
    start: int,
    stop: int,
    k: int | None,
    target: str | None = None,
    recording: Recording = None,
    positions_asked: bool = True,
) -> LensGrid:
    """The logit lens of positions ``start..stop-1``: top-``k`` tokens and the probability and rank of
    ``target`` (one token, for every position; default each position's own top next token).
    ``k`` None: ``DEFAULT_K``. ``recording`` (here and below): gives the run's recorded forward (a
    per-run cache, ``cache.RecordingCache``); default record it now. A classifier gets its class lens
    (``class_lens_of_run``; ``positions_asked``: positions were given, which a classifier refuses)."""
    if is_classifier(backend.sites, "the logit lens"):
        if positions_asked:
            raise WritesInputError("a classifier's lens reads its pooled vector; leave positions out")
        return class_lens_of_run(backend, token_ids, k, target, recording)
    k = DEFAULT_K if k is None else k
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


def class_lens_of_run(
    backend, token_ids: Sequence[int], k: int | None, target: str | None = None, recording: Recording = None
) -> LensGrid:
    """The class lens of a classifier's run: every layer's pooled stream read by its head (top-``k``
    classes, default all; the probability and rank of class ``target``, default the model's own
    prediction)."""
    sites = classifier_sites(backend.sites, "the class lens")
    n_classes = int(sites.unembed.W_U.shape[1])
    k = n_classes if k is None else k
    if not 1 <= k <= n_classes:
        raise WritesInputError(f"k={k} is outside [1, {n_classes}] (the classes of {backend.spec.name!r})")
    tid = None if target is None else class_id(backend, target)
    writes = recording() if recording is not None else record_writes(backend, backend.encode_ids(list(token_ids)))
    rows = class_lens(writes, k, tid)
    pos, _ = pooled_positions(sites, writes.n_tokens)
    pooled = tuple(range(writes.n_tokens))[pos]
    labels = tuple(backend.labels or (str(c) for c in range(n_classes)))
    return LensGrid(sites.n_layers + 1, pooled[:1], rows, (int(rows.target[0]),), tid is not None, labels, pooled)


@dataclass(frozen=True)
class AttributionResult:
    """An ``Attribution`` with its ids and the per-source splits of the heads asked for:
    ``split_heads`` ``[(layer, head)]`` and ``splits [len(split_heads), key]``. For a classifier
    ``labels`` names the classes (``target_id``/``contrast_id`` are class indices) and ``pooled``
    lists the positions its head pools (``position`` is the first)."""

    position: int
    target_id: int
    contrast_id: int | None
    attribution: Attribution
    split_heads: tuple[tuple[int, int], ...]
    splits: np.ndarray | None
    labels: tuple[str, ...] | None = None
    pooled: tuple[int, ...] | None = None


def attribution_of_run(
    backend,
    token_ids: Sequence[int],
    position: int | None,
    target: str | None = None,
    contrast: str | None = None,
    split_heads: Sequence[tuple[int, int]] | None = None,
    top_heads: int = 8,
    recording: Recording = None,
) -> AttributionResult:
    """Direct logit attribution at ``position`` (default the last) of ``target`` (one token; default
    the model's own next token there) minus ``contrast`` (one token, optional); for a classifier, of
    class ``target`` (default its prediction) minus class ``contrast`` at its pooled readout
    (``position`` must be None). Splits over source positions: the heads in ``split_heads``, else
    the ``top_heads`` heads with the largest ``|part|``."""
    n = len(token_ids)
    sites = backend.sites
    feature = "direct logit attribution"
    classifier = is_classifier(sites, feature)
    if classifier:
        classifier_sites(sites, feature)
        if position is not None:
            raise WritesInputError("a classifier's attribution reads its pooled vector; leave position out")
    else:
        position = check_position(n - 1 if position is None else position, n)
        readout_parts(sites, feature)
    for layer, head in split_heads or ():
        sites.block(layer)
        sites.check_head(head)
    name = class_id if classifier else single_token_id
    cid = None if contrast is None else name(backend, contrast, "contrast")
    tid = None if target is None else name(backend, target, "target")
    if classifier:
        writes = recording() if recording is not None else record_writes(backend, backend.encode_ids(list(token_ids)))
        tid = int(class_logits(writes)[-1].argmax()) if tid is None else tid
        att = class_attribution(writes, tid, cid, split=True)
        pos, _ = pooled_positions(sites, writes.n_tokens)
        pooled = tuple(range(n))[pos]
        labels = tuple(backend.labels or (str(c) for c in range(int(sites.unembed.W_U.shape[1]))))
    else:
        writes = recording() if recording is not None else record_run(backend, token_ids, feature)
        if tid is None:
            norm, unembed = readout_parts(sites, feature)
            tid = int(unembed.logits(norm(writes.resid[-1, position])).argmax())
        att = attribute(writes, position, tid, cid, split=True)
        pooled = labels = None
    if split_heads is None:
        order = np.argsort(-np.abs(att.heads), axis=None)[: max(0, top_heads)]
        split_heads = [tuple(int(i) for i in np.unravel_index(o, att.heads.shape)) for o in order]
    heads = tuple((int(a), int(b)) for a, b in split_heads)
    splits = np.stack([att.sources[a, b] for a, b in heads]) if heads else None
    first = pooled[0] if classifier else position
    return AttributionResult(first, tid, cid, att, heads, splits, labels, pooled)


def value_weighted_of_run(backend, inp, maps: AttentionMaps, recording: Recording = None) -> AttentionMaps:
    """The row-normalised value-weighted maps of a run (``maps``, its attention ``[layer, head,
    query, key]``, and ``inp``, its model input): one recorded forward gives the values, the
    ``[head, key]`` norm tables are kept and the run's own maps give the weights, block by block."""
    backend.sites  # noqa: B018 - refuses (422) a model without an anatomy entry before running it
    writes = recording() if recording is not None else record_writes(backend, inp)
    if tuple(writes.maps.shape) != tuple(maps.shape):
        raise WritesInputError(f"the recorded forward has maps {writes.maps.shape}, the run {maps.shape}")
    return value_weighted_maps(writes, maps)
