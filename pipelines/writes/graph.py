"""The contribution graph of one prediction (Ferrando and Voita 2024, "Information Flow Routes:
Automatically Interpreting Language Models at Scale"), found top-down.

Each block writes sums. With the values ``v_j`` (the block's norm inside them, exact: no freezing),

    mid_i  = pre_i + sum_j c_ij + b_O,    c_ij = sum_h a_hij v_hj W_O[h]      (attention)
    post_i = mid_i + mlp_i                                                    (MLP)

and the importance of a term ``z`` of a sum ``y`` is the paper's proximity, normalised over the terms:

    imp(z, y) = max(0, ||y||_1 - ||y - z||_1) / sum_z' max(0, ||y||_1 - ||y - z'||_1).

Edges are ``(pre, l, j) -> (mid, l, i)`` through attention (weight ``imp(c_ij, mid_i)``, with each
head's share ``imp(a_hij v_hj W_O[h], mid_i)`` over the per-head terms), ``(pre, l, i) -> (mid, l,
i)`` the residual, and ``(mid, l, i) -> (post, l, i)`` the residual and the MLP. From the target
position at the top, an edge is kept when its weight is at least ``threshold`` and only its source is
expanded, so the work and memory grow with the graph: one node costs one ``[head, key, d_model]``
tensor, never ``positions^2 x heads x d_model``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch


class GraphTooLargeError(ValueError):
    """The graph would exceed its node bound (raise the threshold or the bound)."""


def importances(y: torch.Tensor, parts: torch.Tensor) -> torch.Tensor:
    """``y [d]``, ``parts [n, d]`` -> ``[n]``: the proximity of each part to ``y``, normalised to sum 1
    (all 0 when no part is close)."""
    y, parts = y.float(), parts.float()
    prox = (y.abs().sum() - (y[None] - parts).abs().sum(-1)).clamp_min(0.0)
    total = prox.sum()
    return prox / total if total > 0 else prox


@dataclass(frozen=True)
class BlockInputs:
    """What the graph reads of block ``l``: ``pre``/``mlp [pos, d_model]`` (the stream entering it, the
    MLP's output), ``W_O [head, d_head, d_model]``, ``b_O [d_model]`` or None, and two callables:
    ``probs(i) -> [head, key]`` (row ``i`` of the attention) and ``values() -> [kv_head, key, d_head]``."""

    pre: torch.Tensor
    mlp: torch.Tensor
    W_O: torch.Tensor
    b_O: torch.Tensor | None
    probs: Callable[[int], torch.Tensor]
    values: Callable[[], torch.Tensor]


@dataclass
class Graph:
    """Nodes ``(kind, layer, position)`` with ``kind`` ``pre`` (the stream entering block ``layer``;
    ``pre`` of block ``L`` is the final stream), ``mid`` (after its attention); edges ``(source,
    target, kind, weight)`` with ``kind`` ``attention``, ``residual`` or ``mlp`` (the MLP edge runs
    ``mid -> pre of layer + 1`` at one position, like the residual); ``heads[(source, target)]`` ``[head]``
    the heads' shares of an attention edge."""

    nodes: set[tuple[str, int, int]] = field(default_factory=set)
    edges: list[tuple[tuple[str, int, int], tuple[str, int, int], str, float]] = field(default_factory=list)
    heads: dict = field(default_factory=dict)


def attention_terms(inp: BlockInputs, i: int, values: torch.Tensor) -> torch.Tensor:
    """``[head, key, d_model]``: ``a_hij v_hj W_O[h]`` for keys ``0..key-1`` of row ``i``."""
    probs = inp.probs(i).float()  # [head, key]
    n_heads, n_kv = probs.shape[0], values.shape[0]
    v = values[:, : probs.shape[1]].float().repeat_interleave(n_heads // n_kv, dim=0)  # [head, key, d_head]
    return probs[:, :, None] * torch.einsum("hkd,hdm->hkm", v, inp.W_O.float())


@torch.inference_mode()
def contribution_graph(
    blocks: list[BlockInputs], final: torch.Tensor, target: int, threshold: float, max_nodes: int = 4096
) -> Graph:
    """The graph of ``final [pos, d_model]`` (the stream leaving the last block) at ``target``.

    Raises:
        ValueError: ``threshold`` outside ``[0, 1]``; ``GraphTooLargeError`` past ``max_nodes``.
    """
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold={threshold} is outside [0, 1]")
    g = Graph()
    n_layers = len(blocks)
    top = ("pre", n_layers, int(target))
    g.nodes.add(top)
    active_post = {int(target)}

    def add(node):
        g.nodes.add(node)
        if len(g.nodes) > max_nodes:
            raise GraphTooLargeError(f"the graph passed {max_nodes} nodes: raise the threshold (now {threshold})")

    for layer in range(n_layers - 1, -1, -1):
        inp = blocks[layer]
        post = final if layer == n_layers - 1 else blocks[layer + 1].pre
        active_mid = set()
        for i in sorted(active_post):
            mid_i = post[i].float() - inp.mlp[i].float()
            w_res, w_mlp = importances(post[i], torch.stack([mid_i, inp.mlp[i].float()])).tolist()
            target_node = ("pre", layer + 1, i)
            for kind, w in (("residual", w_res), ("mlp", w_mlp)):
                if w >= threshold:
                    g.edges.append((("mid", layer, i), target_node, kind, w))
                    add(("mid", layer, i))
                    active_mid.add(i)
        if not active_mid:
            break
        values = inp.values()
        active_pre = set()
        for i in sorted(active_mid):
            mid_i = post[i].float() - inp.mlp[i].float()
            terms = attention_terms(inp, i, values)  # [head, key, d_model]
            per_source = terms.sum(0)  # [key, d_model]
            parts = [inp.pre[i].float()[None], per_source]
            if inp.b_O is not None:
                parts.append(inp.b_O.float()[None])
            imp = importances(mid_i, torch.cat(parts))
            head_imp = importances(mid_i, terms.reshape(-1, terms.shape[-1])).reshape(terms.shape[:2])
            node = ("mid", layer, i)
            if float(imp[0]) >= threshold:
                g.edges.append((("pre", layer, i), node, "residual", float(imp[0])))
                add(("pre", layer, i))
                active_pre.add(i)
            for j in range(per_source.shape[0]):
                w = float(imp[1 + j])
                if w >= threshold:
                    src = ("pre", layer, j)
                    g.edges.append((src, node, "attention", w))
                    g.heads[(src, node)] = head_imp[:, j].cpu().numpy()
                    add(src)
                    active_pre.add(j)
        active_post = active_pre
    return g
