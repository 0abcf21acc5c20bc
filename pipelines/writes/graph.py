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
expanded, so the work and memory grow with the graph, never with ``positions^2 x heads x d_model``.

Cost. A term is the head's attention weight times what the head writes from that key,
``a_hij u_hj`` with ``u_hj = v_hj W_O[h]`` independent of the query ``i``: each layer with a node to
expand computes ``u [head, key, d_model]`` once (one matrix product over the keys up to its last
expanded position) and every node of that layer only rescales it, chunk by chunk of keys
(``key_chunk``), to take the L1 distances the proximity needs. A node costs ``O(head x key x d_model)``
additions and a ``[head, key_chunk, d_model]`` temporary; a layer holds one ``u`` (85 MB for SmolLM2
at 4,096 keys), where a node used to run its own product and hold its whole ``[head, key, d_model]``
terms and their differences. The proximity is an L1 distance, so no inner-product shortcut removes
the ``d_model`` axis: the per-head shares' normaliser needs every term's distance.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch


class GraphTooLargeError(ValueError):
    """The graph would exceed its node bound (raise the threshold or the bound)."""


KEY_CHUNK = 512  # keys per temporary [head, key_chunk, d_model] (10.6 MB for SmolLM2)


def proximities(y: torch.Tensor, parts: torch.Tensor) -> torch.Tensor:
    """``y [d]``, ``parts [..., d]`` -> ``[...]``: ``max(0, ||y||_1 - ||y - part||_1)``, not normalised."""
    y = y.float()
    return (y.abs().sum() - (y - parts.float()).abs().sum(-1)).clamp_min(0.0)


def normalised(prox: torch.Tensor) -> torch.Tensor:
    """``prox`` divided by its sum (all 0 when no part is close)."""
    total = prox.sum()
    return prox / total if total > 0 else prox


def importances(y: torch.Tensor, parts: torch.Tensor) -> torch.Tensor:
    """``y [d]``, ``parts [n, d]`` -> ``[n]``: the proximity of each part to ``y``, normalised to sum 1
    (all 0 when no part is close)."""
    return normalised(proximities(y, parts))


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


def written(values: torch.Tensor, W_O: torch.Tensor, n_keys: int) -> torch.Tensor:
    """``values [kv_head, key, d_head]``, ``W_O [head, d_head, d_model]`` -> ``[head, n_keys, d_model]``:
    ``u_hj = v_hj W_O[h]``, what head ``h`` writes from key ``j`` (query head ``h`` reads value head
    ``h // (head / kv_head)``)."""
    n_heads, n_kv = W_O.shape[0], values.shape[0]
    v = values[:, :n_keys].float().repeat_interleave(n_heads // n_kv, dim=0)  # [head, key, d_head]
    return torch.einsum("hkd,hdm->hkm", v, W_O.float())


def attention_terms(inp: BlockInputs, i: int, values: torch.Tensor) -> torch.Tensor:
    """``[head, key, d_model]``: ``a_hij v_hj W_O[h]`` for keys ``0..key-1`` of row ``i`` (the dense
    reference of ``node_importances``)."""
    probs = inp.probs(i).float()  # [head, key]
    return probs[:, :, None] * written(values, inp.W_O, probs.shape[1])


def _overshoot(y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """``sum_m max(0, sign(y_m) z_m - |y_m|)`` of rows ``z [n, d]``: where a term passes ``y`` (0 at
    ``y``'s zero coordinates)."""
    return (torch.sign(y) * z - y.abs()).clamp_min(0.0).sum(-1)


def node_importances(
    mid: torch.Tensor,
    pre: torch.Tensor,
    b_O: torch.Tensor | None,
    probs: torch.Tensor,
    u: torch.Tensor,
    key_chunk: int = KEY_CHUNK,
    u_max: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The importances into ``mid [d_model]`` (the stream after a block's attention at one position).

    Args:
        pre: ``[d_model]`` the stream entering the block there; ``b_O``: ``[d_model]`` or None.
        probs: ``[head, key]`` the position's attention row; ``u``: ``[head, >= key, d_model]`` (``written``);
        ``u_max``: ``[head, >= key]`` ``max_m |u_hjm|`` (computed here when None; a layer shares it).

    Returns:
        ``(imp [1 + key (+ 1)], head_imp [head, key])``: ``importances(mid, [pre, c_0..c_key-1, b_O])``
        with ``c_j = sum_h a_hj u_hj``, and ``importances`` over every per-head term ``a_hj u_hj``.

    Where ``y_m != 0``, ``|y_m| - |y_m - z_m| = s_m z_m - 2 max(0, s_m z_m - |y_m|)`` with ``s =
    sign(y)``; where ``y_m = 0`` it is ``-|z_m|``. So a term's proximity is ``a_hj (s . u_hj)`` (one
    product for all terms), less ``a_hj`` times its mass on the zero coordinates, less twice its
    overshoot, which is exactly 0 wherever ``a_hj max_m |u_hjm| <= min_{y_m != 0} |y_m|`` (for a source,
    ``sum_h a_hj max_m |u_hjm|``): only the other terms are formed, ``key_chunk`` at a time. Exact, and
    more accurate in float32 than subtracting two L1 norms of about ``||y||_1`` (tested in float64).
    """
    probs = probs.float()
    n_heads, n_keys = probs.shape
    y = mid.float()
    chunk = max(1, int(key_chunk))
    zero = y == 0
    floor = y.abs()[~zero].min() if bool((~zero).any()) else torch.tensor(float("inf"))
    uk = u[:, :n_keys]
    bound = probs * (uk.abs().amax(-1) if u_max is None else u_max[:, :n_keys])  # [head, key]
    heads = probs * torch.einsum("hkm,m->hk", uk, torch.sign(y))  # s . (a_hj u_hj)
    src = heads.sum(0)  # s . c_j
    if bool(zero.any()):  # |y_m| - |y_m - z_m| = -|z_m| there
        uz = uk[:, :, zero]  # [head, key, zeros]
        heads -= probs * uz.abs().sum(-1)
        src -= torch.einsum("hk,hkz->kz", probs, uz).abs().sum(-1)
    hs, ks = torch.nonzero(bound > floor, as_tuple=True)
    for lo in range(0, hs.numel(), chunk * n_heads):
        h, k = hs[lo : lo + chunk * n_heads], ks[lo : lo + chunk * n_heads]
        heads[h, k] -= 2.0 * _overshoot(y, probs[h, k, None] * uk[h, k])
    keys = torch.nonzero(bound.sum(0) > floor, as_tuple=True)[0]
    for lo in range(0, keys.numel(), chunk):
        k = keys[lo : lo + chunk]
        src[k] -= 2.0 * _overshoot(y, torch.einsum("hk,hkm->km", probs[:, k], uk[:, k]))
    return _normalise_parts(y, pre, b_O, src.clamp_min(0.0), heads.clamp_min(0.0))


def _normalise_parts(y, pre, b_O, src: torch.Tensor, heads: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    ends = [proximities(y, pre[None])]
    if b_O is not None:
        ends.append(proximities(y, b_O[None]))
    return normalised(torch.cat([ends[0], src, *ends[1:]])), normalised(heads)


@torch.inference_mode()
def contribution_graph(
    blocks: list[BlockInputs],
    final: torch.Tensor,
    target: int,
    threshold: float,
    max_nodes: int = 4096,
    key_chunk: int = KEY_CHUNK,
) -> Graph:
    """The graph of ``final [pos, d_model]`` (the stream leaving the last block) at ``target``
    (``key_chunk``: keys per temporary, ``node_importances``).

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
        rows = {i: inp.probs(i) for i in sorted(active_mid)}  # [head, key] each
        n_keys = max(r.shape[1] for r in rows.values())
        u = written(inp.values(), inp.W_O, n_keys)  # [head, key, d_model], shared by the layer's nodes
        u_max = u.abs().amax(-1)  # [head, key]
        active_pre = set()
        for i, row in rows.items():
            mid_i = post[i].float() - inp.mlp[i].float()
            imp, head_imp = node_importances(mid_i, inp.pre[i], inp.b_O, row, u, key_chunk, u_max)
            weights = imp.tolist()
            node = ("mid", layer, i)
            if weights[0] >= threshold:
                g.edges.append((("pre", layer, i), node, "residual", weights[0]))
                add(("pre", layer, i))
                active_pre.add(i)
            for j, w in enumerate(weights[1 : 1 + head_imp.shape[1]]):
                if w >= threshold:
                    src = ("pre", layer, j)
                    g.edges.append((src, node, "attention", w))
                    g.heads[(src, node)] = head_imp[:, j].cpu().numpy()
                    add(src)
                    active_pre.add(j)
        del u
        active_post = active_pre
    return g
