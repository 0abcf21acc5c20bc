"""The query/key view of one head at one (query, key) pair (``docs/methods/qk-attribution.md``).

From the residual stream entering the layer, a head's query at ``i`` and key at ``j`` after the
position rotation, their product by dimension (which sums to ``q . k``), the score ``q . k * scale``
and the attention weight (a softmax over the keys the query may see). Grouped-query attention: query
head ``h`` reads key head ``h // (n_heads / n_kv_heads)``; ``HeadQK`` carries that key head's
weights.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from attnscope.pipelines.qk.linear_maps import FrozenNorm, identity_rope

RopeFn = Callable[[torch.Tensor, "int | torch.Tensor"], torch.Tensor]


def kv_head_of(head: int, n_heads: int, n_kv_heads: int) -> int:
    """The key/value head query head ``head`` reads (grouped-query attention)."""
    if n_kv_heads <= 0 or n_heads % n_kv_heads:
        raise ValueError(f"{n_heads} query heads cannot share {n_kv_heads} key/value heads evenly")
    return head // (n_heads // n_kv_heads)


@dataclass(frozen=True)
class HeadQK:
    """One query head's query/key maps, row convention ``q = x @ w_q + b_q``.

    ``w_q, w_k [d_model, d_head]``, ``b_q, b_k [d_head]`` or None; ``kv_head`` the key head ``w_k``
    belongs to; ``scale`` the score multiplier (``1 / sqrt(d_head)`` unless the model says otherwise);
    ``rope(x [..., d_head], position)`` the position rotation (identity without RoPE); ``position`` an
    int, or a ``[token]`` index tensor for ``x [token, d_head]``."""

    w_q: torch.Tensor
    b_q: torch.Tensor | None
    w_k: torch.Tensor
    b_k: torch.Tensor | None
    kv_head: int
    scale: float
    rope: RopeFn = identity_rope

    def query(self, x: torch.Tensor, position: int | torch.Tensor) -> torch.Tensor:
        """``x [..., d_model]`` (normed input at ``position``) -> ``[..., d_head]`` rotated query."""
        q = x @ self.w_q.to(x.dtype)
        if self.b_q is not None:
            q = q + self.b_q.to(x.dtype)
        return self.rope(q, position)

    def key(self, x: torch.Tensor, position: int | torch.Tensor) -> torch.Tensor:
        """``x [..., d_model]`` (normed input at ``position``) -> ``[..., d_head]`` rotated key."""
        k = x @ self.w_k.to(x.dtype)
        if self.b_k is not None:
            k = k + self.b_k.to(x.dtype)
        return self.rope(k, position)


@dataclass(frozen=True)
class QKView:
    """``query, key, product [d_head]`` (``product = query * key``, summing to ``query . key``),
    ``score = query . key * scale``, ``weight`` the softmaxed attention of query ``i`` on key ``j``,
    ``kv_head`` the key head read."""

    query: torch.Tensor
    key: torch.Tensor
    product: torch.Tensor
    score: float
    weight: float
    kv_head: int
    scale: float


def check_pair(n_tokens: int, i: int, j: int, causal: bool) -> None:
    """``ValueError`` naming the range when ``(i, j)`` is not a pair the head computes."""
    for name, p in (("query", i), ("key", j)):
        if not 0 <= p < n_tokens:
            raise ValueError(
                f"{name} position {p} is out of range: the input has {n_tokens} tokens (0..{n_tokens - 1})"
            )
    if causal and j > i:
        raise ValueError(f"key {j} comes after query {i}: a causal model attends to keys 0..{i} only")


def normed_input(resid: torch.Tensor, norm: FrozenNorm | None) -> torch.Tensor:
    """``resid [token, d_model]`` -> the attention's input ``[token, d_model]`` (the norm applied)."""
    return resid if norm is None else norm(resid)


def qk_view(
    resid: torch.Tensor,
    head: HeadQK,
    i: int,
    j: int,
    *,
    norm: FrozenNorm | None,
    causal: bool,
    key_mask: torch.Tensor | None = None,
) -> QKView:
    """The view of ``head`` at query ``i``, key ``j`` from ``resid [token, d_model]``, the residual
    stream entering the layer (before its pre-attention ``norm``; None for a post-norm model whose
    stream is the input itself). ``key_mask [token]`` bool (True: may be attended) on top of the causal
    mask. The weight is the softmax of the query's scores over the keys it may see, in float32."""
    n = int(resid.shape[0])
    check_pair(n, i, j, causal)
    x = normed_input(resid.float(), norm)
    q = head.query(x[i], i)
    keys = head.key(x, torch.arange(n))  # [token, d_head]
    scores = keys @ q * head.scale  # [token]
    allowed = torch.ones(n, dtype=torch.bool)
    if causal:
        allowed[i + 1 :] = False
    if key_mask is not None:
        allowed &= key_mask.bool()
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    k = keys[j]
    return QKView(
        query=q,
        key=k,
        product=q * k,
        score=float(scores[j]),
        weight=float(weights[j]),
        kv_head=head.kv_head,
        scale=head.scale,
    )
