"""Attention rollout and attention flow (Abnar & Zuidema, ACL 2020; docs/methods/rollout.md).

Heads are averaged per layer, ``W^l = mean_h A^{l,h}``, and the residual stream is added:
``Ahat^l = 0.5 W^l + 0.5 I`` (rows still sum to 1). Rollout multiplies down the layers,
``R^1 = Ahat^1``, ``R^l = Ahat^l R^(l-1)``; row ``i`` of ``R^L`` attributes output position ``i`` to
the input positions. Flow treats ``Ahat`` as capacities of a layered graph (node ``(l, i)`` feeds
``(l-1, j)`` with capacity ``Ahat^l[i, j]``) and takes, for each output ``i`` and input ``j``, the
max-flow value from ``(L, i)`` to ``(0, j)``, each output row then normalised to sum to 1.

Token importances are one row: the CLS-like position (special position 0) by default, else the
mean over all rows. With ``maps.grid`` they are also given as ``[rows, cols]`` over the grid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_flow

from attnscope.analysis.maps import AttentionMaps

MAX_FLOW_TOKENS = 64  # one max-flow per (output, input) pair: ~N^2 solves on an L*N^2-edge graph
FLOW_SCALE = 1 << 24  # capacities are rounded to multiples of 2^-24 (scipy needs integers);
# a flow value is off by at most (edges in a minimum cut) * 2^-25, below 1e-4 for N <= 64


class TooLongForFlowError(ValueError):
    """Attention flow was asked for an input longer than its cap."""

    def __init__(self, n_tokens: int, max_tokens: int = MAX_FLOW_TOKENS):
        self.n_tokens, self.max_tokens = n_tokens, max_tokens
        super().__init__(
            f"attention flow is limited to {max_tokens} tokens (it solves one max-flow per token pair); "
            f"this input has {n_tokens}. Use rollout, or shorten the input."
        )


@dataclass(frozen=True)
class TokenImportance:
    """Importance of each input position for one output row. ``values`` ``[key]``; ``grid``
    ``[rows, cols]`` over the non-special positions when the maps have a grid, else ``None``;
    ``row``: the output position explained (``None`` = mean over all rows)."""

    values: np.ndarray
    grid: np.ndarray | None
    row: int | None
    method: str


def _head_mean(maps: AttentionMaps) -> np.ndarray:
    if not maps.is_lazy:
        return maps.weights.mean(axis=1, dtype=np.float32)  # [layer, query, key]
    out = np.empty((maps.n_layers, maps.n_tokens, maps.n_tokens), dtype=np.float32)
    for i, layer in enumerate(maps.iter_layers()):  # lazy maps: one layer alive at a time
        out[i] = layer.mean(axis=0, dtype=np.float32)
    return out


def augmented(head_mean: np.ndarray) -> np.ndarray:
    """``Ahat = 0.5 W + 0.5 I`` for every layer at once: ``[layer, query, key]`` in and out."""
    out = np.asarray(head_mean, dtype=np.float32) * np.float32(0.5)
    idx = np.arange(out.shape[-1])
    out[:, idx, idx] += np.float32(0.5)
    return out


def default_row(maps: AttentionMaps) -> int | None:
    """The output row: the last position of causal maps (the one that predicts the next token), the
    CLS-like row (special position 0) of an encoder, or ``None`` (mean over rows)."""
    if maps.causal:
        return maps.n_tokens - 1
    return 0 if 0 in maps.special else None


def _importance(maps: AttentionMaps, values: np.ndarray, row: int | None, method: str) -> TokenImportance:
    values = np.asarray(values, dtype=np.float32)
    grid = None
    if maps.grid is not None:
        grid = values[maps.grid_positions()].reshape(maps.grid)
    return TokenImportance(values=values, grid=grid, row=row, method=method)


def rollout_of_values(maps: AttentionMaps, values: np.ndarray, row: int | None) -> TokenImportance:
    """Rollout importance already computed (``values [key]`` of ``row``, e.g. by
    ``analysis.mean_walk.walk_head_means``) as a ``TokenImportance`` of ``maps`` (a grid for images)."""
    return _importance(maps, values, row, "rollout")


@dataclass(frozen=True)
class Rollout:
    """``joint[layer, query, key]``: ``R^l`` after each layer (``joint[-1]`` is ``R^L``)."""

    joint: np.ndarray
    maps: AttentionMaps

    def importance(self, row: int | None = -1) -> TokenImportance:
        """Row ``row`` of ``R^L`` (``-1``: the CLS-like row, ``None``: mean over rows)."""
        row = default_row(self.maps) if row == -1 else row
        final = self.joint[-1]
        values = final.mean(axis=0) if row is None else final[row]
        return _importance(self.maps, values, row, "rollout")


def rollout(maps: AttentionMaps, head_mean: np.ndarray | None = None) -> Rollout:
    """Full rollout matrices of ``maps`` (``[layer, head, query, key]``): one ``[n, n]`` matrix
    product per layer. ``head_mean`` ``[layer, query, key]`` may be passed if already computed."""
    a = augmented(_head_mean(maps) if head_mean is None else head_mean)
    joint = np.empty_like(a)
    joint[0] = a[0]
    for li in range(1, a.shape[0]):
        np.matmul(a[li], joint[li - 1], out=joint[li])
    return Rollout(joint=joint, maps=maps)


def rollout_importance(
    maps: AttentionMaps, row: int | None = -1, head_mean: np.ndarray | None = None
) -> TokenImportance:
    """Row ``row`` of ``R^L`` without forming ``R``: a vector times each ``Ahat`` from the top
    layer down (``O(layers * n^2)``). ``row=-1``: CLS-like row; ``None``: mean over rows."""
    w = _head_mean(maps) if head_mean is None else np.asarray(head_mean, dtype=np.float32)
    row = default_row(maps) if row == -1 else row
    n = w.shape[-1]
    v = np.full(n, 1.0 / n, dtype=np.float32) if row is None else np.eye(1, n, int(row), np.float32)[0]
    for li in range(w.shape[0] - 1, -1, -1):  # v Ahat = 0.5 v W + 0.5 v
        v = np.float32(0.5) * (v @ w[li]) + np.float32(0.5) * v
    return _importance(maps, v, row, "rollout")


@dataclass(frozen=True)
class Flow:
    """``flow[row, key]``: normalised max-flow from output ``rows[i]`` to each input position."""

    flow: np.ndarray
    rows: np.ndarray
    maps: AttentionMaps

    def importance(self, row: int | None = -1) -> TokenImportance:
        """Flow of one output row (``-1``: CLS-like; ``None``: mean over the computed rows)."""
        row = default_row(self.maps) if row == -1 else row
        if row is None:
            return _importance(self.maps, self.flow.mean(axis=0), None, "flow")
        hits = np.flatnonzero(self.rows == row)
        if hits.size == 0:
            raise KeyError(f"flow was not computed for row {row}; pass rows=[{row}, ...]")
        return _importance(self.maps, self.flow[hits[0]], row, "flow")


def _flow_graph(a: np.ndarray) -> csr_array:
    """Capacity graph over nodes ``l * n + i`` (``l = 0`` inputs .. ``L`` outputs)."""
    n_layer, n, _ = a.shape
    cap = np.rint(a.astype(np.float64) * FLOW_SCALE).astype(np.int32)  # [layer, query, key]
    li, qi, ki = np.nonzero(cap)
    src = (li + 1) * n + qi  # node (l+1, q) feeds node (l, k)
    dst = li * n + ki
    size = (n_layer + 1) * n
    return csr_array((cap[li, qi, ki], (src, dst)), shape=(size, size))


def attention_flow(
    maps: AttentionMaps, rows=None, head_mean: np.ndarray | None = None, max_tokens: int = MAX_FLOW_TOKENS
) -> Flow:
    """Attention flow of ``maps`` (``[layer, head, query, key]``) for output ``rows`` (default all),
    by ``scipy.sparse.csgraph.maximum_flow`` (Dinic) on integer capacities (``FLOW_SCALE``).
    Raises ``TooLongForFlowError`` (a ``ValueError``) above ``max_tokens`` positions."""
    n = maps.n_tokens
    if n > max_tokens:
        raise TooLongForFlowError(n, max_tokens)
    a = augmented(_head_mean(maps) if head_mean is None else head_mean)
    graph = _flow_graph(a)
    top = a.shape[0] * n
    rows = np.arange(n) if rows is None else np.atleast_1d(np.asarray(rows, dtype=np.int64))
    flow = np.zeros((rows.size, n), dtype=np.float64)
    for r, i in enumerate(rows):
        for j in range(n):
            flow[r, j] = maximum_flow(graph, top + int(i), j).flow_value
    flow /= FLOW_SCALE
    sums = flow.sum(axis=1, keepdims=True)
    flow = np.divide(flow, sums, out=np.zeros_like(flow), where=sums > 0)
    return Flow(flow=flow.astype(np.float32), rows=rows, maps=maps)


def gradient_rollout(weighted: np.ndarray) -> np.ndarray:
    """Chefer-style rollout of per-layer relevance maps ``[layer, query, key]`` (e.g. attention x
    gradient, clamped at 0 and head-averaged) -> ``[query, key]``: ``R <- R + W^l R`` from ``R = I``."""
    weighted = np.asarray(weighted, dtype=np.float64)
    r = np.eye(weighted.shape[-1])
    for layer in range(weighted.shape[0]):
        r = r + weighted[layer] @ r
    return r
