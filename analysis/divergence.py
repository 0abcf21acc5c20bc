"""Comparing two runs head by head: Jensen-Shannon divergence between attention rows, total
variation, and the shape checks that say when two runs can be compared at all.

Two ``AttentionMaps`` are comparable when they have the same layers, heads and tokens count: two
texts on one model (a minimal pair: words changed one for one), or one text on two models with the
same layer/head shape and tokenizer (``minilm`` vs ``minilm-sst2``). Pure numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnscope.analysis.maps import AttentionMaps


def js_divergence(p: np.ndarray, q: np.ndarray, axis: int = -1, base: float = 2.0) -> np.ndarray:
    """Jensen-Shannon divergence ``0.5 KL(p || m) + 0.5 KL(q || m)``, ``m = (p + q) / 2``, of the
    distributions along ``axis`` (``0 log 0 = 0``). In base 2 it lies in ``[0, 1]``: 0 for equal
    distributions, 1 for disjoint supports. Symmetric; its square root is a metric.

    Args:
        p, q: arrays of the same shape, non-negative, each slice along ``axis`` summing to 1.
        axis: the distribution axis (keys, for attention ``[..., query, key]``).
        base: the logarithm's base (2: bits, ``np.e``: nats).

    Returns:
        ``p.shape`` without ``axis``.
    """
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    if p.shape != q.shape:
        raise ValueError(f"p and q must have one shape, got {p.shape} and {q.shape}")
    m = 0.5 * (p + q)

    def kl(a: np.ndarray) -> np.ndarray:
        ratio = np.divide(a, m, out=np.ones_like(a), where=a > 0)
        return np.sum(np.where(a > 0, a * np.log(ratio), 0.0), axis=axis)

    js = 0.5 * (kl(p) + kl(q)) / np.log(base)
    return np.clip(js, 0.0, None)  # -1e-17 from rounding is 0


def total_variation(p: np.ndarray, q: np.ndarray, axis: int = -1) -> np.ndarray:
    """``0.5 * sum |p - q|`` along ``axis``, in ``[0, 1]`` for distributions."""
    return 0.5 * np.sum(np.abs(np.asarray(p, np.float64) - np.asarray(q, np.float64)), axis=axis)


def comparable(a: AttentionMaps, b: AttentionMaps) -> str:
    """``""`` when ``a`` and ``b`` can be compared head by head, else a sentence saying why not."""
    if (a.n_layers, a.n_heads) != (b.n_layers, b.n_heads):
        return (
            f"the runs have different shapes: {a.model} has {a.n_layers} layers x {a.n_heads} heads, "
            f"{b.model} has {b.n_layers} x {b.n_heads}; compare models with the same layer/head shape"
        )
    if a.n_tokens != b.n_tokens:
        return (
            f"the runs have {a.n_tokens} and {b.n_tokens} tokens; a head-by-head comparison needs the same "
            "positions: use texts that differ word for word (a minimal pair), or one text on models "
            "that share a tokenizer"
        )
    return ""


@dataclass(frozen=True)
class HeadDivergences:
    """Per-head comparison of run A with run B (each ``[layer, head]``, mean over query rows).

    Attributes:
        js: Jensen-Shannon divergence (bits, in ``[0, 1]``) between A's and B's rows.
        tv: total variation between the rows, in ``[0, 1]``.
        max_abs_diff: largest ``|A - B|`` of any cell of the head's map.
    """

    js: np.ndarray
    tv: np.ndarray
    max_abs_diff: np.ndarray


def head_divergences(a: AttentionMaps, b: AttentionMaps) -> HeadDivergences:
    """Compare ``a`` and ``b`` (``[layer, head, query, key]`` each, same shape) head by head; one
    layer at a time (lazy maps never build their whole stack). ``ValueError`` (``comparable``'s
    sentence) when the shapes differ."""
    problem = comparable(a, b)
    if problem:
        raise ValueError(problem)
    js, tv, top = [], [], []
    for la, lb in zip(a.iter_layers(), b.iter_layers()):  # [head, query, key] each
        js.append(js_divergence(la, lb).mean(axis=-1))
        tv.append(total_variation(la, lb).mean(axis=-1))
        top.append(np.abs(np.asarray(la, np.float64) - lb).max(axis=(-2, -1)))
    return HeadDivergences(js=np.stack(js), tv=np.stack(tv), max_abs_diff=np.stack(top))
