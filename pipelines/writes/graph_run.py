"""The contribution graph (``graph``) of one prediction of a real model, read from its recorded
forward (``recorded.RecordedWrites``): each block's stream, MLP output, output projection, attention
row on request (the run's lazy maps) and values, nothing quadratic held.

Memory: per layer with a node to expand, one ``[head, key, d_model]`` tensor of what each head writes
from each key (``graph.written``, shared by the layer's nodes), a ``[head, key_chunk, d_model]``
temporary per node (``graph.node_importances``), and the graph itself; ``full_decomposition_bytes``
is what materialising every term of every block (``[layer, head, query, key, d_model]``, causal
half) would take, for comparison.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from attnscope.pipelines.writes.dla import Attribution
from attnscope.pipelines.writes.graph import BlockInputs, Graph, contribution_graph
from attnscope.pipelines.writes.readouts import WritesInputError, check_position, record_run, single_token_id
from attnscope.pipelines.writes.recorded import RecordedWrites, attribute, readout_parts


def graph_inputs(writes: RecordedWrites) -> tuple[list[BlockInputs], torch.Tensor]:
    """``(blocks, final [pos, d_model])`` of a recording: one ``BlockInputs`` per block whose
    ``probs(i) [head, key]`` reads row ``i`` of the run's maps and ``values() [kv_head, pos, d_head]``
    recomputes the block's values from its stream."""
    maps = writes.maps
    blocks = []
    for layer in range(writes.sites.n_layers):
        W_O, b_O = writes.output_projection(layer)

        def probs(i: int, layer: int = layer) -> torch.Tensor:
            keys = slice(0, i + 1) if maps.causal else slice(None)
            row = maps.block(layer, rows=slice(i, i + 1), cols=keys)[:, 0]  # [head, key]
            return torch.as_tensor(row.copy())

        blocks.append(
            BlockInputs(
                pre=writes.resid[layer],
                mlp=writes.mlp_out[layer],
                W_O=W_O,
                b_O=b_O,
                probs=probs,
                values=lambda layer=layer: writes.values(layer),
            )
        )
    return blocks, writes.resid[-1]


def full_decomposition_bytes(n_layers: int, n_heads: int, n_tokens: int, d_model: int, causal: bool = True) -> int:
    """float32 bytes of every ``a_hij v_hj W_O[h]`` of every block: ``[layer, head, query, key,
    d_model]`` (with ``causal``, only the ``n (n + 1) / 2`` pairs ``j <= i``)."""
    pairs = n_tokens * (n_tokens + 1) // 2 if causal else n_tokens * n_tokens
    return 4 * n_layers * n_heads * pairs * d_model


def term_bytes(n_heads: int, n_keys: int, d_model: int) -> int:
    """float32 bytes of one ``[head, key, d_model]`` tensor (a layer's ``graph.written``)."""
    return 4 * n_heads * n_keys * d_model


@dataclass(frozen=True)
class GraphResult:
    """A ``Graph`` of the prediction at ``position`` and the bounds it ran under."""

    position: int
    threshold: float
    max_nodes: int
    graph: Graph


def graph_of_run(
    backend,
    token_ids: Sequence[int],
    position: int,
    threshold: float,
    max_nodes: int,
    recording: Callable[[], RecordedWrites] | None = None,
) -> GraphResult:
    """The contribution graph of the prediction at ``position`` (``GraphTooLargeError`` past
    ``max_nodes``); ``recording`` gives the run's recorded forward (default: record it now)."""
    check_position(position, len(token_ids))
    if not 0.0 <= threshold <= 1.0:
        raise WritesInputError(f"threshold={threshold} is outside [0, 1]")
    readout_parts(backend.sites, "the contribution graph")
    writes = recording() if recording is not None else record_run(backend, token_ids, "the contribution graph")
    blocks, final = graph_inputs(writes)
    g = contribution_graph(blocks, final, position, threshold, max_nodes)
    return GraphResult(position, threshold, max_nodes, g)


Node = tuple[str, int, int]


@dataclass(frozen=True)
class PredictionGraph:
    """What the graph route and ``attnscope graph`` answer: ``result`` (the graph and its bounds),
    ``nodes`` in drawing order (top layer first, ``pre`` before ``mid`` within a layer, then by
    position) with ``index`` (node -> its place in ``nodes``), ``target_id`` (the token whose logit
    is split) and ``attribution`` (that logit's direct parts at the position, unsplit)."""

    result: GraphResult
    nodes: tuple[Node, ...]
    index: dict
    target_id: int
    attribution: Attribution

    def block_parts(self) -> tuple[list[float], list[float]]:
        """``([layer] attention, [layer] mlp)`` direct parts of the logit: each block's heads and
        ``b_O``, each MLP (with ``embed`` they sum to ``logit - bias``)."""
        att = self.attribution
        return (att.heads.sum(-1) + att.attn_bias).tolist(), att.mlp.tolist()


def prediction_graph(
    backend,
    token_ids: Sequence[int],
    position: int | None,
    threshold: float,
    max_nodes: int,
    target: str | None = None,
    recording: Callable[[], RecordedWrites] | None = None,
) -> PredictionGraph:
    """The contribution graph of the prediction at ``position`` (default the last) with the direct
    parts of ``logit[target]`` there (``target`` one token; default the model's own next token)."""
    position = len(token_ids) - 1 if position is None else position
    tid = None if target is None else single_token_id(backend, target, "target")
    held: list[RecordedWrites] = []

    def recorded() -> RecordedWrites:  # recorded once, after graph_of_run has checked the request
        if not held:
            held.append(recording() if recording is not None else record_run(backend, token_ids, "the graph"))
        return held[0]

    res = graph_of_run(backend, token_ids, position, threshold, max_nodes, recorded)
    writes = recorded()
    if tid is None:
        norm, unembed = readout_parts(backend.sites, "the contribution graph")
        with torch.inference_mode():
            tid = int(unembed.logits(norm(writes.resid[-1, position])).argmax())
    att = attribute(writes, position, tid, split=False)
    order = tuple(sorted(res.graph.nodes, key=lambda n: (-n[1], n[0] == "mid", n[2])))
    return PredictionGraph(res, order, {n: k for k, n in enumerate(order)}, tid, att)
