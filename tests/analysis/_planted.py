"""Builders of synthetic attention maps with planted, exactly known structure (shared by tests)."""

from __future__ import annotations

import numpy as np

from attnscope.analysis.implied_conv import shift_matrix
from attnscope.analysis.maps import AttentionMaps


def random_rows(rng: np.random.Generator, shape, sparsity: float = 0.0) -> np.ndarray:
    """Row-stochastic float32 ``[..., n]`` with a share ``sparsity`` of exact zeros (never a whole row)."""
    w = rng.random(shape).astype(np.float32) + np.float32(1e-3)
    if sparsity:
        w[rng.random(shape) < sparsity] = 0.0
        w[..., 0] += w.sum(-1) == 0  # keep every row non-empty
    return (w / w.sum(-1, keepdims=True, dtype=np.float64)).astype(np.float32)


def planted_1d(plants, n, special=(0,), k=8, noise=0.0, seed=0) -> AttentionMaps:
    """One layer, one head per plant. A plant is ``{offset: weight}``: every non-special query ``q``
    puts ``weight`` on ``q + offset`` when that key exists and is not special; the rest of its
    mass (missing border cells, ``1 - sum(weights)``) goes to the special columns, except a
    ``noise`` share spread at random over keys farther than ``k`` from ``q`` (outside the scan).
    Special rows attend to their neighbours, which must not count."""
    rng = np.random.default_rng(seed)
    special = tuple(special)
    keep = np.ones(n, bool)
    keep[list(special)] = False
    w = np.zeros((1, len(plants), n, n), np.float64)
    for h, plant in enumerate(plants):
        for q in range(n):
            if not keep[q]:
                w[0, h, q, (q + 1) % n] = 1.0  # a perfect "next" row that the scan must ignore
                continue
            for d, val in plant.items():
                if 0 <= q + d < n and keep[q + d]:
                    w[0, h, q, q + d] += val
            far = np.flatnonzero(keep & (np.abs(np.arange(n) - q) > k))
            if noise and far.size:
                share = rng.random(far.size)
                w[0, h, q, far] += noise * share / share.sum()
            rest = 1.0 - w[0, h, q].sum()
            w[0, h, q, list(special)] += rest / len(special)
    return AttentionMaps(w.astype(np.float32), tokens=[f"t{i}" for i in range(n)], special=special)


def planted_2d(plants, grid, radius=3, noise=0.0, seed=0) -> AttentionMaps:
    """Like ``planted_1d`` on a ``rows x cols`` grid with a CLS position 0 before the cells;
    offsets are ``(drow, dcol)`` and noise goes to cells farther than ``radius`` (Chebyshev)."""
    rng = np.random.default_rng(seed)
    rows, cols = grid
    n = rows * cols + 1
    w = np.zeros((1, len(plants), n, n), np.float64)
    rr, cc = np.divmod(np.arange(rows * cols), cols)
    for h, plant in enumerate(plants):
        w[0, h, 0, 1] = 1.0  # the CLS row attends to the first cell; must be ignored
        for cell in range(rows * cols):
            q = cell + 1
            for (dr, dc), val in plant.items():
                r2, c2 = rr[cell] + dr, cc[cell] + dc
                if 0 <= r2 < rows and 0 <= c2 < cols:
                    w[0, h, q, 1 + r2 * cols + c2] += val
            far = 1 + np.flatnonzero(np.maximum(np.abs(rr - rr[cell]), np.abs(cc - cc[cell])) > radius)
            if noise and far.size:
                share = rng.random(far.size)
                w[0, h, q, far] += noise * share / share.sum()
            w[0, h, q, 0] += 1.0 - w[0, h, q].sum()
    return AttentionMaps(
        w.astype(np.float32), tokens=["[CLS]"] + [f"p{i}" for i in range(n - 1)], grid=grid, special=(0,)
    )


def maps_from(w, special=(), grid=None, causal=False) -> AttentionMaps:
    w = np.asarray(w, dtype=np.float32)
    return AttentionMaps(w, tokens=[f"t{i}" for i in range(w.shape[-1])], special=special, grid=grid, causal=causal)


def probe_dataset(count=40, n=10, seed=0):
    """Layer 0: noise unrelated to the label. Layer 1 head 0: a previous-token head for label 0,
    a next-token head for label 1 (plus noise); so only layer 1 carries the label."""
    rng = np.random.default_rng(seed)
    items, labels = [], []
    for i in range(count):
        y = i % 2
        w = random_rows(rng, (2, 2, n, n))
        s = shift_matrix(n, -1 if y == 0 else 1)
        s[0 if y == 0 else n - 1, 0 if y == 0 else n - 1] = 1  # the border row attends to itself
        w[1, 0] = 0.6 * s + 0.4 * random_rows(rng, (n, n))
        items.append(maps_from(w))
        labels.append(["prev", "next"][y])
    return items, labels
