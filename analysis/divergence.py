"""Comparing two runs head by head: Jensen-Shannon divergence between attention rows, total
variation, and the shape checks that say when two runs can be compared at all.

Two ``AttentionMaps`` are comparable when they have the same layers, heads and tokens count: two
texts on one model (a minimal pair: words changed one for one), or one text on two models with the
same layer/head shape and tokenizer (``minilm`` vs ``minilm-sst2``). Pure numpy.
"""

from __future__ import annotations

import difflib
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


def comparable(a: AttentionMaps, b: AttentionMaps, aligned: bool = False) -> str:
    """``""`` when ``a`` and ``b`` can be compared head by head, else a sentence saying why not.
    ``aligned``: compared on aligned positions (``aligned_positions``), so the token counts may differ."""
    if (a.n_layers, a.n_heads) != (b.n_layers, b.n_heads):
        return (
            f"the runs have different shapes: {a.model} has {a.n_layers} layers x {a.n_heads} heads, "
            f"{b.model} has {b.n_layers} x {b.n_heads}; compare models with the same layer/head shape"
        )
    if not aligned and a.n_tokens != b.n_tokens:
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


def aligned_positions(tokens_a: list[str], tokens_b: list[str]) -> tuple[list[int], list[int]]:
    """The positions of A and of B that stand for each other, in order: tokens that are equal
    (``difflib``'s longest matching blocks) and one-for-one substitutions (a replaced run of the same
    length on both sides: "cat" -> "dog"). Insertions and deletions, and replaced runs of unequal
    length, are left out. Equal-length token lists align position by position."""
    if len(tokens_a) == len(tokens_b):
        return list(range(len(tokens_a))), list(range(len(tokens_b)))
    pos_a, pos_b = [], []
    matcher = difflib.SequenceMatcher(a=tokens_a, b=tokens_b, autojunk=False)
    for op, i0, i1, j0, j1 in matcher.get_opcodes():
        if op == "equal" or (op == "replace" and i1 - i0 == j1 - j0):
            pos_a.extend(range(i0, i1))
            pos_b.extend(range(j0, j1))
    return pos_a, pos_b


def restrict(layer: np.ndarray, positions: list[int]) -> np.ndarray:
    """One layer's maps ``[head, query, key]`` on ``positions`` only: those rows and keys, each row
    renormalised to sum to 1 (a row left with no weight stays 0). Returns ``[head, P, P]`` float64."""
    idx = np.asarray(positions, dtype=np.intp)
    sub = np.asarray(layer, np.float64)[:, idx][:, :, idx]
    mass = sub.sum(axis=-1, keepdims=True)
    return np.divide(sub, mass, out=np.zeros_like(sub), where=mass > 0)


def head_divergences(
    a: AttentionMaps, b: AttentionMaps, positions: tuple[list[int], list[int]] | None = None
) -> HeadDivergences:
    """Compare ``a`` and ``b`` (``[layer, head, query, key]`` each, same shape) head by head; one
    layer at a time (lazy maps never build their whole stack). ``ValueError`` (``comparable``'s
    sentence) when the shapes differ.

    ``positions``: ``(positions of a, positions of b)`` of equal length (``aligned_positions``); the
    maps are then compared on those rows and keys only, each row renormalised (``restrict``), and
    the token counts may differ."""
    problem = comparable(a, b, aligned=positions is not None)
    if positions is not None and len(positions[0]) != len(positions[1]):
        problem = f"{len(positions[0])} positions of A against {len(positions[1])} of B; they must pair up"
    if problem:
        raise ValueError(problem)
    js, tv, top = [], [], []
    for la, lb in zip(a.iter_layers(), b.iter_layers()):  # [head, query, key] each
        if positions is not None:
            la, lb = restrict(la, positions[0]), restrict(lb, positions[1])  # [head, P, P] each
        js.append(js_divergence(la, lb).mean(axis=-1))
        tv.append(total_variation(la, lb).mean(axis=-1))
        top.append(np.abs(np.asarray(la, np.float64) - lb).max(axis=(-2, -1)))
    return HeadDivergences(js=np.stack(js), tv=np.stack(tv), max_abs_diff=np.stack(top))
