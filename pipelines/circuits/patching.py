"""Exact path patching of one edge and circuit runs, over a prepared clean/corrupted pair.

``prepare`` runs the clean and the corrupted input once (``[batch, pos]`` each, the same length:
position ``p`` of one is aligned with position ``p`` of the other; inputs of different token lengths
are refused) and keeps every sender's output of both. Then, for an edge ``u -> v``:

- **noising**: the clean pass with ``v``'s input ``x_v + (corrupted_u - clean_u)``; every other
  input is the clean one except what ``v`` changes downstream. Effect ``M(patched) - M(clean)``.
- **denoising**: the corrupted pass with ``x_v + (clean_u - corrupted_u)``; effect
  ``M(patched) - M(corrupted)``.

A **circuit run** (``run_circuit``) patches every edge outside the circuit: a receiver reads its
circuit senders' outputs of this pass and the corrupted outputs of the others,
``x_v + sum_{u -> v not kept} (corrupted_u - run_u)``. With no edge kept it is the corrupted pass,
with every edge kept the clean pass.

**Mean ablation** (``ablation="mean"``): the edges outside the circuit read each sender's mean output
over a pair set instead (``mean_senders``: the clean passes' outputs averaged over the pairs,
position by position, ``[S, 1, pos, d_model]``), and the faithfulness's baseline is the run with
every edge mean-ablated: ``(M(circuit) - M(empty)) / (M(clean) - M(empty))``. With corrupted values
``M(empty) = M(corrupted)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnscope.models.sites import Sites
from attnscope.pipelines.circuits.graph import PARTS, CircuitInputError, Graph, check_sites
from attnscope.pipelines.circuits.metric import CircuitMetric
from attnscope.pipelines.circuits.stream import AttnParams, Pass, record_params, run_graph

SENDER_CHUNK = 32  # senders whose differences a circuit run stacks at once


@dataclass
class Prepared:
    model: object
    sites: Sites
    graph: Graph
    metric: CircuitMetric
    clean_ids: torch.Tensor  # [batch, pos]
    corrupted_ids: torch.Tensor
    params: list[AttnParams]
    clean: Pass
    corrupted: Pass
    m_clean: float
    m_corrupted: float


def check_lengths(clean_ids: torch.Tensor, corrupted_ids: torch.Tensor) -> None:
    if clean_ids.shape != corrupted_ids.shape:
        raise CircuitInputError(
            f"clean and corrupted inputs must have the same number of tokens (positions are patched one to one): "
            f"got {tuple(clean_ids.shape)} and {tuple(corrupted_ids.shape)}; pad or reword the corrupted input"
        )


def prepare(model, sites: Sites, clean_ids, corrupted_ids, metric: CircuitMetric) -> Prepared:
    check_sites(sites)
    clean_ids, corrupted_ids = torch.atleast_2d(clean_ids), torch.atleast_2d(corrupted_ids)
    check_lengths(clean_ids, corrupted_ids)
    metric.check(clean_ids.shape[0], clean_ids.shape[1])
    clean, params = record_params(model, sites, clean_ids)
    with torch.no_grad():
        corrupted, _ = run_graph(model, sites, corrupted_ids, params=params, check=True)
        m_clean, m_corr = float(metric(clean.logits, clean_ids)), float(metric(corrupted.logits, clean_ids))
    return Prepared(
        model, sites, Graph.of(sites), metric, clean_ids, corrupted_ids, params, clean, corrupted, m_clean, m_corr
    )


def _slot_index(graph: Graph, receiver: int) -> tuple[int, str, int]:
    """``(layer, part, index within the part)`` of receiver index ``receiver``."""
    if receiver == graph.receiver(0, "logits"):
        return graph.n_layers - 1, "logits", 0
    layer, off = divmod(receiver, graph.per_layer)
    for part in (*PARTS, "mlp"):
        sl = graph.slots(layer, part)
        if sl.start <= receiver < sl.stop:
            return layer, part, receiver - sl.start
    raise AssertionError(off)


def fixed_delta(graph: Graph, receiver: int, delta: torch.Tensor):
    """Deltas that add ``delta [batch, pos, d_model]`` to one receiver's input."""
    layer, part, index = _slot_index(graph, receiver)
    width = {"q": graph.n_heads, "k": graph.n_kv, "v": graph.n_kv}.get(part)

    def deltas(at: int, which: str, senders):
        if at != layer or which != part:
            return None
        if width is None:
            return delta
        d = torch.zeros(*delta.shape[:2], width, delta.shape[-1], dtype=delta.dtype, device=delta.device)
        d[:, :, index] = delta
        return d

    return deltas


def patch_edge(prep: Prepared, sender: int, receiver: int, direction: str = "noising") -> float:
    """The exact effect on the metric of patching edge ``sender -> receiver`` (indices of
    ``prep.graph``): ``M(patched) - M(base)``, base clean (noising) or corrupted (denoising)."""
    if not prep.graph.valid()[sender, receiver]:
        raise CircuitInputError("not an edge: the sender is not upstream of the receiver")
    if direction not in ("noising", "denoising"):
        raise CircuitInputError(f"direction {direction!r} is not noising or denoising")
    noising = direction == "noising"
    base, src = (prep.clean, prep.corrupted) if noising else (prep.corrupted, prep.clean)
    ids = prep.clean_ids if noising else prep.corrupted_ids
    delta = src.senders[sender] - base.senders[sender]
    with torch.no_grad():
        out, _ = run_graph(prep.model, prep.sites, ids, fixed_delta(prep.graph, receiver, delta), prep.params)
        m = float(prep.metric(out.logits, prep.clean_ids))
    return m - (prep.m_clean if noising else prep.m_corrupted)


def circuit_deltas(graph: Graph, patched: torch.Tensor, source: torch.Tensor):
    """Deltas of a circuit run: ``patched [S, R]`` (1: the edge reads ``source [S, batch, pos,
    d_model]``, the corrupted senders; 0: this pass's own). A receiver's delta is
    ``sum_u patched[u, v] (source_u - run_u)``; where most of its edges are patched (a circuit of a few
    edges) it is the sum over every upstream sender, kept as a running total over the pass, less the
    unpatched edges' terms, so a pass stacks only the senders of kept edges."""
    state: dict = {"senders": None, "n": 0, "total": None}

    def total(senders) -> torch.Tensor:  # [b, p, d]: sum of source_u - run_u over the senders so far
        if state["senders"] is not senders or state["n"] > len(senders):
            state.update(senders=senders, n=0, total=torch.zeros_like(senders[0]))
        for u in range(state["n"], len(senders)):
            state["total"] = state["total"] + (source[u] - senders[u])
        state["n"] = len(senders)
        return state["total"]

    def weighted(rows: list[int], w: torch.Tensor, senders) -> torch.Tensor:
        """``sum_u w[u, r] (source_u - run_u)`` over ``rows`` -> ``[b, p, r, d]``, ``SENDER_CHUNK``
        senders at a time (never every sender's difference at once)."""
        out = None
        for a in range(0, len(rows), SENDER_CHUNK):
            part = rows[a : a + SENDER_CHUNK]
            diff = source[part] - torch.stack([senders[u] for u in part])  # [m, b, p, d]
            term = torch.einsum("nr,nbpd->bprd", w[part].to(diff.dtype), diff)
            out = term if out is None else out + term
        return out

    def deltas(layer: int, part: str, senders):
        sl = graph.slots(layer, part) if part != "logits" else slice(graph.n_receivers - 1, graph.n_receivers)
        n = len(senders)
        w = patched[:n, sl]
        if not bool(w.any()):
            return None
        if 2 * int(w.sum()) > w.numel():  # mostly patched: the running total less the kept edges
            kept = ~w
            rows = torch.nonzero(kept.any(1)).flatten().tolist()
            d = total(senders)[:, :, None, :].expand(-1, -1, w.shape[1], -1)
            if rows:
                d = d - weighted(rows, kept, senders)
        else:
            d = weighted(torch.nonzero(w.any(1)).flatten().tolist(), w, senders)
        return d if part in PARTS else d[:, :, 0]

    return deltas


def mean_senders(model, sites: Sites, ids: torch.Tensor, chunk: int | None = None) -> torch.Tensor:
    """``[S, 1, pos, d_model]``: every sender's output on the clean inputs ``ids [n, pos]`` averaged
    over the ``n`` rows (a pair set of one token length), position by position; passes of ``chunk``
    rows at a time (default: 128 tokens a pass), summed in the model's dtype, accumulated in float64."""
    ids = torch.atleast_2d(ids)
    chunk = chunk or max(1, 128 // ids.shape[1])
    total = None
    with torch.no_grad():
        for start in range(0, ids.shape[0], chunk):
            out, _ = run_graph(model, sites, ids[start : start + chunk])
            part = out.senders.sum(1, keepdim=True).double()
            total = part if total is None else total + part
    return total / ids.shape[0]


def run_circuit(prep: Prepared, keep: np.ndarray, source: torch.Tensor | None = None) -> float:
    """The metric with every edge outside ``keep [S, R]`` (bool; non-edges ignored) patched with its
    corrupted value (or ``source [S, batch or 1, pos, d_model]``, e.g. ``mean_senders``), on the clean
    input."""
    patched = torch.as_tensor(prep.graph.valid() & ~np.asarray(keep, bool))
    source = prep.corrupted.senders if source is None else source.to(prep.corrupted.senders.dtype)
    with torch.no_grad():
        deltas = circuit_deltas(prep.graph, patched, source)
        out, _ = run_graph(prep.model, prep.sites, prep.clean_ids, deltas, prep.params)
        return float(prep.metric(out.logits, prep.clean_ids))


def empty_metric(prep: Prepared, source: torch.Tensor | None = None) -> float:
    """``M(empty)``: the metric with every edge patched from ``source`` (None: the corrupted pass's
    metric, exactly what patching every edge with its corrupted value gives)."""
    if source is None:
        return prep.m_corrupted
    return run_circuit(prep, np.zeros(prep.graph.valid().shape, bool), source)


def faithfulness(
    prep: Prepared, keep: np.ndarray, source: torch.Tensor | None = None, m_empty: float | None = None
) -> float:
    """``(M(circuit) - M(empty)) / (M(clean) - M(empty))``: the share of the gap between the full model
    and the empty circuit that the circuit recovers (1: all of it). Edges outside the circuit read
    ``source`` (None: their corrupted values, ``M(empty) = M(corrupted)``; ``mean_senders``: mean
    ablation); ``m_empty`` is ``empty_metric(prep, source)`` when the caller has it already."""
    base = empty_metric(prep, source) if m_empty is None else m_empty
    gap = prep.m_clean - base
    if abs(gap) < 1e-12:
        what = "clean and corrupted inputs give" if source is None else "the clean and the mean-ablated graph give"
        raise CircuitInputError(f"{what} the same metric: nothing to recover, pick other pairs")
    return (run_circuit(prep, keep, source) - base) / gap
