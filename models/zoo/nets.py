"""Transformer classifiers of the zoo, built from a JSON-able config (the manifest stores it).

Vision: ``VisionTransformer`` (image ``[B, 1, 28, 28]`` -> space-to-depth by ``patch`` -> tokens on a
grid, optional CLS and learned absolute positions -> encoder -> mean pool -> 10 classes). The
attention of each layer is chosen by ``attention``: ``"content"`` (ViT), ``"gaussian"`` /
``"gaussian-full"`` (Cordonnier), ``"learned2d"`` (with ``content`` or not).

Text: ``TextTransformer`` (token ids ``[B, N]``, pad id 0 -> embedding, learned positions unless
``attention == "shift"`` -> encoder with key mask -> masked mean pool -> 2 classes).

Both return ``(logits [B, classes], maps [B, layer, head, query, key])`` (maps None when
``return_maps=False``).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from attnscope.models.zoo.attention import Block, EAConfig, Encoder, MultiHeadAttention
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


def make_attention(cfg: dict, layer: int, grid: tuple[int, int] | None) -> MultiHeadAttention:
    """One attention layer of ``cfg`` (see module docstring)."""
    kind, dim, heads = cfg["attention"], cfg["dim"], cfg["heads"]
    ea = EAConfig(**cfg["ea"]) if cfg.get("ea") else None
    hier = bool(cfg.get("hierarchical"))
    drop = cfg.get("attn_dropout", 0.0)
    first = layer == 0
    if kind == "content":
        return MultiHeadAttention(dim, heads, cfg.get("head_dim"), True, None, ea, hier, drop, first)
    if kind in ("gaussian", "gaussian-full"):
        bias = GaussianBias(heads, grid, full=kind == "gaussian-full")
        return MultiHeadAttention(dim, heads, cfg.get("head_dim", dim), False, bias, ea, hier, drop, first)
    if kind == "learned2d":
        bias = Learned2DBias(heads, grid, cfg.get("pos_dim", dim))
        return MultiHeadAttention(
            dim, heads, cfg.get("head_dim", dim), bool(cfg.get("content")), bias, ea, hier, drop, first
        )
    if kind == "shift":
        tap = cfg.get("tap_init") if not cfg.get("content", True) else None
        bias = ShiftBias(heads, cfg.get("radius", 2), tap_init=tap)
        return MultiHeadAttention(
            dim, heads, cfg.get("head_dim"), bool(cfg.get("content", True)), bias, ea, hier, drop, first
        )
    raise ValueError(f"unknown attention kind {kind!r}")


def make_encoder(cfg: dict, grid: tuple[int, int] | None) -> Encoder:
    dim, mlp, drop = cfg["dim"], cfg["mlp"], cfg.get("dropout", 0.0)
    return Encoder(
        lambda i: Block(dim, make_attention(cfg, i, grid), mlp, drop),
        cfg["depth"],
        shared=bool(cfg.get("hierarchical")),
    )


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
    def __init__(self, cfg: dict):
        super().__init__()
        self.cfg = cfg
        p, dim = cfg["patch"], cfg["dim"]
        self.grid = (28 // p, 28 // p)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim)) if cfg.get("cls") else None
        n = self.grid[0] * self.grid[1] + (1 if self.cls is not None else 0)
        self.embed = nn.Linear(p * p, dim)
        self.pos = nn.Parameter(torch.randn(1, n, dim) * 0.02) if cfg.get("abs_pos") else None
        self.encoder = make_encoder(cfg, self.grid)
        self.norm = nn.LayerNorm(dim)
        self.pool = cfg.get("pool", "mean")
        self.head = nn.Linear(dim * (n if self.pool == "flatten" else 1), cfg.get("classes", 10))

    @property
    def special(self) -> tuple[int, ...]:
        return (0,) if self.cls is not None else ()

    def forward(self, images: torch.Tensor, return_maps: bool = True, trace: dict | None = None):
        x = self.embed(space_to_depth(images, self.cfg["patch"]))  # (B, N, D)
        if self.cls is not None:
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1)
        if self.pos is not None:
            x = x + self.pos
        x, maps = self.encoder(x, return_maps=return_maps, trace=trace)
        return self.head(pool(self.norm(x), self.pool)), maps


class TextTransformer(SharedBlockMixin, nn.Module):
    def __init__(self, cfg: dict):
        super().__init__()
        self.cfg = cfg
        dim = cfg["dim"]
        self.embed = nn.Embedding(cfg["vocab_size"], dim, padding_idx=0)
        self.pos = None if cfg["attention"] == "shift" else nn.Parameter(torch.randn(1, cfg["max_len"], dim) * 0.02)
        self.drop = nn.Dropout(cfg.get("dropout", 0.0))
        self.encoder = make_encoder(cfg, None)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, cfg.get("classes", 2))

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
