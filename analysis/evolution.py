"""How attention evolves with depth (Wang et al., "Evolving Attention"): sharpness per layer and head,
a sharpening slope, similarity of consecutive layers, and two models side by side.

Per ``[layer, head, query]`` row: entropy ``H = -sum p log p`` (nats), normalised entropy
``H / log(keys)`` (``keys`` = the positions the row may attend to: all of them, or ``query + 1`` in a
causal model; a one-key row scores 0), effective number of keys ``exp(H)`` and top-1 mass. Head
values average over rows (on causal maps without the first row, whose one key forces its values),
layer values over heads. The sharpening slope is the least-squares slope
of the layer-mean entropy against the layer index (negative = maps sharpen with depth).
Consecutive layers are compared on their head-averaged maps ``[query, key]``: Jensen-Shannon
divergence (nats, mean over rows, in ``[0, log 2]``) and cosine similarity of the flattened maps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from attnscope.analysis.maps import AttentionMaps
from attnscope.analysis.passes import Reductions, _rowdot, reduce_maps, row_entropy


def normalised_entropy(entropy: np.ndarray, causal: bool) -> np.ndarray:
    """``entropy[..., query] / log(keys)`` with ``keys = n`` or ``query + 1`` (causal); 0 where
    a row has a single key. ``[..., query]`` in, same shape out (float32)."""
    n = entropy.shape[-1]
    keys = np.arange(1, n + 1) if causal else np.full(n, n)
    denom = np.log(keys.astype(np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(denom > 0, entropy / np.where(denom > 0, denom, 1.0), 0.0)
    return np.clip(out, 0.0, 1.0).astype(np.float32)


def js_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Row-wise Jensen-Shannon divergence (nats) of ``[..., key]`` distributions; ``[...]`` out.
    Computed as ``H(m) - (H(p) + H(q)) / 2`` with ``m = (p + q) / 2`` (float32, three passes)."""
    p = np.asarray(p, dtype=np.float32)
    q = np.asarray(q, dtype=np.float32)
    m = (p + q) * np.float32(0.5)
    js = row_entropy(m) - np.float32(0.5) * (row_entropy(p) + row_entropy(q))
    return np.clip(js, 0.0, np.log(2.0)).astype(np.float32)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two flattened arrays (0 if either is all zero)."""
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    den = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / den) if den > 0 else 0.0


@dataclass(frozen=True)
class Evolution:
    """Sharpness statistics; shapes in brackets (``query`` = every row, special ones included)."""

    entropy: np.ndarray  # [layer, head, query] nats
    norm_entropy: np.ndarray  # [layer, head, query] in [0, 1]
    effective_keys: np.ndarray  # [layer, head, query] exp(entropy)
    top1: np.ndarray  # [layer, head, query]
    head_entropy: np.ndarray  # [layer, head]
    head_norm_entropy: np.ndarray  # [layer, head]
    head_effective_keys: np.ndarray  # [layer, head]
    head_top1: np.ndarray  # [layer, head]
    layer_entropy: np.ndarray  # [layer] the sharpening profile
    layer_norm_entropy: np.ndarray  # [layer]
    layer_top1: np.ndarray  # [layer]
    slope: float  # d(layer_entropy)/d(layer), nats per layer (0 for one layer)
    intercept: float
    head_mean: np.ndarray | None = field(repr=False)  # [layer, query, key] head-averaged maps (None: not kept)
    layer_ids: tuple[int, ...] = ()
    head_ids: tuple[int, ...] = ()
    similarity: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)  # (js, cos), when given

    @cached_property
    def _similarity(self) -> tuple[np.ndarray, np.ndarray]:
        if self.similarity is not None:  # computed without the head means (analysis.mean_walk)
            return self.similarity
        return layer_similarity(self.head_mean)

    @property
    def js_next(self) -> np.ndarray:
        """``[layer - 1]`` JS divergence between the head-mean maps of layers ``l`` and ``l + 1``
        (computed on first use: about one more log per element of the head means)."""
        return self._similarity[0]

    @property
    def cosine_next(self) -> np.ndarray:
        """``[layer - 1]`` cosine similarity of consecutive head-mean maps (computed on first use)."""
        return self._similarity[1]


def pair_similarity(
    a: np.ndarray, b: np.ndarray, h_a: np.ndarray, h_b: np.ndarray, mid: np.ndarray, scratch: np.ndarray | None
) -> tuple[float, float]:
    """``(js, dot)`` of two ``[query, key]`` head-mean maps whose row entropies ``h_a``/``h_b`` ``[query]``
    are known: the Jensen-Shannon divergence (nats, mean over rows) and their dot product (float64 sum
    of per-row float32 dots). ``mid`` (and ``scratch``, or None) are ``[query, key]`` float32 buffers."""
    np.add(a, b, out=mid)
    mid *= np.float32(0.5)
    row_js = row_entropy(mid, scratch) - np.float32(0.5) * (h_a + h_b)
    return float(np.clip(row_js, 0.0, np.log(2.0)).mean()), float(_rowdot(a, b).sum(dtype=np.float64))


def layer_similarity(head_mean: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """JS and cosine of consecutive ``[layer, query, key]`` head-mean maps; ``[layer - 1]`` each.
    One layer at a time through two cache-sized buffers; each layer's row entropies serve both
    of its neighbours."""
    n = head_mean.shape[0]
    if n < 2:
        return np.zeros(0, np.float32), np.zeros(0, np.float32)
    mid_buf = np.empty(head_mean.shape[1:], np.float32)
    scratch = np.empty_like(mid_buf)
    h = np.stack([row_entropy(head_mean[i], scratch) for i in range(n)])  # [layer, query]
    js = np.empty(n - 1, np.float32)
    dots = np.empty(n - 1)
    for i in range(n - 1):
        js[i], dots[i] = pair_similarity(head_mean[i], head_mean[i + 1], h[i], h[i + 1], mid_buf, scratch)
    sq = _rowdot(head_mean, head_mean).sum(-1, dtype=np.float64)  # per-row float32 dots, summed in float64
    den = np.sqrt(sq[:-1] * sq[1:])
    cos = np.divide(dots, den, out=np.zeros_like(dots), where=den > 0)
    return js, cos.astype(np.float32)


def evolution_from(red: Reductions, maps: AttentionMaps, similarity=None) -> Evolution:
    """``Evolution`` from a pass with the ``entropy`` and ``mean`` parts; or with the ``entropy`` part and
    ``similarity``, the ``(js_next, cosine_next)`` of the head means computed elsewhere
    (``analysis.mean_walk.walk_head_means``, for runs whose head means are not kept)."""
    if red.entropy is None or (red.head_mean is None and similarity is None):
        raise ValueError("evolution needs the 'entropy' part, and the 'mean' part or the layers' similarity")
    ent = red.entropy
    norm = normalised_entropy(ent, maps.causal)
    eff = np.exp(ent, dtype=np.float32)
    # the first row of a causal map has one key: its entropy (0) and top-1 (1) are forced, not chosen
    r = slice(1, None) if maps.causal and maps.n_tokens > 1 else slice(None)
    layer_entropy = ent[..., r].mean(axis=(1, 2), dtype=np.float64)
    x = np.asarray(maps.layer_ids, dtype=np.float64)
    if x.size >= 2 and np.ptp(x) > 0:
        slope, intercept = np.polyfit(x, layer_entropy, 1)
    else:
        slope, intercept = 0.0, float(layer_entropy.mean())
    return Evolution(
        entropy=ent,
        norm_entropy=norm,
        effective_keys=eff,
        top1=red.top1,
        head_entropy=ent[..., r].mean(-1),
        head_norm_entropy=norm[..., r].mean(-1),
        head_effective_keys=eff[..., r].mean(-1),
        head_top1=red.top1[..., r].mean(-1),
        layer_entropy=layer_entropy.astype(np.float32),
        layer_norm_entropy=norm[..., r].mean(axis=(1, 2)),
        layer_top1=red.top1[..., r].mean(axis=(1, 2)),
        slope=float(slope),
        intercept=float(intercept),
        head_mean=red.head_mean,
        layer_ids=tuple(maps.layer_ids),
        head_ids=tuple(maps.head_ids),
        similarity=similarity,
    )


def evolution(maps: AttentionMaps, workers: int | None = None) -> Evolution:
    """Entropy, effective keys, top-1 and consecutive-layer similarity of ``maps``
    (``[layer, head, query, key]``)."""
    return evolution_from(reduce_maps(maps, {"entropy", "mean"}, workers=workers), maps)


@dataclass(frozen=True)
class Comparison:
    """Two models on the same input. ``depth_*``: relative depth ``l / (layers - 1)`` per layer.
    ``match_b[l]``: the layer of ``b`` nearest in relative depth to layer ``l`` of ``a``.
    ``js_ab``/``cosine_ab`` ``[layer of a]``: head-mean maps of ``a`` vs the matched layer of ``b``
    (``None`` unless both tokenised the input identically)."""

    a: Evolution
    b: Evolution
    depth_a: np.ndarray
    depth_b: np.ndarray
    match_b: np.ndarray
    js_ab: np.ndarray | None
    cosine_ab: np.ndarray | None
    same_tokens: bool


def _depth(n: int) -> np.ndarray:
    return np.linspace(0.0, 1.0, n) if n > 1 else np.zeros(1)


def compare(maps_a: AttentionMaps, maps_b: AttentionMaps, workers: int | None = None) -> Comparison:
    """Side-by-side evolution of two models' maps on the same input, layers matched by depth."""
    red_a = reduce_maps(maps_a, {"entropy", "mean"}, workers=workers)
    red_b = reduce_maps(maps_b, {"entropy", "mean"}, workers=workers)
    da, db = _depth(maps_a.n_layers), _depth(maps_b.n_layers)
    match = np.abs(da[:, None] - db[None, :]).argmin(axis=1)
    same = maps_a.tokens == maps_b.tokens
    js = cos = None
    if same:
        js = np.array(
            [js_divergence(red_a.head_mean[i], red_b.head_mean[j]).mean() for i, j in enumerate(match)],
            dtype=np.float32,
        )
        cos = np.array([cosine(red_a.head_mean[i], red_b.head_mean[j]) for i, j in enumerate(match)], dtype=np.float32)
    return Comparison(evolution_from(red_a, maps_a), evolution_from(red_b, maps_b), da, db, match, js, cos, same)
