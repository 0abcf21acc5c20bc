"""Attention expresses convolution (Cordonnier et al. 2020, Theorem 1), constructively.

From any 3x3 ``Conv2d`` (stride 1, padding 1) build the 9-head attention layer with the quadratic
positional encoding that reproduces it: head h hard-attends to the shift ``Delta_h`` of kernel tap
``(i, j)`` (``Delta_h = (i - 1, j - 1)``, ``delta = key - query``) with logits
``-alpha * ||delta - Delta_h||^2`` (``W_qry = W_key = 0``), and its value/output map is the tap
``W_conv[:, :, i, j]``. As ``alpha`` grows the softmax becomes the shift matrix and the layer's output
becomes the convolution's. Zero padding is reproduced by attending over the zero-padded grid.

``ConvAttentionDemo`` is a small CNN trained on MNIST (14x14 after 2x2 space-to-depth, conv 3x3 ->
ReLU -> conv 3x3 stride 2 -> ReLU -> linear). Trained and evaluated through its convolution; served
(``return_maps=True``) with its first convolution replaced by the constructed attention layer, whose
9 heads are the maps. The capture's hidden states hold both first-layer outputs side by side.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from attnscope.models.zoo.arch import ConvAttentionArch
from attnscope.models.zoo.nets import space_to_depth
from attnscope.models.zoo.positional import grid_offsets


class QuadraticConvAttention(nn.Module):
    """The 9-head (K^2-head) attention equivalent of ``conv`` at sharpness ``alpha``, on a grid."""

    def __init__(self, conv: nn.Conv2d, grid: tuple[int, int], alpha: float):
        super().__init__()
        k = conv.kernel_size[0]
        if conv.kernel_size != (k, k) or conv.stride != (1, 1) or conv.padding != (k // 2, k // 2) or conv.groups != 1:
            raise ValueError("needs a square, stride-1, 'same'-padded, ungrouped convolution")
        self._conv = [conv]  # a reference, not a submodule: the conv's weights are saved once, by its owner
        self.alpha, self.k = float(alpha), k
        r = k // 2
        self.padded = (grid[0] + 2 * r, grid[1] + 2 * r)
        di, dj = torch.meshgrid(torch.arange(k) - r, torch.arange(k) - r, indexing="ij")
        self.register_buffer("centers", torch.stack([di.flatten(), dj.flatten()], -1).float(), persistent=False)
        self.register_buffer("delta", grid_offsets(*self.padded), persistent=False)  # (N, N, 2)

    def probs(self) -> torch.Tensor:
        """``[head, query, key]`` on the padded grid: softmax of ``-alpha ||delta - Delta_h||^2``."""
        d = self.delta[None] - self.centers[:, None, None, :]
        return torch.softmax(-self.alpha * (d**2).sum(-1), dim=-1)

    def forward(self, x: torch.Tensor):
        """``x`` (B, C_in, H, W) -> output (B, C_out, H, W) and maps (H*W... padded) ``[head, query, key]``."""
        b, c, h, w = x.shape
        r = self.k // 2
        tokens = F.pad(x, (r, r, r, r)).flatten(2).transpose(1, 2)  # (B, N_pad, C_in), zero ring
        p = self.probs()  # (K^2, N, N)
        conv = self._conv[0]
        taps = conv.weight.flatten(2).permute(2, 1, 0)  # (K^2, C_in, C_out): W_val W_out of head h
        mixed = torch.einsum("hqk,bkc->bhqc", p, tokens)  # each head's attended input
        y = torch.einsum("bhqc,hco->bqo", mixed, taps) + conv.bias  # sum over heads
        y = y.transpose(1, 2).reshape(b, -1, *self.padded)[:, :, r : r + h, r : r + w]
        return y, p


class ConvAttentionDemo(nn.Module):
    def __init__(self, arch: ConvAttentionArch):
        super().__init__()
        self.arch = arch
        c1, c2 = arch.channels
        p = arch.patch
        side = 28 // p
        self.conv1 = nn.Conv2d(p * p, c1, 3, padding=1)
        self.conv2 = nn.Conv2d(c1, c2, 3, stride=2, padding=1)
        self.head = nn.Linear(c2 * ((side + 1) // 2) ** 2, arch.classes)
        self.attention = QuadraticConvAttention(self.conv1, (side, side), arch.alpha)
        self.grid = self.attention.padded  # the maps live on the zero-padded grid
        self.display_pad = p  # ... which covers the image plus a p-pixel black border

    special: tuple[int, ...] = ()

    def _grid(self, images: torch.Tensor) -> torch.Tensor:
        p = self.arch.patch
        side = 28 // p
        return space_to_depth(images, p).transpose(1, 2).reshape(images.shape[0], p * p, side, side)

    def _rest(self, h: torch.Tensor) -> torch.Tensor:
        return self.head(F.relu(self.conv2(F.relu(h))).flatten(1))

    def forward(self, images: torch.Tensor, return_maps: bool = True, trace: dict | None = None):
        """``trace`` (a dict owned by the caller) receives ``first_layer`` (B, 2, C, H, W): the
        first layer as the convolution and as the attention layer built from it."""
        x = self._grid(images)
        if not return_maps:  # training and evaluation: the convolution
            return self._rest(self.conv1(x)), None
        y, p = self.attention(x)  # serving: the attention layer built from conv1
        if trace is not None:
            trace["first_layer"] = torch.stack([self.conv1(x), y], 1)  # conv | attention
        return self._rest(y), p[None, None].expand(images.shape[0], 1, -1, -1, -1)
