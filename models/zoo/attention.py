"""Multi-head attention shared by the zoo: content scores and/or a positional logit bias,
optionally Evolving Attention (Wang et al. 2021) and Hierarchical Attention's fixed keys.

Logits of head h: ``S[h, q, k] = content[h, q, k] + bias[h, q, k]`` where

- content is ``(x_q W_Q^h) . (x_k W_K^h) / sqrt(d)`` (absent for content-free heads, e.g. Cordonnier's
  Gaussian heads), and
- bias comes from a position module (``attnscope.models.zoo.positional``) giving ``[head, query, key]``.

Evolving Attention (Wang et al. 2021; docs/methods/evolution.md), for every layer but the first EA layer::

    A_in    = beta * A_logit_prev + (1 - beta) * S
    A_logit = alpha * relu(conv3x3_{heads->heads}(A_in)) + (1 - alpha) * A_in

and ``A_logit`` (not the softmax) is passed on. Masked keys are zeroed before the conv and masked
again after it. Hierarchical Attention (Varma T. and Prabhu 2021; docs/methods/evolution.md): keys
are computed once, from the input of the first pass, kept in ``state["keys"]`` and reused by every
later pass; queries and values are recomputed from the current input.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from attnscope.models.attention_fn import current_context, edit_logits, edit_output, edits_logits_at

NEG = -1e9  # additive mask: large negative, finite (EA conv and float16 stay safe)


@dataclass(frozen=True)
class EAConfig:
    alpha: float = 0.5  # docs/methods/evolution.md default [INFERRED]
    beta: float = 0.3


class EvolvingLogits(nn.Module):
    """One layer's EA transform of the logits ``[batch, head, query, key]``."""

    def __init__(self, heads: int, cfg: EAConfig, first: bool = False):
        super().__init__()
        self.cfg = cfg
        # the first EA layer only passes its logits on (A_logit = S): no conv, no parameters
        self.conv = None if first else nn.Conv2d(heads, heads, kernel_size=3, padding=1, bias=True)

    def forward(self, logits: torch.Tensor, prev: torch.Tensor | None, valid: torch.Tensor | None) -> torch.Tensor:
        if self.conv is None or prev is None:  # first EA layer: A_logit = S
            return logits
        a, b = self.cfg.alpha, self.cfg.beta
        a_in = b * prev + (1 - b) * logits
        if valid is not None:
            a_in = a_in.masked_fill(~valid, 0.0)
        return a * torch.relu(self.conv(a_in)) + (1 - a) * a_in


class MultiHeadAttention(nn.Module):
    """Attention with optional content, positional bias, EA and HA fixed keys.

    Args:
        dim: model width D. heads: H. head_dim: d (Cordonnier uses d = D).
        content: compute ``q.k/sqrt(d)`` scores (False: content-free heads, no Q/K).
        bias: module ``bias(n_query, n_key) -> [head, query, key]`` or None.
        ea: EAConfig to make this layer an Evolving Attention layer, or None; ``first`` marks the
            first EA layer (its logits are passed on unchanged).
        hierarchical: keep the keys of the first pass in ``state`` (HA).
    """

    def __init__(
        self,
        dim: int,
        heads: int,
        head_dim: int | None = None,
        content: bool = True,
        bias: nn.Module | None = None,
        ea: EAConfig | None = None,
        hierarchical: bool = False,
        dropout: float = 0.0,
        first: bool = False,
    ):
        super().__init__()
        if not content and bias is None:
            raise ValueError("an attention layer needs content scores, a positional bias, or both")
        self.heads, self.head_dim = heads, head_dim or dim // heads
        inner = self.heads * self.head_dim
        self.content, self.hierarchical = content, hierarchical
        if content:
            self.q = nn.Linear(dim, inner)
            self.k = nn.Linear(dim, inner)
        self.v = nn.Linear(dim, inner)
        self.out = nn.Linear(inner, dim)
        self.bias = bias
        self.ea = EvolvingLogits(heads, ea, first) if ea is not None else None
        self.drop = nn.Dropout(dropout)

    def _split(self, t: torch.Tensor) -> torch.Tensor:
        b, n, _ = t.shape  # (B, N, H*d) -> (B, H, N, d)
        return t.view(b, n, self.heads, self.head_dim).transpose(1, 2)

    def logits(self, x: torch.Tensor, state: dict) -> torch.Tensor:
        """Pre-softmax scores ``[batch, head, query, key]`` (content + bias); content-free heads
        give ``[1, head, query, key]``, shared by the whole batch."""
        b, n, _ = x.shape
        s = x.new_zeros(b if self.content else 1, self.heads, n, n)
        if self.content:
            q = self._split(self.q(x))
            if self.hierarchical:
                if "keys" not in state:
                    state["keys"] = self._split(self.k(x))  # K = LN(x^0) W_K, kept for every pass
                k = state["keys"]
            else:
                k = self._split(self.k(x))
            s = s + q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        if self.bias is not None:
            s = s + self.bias(n, n)[None]
        return s

    def forward(self, x: torch.Tensor, state: dict, key_mask: torch.Tensor | None = None):
        """``x`` (B, N, D); ``key_mask`` (B, N) True for real positions.

        Returns the output (B, N, D), the probabilities (B, H, N, N) and the state passed on.

        Inside a request context (``attnscope.models.attention_fn``) the context's attention hooks
        edit this layer's logits (content + bias, before the key mask and EA) and its heads' outputs
        (``[B, N, H, d]``, before the output projection) through the same functions ``attnscope_qk``
        calls; the layer is the context's cursor (set by the block taps of
        ``attnscope.models.session``). Nothing is kept on the module.
        """
        ctx = current_context()
        hooks = ctx.hooks if ctx is not None else ()
        layer = ctx.cursor.layer if ctx is not None else -1
        s = self.logits(x, state)
        if hooks and edits_logits_at(hooks, layer):
            s = edit_logits(hooks, layer, s.expand(x.shape[0], -1, -1, -1))
        valid = None
        if key_mask is not None:
            valid = key_mask[:, None, None, :]  # (B, 1, 1, N)
            s = s.masked_fill(~valid, NEG)
        if self.ea is not None:
            # zero padded query rows and key columns alike, so padding looks like the conv's own zero border
            grid_valid = None if key_mask is None else valid & key_mask[:, None, :, None]
            s = self.ea(s, state.get("logits"), grid_valid)
            if valid is not None:
                s = s.masked_fill(~valid, NEG)
            state["logits"] = s
        probs = torch.softmax(s, dim=-1)
        v = self._split(self.v(x))
        if probs.shape[0] == 1 and x.shape[0] > 1:  # one map for the batch: (H, N, N) x (B, H, N, d)
            y = torch.einsum("hqk,bhkd->bhqd", self.drop(probs[0]), v)
            probs = probs.expand(x.shape[0], -1, -1, -1)
        else:
            y = self.drop(probs) @ v  # (B, H, N, d)
        y = y.transpose(1, 2)  # (B, N, H, d)
        if hooks:
            y = edit_output(hooks, layer, y)
        return self.out(y.reshape(x.shape[0], x.shape[1], -1)), probs, state


class FeedForward(nn.Sequential):
    def __init__(self, dim: int, hidden: int, dropout: float = 0.0):
        super().__init__(nn.Linear(dim, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, dim))


class Block(nn.Module):
    """Pre-LN block: ``x + attn(LN(x))`` then ``x + FFN(LN(x))``."""

    def __init__(self, dim: int, attn: nn.Module, mlp: int, dropout: float = 0.0):
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm(dim), attn
        self.ln2, self.ffn = nn.LayerNorm(dim), FeedForward(dim, mlp, dropout)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, state, key_mask=None):
        h, probs, state = self.attn(self.ln1(x), state, key_mask)
        x = x + self.drop(h)
        return x + self.drop(self.ffn(self.ln2(x))), probs, state


class Encoder(nn.Module):
    """``depth`` blocks; with ``shared=True`` one block applied ``depth`` times (HA: parameters do
    not depend on depth)."""

    def __init__(self, make_block, depth: int, shared: bool = False):
        super().__init__()
        self.depth, self.shared = depth, shared
        self.blocks = nn.ModuleList([make_block(i) for i in range(1 if shared else depth)])

    def forward(self, x, key_mask=None, return_maps: bool = True, trace: dict | None = None):
        """Returns the output (B, N, D) and the maps (B, layer, head, query, key), or None when
        ``return_maps`` is False (training: no copy of the maps).

        ``trace``: a dict owned by the caller (one per call; nothing is kept on the module, which
        concurrent requests share) that receives ``states`` (B, layer + 1, N, D), the token cloud
        at every depth, and ``probs``, the per-layer probabilities in the autograd graph (gradient x
        attention reads them)."""
        state: dict = {}
        maps = []
        states = [x]
        for i in range(self.depth):
            x, p, state = self.blocks[0 if self.shared else i](x, state, key_mask)
            if return_maps:
                maps.append(p)
                states.append(x)
        if trace is not None and return_maps:
            trace["states"] = torch.stack(states, dim=1).detach()
            trace["probs"] = tuple(maps)
        return x, (torch.stack(maps, dim=1) if return_maps else None)
