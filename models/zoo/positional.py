"""Positional logit biases ``bias(n_query, n_key) -> [head, query, key]``.

- ``GaussianBias``: Cordonnier et al.'s quadratic encoding (docs/methods/cordonnier.md): content-free heads
  with a learnable centre ``mu_h`` and spread; ``logit = -1/2 (delta - mu)^T P (delta - mu)`` with
  ``P = s_h^2 I`` (isotropic) or ``P = S_h^T S_h`` (full), ``delta = key - query`` on the grid.
- ``Learned2DBias``: learned row/column relative embeddings (docs/methods/cordonnier.md) read by per-head keys.
- ``ShiftBias``: Andreoli's learnable mixture over 1-D shift matrices (docs/methods/shift.md):
  ``bias[h, n, m] = sum_delta lambda[h, delta] S_delta[m, n]`` with ``delta = m - n`` in ``[-r, r]``.
"""

from __future__ import annotations

import torch
from torch import nn


def grid_offsets(rows: int, cols: int) -> torch.Tensor:
    """``delta[q, k] = pos(k) - pos(q)`` on a row-major grid: float ``[N, N, 2]`` (row, col)."""
    r, c = torch.meshgrid(torch.arange(rows), torch.arange(cols), indexing="ij")
    pos = torch.stack([r.flatten(), c.flatten()], dim=-1).float()  # (N, 2)
    return pos[None, :, :] - pos[:, None, :]


class GaussianBias(nn.Module):
    """Content-free Gaussian heads on a ``rows x cols`` grid (isotropic or full covariance)."""

    def __init__(
        self, heads: int, grid: tuple[int, int], full: bool = False, mu_std: float = 2.0, sigma_std: float = 0.01
    ):
        super().__init__()
        self.full = full
        self.register_buffer("delta", grid_offsets(*grid), persistent=False)
        self.centers = nn.Parameter(torch.randn(heads, 2) * mu_std)  # mu: (H, 2)
        if full:
            self.spreads = nn.Parameter(torch.eye(2).repeat(heads, 1, 1) + torch.randn(heads, 2, 2) * sigma_std)
        else:
            self.spreads = nn.Parameter(1 + torch.randn(heads) * sigma_std)  # s_h

    def precision(self) -> torch.Tensor:
        """``P_h`` (H, 2, 2): ``s_h^2 I`` or ``S_h^T S_h``."""
        if self.full:
            return self.spreads.transpose(-1, -2) @ self.spreads
        eye = torch.eye(2, device=self.spreads.device)
        return (self.spreads**2)[:, None, None] * eye

    def covariance(self) -> torch.Tensor:
        """``Sigma_h = P_h^{-1}`` (H, 2, 2), for drawing each head's spread."""
        return torch.linalg.inv(self.precision())

    def forward(self, n_query: int, n_key: int) -> torch.Tensor:
        d = self.delta[None] - self.centers[:, None, None, :]  # (H, N, N, 2)
        quad = torch.einsum("hqki,hij,hqkj->hqk", d, self.precision(), d)
        return -0.5 * quad


class Learned2DBias(nn.Module):
    """``score_h(q, k) = w_row,h . r_row[delta_row] + w_col,h . r_col[delta_col]`` (no content)."""

    def __init__(self, heads: int, grid: tuple[int, int], dim: int):
        super().__init__()
        rows, cols = grid
        self.rows, self.cols = rows, cols
        self.row_emb = nn.Embedding(2 * rows - 1, dim)
        self.col_emb = nn.Embedding(2 * cols - 1, dim)
        self.head_keys_row = nn.Linear(dim, heads, bias=False)
        self.head_keys_col = nn.Linear(dim, heads, bias=False)
        delta = grid_offsets(rows, cols).long()
        self.register_buffer("row_idx", delta[..., 0] + rows - 1, persistent=False)
        self.register_buffer("col_idx", delta[..., 1] + cols - 1, persistent=False)

    def forward(self, n_query: int, n_key: int) -> torch.Tensor:
        row = self.head_keys_row(self.row_emb.weight).T  # (H, 2R-1)
        col = self.head_keys_col(self.col_emb.weight).T  # (H, 2C-1)
        return row[:, self.row_idx] + col[:, self.col_idx]  # (H, N, N)


def shift_matrix(n: int, delta: int) -> torch.Tensor:
    """``S_delta[m, n] = 1`` iff ``m = n + delta`` (key m feeds query n), zero-padded: ``[key, query]``."""
    return (
        torch.eye(n).roll(delta, dims=0)
        * (torch.arange(n)[None, :] + delta < n)
        * (torch.arange(n)[None, :] + delta >= 0)
    )


class ShiftBias(nn.Module):
    """Learnable mixture over shift matrices ``S_delta``, ``delta in [-r, r]`` (lambda init 0, or
    ``+tap_init`` on one tap per head for the pure-shift limit)."""

    def __init__(self, heads: int, radius: int = 2, tap_init: float | None = None):
        super().__init__()
        self.radius = radius
        lam = torch.zeros(heads, 2 * radius + 1)
        if tap_init is not None:
            for h in range(heads):
                lam[h, h % (2 * radius + 1)] = tap_init
        self.lam = nn.Parameter(lam)  # lambda: (H, 2r+1), column j is delta = j - r

    def forward(self, n_query: int, n_key: int) -> torch.Tensor:
        q = torch.arange(n_query, device=self.lam.device)[:, None]
        k = torch.arange(n_key, device=self.lam.device)[None, :]
        delta = k - q  # (N, M)
        inside = delta.abs() <= self.radius
        idx = delta.clamp(-self.radius, self.radius) + self.radius
        return self.lam[:, idx] * inside  # (H, N, M)
