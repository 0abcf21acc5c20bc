"""SAN: pairwise and patchwise local self-attention (Zhao, Jia & Koltun 2020), on the 14x14 grid
after 2x2 space-to-depth, in the same pre-LN block as the other zoo models.

For position i and each j in its k x k window R(i) (out-of-image positions masked):

- pairwise:  ``w[h, i, j] = softmax_j gamma([phi(x_i) - psi(x_j), p_j - p_i])_h``
- patchwise: ``w[h, i, :] = softmax_j gamma([phi(x_i), psi(x_j) for j in R(i)])_{h, :}``

``y_i = sum_j w[h(c), i, j] * beta(x_j)_c``: channel c of the values uses the weights of its group
("head") ``h(c) = c // (D / H)``. The window weights of each position are its attention map
(scattered into ``[query, key]``, zero outside the window). HA-SAN shares one block across passes
and keeps ``psi(x_j)`` (the key side) from the first pass.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from attnscope.models.zoo.arch import SANArch
from attnscope.models.zoo.attention import Block, Encoder
from attnscope.models.zoo.nets import SharedBlockMixin, pool, space_to_depth

NEG = -1e9


def window_index(rows: int, cols: int, k: int) -> torch.Tensor:
    """``idx[i, j]``: flat grid index of the j-th window position of query i, or -1 outside. ``[N, k*k]``."""
    r = k // 2
    qr, qc = torch.meshgrid(torch.arange(rows), torch.arange(cols), indexing="ij")
    dr, dc = torch.meshgrid(torch.arange(-r, r + 1), torch.arange(-r, r + 1), indexing="ij")
    kr = qr.flatten()[:, None] + dr.flatten()[None]
    kc = qc.flatten()[:, None] + dc.flatten()[None]
    inside = (kr >= 0) & (kr < rows) & (kc >= 0) & (kc < cols)
    return torch.where(inside, kr * cols + kc, torch.full_like(kr, -1))


class LocalAttention(nn.Module):
    def __init__(
        self,
        dim: int,
        heads: int,
        grid: tuple[int, int],
        kernel: int = 3,
        mode: str = "pairwise",
        rel_dim: int = 16,
        hierarchical: bool = False,
    ):
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim {dim} must be divisible by heads {heads}")
        self.heads, self.k2, self.mode, self.hierarchical = heads, kernel * kernel, mode, hierarchical
        idx = window_index(*grid, kernel)
        self.register_buffer("idx", idx, persistent=False)  # (N, K)
        self.phi, self.psi, self.beta = nn.Linear(dim, rel_dim), nn.Linear(dim, rel_dim), nn.Linear(dim, dim)
        r = kernel // 2
        dr, dc = torch.meshgrid(torch.arange(-r, r + 1), torch.arange(-r, r + 1), indexing="ij")
        self.register_buffer(
            "offsets", torch.stack([dr.flatten(), dc.flatten()], -1).float() / max(r, 1), persistent=False
        )  # (K, 2)
        if mode == "pairwise":
            self.gamma = nn.Sequential(nn.Linear(rel_dim + 2, rel_dim), nn.ReLU(), nn.Linear(rel_dim, heads))
        elif mode == "patchwise":
            self.gamma = nn.Sequential(
                nn.Linear(rel_dim * (self.k2 + 1), rel_dim * 2), nn.ReLU(), nn.Linear(rel_dim * 2, heads * self.k2)
            )
        else:
            raise ValueError(f"SAN mode must be pairwise or patchwise, not {mode!r}")
        self.out = nn.Linear(dim, dim)

    def gather(self, t: torch.Tensor) -> torch.Tensor:
        """``[B, N, C]`` -> window values ``[B, N, K, C]`` (zeros outside the image)."""
        padded = F.pad(t, (0, 0, 0, 1))  # index -1 -> the zero row appended at the end
        return padded[:, self.idx]

    def forward(self, x: torch.Tensor, state: dict, key_mask=None):
        """``x`` (B, N, D) -> output (B, N, D), window weights (B, H, N, K), state."""
        b, n, d = x.shape
        if self.hierarchical:
            if "keys" not in state:
                state["keys"] = self.psi(x)  # psi(x^0), kept for every pass
            keys = state["keys"]
        else:
            keys = self.psi(x)
        q, kw = self.phi(x), self.gather(keys)  # (B, N, R), (B, N, K, R)
        if self.mode == "pairwise":
            rel = q[:, :, None] - kw
            pos = self.offsets[None, None].expand(b, n, -1, -1)
            logits = self.gamma(torch.cat([rel, pos], -1)).permute(0, 3, 1, 2)  # (B, H, N, K)
        else:
            feats = torch.cat([q, kw.flatten(2)], -1)
            logits = self.gamma(feats).view(b, n, self.heads, self.k2).permute(0, 2, 1, 3)
        logits = logits.masked_fill((self.idx < 0)[None, None], NEG)
        w = torch.softmax(logits, dim=-1)  # (B, H, N, K)
        v = self.gather(self.beta(x)).view(b, n, self.k2, self.heads, d // self.heads)  # (B, N, K, H, c)
        y = torch.einsum("bhnk,bnkhc->bnhc", w, v).reshape(b, n, d)
        return self.out(y), w, state

    def dense(self, w: torch.Tensor) -> torch.Tensor:
        """Window weights ``[..., query, K]`` -> attention maps ``[..., query, key]`` (zero outside)."""
        n = self.idx.shape[0]
        out = w.new_zeros(*w.shape[:-1], n + 1)
        index = torch.where(self.idx < 0, n, self.idx).expand_as(w)
        return out.scatter_add(-1, index, w)[..., :n]


class SAN(SharedBlockMixin, nn.Module):
    """2x2 space-to-depth -> Linear -> SAN blocks (pairwise or patchwise) -> mean pool -> 10 classes."""

    def __init__(self, arch: SANArch):
        super().__init__()
        self.arch = arch
        p, dim, hier = arch.patch, arch.dim, arch.hierarchical
        self.grid = (28 // p, 28 // p)
        self.embed = nn.Linear(p * p, dim)
        self.encoder = Encoder(
            lambda i: Block(
                dim,
                LocalAttention(dim, arch.heads, self.grid, arch.kernel, arch.mode, arch.rel_dim, hier),
                arch.mlp,
                arch.dropout,
            ),
            arch.depth,
            shared=hier,
        )
        self.norm = nn.LayerNorm(dim)
        self.pool = arch.pool
        n = self.grid[0] * self.grid[1]
        self.head = nn.Linear(dim * (n if self.pool == "flatten" else 1), arch.classes)

    special: tuple[int, ...] = ()

    def forward(self, images: torch.Tensor, return_maps: bool = True, trace: dict | None = None):
        x = self.embed(space_to_depth(images, self.arch.patch))
        x, local = self.encoder(x, return_maps=return_maps, trace=trace)
        maps = self.encoder.blocks[0].attn.dense(local) if return_maps else None
        return self.head(pool(self.norm(x), self.pool)), maps
