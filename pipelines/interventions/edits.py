"""Per-row edits of attention for one batched forward pass, built from ``InterventionSet`` s.

Row ``b`` of the batch gets ``sets[b]`` (a per-head grid is ``L * H`` copies of one input, row ``i``
ablating head ``i``). The edits are tensors per layer, applied by ``RowEdits`` as an attention hook
(``edit_logits`` / ``edit_output`` of ``attnscope.models.attention_fn``):

- ``replace [batch, head]`` (1: replace) and ``value [batch, 1 | query, head, dim]``: head outputs
  ``out = out * (1 - replace) + value * replace`` (zero, mean and patch ablations);
- ``uniform [batch, head]`` bool: logits set to 0 on every visible key (uniform attention);
- ``knock [batch, head, query, key]`` bool: logits set to ``-inf`` (edge knockout).

``HeadRecorder`` keeps each layer's head outputs ``[batch, query, head, dim]`` of a forward pass (the
source of a patch, the reference set of a mean ablation). Both live for one request only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from attnscope.pipelines.interventions.spec import EdgeKnockout, HeadAblation, HeadPatch, InterventionSet


@dataclass
class LayerEdit:
    replace: torch.Tensor | None = None  # [batch, head] float
    value: torch.Tensor | None = None  # [batch, query | 1, head, dim]
    uniform: torch.Tensor | None = None  # [batch, head] bool
    knock: torch.Tensor | None = None  # [batch, head, query, key] bool


@dataclass
class RowEdits:
    """The attention hook of one batched forward (see the module docstring)."""

    layers: dict[int, LayerEdit] = field(default_factory=dict)

    def layer_edits(self, layer: int) -> tuple[bool, bool]:
        """``(logits, output)``: what this hook changes at ``layer`` (other layers keep fused SDPA)."""
        edit = self.layers.get(layer)
        if edit is None:
            return False, False
        return edit.uniform is not None or edit.knock is not None, edit.replace is not None

    def edit_logits(self, layer: int, logits: torch.Tensor) -> torch.Tensor:
        """``logits [batch, head, query, key]`` -> the same with uniform heads and knocked-out edges."""
        edit = self.layers.get(layer)
        if edit is None or (edit.uniform is None and edit.knock is None):
            return logits
        if edit.uniform is not None:
            u = edit.uniform[:, :, None, None].to(logits.device)
            logits = torch.where(u & torch.isfinite(logits), torch.zeros_like(logits), logits)
        if edit.knock is not None:
            n_q, n_k = logits.shape[-2:]
            knock = edit.knock[:, :, :n_q, :n_k].to(logits.device)
            logits = logits.masked_fill(knock, float("-inf"))
        return logits

    def edit_output(self, layer: int, output: torch.Tensor) -> torch.Tensor:
        """``output [batch, query, head, dim]`` -> the same with the replaced heads."""
        edit = self.layers.get(layer)
        if edit is None or edit.replace is None:
            return output
        m = edit.replace[:, None, :, None].to(output.dtype).to(output.device)
        value = edit.value.to(output.dtype).to(output.device)
        if value.shape[1] not in (1, output.shape[1]):
            value = value[:, : output.shape[1]]
        return output * (1 - m) + value * m


@dataclass
class HeadRecorder:
    """Records ``[batch, query, head, dim]`` head outputs per layer (an attention hook)."""

    outputs: dict[int, torch.Tensor] = field(default_factory=dict)

    def edit_output(self, layer: int, output: torch.Tensor) -> torch.Tensor:
        self.outputs[layer] = output.detach().clone()
        return output


@dataclass
class EditContext:
    """What building the edits needs: the model's shape, the mean head outputs ``[layer, head, dim]``
    (mean ablation) and the source's head outputs ``{layer: [query, head, dim]}`` (patching)."""

    n_heads: int
    head_dim: int
    n_tokens: int
    means: torch.Tensor | None = None
    source: dict[int, torch.Tensor] | None = None


def _edit(edits: RowEdits, layer: int) -> LayerEdit:
    return edits.layers.setdefault(layer, LayerEdit())


def build_edits(sets: list[InterventionSet], ctx: EditContext) -> RowEdits:
    """``RowEdits`` for a batch whose row ``b`` applies ``sets[b]`` (residual patches are applied
    elsewhere: they act on blocks, not on attention)."""
    n_rows, n_h, d, t = len(sets), ctx.n_heads, ctx.head_dim, ctx.n_tokens
    edits = RowEdits()

    def replace(layer: int, row: int, head: int, value: torch.Tensor | None) -> None:
        e = _edit(edits, layer)
        if e.replace is None:
            e.replace = torch.zeros(n_rows, n_h)
            e.value = torch.zeros(n_rows, t, n_h, d)
        e.replace[row, head] = 1.0
        e.value[row, :, head] = 0.0 if value is None else value

    for row, iset in enumerate(sets):
        for item in iset.items:
            if isinstance(item, HeadAblation):
                for layer, head in item.heads:
                    if item.method == "uniform":
                        e = _edit(edits, layer)
                        if e.uniform is None:
                            e.uniform = torch.zeros(n_rows, n_h, dtype=torch.bool)
                        e.uniform[row, head] = True
                    else:
                        replace(layer, row, head, None if item.method == "zero" else ctx.means[layer, head])
            elif isinstance(item, HeadPatch):
                for layer, head in item.heads:
                    replace(layer, row, head, ctx.source[layer][:t, head])
            elif isinstance(item, EdgeKnockout):
                heads = list(range(n_h)) if item.heads is None else list(item.heads)
                for layer in item.layers:
                    e = _edit(edits, layer)
                    if e.knock is None:
                        e.knock = torch.zeros(n_rows, n_h, t, t, dtype=torch.bool)
                    for q, k in item.edges:
                        e.knock[row, heads, q, k] = True
    return edits
