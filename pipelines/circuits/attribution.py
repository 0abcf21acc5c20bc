"""Edge attribution patching over every edge of the graph: EAP (Syed et al. 2023) and EAP-IG
(Hanna et al. 2024, interpolating the input embeddings).

For the edge ``u -> v`` (noising), ``score(u -> v) = sum_{batch, pos} (corrupted_u - clean_u) .
dM/dx_v`` at the clean input, ``x_v`` the **pre-norm** input of receiver ``v`` alone (its own copy of
the stream, so the gradient reaches the receiver through its norm and projection only; see
``stream``). One clean pass with a zero delta per receiver and one backward give every ``dM/dx_v``
(``torch.autograd.grad``: no parameter's ``.grad`` is touched). Denoising swaps the roles: the
gradient at the corrupted input and ``clean_u - corrupted_u``.

EAP-IG: ``dM/dx_v`` averaged over ``steps`` passes whose embedding is ``E_corr + (k / steps) (E_clean
- E_corr)``, ``k = 0 .. steps - 1`` (the reference implementation's rule), on the clean tokens.
Scores ``[S, R]`` (``graph``'s order), NaN where there is no edge.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from attnscope.pipelines.circuits.graph import CircuitInputError
from attnscope.pipelines.circuits.patching import Prepared
from attnscope.pipelines.circuits.stream import AttnParams, Pass, run_graph

MAX_IG_STEPS = 64
CHUNK_TOKENS = 128  # tokens (rows x positions) per backward pass: bounds the graph's saved activations


@dataclass
class Interpolate:
    """Site hook: block 0's input becomes ``start + alpha (end - start)``."""

    start: torch.Tensor
    end: torch.Tensor
    alpha: float

    def wants(self, site: str, layer: int) -> bool:
        return site == "resid_pre" and layer == 0

    def edit_site(self, site: str, layer: int, value: torch.Tensor) -> torch.Tensor:
        return (self.start + self.alpha * (self.end - self.start)).to(value.dtype)


def _leaves(prep: Prepared, b: int, p: int) -> dict:
    """A zero delta (requiring its gradient) per receiver group: ``(layer, part) -> [b, p, n, d_model]``
    for q/k/v, ``[b, p, d_model]`` for the MLP and the logits."""
    g, sites = prep.graph, prep.sites
    dtype, dev = prep.clean.senders.dtype, prep.clean.senders.device
    leaves = {}
    for layer in range(g.n_layers):
        for part, n in (("q", g.n_heads), ("k", g.n_kv), ("v", g.n_kv)):
            leaves[layer, part] = torch.zeros(b, p, n, sites.d_model, dtype=dtype, device=dev, requires_grad=True)
        leaves[layer, "mlp"] = torch.zeros(b, p, sites.d_model, dtype=dtype, device=dev, requires_grad=True)
    leaves[g.n_layers - 1, "logits"] = torch.zeros(b, p, sites.d_model, dtype=dtype, device=dev, requires_grad=True)
    return leaves


def _rows_params(params: list[AttnParams], rows: slice, b: int) -> list[AttnParams]:
    """The layers' attention parameters for batch rows ``rows`` of ``b`` (a mask with a batch axis sliced)."""
    out = []
    for prm in params:
        mask = prm.mask
        if mask is not None and mask.dim() == 4 and mask.shape[0] == b and b > 1:
            mask = mask[rows]
        out.append(replace(prm, mask=mask))
    return out


def _group_grads(prep: Prepared, inputs: torch.Tensor, rows: slice, extra_hooks=()):
    """``[(first receiver index, grad)]`` of ``dM/dx_v`` on batch rows ``rows`` of the pass on
    ``inputs [b, p]`` (the metric reads the clean ids): ``grad [c, p, n, d_model]`` (n receivers of
    one q/k/v group) or ``[c, p, d_model]`` (an MLP, the logits). ``M`` is the whole batch's metric: the
    rows' own metric times ``c / b`` (the metric is a mean over rows, and rows do not interact)."""
    ids = inputs[rows]
    b = inputs.shape[0]
    c, p = ids.shape
    g = prep.graph
    leaves = _leaves(prep, c, p)

    def deltas(layer, part, senders):
        return leaves.get((layer, part))

    with torch.enable_grad():
        params = _rows_params(prep.params, rows, b)
        out, _ = run_graph(prep.model, prep.sites, ids, deltas, params, extra_hooks=extra_hooks)
        m = prep.metric.rows(rows)(out.logits, prep.clean_ids[rows]) * (c / b)
        keys = list(leaves)
        grads = torch.autograd.grad(m, [leaves[k] for k in keys], allow_unused=True)
    for (layer, part), leaf, grad in zip(keys, [leaves[k] for k in keys], grads, strict=True):
        start = g.receiver(layer, part, 0) if part != "logits" else g.receiver(0, "logits")
        yield start, torch.zeros_like(leaf) if grad is None else grad


def receiver_grads(prep: Prepared, ids: torch.Tensor, extra_hooks=()) -> torch.Tensor:
    """``[R, batch, pos, d_model]`` ``dM/dx_v`` for every receiver at one pass on ``ids`` (all rows at
    once: for tests and small batches; ``eap`` scores by row chunks without stacking these)."""
    rows = []
    for _, grad in _group_grads(prep, ids, slice(0, ids.shape[0]), extra_hooks):
        rows.extend(grad.unbind(2) if grad.dim() == 4 else [grad])
    return torch.stack(rows)  # order: per layer q heads, k, v kv heads, mlp; then logits


def chunk_rows(n_rows: int, n_tokens: int) -> int:
    """Rows per backward pass: ``CHUNK_TOKENS`` tokens at most (one row at least)."""
    return max(1, min(n_rows, CHUNK_TOKENS // max(1, n_tokens)))


def _accumulate(prep: Prepared, base: Pass, src: Pass, passes) -> np.ndarray:
    """``[S, R]`` float64: ``sum_{rows, pos} (src_u - base_u) . dM/dx_v``, the gradients from ``passes``
    (``[(the pass's input ids, hooks_for(rows), weight)]``), a chunk of rows at a time: the chunk's
    receiver gradients (``[R, c p d_model]``, at most ``CHUNK_TOKENS`` tokens) times its senders'
    differences in one matrix product in the model's dtype, the ``[S, R]`` sums accumulated in float64
    (nothing of the whole batch's size is stacked or copied to float64)."""
    g = prep.graph
    b, p = prep.clean_ids.shape
    total = torch.zeros(g.n_senders, g.n_receivers, dtype=torch.float64)
    step = chunk_rows(b, p)
    for a in range(0, b, step):
        rows = slice(a, min(b, a + step))
        diff = (src.senders[:, rows] - base.senders[:, rows]).flatten(1)  # [S, c p d]
        for inputs, hooks_for, weight in passes:
            cols = []
            for start, grad in _group_grads(prep, inputs, rows, hooks_for(rows)):
                assert start == sum(x.shape[0] for x in cols)  # receivers in graph order
                grad = grad.to(diff.dtype)
                cols.append(grad.movedim(2, 0).flatten(1) if grad.dim() == 4 else grad.flatten()[None])
            total += weight * (diff @ torch.cat(cols).T).double().cpu()  # [S, R]
    s = total.numpy()
    return np.where(prep.graph.valid(), s, np.nan)


def eap(prep: Prepared, direction: str = "noising") -> np.ndarray:
    """``[S, R]`` EAP scores (the first-order change of the metric when the edge is patched)."""
    if direction == "noising":
        return _accumulate(prep, prep.clean, prep.corrupted, [(prep.clean_ids, lambda rows: (), 1.0)])
    if direction == "denoising":
        return _accumulate(prep, prep.corrupted, prep.clean, [(prep.corrupted_ids, lambda rows: (), 1.0)])
    raise CircuitInputError(f"direction {direction!r} is not noising or denoising")


def eap_ig(prep: Prepared, steps: int = 5) -> np.ndarray:
    """``[S, R]`` EAP-IG scores (noising sign: ``corrupted_u - clean_u``) with ``steps`` passes."""
    if not 1 <= int(steps) <= MAX_IG_STEPS:
        raise CircuitInputError(f"steps={steps} is out of range: use 1..{MAX_IG_STEPS}")
    e_clean, e_corr = prep.clean.senders[0], prep.corrupted.senders[0]

    def hooks(k):
        return lambda rows: (Interpolate(e_corr[rows], e_clean[rows], k / steps),)

    passes = [(prep.clean_ids, hooks(k), 1.0 / steps) for k in range(int(steps))]
    return _accumulate(prep, prep.clean, prep.corrupted, passes)
