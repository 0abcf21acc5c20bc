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

from dataclasses import dataclass

import numpy as np
import torch

from attnscope.pipelines.circuits.graph import CircuitInputError
from attnscope.pipelines.circuits.patching import Prepared
from attnscope.pipelines.circuits.stream import run_graph

MAX_IG_STEPS = 64


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


def receiver_grads(prep: Prepared, ids: torch.Tensor, extra_hooks=()) -> torch.Tensor:
    """``[R, batch, pos, d_model]`` ``dM/dx_v`` for every receiver at one pass on ``ids``."""
    g, sites = prep.graph, prep.sites
    b, p = ids.shape
    dtype = prep.clean.senders.dtype
    dev = prep.clean.senders.device
    leaves = {}
    for layer in range(g.n_layers):
        for part, n in (("q", g.n_heads), ("k", g.n_kv), ("v", g.n_kv)):
            leaves[layer, part] = torch.zeros(b, p, n, sites.d_model, dtype=dtype, device=dev, requires_grad=True)
        leaves[layer, "mlp"] = torch.zeros(b, p, sites.d_model, dtype=dtype, device=dev, requires_grad=True)
    leaves[g.n_layers - 1, "logits"] = torch.zeros(b, p, sites.d_model, dtype=dtype, device=dev, requires_grad=True)

    def deltas(layer, part, senders):
        return leaves.get((layer, part))

    with torch.enable_grad():
        out, _ = run_graph(prep.model, sites, ids, deltas, prep.params, extra_hooks=extra_hooks)
        m = prep.metric(out.logits, prep.clean_ids)
        order = list(leaves.values())
        grads = torch.autograd.grad(m, order, allow_unused=True)
    rows = []
    for leaf, grad in zip(order, grads, strict=True):
        grad = torch.zeros_like(leaf) if grad is None else grad
        rows.extend(grad.unbind(2) if grad.dim() == 4 else [grad])
    return torch.stack(rows)  # order: per layer q heads, k, v kv heads, mlp; then logits


def _scores(prep: Prepared, diff: torch.Tensor, grads: torch.Tensor) -> np.ndarray:
    s = torch.einsum("sbpd,rbpd->sr", diff.double(), grads.double()).numpy()
    return np.where(prep.graph.valid(), s, np.nan)


def eap(prep: Prepared, direction: str = "noising") -> np.ndarray:
    """``[S, R]`` EAP scores (the first-order change of the metric when the edge is patched)."""
    if direction == "noising":
        return _scores(prep, prep.corrupted.senders - prep.clean.senders, receiver_grads(prep, prep.clean_ids))
    if direction == "denoising":
        return _scores(prep, prep.clean.senders - prep.corrupted.senders, receiver_grads(prep, prep.corrupted_ids))
    raise CircuitInputError(f"direction {direction!r} is not noising or denoising")


def eap_ig(prep: Prepared, steps: int = 5) -> np.ndarray:
    """``[S, R]`` EAP-IG scores (noising sign: ``corrupted_u - clean_u``) with ``steps`` passes."""
    if not 1 <= int(steps) <= MAX_IG_STEPS:
        raise CircuitInputError(f"steps={steps} is out of range: use 1..{MAX_IG_STEPS}")
    e_clean, e_corr = prep.clean.senders[0], prep.corrupted.senders[0]
    total = None
    for k in range(int(steps)):
        hook = Interpolate(e_corr, e_clean, k / steps)
        grads = receiver_grads(prep, prep.clean_ids, extra_hooks=(hook,))
        total = grads if total is None else total + grads
    return _scores(prep, prep.corrupted.senders - prep.clean.senders, total / steps)
