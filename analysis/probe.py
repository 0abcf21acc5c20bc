"""Attention-map probe (Wang et al.'s "attention-map classification", methods.md 4.4, INFERRED
protocol): how much of a task label can be read from one layer's maps alone.

For each layer, every example's ``[head, query, key]`` maps are brought to a fixed ``size x size``
(``mode="crop"``: the first ``size`` positions, zero padded; ``mode="pool"``: adaptive average
pooling, as ``torch.nn.AdaptiveAvgPool2d``), flattened to ``[head * size * size]`` features, and a
standardised logistic regression (scikit-learn) is cross-validated (stratified k-fold). Layers
whose maps carry the label score above ``chance`` (the majority-class rate).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from analysis.maps import AttentionMaps

log = logging.getLogger(__name__)

DEFAULT_SIZE = 32


def _pool_edges(n: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    i = np.arange(size)
    return (i * n) // size, -((-(i + 1) * n) // size)  # floor(i n / s), ceil((i + 1) n / s)


def adaptive_pool(x: np.ndarray, size: int) -> np.ndarray:
    """Average-pool the last two axes of ``[..., n, n]`` to ``[..., size, size]`` with the bins of
    ``AdaptiveAvgPool2d`` (bins overlap or repeat when ``n`` does not divide evenly or ``n < size``)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[-1]
    c = np.zeros(x.shape[:-2] + (n + 1, n + 1))
    c[..., 1:, 1:] = x.cumsum(-2).cumsum(-1)  # integral image
    lo, hi = _pool_edges(n, size)
    total = (c[..., hi[:, None], hi[None, :]] - c[..., lo[:, None], hi[None, :]]
             - c[..., hi[:, None], lo[None, :]] + c[..., lo[:, None], lo[None, :]])
    area = (hi - lo)[:, None] * (hi - lo)[None, :]
    return (total / area).astype(np.float32)


def crop_pad(x: np.ndarray, size: int) -> np.ndarray:
    """The first ``size`` rows and columns of ``[..., n, n]``, zero padded to ``[..., size, size]``."""
    x = np.asarray(x, dtype=np.float32)
    out = np.zeros(x.shape[:-2] + (size, size), dtype=np.float32)
    m = min(size, x.shape[-1])
    out[..., :m, :m] = x[..., :m, :m]
    return out


def map_features(maps: AttentionMaps, layer: int, size: int = DEFAULT_SIZE, mode: str = "crop") -> np.ndarray:
    """``[head * size * size]`` float32 features of one layer (positional index) of ``maps``."""
    x = maps.layer(layer)  # [head, query, key]
    if mode == "crop":
        return crop_pad(x, size).reshape(-1)
    if mode == "pool":
        return adaptive_pool(x, size).reshape(-1)
    raise ValueError(f"mode must be 'crop' or 'pool'; got {mode!r}")


@dataclass(frozen=True)
class ProbeResult:
    """Cross-validated accuracy per layer: ``accuracy``/``accuracy_std`` ``[layer]``."""

    layer_ids: tuple[int, ...]
    accuracy: np.ndarray
    accuracy_std: np.ndarray
    chance: float
    folds: int
    size: int
    mode: str


def probe_layers(
    items: Sequence[AttentionMaps],
    labels: Sequence,
    *,
    size: int = DEFAULT_SIZE,
    mode: str = "crop",
    folds: int = 5,
    C: float = 1.0,
    seed: int = 0,
) -> ProbeResult:
    """Cross-validated logistic-regression accuracy of predicting ``labels`` from each layer's
    maps. All ``items`` must share layers and heads; ``folds`` is capped by the rarest class."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    items = list(items)
    y = np.asarray(labels)
    if len(items) != y.size:
        raise ValueError(f"got {len(items)} examples but {y.size} labels")
    classes, counts = np.unique(y, return_counts=True)
    if classes.size < 2:
        raise ValueError("the probe needs at least two classes in labels")
    k = int(min(folds, counts.min()))
    if k < 2:
        raise ValueError("every class needs at least two examples for cross-validation")
    shapes = {(m.n_layers, m.n_heads) for m in items}
    if len(shapes) != 1:
        raise ValueError(f"all examples must have the same layers and heads; got {sorted(shapes)}")
    n_layers = items[0].n_layers
    cv = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    acc, std = np.zeros(n_layers), np.zeros(n_layers)
    for li in range(n_layers):
        x = np.stack([map_features(m, li, size, mode) for m in items])
        model = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=2000))
        scores = cross_val_score(model, x, y, cv=cv)
        acc[li], std[li] = scores.mean(), scores.std()
        log.debug("probe layer %d: accuracy %.3f +- %.3f", li, acc[li], std[li])
    return ProbeResult(
        layer_ids=tuple(items[0].layer_ids), accuracy=acc.astype(np.float32),
        accuracy_std=std.astype(np.float32), chance=float(counts.max() / y.size),
        folds=k, size=size, mode=mode,
    )
