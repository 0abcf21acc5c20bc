"""Attention rollout and attention flow (Abnar & Zuidema 2020), and gradient-weighted rollout.

Minimal version for the faithfulness explainers (numpy + scipy only).

- ``rollout(maps) -> [layer, query, key]``: Â^l = 0.5·mean_h A^l + 0.5·I, R^0 = Â^0, R^l = Â^l R^{l-1}.
  ``R[-1, i]`` is how output token i draws on the input tokens.
- ``flow(maps, max_tokens=64) -> [query, key]``: max-flow from output node (L, i) to input node
  (0, j) in the layered graph whose edge (l, i) -> (l-1, j) has capacity Â^l[i, j]; each row is then
  normalised to sum to 1. Solved with scipy's ``maximum_flow`` (integer capacities: weights are
  scaled by 1e6), one solve per (query, key) pair, so it is only offered for short inputs.
- ``gradient_rollout(weighted) -> [query, key]``: Chefer et al. 2021 ("generic attention"): for each
  layer, Ā = mean_h max(0, ∂y/∂A ⊙ A) is given; R = I, then R <- R + Ā R.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_flow

from analysis.maps import AttentionMaps

FLOW_SCALE = 1_000_000


class TooLongForFlowError(ValueError):
    """Attention flow was asked for an input longer than its cap."""

    def __init__(self, n_tokens: int, max_tokens: int):
        self.n_tokens, self.max_tokens = n_tokens, max_tokens
        super().__init__(f"attention flow solves one max-flow per token pair and is capped at {max_tokens} "
                         f"tokens; this input has {n_tokens}. Use rollout for long inputs or shorten the text")


def augmented(maps: AttentionMaps) -> np.ndarray:
    """Â ``[layer, query, key]``: head mean plus the residual, rows renormalised (0.5·W + 0.5·I)."""
    w = maps.weights.astype(np.float64).mean(axis=1)  # [layer, query, key]
    a = w + np.eye(w.shape[-1])[None]
    return a / a.sum(axis=-1, keepdims=True)


def rollout(maps: AttentionMaps) -> np.ndarray:
    """Cumulative rollout after each layer, ``[layer, query, key]`` (rows sum to 1)."""
    a = augmented(maps)
    out = np.empty_like(a)
    r = np.eye(a.shape[-1])
    for layer in range(a.shape[0]):
        r = a[layer] @ r
        out[layer] = r
    return out


def _flow_graph(a: np.ndarray) -> csr_array:
    """Layered graph: node (l, i) = l·n + i for l in 0..L; edges (l, i) -> (l-1, j), cap Â^l[i, j]."""
    n_layer, n, _ = a.shape
    rows, cols, caps = [], [], []
    for layer in range(1, n_layer + 1):
        i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        rows.append((layer * n + i).ravel())
        cols.append(((layer - 1) * n + j).ravel())
        caps.append(np.rint(a[layer - 1].ravel() * FLOW_SCALE))
    size = (n_layer + 1) * n
    cap = np.concatenate(caps).astype(np.int32)
    keep = cap > 0
    return csr_array((cap[keep], (np.concatenate(rows)[keep], np.concatenate(cols)[keep])), shape=(size, size))


def flow_rows(maps: AttentionMaps, queries: Sequence[int], max_tokens: int = 64) -> np.ndarray:
    """Attention flow of the given output positions, ``[len(queries), key]`` (rows sum to 1)."""
    n = maps.n_tokens
    if n > max_tokens:
        raise TooLongForFlowError(n, max_tokens)
    a = augmented(maps)
    graph = _flow_graph(a)
    top = a.shape[0] * n
    out = np.zeros((len(queries), n))
    for row, q in enumerate(queries):
        for k in range(n):
            out[row, k] = maximum_flow(graph, top + int(q), k).flow_value
    total = out.sum(axis=1, keepdims=True)
    return np.divide(out, total, out=np.zeros_like(out), where=total > 0)


def flow(maps: AttentionMaps, max_tokens: int = 64) -> np.ndarray:
    """Attention flow of every output position, ``[query, key]``."""
    n = maps.weights.shape[-1]
    return flow_rows(maps, range(n), max_tokens)


def gradient_rollout(weighted: np.ndarray) -> np.ndarray:
    """Chefer-style rollout of per-layer relevance maps ``[layer, query, key]`` -> ``[query, key]``."""
    weighted = np.asarray(weighted, dtype=np.float64)
    r = np.eye(weighted.shape[-1])
    for layer in range(weighted.shape[0]):
        r = r + weighted[layer] @ r
    return r
