"""Attention-map probe (Wang et al.'s "attention-map classification"; INFERRED
protocol, docs/methods/heads.md): how much of a task label can be read from one layer's maps alone.

For each layer, every example's ``[head, query, key]`` maps are brought to a fixed ``size x size``
(``mode="crop"``: the first ``size`` positions, zero padded; ``mode="pool"``: adaptive average
pooling, as ``torch.nn.AdaptiveAvgPool2d``), flattened to ``[head * size * size]`` features, and a
standardised logistic regression (scikit-learn) is cross-validated (stratified k-fold). Layers
whose maps carry the label score above ``chance`` (the majority-class rate).

The classifier is pluggable: ``fit_score(x_train, y_train, x_test, y_test)`` receives features
``[example, head, size, size]`` and returns whether each held-out example was predicted right (bool
``[test example]``; a bare accuracy is accepted, and then the result keeps no per-example values); the
2-layer CNN with H input channels (docs/methods/heads.md) lives in
``attnscope.pipelines.map_probe_cnn.cnn_fit_score`` (torch), and every classifier sees the same folds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from attnscope.analysis.maps import AttentionMaps

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
    total = (
        c[..., hi[:, None], hi[None, :]]
        - c[..., lo[:, None], hi[None, :]]
        - c[..., hi[:, None], lo[None, :]]
        + c[..., lo[:, None], lo[None, :]]
    )
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
    """Cross-validated accuracy per layer: ``accuracy``/``accuracy_std`` ``[layer]``; ``correct``
    ``[layer, example]`` (bool): each example's held-out prediction right or wrong (every example is
    held out once), None when the classifier gave only accuracies."""

    layer_ids: tuple[int, ...]
    accuracy: np.ndarray
    accuracy_std: np.ndarray
    chance: float
    folds: int
    size: int
    mode: str
    classifier: str = "logistic"
    correct: np.ndarray | None = None


FitScore = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], "np.ndarray | float"]


def logistic_fit_score(C: float = 1.0) -> FitScore:
    """Standardised logistic regression on the flattened maps (scikit-learn)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    def fit_score(x_tr: np.ndarray, y_tr: np.ndarray, x_te: np.ndarray, y_te: np.ndarray) -> np.ndarray:
        model = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=2000))
        model.fit(x_tr.reshape(len(x_tr), -1), y_tr)
        return model.predict(x_te.reshape(len(x_te), -1)) == y_te

    return fit_score


def probe_layers(
    items: Sequence[AttentionMaps],
    labels: Sequence,
    *,
    size: int = DEFAULT_SIZE,
    mode: str = "crop",
    folds: int = 5,
    C: float = 1.0,
    seed: int = 0,
    fit_score: FitScore | None = None,
    classifier: str = "logistic",
) -> ProbeResult:
    """Cross-validated accuracy of predicting ``labels`` from each layer's maps (logistic
    regression unless ``fit_score`` is given, named ``classifier`` in the result). All ``items``
    must share layers and heads; ``folds`` is capped by the rarest class."""
    from sklearn.model_selection import StratifiedKFold

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
    fit_score = fit_score or logistic_fit_score(C)
    n_layers, n_heads = items[0].n_layers, items[0].n_heads
    splits = list(StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(np.zeros(y.size), y))
    acc, std = np.zeros(n_layers), np.zeros(n_layers)
    correct: np.ndarray | None = np.zeros((n_layers, y.size), dtype=bool)
    for li in range(n_layers):
        x = np.stack([map_features(m, li, size, mode) for m in items]).reshape(len(items), n_heads, size, size)
        scores = []
        for tr, te in splits:
            got = np.asarray(fit_score(x[tr], y[tr], x[te], y[te]))
            if got.ndim == 0:  # a bare accuracy: no per-example values
                correct = None
                scores.append(float(got))
                continue
            if got.shape != (te.size,):
                raise ValueError(f"fit_score returned shape {got.shape}; expected ({te.size},) or a scalar")
            if correct is not None:
                correct[li, te] = got.astype(bool)
            scores.append(float(got.mean()))
        scores = np.array(scores)
        acc[li], std[li] = scores.mean(), scores.std()
        log.debug("probe layer %d (%s): accuracy %.3f +- %.3f", li, classifier, acc[li], std[li])
    return ProbeResult(
        layer_ids=tuple(items[0].layer_ids),
        accuracy=acc.astype(np.float32),
        accuracy_std=std.astype(np.float32),
        chance=float(counts.max() / y.size),
        folds=k,
        size=size,
        mode=mode,
        classifier=classifier,
        correct=correct,
    )
