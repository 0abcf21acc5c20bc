"""Transformer classifiers of the zoo, built from a typed architecture (``attnscope.models.zoo.arch``).

Vision: ``VisionTransformer`` (image ``[B, 1, 28, 28]`` -> space-to-depth by ``patch`` -> tokens on a
grid, optional CLS and learned absolute positions -> encoder -> pool -> 10 classes). Each layer's
attention is composed of the architecture's ``AttentionParts``: content term (ViT), Gaussian position
bias (Cordonnier), learned 2-D bias (with content or not), Evolving Attention, Hierarchical Attention.

Text: ``TextTransformer`` (token ids ``[B, N]``, pad id 0 -> embedding, learned positions unless the
position part is a shift bias -> encoder with key mask -> masked mean pool -> 2 classes).

Both return ``(logits [B, classes], maps [B, layer, head, query, key])`` (maps None when
``return_maps=False``).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from attnscope.models.zoo.arch import (
    AttentionParts,
    GaussianPosition,
    Learned2DPosition,
    ShiftPosition,
    TextArch,
    VisionArch,
)
from attnscope.models.zoo.attention import Block, Encoder, MultiHeadAttention
from attnscope.models.zoo.positional import GaussianBias, Learned2DBias, ShiftBias


def space_to_depth(x: torch.Tensor, p: int) -> torch.Tensor:
    """``[B, C, H, W]`` -> tokens ``[B, (H/p)*(W/p), C*p*p]`` row-major (invertible pooling)."""
    b, c, h, w = x.shape
    t = F.unfold(x, kernel_size=p, stride=p)  # (B, C*p*p, L)
    return t.transpose(1, 2)


def pool(x: torch.Tensor, how: str) -> torch.Tensor:
    """(B, N, D) -> (B, D') for the classifier: ``mean`` over positions, ``cls`` (position 0), or
    ``flatten`` (every grid position keeps its own classifier weights)."""
    if how == "mean":
        return x.mean(dim=1)
    if how == "cls":
        return x[:, 0]
    if how == "flatten":
        return x.flatten(1)
    raise ValueError(f"unknown pooling {how!r}; use mean, cls or flatten")


def make_attention(parts: AttentionParts, dim: int, heads: int, layer: int, grid: tuple[int, int] | None):
    """One attention layer composed of ``parts`` (``attnscope.models.zoo.arch``): content term, position
    bias, Evolving Attention, Hierarchical Attention's fixed keys."""
    bias: nn.Module | None = None
    match parts.position:
        case GaussianPosition(full=full):
            bias = GaussianBias(heads, grid, full=full)
        case Learned2DPosition(pos_dim=pos_dim):
            bias = Learned2DBias(heads, grid, pos_dim)
        case ShiftPosition(radius=radius, tap_init=tap):
            bias = ShiftBias(heads, radius, tap_init=tap)
    return MultiHeadAttention(
        dim, heads, parts.head_dim, parts.content, bias, parts.evolving, parts.hierarchical, parts.dropout, layer == 0
    )


def make_encoder(arch: VisionArch | TextArch, grid: tuple[int, int] | None) -> Encoder:
    def block(i: int) -> Block:
        return Block(arch.dim, make_attention(arch.attention, arch.dim, arch.heads, i, grid), arch.mlp, arch.dropout)

    return Encoder(block, arch.depth, shared=arch.attention.hierarchical)


class SharedBlockMixin:
    """HA models expose their one shared block for iterating past the trained depth
    (``attnscope.pipelines.shared_block``): ``shared_block(x [1, token, dim], state=...)`` and the fixed state
    (the keys of the first pass) from ``shared_block_kwargs(x0)``. ``None`` for other models."""

    @property
    def shared_block(self) -> nn.Module | None:
        return self.encoder.blocks[0] if self.encoder.shared else None

    def shared_block_kwargs(self, x0: torch.Tensor) -> dict:
        """The state every pass reuses (HA: ``K = LN(x^0) W_K``), computed in ``x0``'s dtype."""
        import copy

        block = copy.deepcopy(self.encoder.blocks[0]).to(x0.dtype).eval()
        state: dict = {}
        with torch.no_grad():
            block(x0, state)
        return {"state": state}


class VisionTransformer(SharedBlockMixin, nn.Module):
    def __init__(self, arch: VisionArch):
        super().__init__()
        self.arch = arch
        p, dim = arch.patch, arch.dim
        self.grid = (28 // p, 28 // p)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim)) if arch.cls else None
        n = self.grid[0] * self.grid[1] + (1 if self.cls is not None else 0)
        self.embed = nn.Linear(p * p, dim)
        self.pos = nn.Parameter(torch.randn(1, n, dim) * 0.02) if arch.abs_pos else None
        self.encoder = make_encoder(arch, self.grid)
        self.norm = nn.LayerNorm(dim)
        self.pool = arch.pool
        self.head = nn.Linear(dim * (n if self.pool == "flatten" else 1), arch.classes)

    @property
    def special(self) -> tuple[int, ...]:
        return (0,) if self.cls is not None else ()

    def forward(self, images: torch.Tensor, return_maps: bool = True, trace: dict | None = None):
        x = self.embed(space_to_depth(images, self.arch.patch))  # (B, N, D)
        if self.cls is not None:
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1)
        if self.pos is not None:
            x = x + self.pos
        x, maps = self.encoder(x, return_maps=return_maps, trace=trace)
        return self.head(pool(self.norm(x), self.pool)), maps


class TextTransformer(SharedBlockMixin, nn.Module):
    def __init__(self, arch: TextArch):
        super().__init__()
        if arch.vocab_size is None:
            raise ValueError("a text architecture needs vocab_size (the vocabulary's size) to be built")
        self.arch = arch
        dim = arch.dim
        self.embed = nn.Embedding(arch.vocab_size, dim, padding_idx=0)
        self.pos = nn.Parameter(torch.randn(1, arch.max_len, dim) * 0.02) if arch.learned_positions else None
        self.drop = nn.Dropout(arch.dropout)
        self.encoder = make_encoder(arch, None)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, arch.classes)

    def forward(self, ids: torch.Tensor, return_maps: bool = True, trace: dict | None = None):
        return self.forward_embeddings(self.embed(ids), ids != 0, return_maps, trace)

    def forward_embeddings(
        self, x: torch.Tensor, mask: torch.Tensor, return_maps: bool = True, trace: dict | None = None
    ):
        """From word embeddings ``x [B, N, D]`` and the key mask ``[B, N]`` (True = real token):
        what attribution methods that perturb the embeddings call. ``trace``: see ``Encoder``."""
        if self.pos is not None:
            x = x + self.pos[:, : x.shape[1]]
        x, maps = self.encoder(self.drop(x), key_mask=mask, return_maps=return_maps, trace=trace)
        m = mask[..., None].to(x.dtype)
        pooled = (self.norm(x) * m).sum(1) / m.sum(1).clamp(min=1)
        return self.head(pooled), maps
