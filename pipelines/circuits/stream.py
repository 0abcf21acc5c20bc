"""One forward pass of the graph through the request session: record every sender's output and feed
every receiver its own input, ``stream + delta_receiver``.

``GraphHook`` is a site hook (``attnscope.models.session``). At block ``l`` it keeps the stream
``x = resid_pre[l]``; at ``head_z`` it recomputes the heads from per-receiver inputs
``x_q[h] = x + d_q[h]``, ``x_k[g] = x + d_k[g]``, ``x_v[g] = x + d_v[g]`` (each through the block's
own norm, projections and rotary embedding, and ``explicit_attention`` with the layer's recorded
scale / mask / soft-cap / sinks) and returns those ``z [batch, pos, head, head_dim]``; at
``resid_mid`` (the input tap of the MLP's norm: the MLP's input only, the residual path is left
alone) it adds ``d_mlp``; at the last block's ``resid_post`` (what the final norm reads) it adds
``d_logits``. ``deltas(layer, part, senders)`` returns the deltas from the senders recorded so far
(``[n, batch, pos, d_model]`` in sender order), or None for none. With every delta zero the pass is
the model's own; ``check=True`` compares the recomputed heads with the model's and refuses a family
the recomputation does not reproduce.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from attnscope.models.attention_fn import QKRecorder
from attnscope.models.session import session
from attnscope.models.sites import Sites, SitesUnavailableError
from attnscope.pipelines.circuits.graph import check_sites

Deltas = Callable[[int, str, list], "torch.Tensor | None"]


@dataclass(frozen=True)
class AttnParams:
    """Layer ``l``'s attention as the model ran it: ``mask``, ``is_causal``, ``scale``, ``softcap``,
    ``sinks`` (from the ``attnscope_qk`` recorder; the causal default for an eager model)."""

    mask: torch.Tensor | None
    is_causal: bool
    scale: float
    softcap: float | None
    sinks: torch.Tensor | None


def attention_params(sites: Sites, recorder: QKRecorder) -> list[AttnParams]:
    out = []
    for layer in range(sites.n_layers):
        rec = recorder.layers.get(layer)
        if rec is None:
            out.append(AttnParams(None, True, sites.d_head**-0.5, None, None))
        else:
            out.append(AttnParams(rec.mask, rec.is_causal, rec.scale, rec.softcap, rec.sinks))
    return out


def heads_from_inputs(sites: Sites, layer: int, xq, xk, xv, params: AttnParams) -> torch.Tensor:
    """``z [batch, pos, head, d_head]`` of block ``layer`` from per-receiver pre-norm inputs
    ``xq [batch, pos, head, d_model]``, ``xk``/``xv [batch, pos, kv_head, d_model]``."""
    blk = sites.blocks[layer]
    norm = blk.ln_attn.apply

    def project(x, w, b):  # [b, p, n, d] -> [b, n, p, e]
        y = torch.einsum("bpnd,nde->bnpe", norm(x), w.to(x.dtype))
        return y if b is None else y + b.to(x.dtype)[None, :, None, :]

    q, k, v = project(xq, blk.W_Q, blk.b_Q), project(xk, blk.W_K, blk.b_K), project(xv, blk.W_V, blk.b_V)
    if blk.rope is not None:
        pos = torch.arange(xq.shape[1], device=xq.device)[None].expand(xq.shape[0], -1)
        q, k = blk.rope.apply(q, k, pos)
    return attend(q, k, v, params)  # [b, p, head, d_head]


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, params: AttnParams) -> torch.Tensor:
    """``q [b, head, pos, e]``, ``k``/``v [b, kv_head, pos, e]`` -> ``z [b, pos, head, e]``: the steps of
    ``attention_fn.explicit_attention`` in float32 or wider (float64 stays float64, so the finite-
    difference checks of the tests are exact to its precision)."""
    dtype = torch.promote_types(q.dtype, torch.float32)
    n_rep = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(n_rep, dim=1).to(dtype)
    v = v.repeat_interleave(n_rep, dim=1).to(dtype)
    logits = torch.matmul(q.to(dtype), k.transpose(2, 3)) * params.scale
    if params.softcap is not None:
        logits = params.softcap * torch.tanh(logits / params.softcap)
    mask = params.mask
    if mask is not None:
        logits = logits.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else logits + mask.to(dtype)
    elif params.is_causal and q.shape[2] > 1:
        allowed = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool, device=q.device).tril(k.shape[2] - q.shape[2])
        logits = logits.masked_fill(~allowed, float("-inf"))
    if params.sinks is not None:
        sink = params.sinks.to(dtype).reshape(1, -1, 1, 1).expand(logits.shape[0], -1, logits.shape[2], 1)
        probs = torch.softmax(torch.cat([logits, sink], dim=-1), dim=-1)[..., :-1]
    else:
        probs = torch.softmax(logits, dim=-1)
    probs = torch.nan_to_num(probs, nan=0.0)
    return torch.matmul(probs, v).transpose(1, 2).to(q.dtype)


@dataclass
class GraphHook:
    sites: Sites
    deltas: Deltas
    params: list[AttnParams] | None = None
    check: bool = False
    senders: list = field(default_factory=list)  # [batch, pos, d_model] each, in sender order
    _x: dict = field(default_factory=dict)
    max_error: float = 0.0
    buffer: torch.Tensor | None = None  # without gradients: [S, batch, pos, d_model], what ``senders`` view

    def _keep(self, values) -> None:
        """Record sender outputs; without gradients they are copied into one ``[S, ...]`` buffer (the
        pass's ``senders`` then need no stacked copy)."""
        for value in values:
            if self.buffer is None and not torch.is_grad_enabled() and not self.senders:
                n = 1 + self.sites.n_layers * (self.sites.n_heads + 1)
                self.buffer = torch.empty(n, *value.shape, dtype=value.dtype, device=value.device)
            if self.buffer is not None:
                slot = self.buffer[len(self.senders)]
                slot.copy_(value)
                value = slot
            self.senders.append(value)

    def wants(self, site: str, layer: int) -> bool:
        if site == "resid_post":
            return layer == self.sites.n_layers - 1
        return site in ("resid_pre", "head_z", "mlp_out", "resid_mid")

    def edit_site(self, site: str, layer: int, value: torch.Tensor) -> torch.Tensor:
        if site == "resid_pre":
            if layer == 0:
                self._keep([value])
            self._x[layer] = value
            return value
        if site == "head_z":
            return self._heads(layer, value)
        if site == "mlp_out":
            self._keep([value])
            return value
        part = "mlp" if site == "resid_mid" else "logits"
        d = self.deltas(layer, part, self.senders)
        return value if d is None else value + d.to(value.dtype)

    def _heads(self, layer: int, value: torch.Tensor) -> torch.Tensor:
        ds = [self.deltas(layer, p, self.senders) for p in ("q", "k", "v")]
        z = value
        if any(d is not None for d in ds) or self.check:
            x = self._x[layer]
            n = (self.sites.n_heads, self.sites.n_kv_heads, self.sites.n_kv_heads)
            xs = [
                x[:, :, None, :].expand(-1, -1, k, -1) if d is None else x[:, :, None, :] + d.to(x.dtype)
                for d, k in zip(ds, n, strict=True)
            ]
            z = heads_from_inputs(self.sites, layer, *xs, self.params[layer]).to(value.dtype)
            if self.check and all(d is None for d in ds):
                err = float((z - value).abs().max() / (value.abs().max() + 1e-12))
                self.max_error = max(self.max_error, err)
        blk = self.sites.blocks[layer]
        out = torch.einsum("bphe,hed->bphd", z, blk.W_O.to(z.dtype))
        if blk.out_scale is not None:
            out = out * blk.out_scale.to(z.dtype)
        self._keep(out.unbind(2))
        return z


@dataclass
class Pass:
    """What one graph pass returns: ``logits [batch, pos, vocab]`` and ``senders [S, batch, pos,
    d_model]`` (this pass's sender outputs)."""

    logits: torch.Tensor
    senders: torch.Tensor


def run_graph(
    model,
    sites: Sites,
    ids: torch.Tensor,
    deltas: Deltas | None = None,
    params=None,
    check: bool = False,
    extra_hooks=(),
) -> tuple[Pass, GraphHook]:
    """One forward of ``model`` on ``ids [batch, pos]`` with a ``GraphHook`` (after ``extra_hooks``,
    e.g. an embedding interpolation). Gradient mode is the caller's."""
    check_sites(sites)
    hook = GraphHook(sites, deltas or (lambda *a: None), params, check)
    with session(*extra_hooks, hook):
        logits = model(input_ids=ids, use_cache=False).logits
    if check and hook.max_error > 1e-3:
        raise SitesUnavailableError(
            f"circuits recompute each head from its own input; for the {sites.family} family that differs from "
            f"the model's heads by {hook.max_error:.2g} (relative), so its graph cannot be patched"
        )
    full = hook.buffer is not None and len(hook.senders) == hook.buffer.shape[0]
    return Pass(logits, hook.buffer if full else torch.stack(hook.senders)), hook


def record_params(model, sites: Sites, ids: torch.Tensor) -> tuple[Pass, list[AttnParams]]:
    """The clean pass: the layers' attention parameters, checked by recomputing every head."""
    recorder = QKRecorder()
    with torch.no_grad(), session(recorder=recorder):
        model(input_ids=ids, use_cache=False)
    params = attention_params(sites, recorder)
    with torch.no_grad():
        out, _ = run_graph(model, sites, ids, params=params, check=True)
    return out, params
