"""``attnscope_qk``: the attention function attnscope registers with transformers' public
``AttentionInterface`` (and the matching mask function with ``AttentionMaskInterface``).

A Hugging Face model loaded with ``attn_implementation="attnscope_qk"`` calls
``attnscope_qk_attention`` in every attention layer. Without a request context it is plain SDPA
(transformers' ``sdpa_attention_forward``), so the forward runs the fused kernel. Inside
``attention_context(...)`` the function serves the current request only:

- a ``QKRecorder`` (``recorder=``) keeps each layer's post-RoPE queries ``[batch, head, query, dim]``
  and keys ``[batch, kv_head, key, dim]`` in the model's dtype and on its device, the mask the model
  built (``[batch, 1, query, key]`` bool, or ``None`` with ``is_causal``), the scale, the sliding
  window, the logit soft-cap and the learned sinks (``s_aux``, ``[head]``). From these
  ``attnscope.models.lazy_maps`` computes any block of ``softmax(q k^T * scale + mask)`` later.
- **attention hooks** (``hooks=``): objects with either or both of the methods below, consulted in
  order, for work that must change attention for one request (pre-softmax edge knockout, head
  ablation). A layer where a hook edits logits is computed explicitly (unfused), so that logits
  exist to edit; a layer where hooks only edit outputs runs SDPA and then the output edits:

  - ``edit_logits(layer, logits) -> logits``: ``logits [batch, head, query, key]`` float32, after
    scale, soft-cap and mask (masked entries are ``-inf``); return the logits to soft-max (same
    shape). Setting an entry to ``-inf`` knocks that edge out.
  - ``edit_output(layer, output) -> output``: ``output [batch, query, head, dim]``, the heads'
    outputs before the output projection; return the output (same shape). Zeroing
    ``output[:, :, h]`` ablates head ``h``.

  - ``read_qk(layer, record)``: ``record`` the layer's ``LayerRecord`` (below), passed before the
    layer computes anything and before ``layer_edits`` is asked; for a hook that reads a few rows of
    logits from the queries and keys, so that the layer keeps the fused kernel (the zoo's attention
    does not call it, and such a hook falls back to ``edit_logits`` there).

  A hook may define only one of them (``getattr`` decides), and ``layer_edits(layer) -> (logits,
  output)`` (two bools) to say which of the two it changes at a layer (default: the methods it has),
  so that layers it leaves alone keep the fused kernel. Hooks see the layer index
  (``module.layer_idx``, else the call order) and must not keep tensors beyond the request.
- ``return_probs=True`` (or a caller passing ``output_attentions=True`` to the model, which
  transformers reports through its output collector) makes the layer return its probabilities
  ``[batch, head, query, key]`` as eager attention does, in the autograd graph: explainers that
  differentiate through attention and step-by-step generation keep working on these models.

Thread safety: the context is a ``contextvars.ContextVar``, so each thread (or task) sees its own
recorder and hooks, and nothing on the shared model changes per request. A new kind of per-request
work adds a field to ``AttentionContext`` (or is written as a hook), never an attribute on the model.

What it cannot reproduce is refused at load (``refusal_reason``): models whose attention does not go
through the interface or adds a position bias (T5/ALiBi-style ``position_bias``) fall back to eager
capture with the reason logged. Soft-capping and sinks are reproduced; SDPA refuses soft-capping, so
layers with a soft-cap or sinks (and any layer with hooks) run the explicit computation.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

log = logging.getLogger(__name__)

NAME = "attnscope_qk"


class AttentionHook(Protocol):
    """A per-request edit of attention (see the module docstring); both methods are optional."""

    def edit_logits(self, layer: int, logits: torch.Tensor) -> torch.Tensor: ...

    def edit_output(self, layer: int, output: torch.Tensor) -> torch.Tensor: ...


@dataclass
class LayerRecord:
    """What one attention call used, enough to recompute its probabilities.

    ``query [batch, head, query, dim]`` and ``key [batch, kv_head, key, dim]`` post-RoPE, in the
    model's dtype and device (None in a recorder that keeps the stream instead: ``QKRecorder``).
    ``mask``: ``[batch, 1 | head, query, key]`` bool (True: attend) or float (added), or ``None``
    (then ``is_causal`` says whether later keys are hidden). ``scale``: multiplies
    ``q k^T``. ``softcap``: ``c tanh(s / c)`` before the mask. ``sinks``: ``[head]`` learned sink logits
    (a column in the softmax that is then dropped). ``sliding_window``: as the layer declared it (the
    mask already holds the window).
    """

    layer: int
    query: torch.Tensor | None
    key: torch.Tensor | None
    mask: torch.Tensor | None
    is_causal: bool
    scale: float
    softcap: float | None = None
    sinks: torch.Tensor | None = None
    sliding_window: int | None = None


@dataclass
class QKRecorder:
    """Collects one ``LayerRecord`` per attention layer of one forward pass (one request).
    ``keep_qk=False`` keeps everything but the queries and keys (a run that records the stream
    entering each block instead and rebuilds them: ``attnscope.models.stream_qk``)."""

    layers: dict[int, LayerRecord] = field(default_factory=dict)
    calls: int = 0
    keep_qk: bool = True

    def record(self, rec: LayerRecord) -> None:
        self.layers[rec.layer] = rec if self.keep_qk else replace(rec, query=None, key=None)
        self.calls += 1

    def ordered(self) -> list[LayerRecord]:
        """``[layer]`` records in layer order."""
        return [self.layers[i] for i in sorted(self.layers)]


@dataclass
class LayerCursor:
    """The block a forward pass is in, for modules applied more than once (a shared block): the
    block taps of ``attnscope.models.session`` advance it, sub-module taps and the zoo's attention
    read it. One per context (per request)."""

    layer: int = -1
    calls: int = 0


@dataclass(frozen=True)
class AttentionContext:
    """The current request's view of the model: a recorder, attention hooks, and site hooks
    (``attnscope.models.session``: objects with ``edit_site(site, layer, value) -> value`` that the
    site taps call for the residual stream, head outputs, attention and MLP outputs). Add fields
    here for new per-request work; the attention function and the taps read them, the model is never
    touched."""

    recorder: QKRecorder | None = None
    hooks: tuple[Any, ...] = ()
    return_probs: bool = False
    site_hooks: tuple[Any, ...] = ()
    cursor: LayerCursor = field(default_factory=LayerCursor)
    start: Any = None  # attnscope.models.session.Start: run from a block on (a start shell reads it)


_CONTEXT: contextvars.ContextVar[AttentionContext | None] = contextvars.ContextVar("attnscope_attention", default=None)


@contextmanager
def attention_context(
    recorder: QKRecorder | None = None,
    hooks: Sequence[AttentionHook] = (),
    return_probs: bool = False,
    site_hooks: Sequence[Any] = (),
    start: Any = None,
) -> Iterator[AttentionContext]:
    """Within the block, ``attnscope_qk`` layers record into ``recorder`` and apply ``hooks``, and
    the site taps call ``site_hooks``, for this thread/task only; the previous context is restored
    on exit (contexts nest: an inner one adds its hooks after the outer ones and records into its
    own recorder if given)."""
    outer = _CONTEXT.get()
    ctx = AttentionContext(
        recorder=recorder if recorder is not None else (outer.recorder if outer else None),
        hooks=(*(outer.hooks if outer else ()), *hooks),
        return_probs=return_probs or (outer.return_probs if outer else False),
        site_hooks=(*(outer.site_hooks if outer else ()), *site_hooks),
        cursor=outer.cursor if outer else LayerCursor(),
        start=start if start is not None else (outer.start if outer else None),
    )
    token = _CONTEXT.set(ctx)
    try:
        yield ctx
    finally:
        _CONTEXT.reset(token)


def current_context() -> AttentionContext | None:
    """The context of the running request, or None."""
    return _CONTEXT.get()


def _attentions_requested() -> bool:
    """Whether the running forward collects attentions (``output_attentions=True``): transformers
    records them from each attention module's second output through its output collector."""
    try:
        from transformers.utils.output_capturing import _active_collector
    except ImportError:  # pragma: no cover - a transformers without the collector
        return False
    collected = _active_collector.get()
    return bool(collected) and "attentions" in collected


def _layer_index(module: torch.nn.Module, recorder: QKRecorder | None) -> int:
    idx = getattr(module, "layer_idx", None)
    if idx is not None:
        return int(idx)
    return recorder.calls if recorder is not None else -1


def explicit_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    is_causal: bool,
    scale: float,
    softcap: float | None = None,
    sinks: torch.Tensor | None = None,
    layer: int = -1,
    hooks: Sequence[Any] = (),
    dropout: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention computed step by step (float32 softmax, as transformers' eager forward):
    ``query [batch, head, q, dim]``, ``key``/``value [batch, kv_head, k, dim]`` -> ``(output
    [batch, q, head, dim], probs [batch, head, q, k])`` in the query's dtype, with the hooks' edits
    applied."""
    n_rep = query.shape[1] // key.shape[1]
    k = repeat_kv(key, n_rep)
    v = repeat_kv(value, n_rep)
    logits = torch.matmul(query, k.transpose(2, 3)).float() * scale
    if softcap is not None:
        logits = softcap * torch.tanh(logits / softcap)
    if mask is not None:
        logits = logits.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else logits + mask.float()
    elif is_causal and query.shape[2] > 1:
        q_len, k_len = query.shape[2], key.shape[2]
        allowed = torch.ones(q_len, k_len, dtype=torch.bool, device=query.device).tril(k_len - q_len)
        logits = logits.masked_fill(~allowed, float("-inf"))
    logits = edit_logits(hooks, layer, logits)
    if sinks is not None:
        sink = sinks.float().reshape(1, -1, 1, 1).expand(logits.shape[0], -1, logits.shape[2], 1)
        probs = torch.softmax(torch.cat([logits, sink], dim=-1), dim=-1)[..., :-1]
    else:
        probs = torch.softmax(logits, dim=-1)
    probs = torch.nan_to_num(probs, nan=0.0).to(query.dtype)  # a row with every key knocked out attends to nothing
    if dropout and module.training:
        probs = torch.nn.functional.dropout(probs, p=dropout, training=True)
    out = torch.matmul(probs.to(v.dtype), v).transpose(1, 2).contiguous()
    return edit_output(hooks, layer, out), probs


def edit_logits(hooks: Sequence[Any], layer: int, logits: torch.Tensor) -> torch.Tensor:
    """``logits [batch, head, query, key]`` through every hook's ``edit_logits`` (in order). The one
    place logit edits are applied: ``attnscope_qk`` and the zoo's ``MultiHeadAttention`` call it."""
    for hook in hooks:
        edit = getattr(hook, "edit_logits", None)
        if edit is not None:
            logits = edit(layer, logits)
    return logits


def edit_output(hooks: Sequence[Any], layer: int, output: torch.Tensor) -> torch.Tensor:
    """``output [batch, query, head, dim]`` (the heads' outputs before the output projection) through
    every hook's ``edit_output`` (in order); shared by ``attnscope_qk`` and the zoo's attention."""
    for hook in hooks:
        edit = getattr(hook, "edit_output", None)
        if edit is not None:
            output = edit(layer, output)
    return output


def edits_logits_at(hooks: Sequence[Any], layer: int) -> bool:
    """Whether any hook edits the logits of ``layer`` (else the fused kernel may run)."""
    return any(_layer_edits(hook, layer)[0] for hook in hooks)


def attnscope_qk_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """The registered attention function (transformers' calling convention: ``query [batch, head,
    q, dim]``, ``key``/``value [batch, kv_head, k, dim]`` -> ``(output [batch, q, head, dim], None)``)."""
    ctx = _CONTEXT.get()
    softcap = kwargs.get("softcap")
    sinks = kwargs.get("s_aux")
    if kwargs.get("position_bias") is not None:
        raise ValueError("attnscope_qk does not reproduce position biases; load this model with capture='eager'")
    scale = float(scaling) if scaling is not None else float(query.shape[-1]) ** -0.5
    causal = bool(is_causal if is_causal is not None else getattr(module, "is_causal", True))
    recorder = ctx.recorder if ctx is not None else None
    hooks = ctx.hooks if ctx is not None else ()
    layer = _layer_index(module, recorder)
    readers = [hook for hook in hooks if getattr(hook, "read_qk", None) is not None]
    if recorder is not None or readers:
        rec = LayerRecord(
            layer=layer,
            query=query.detach(),
            key=key.detach(),
            mask=None if attention_mask is None else attention_mask.detach(),
            is_causal=causal and attention_mask is None,
            scale=scale,
            softcap=None if softcap is None else float(softcap),
            sinks=None if sinks is None else sinks.detach(),
            sliding_window=kwargs.get("sliding_window"),
        )
        if recorder is not None:
            recorder.record(rec)
        for hook in readers:
            hook.read_qk(layer, rec)
    want_probs = _attentions_requested() or (ctx is not None and ctx.return_probs)
    edits = [(hook, *_layer_edits(hook, layer)) for hook in hooks]
    if any(logits for _, logits, _ in edits) or want_probs or softcap is not None or sinks is not None:
        mask_causal = causal and attention_mask is None
        out, probs = explicit_attention(
            module, query, key, value, attention_mask, mask_causal, scale, softcap, sinks, layer, hooks, dropout
        )
        return out, probs if want_probs else None
    kwargs.pop("output_attentions", None)
    out, _ = sdpa_attention_forward(
        module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, is_causal=is_causal, **kwargs
    )
    return edit_output([hook for hook, _, edits_output in edits if edits_output], layer, out), None


def _layer_edits(hook: Any, layer: int) -> tuple[bool, bool]:
    """``(edits logits, edits output)`` of ``hook`` at ``layer``: its ``layer_edits`` when it has one,
    else whether it has ``edit_logits`` / ``edit_output``."""
    declared = getattr(hook, "layer_edits", None)
    logits, output = declared(layer) if declared is not None else (True, True)
    return bool(logits) and hasattr(hook, "edit_logits"), bool(output) and hasattr(hook, "edit_output")


def register() -> str:
    """Register ``attnscope_qk`` (attention and SDPA's boolean masks) with transformers; idempotent."""
    AttentionInterface.register(NAME, attnscope_qk_attention)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    return NAME


register()


def refusal_reason(model: torch.nn.Module) -> str | None:
    """Why ``model`` cannot run with ``attnscope_qk`` (None when it can): the model must route its
    attention through the ``AttentionInterface`` and add no position bias the recorder cannot see."""
    config = model.config
    if not getattr(model, "_supports_attention_backend", False):
        return f"{type(model).__name__} does not route its attention through transformers' AttentionInterface"
    if getattr(config, "alibi", False):
        return "ALiBi position biases are added inside the model's attention"
    if getattr(config, "relative_attention_num_buckets", None):
        return "T5-style relative position biases are added inside the model's attention"
    kind = getattr(config, "position_embedding_type", "absolute")
    if kind not in (None, "absolute", "rope"):
        return f"position_embedding_type={kind!r} adds relative position scores inside the attention"
    if getattr(config, "is_encoder_decoder", False):
        return "encoder-decoder models (cross-attention) are not supported"
    return None
