"""Plausibility: agreement of token scores with human rationales (ERASER ``metrics.py`` style).

- Token F1: the hard rationale (top-k% tokens by score) against the human tokens; per example
  P/R/F1, averaged over examples (ERASER's instance macro F1).
- IOU F1: contiguous runs of the hard rationale are predicted spans; a predicted span is a true
  positive when its best IOU with a human span is >= 0.5. Per example P = TP/#pred, R = TP/#gold;
  the data-set value is F1 of the mean P and mean R (ERASER ``partial_match_score``, macro).
- AUPRC: area under the precision-recall curve of the soft scores against the human mask, per
  example (scikit-learn's ``precision_recall_curve`` + ``auc``, reimplemented in numpy), averaged over
  examples that have at least one human token.

Special positions are left out of every comparison. ``word_mask_to_tokens`` maps word-level human
marks onto subword tokens (a subword is marked when its word is).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PRF:
    precision: float
    recall: float
    f1: float


def _f1(p: float, r: float) -> float:
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def word_mask_to_tokens(word_ids: Sequence[int | None], word_mask: Sequence[int]) -> np.ndarray:
    """Token-level 0/1 mask from word-level marks; ``word_ids[t]`` is token t's word (None: special)."""
    return np.array([0 if w is None else int(word_mask[w]) for w in word_ids], dtype=np.int8)


def token_prf(pred: np.ndarray, true: np.ndarray) -> PRF:
    """Token-level P/R/F1 of two 0/1 masks of equal length."""
    pred, true = np.asarray(pred, bool), np.asarray(true, bool)
    tp = int((pred & true).sum())
    p = tp / pred.sum() if pred.sum() else 0.0
    r = tp / true.sum() if true.sum() else 0.0
    return PRF(float(p), float(r), _f1(p, r))


def spans(mask: np.ndarray) -> list[tuple[int, int]]:
    """Contiguous runs of 1 in a 0/1 mask as half-open ``(start, end)`` pairs."""
    m = np.concatenate([[0], np.asarray(mask, dtype=np.int8) != 0, [0]]).astype(np.int8)
    d = np.diff(m)
    return list(zip(np.flatnonzero(d == 1).tolist(), np.flatnonzero(d == -1).tolist()))


def iou_counts(pred: np.ndarray, true: np.ndarray, threshold: float = 0.5) -> tuple[int, int, int]:
    """(true-positive predicted spans, #predicted spans, #gold spans) at an IOU threshold."""
    ps, ts = spans(pred), spans(true)
    tp = 0
    for a, b in ps:
        best = 0.0
        for c, d in ts:
            inter = max(0, min(b, d) - max(a, c))
            union = (b - a) + (d - c) - inter
            best = max(best, inter / union if union else 0.0)
        tp += int(best >= threshold)
    return tp, len(ps), len(ts)


def iou_prf(pred: np.ndarray, true: np.ndarray, threshold: float = 0.5) -> PRF:
    tp, n_pred, n_true = iou_counts(pred, true, threshold)
    p = tp / n_pred if n_pred else 0.0
    r = tp / n_true if n_true else 0.0
    return PRF(p, r, _f1(p, r))


def precision_recall_curve(true: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(precision, recall) as scikit-learn (>= 1.1) computes them: recall decreasing, ends at (P=1, R=0)."""
    true = np.asarray(true, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    order = np.argsort(scores, kind="mergesort")[::-1]
    s, y = scores[order], true[order]
    distinct = np.flatnonzero(np.diff(s)) if len(s) > 1 else np.array([], dtype=int)
    thresh_idx = np.r_[distinct, len(y) - 1]
    tps = np.cumsum(y)[thresh_idx]
    fps = 1 + thresh_idx - tps
    precision = np.divide(tps, tps + fps, out=np.zeros_like(tps), where=(tps + fps) != 0)
    recall = tps / tps[-1]
    return np.r_[precision[::-1], 1.0], np.r_[recall[::-1], 0.0]


def auprc(true: np.ndarray, scores: np.ndarray) -> float | None:
    """Area under the precision-recall curve (trapezoids over recall); None without a positive."""
    true = np.asarray(true)
    if true.sum() == 0:
        return None
    precision, recall = precision_recall_curve(true, scores)
    return float(abs(np.trapezoid(precision, recall)))


@dataclass(frozen=True)
class Plausibility:
    """Per-example plausibility numbers (``auprc`` is None when the human mask is empty)."""

    token: PRF
    iou: PRF
    auprc: float | None


def plausibility(
    scores: np.ndarray, human: np.ndarray, hard: np.ndarray, special: Sequence[int] = (), threshold: float = 0.5
) -> Plausibility:
    """Scores vs the human 0/1 token mask; ``hard`` is the 0/1 hard rationale (top-k% tokens)."""
    keep = np.ones(len(human), dtype=bool)
    keep[list(special)] = False
    s, h, r = np.asarray(scores)[keep], np.asarray(human)[keep], np.asarray(hard)[keep]
    return Plausibility(token_prf(r, h), iou_prf(r, h, threshold), auprc(h, s))


def aggregate_plausibility(items: Sequence[Plausibility]) -> dict:
    """Token F1 (mean per-example F1), IOU F1 (F1 of mean P and mean R), mean AUPRC."""
    if not items:
        return {}
    au = [p.auprc for p in items if p.auprc is not None]
    iou_p = float(np.mean([p.iou.precision for p in items]))
    iou_r = float(np.mean([p.iou.recall for p in items]))
    return {
        "token_f1": float(np.mean([p.token.f1 for p in items])),
        "iou_f1": _f1(iou_p, iou_r),
        "iou_precision": iou_p,
        "iou_recall": iou_r,
        "auprc": float(np.mean(au)) if au else None,
        "n_with_rationale": len(au),
    }
