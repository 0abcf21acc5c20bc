"""Metrics of an intervention's effect, and their comparison with attention-based head importance.

Pure numpy/scipy: the arrays come from a clean forward pass and from ``B`` altered ones (one per
intervention, e.g. one per head of a per-head grid). Every ``*_change`` is ``altered - clean``
(``docs/methods/interventions.md``):

| metric | model | per altered row |
|---|---|---|
| ``prob_change`` | classifier | ``p_alt(c) - p_clean(c)``, ``c`` the clean prediction |
| ``logit_diff_change`` | classifier | ``(z_c - max_{j != c} z_j)`` altered minus clean |
| ``flips`` | classifier | 1 when the altered prediction is not ``c`` (its mean is the flip rate) |
| ``cosine_distance`` | embedding model | ``1 - cos(e_clean, e_alt)`` |
| ``loss_change`` | causal LM | mean over positions of ``-log p_alt(next) + log p_clean(next)`` |
| ``answer_diff_change`` | causal LM | ``(z_A - z_B)`` altered minus clean, per position, averaged |
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import spearmanr

from attnscope.analysis.maps import AttentionMaps

CLASSIFIER_METRICS = ("prob", "logit_diff", "flip")
EMBEDDING_METRICS = ("cosine",)
CAUSAL_METRICS = ("loss", "answer_logit_diff")


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax of ``[..., class]`` logits (float64)."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def margin(logits: np.ndarray, cls: int) -> np.ndarray:
    """``[...]`` logit of class ``cls`` minus the largest other logit, from ``[..., class]``."""
    z = np.asarray(logits, dtype=np.float64)
    others = np.delete(z, cls, axis=-1)
    return z[..., cls] - others.max(axis=-1)


def prob_change(clean_logits: np.ndarray, altered_logits: np.ndarray) -> np.ndarray:
    """``[B]`` change of the probability of the clean prediction; ``clean [C]``, ``altered [B, C]``."""
    cls = int(np.argmax(clean_logits))
    return softmax(altered_logits)[:, cls] - softmax(clean_logits)[cls]


def logit_diff_change(clean_logits: np.ndarray, altered_logits: np.ndarray) -> np.ndarray:
    """``[B]`` change of the clean prediction's margin over the best other class."""
    cls = int(np.argmax(clean_logits))
    return margin(altered_logits, cls) - margin(clean_logits, cls)


def flips(clean_logits: np.ndarray, altered_logits: np.ndarray) -> np.ndarray:
    """``[B]`` 1.0 where the altered prediction differs from the clean one, else 0.0."""
    return (np.argmax(altered_logits, axis=-1) != int(np.argmax(clean_logits))).astype(np.float64)


def cosine_distance(clean: np.ndarray, altered: np.ndarray) -> np.ndarray:
    """``[B]`` ``1 - cos`` between the clean embedding ``[D]`` and each altered one ``[B, D]``."""
    a = np.asarray(clean, dtype=np.float64)
    b = np.asarray(altered, dtype=np.float64)
    cos = b @ a / np.maximum(np.linalg.norm(b, axis=-1) * np.linalg.norm(a), 1e-30)
    return 1.0 - cos


def loss_change(clean_logprob: np.ndarray, altered_logprob: np.ndarray) -> np.ndarray:
    """``[B]`` mean change of the next-token loss (nats) over the chosen positions: ``clean [P]``
    and ``altered [B, P]`` are log-probabilities of the actual next tokens."""
    return (-np.asarray(altered_logprob, np.float64) + np.asarray(clean_logprob, np.float64)).mean(axis=-1)


def answer_diff_change(clean_answers: np.ndarray, altered_answers: np.ndarray) -> np.ndarray:
    """``[B]`` change of ``z_A - z_B`` averaged over positions: ``clean [P, 2]``, ``altered [B, P, 2]``."""
    c = np.asarray(clean_answers, np.float64)
    a = np.asarray(altered_answers, np.float64)
    return ((a[..., 0] - a[..., 1]) - (c[..., 0] - c[..., 1])).mean(axis=-1)


def head_confidence(maps: AttentionMaps) -> np.ndarray:
    """``[layer, head]`` attention-based importance: the mean over query rows of a head's largest
    weight (Voita et al. 2019's "confidence"); ``maps`` is ``[layer, head, query, key]``."""
    return maps.weights.max(axis=-1).mean(axis=-1).astype(np.float64)


@dataclass(frozen=True)
class RankAgreement:
    """Spearman rank correlation of two per-head scores (``rho`` in [-1, 1], ``p`` two-sided, ``n`` heads)."""

    rho: float | None
    p: float | None
    n: int


def rank_agreement(effect: np.ndarray, importance: np.ndarray) -> RankAgreement:
    """Spearman correlation of ``|effect|`` and ``importance`` (both ``[layer, head]``); ``rho`` is None
    when either is constant (no ranking to compare)."""
    return signed_rank_agreement(np.abs(np.asarray(effect, np.float64)), importance)


def signed_rank_agreement(x: np.ndarray, y: np.ndarray) -> RankAgreement:
    """Spearman correlation of ``x`` and ``y`` as they are, signs kept (both ``[layer, head]``); ``rho``
    is None when either is constant or there are fewer than 3 heads."""
    a = np.asarray(x, np.float64).reshape(-1)
    b = np.asarray(y, np.float64).reshape(-1)
    if a.shape != b.shape:
        raise ValueError(f"one score has {a.size} heads and the other {b.size}; give the same [layer, head] grid")
    if a.size < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return RankAgreement(None, None, int(a.size))
    res = spearmanr(a, b)
    return RankAgreement(float(res.statistic), float(res.pvalue), int(a.size))


def top_heads(effect: np.ndarray, k: int = 5) -> list[tuple[int, int, float]]:
    """The ``k`` heads of largest ``|effect|`` as ``(layer, head, effect)``, largest first."""
    e = np.asarray(effect, np.float64)
    order = np.argsort(-np.abs(e), axis=None, kind="stable")[:k]
    return [(int(a), int(b), float(e[a, b])) for a, b in (np.unravel_index(i, e.shape) for i in order)]
