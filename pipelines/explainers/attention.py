"""Attention-based explainers: raw attention, rollout, flow, attention x gradient; and a seeded
random baseline. The maths of rollout/flow is in ``analysis/rollout.py`` (numpy)."""

from __future__ import annotations

import zlib

import numpy as np
import torch

from attnscope.analysis.indices import check_index
from attnscope.analysis.rollout import MAX_FLOW_TOKENS, attention_flow, gradient_rollout, rollout
from attnscope.models.capture import capture_ids
from attnscope.pipelines.explainers.base import Encoded, Explainer, classifier_module


def _maps(explainer: Explainer, ex: Encoded):
    return capture_ids(explainer.loaded, ex.input_ids).maps


def readout_row(n_tokens: int, causal: bool) -> int:
    """The row whose prediction is explained: [CLS] (position 0) of an encoder, the last position of
    a causal LM (the position that predicts the next token)."""
    return n_tokens - 1 if causal else 0


class RawAttention(Explainer):
    """Attention weights of one layer (default: the last), averaged over the chosen heads (default:
    all), read from the readout row (``row="cls"``: [CLS] of an encoder, the last position of a
    causal LM) or averaged over every query row (``row="mean"``)."""

    name = "attention"
    description = "raw attention of a layer (CLS row or mean over rows), mean over chosen heads"

    def explain(self, ex: Encoded) -> np.ndarray:
        maps = _maps(self, ex)
        layer = int(self.options.get("layer", -1))
        check_index("layer", layer, maps.n_layers, negative=True)
        heads = [int(h) for h in self.options.get("heads") or range(maps.n_heads)]
        for h in heads:
            check_index("head", h, maps.n_heads)
        w = maps.weights[layer][list(heads)].mean(axis=0)  # [query, key]
        row = self.options.get("row", "cls")
        if row not in ("cls", "mean"):
            raise ValueError(f"row must be 'cls' or 'mean'; got {row!r}")
        return (w[readout_row(maps.n_tokens, maps.causal)] if row == "cls" else w.mean(axis=0)).astype(np.float64)


class Rollout(Explainer):
    """Attention rollout (Abnar & Zuidema 2020), readout row ([CLS]; a causal LM's last position)
    after the last layer."""

    name = "rollout"
    description = "attention rollout, CLS row of the last layer"

    def explain(self, ex: Encoded) -> np.ndarray:
        maps = _maps(self, ex)
        return rollout(maps).joint[-1, readout_row(maps.n_tokens, maps.causal)].astype(np.float64)


class Flow(Explainer):
    """Attention flow (max-flow in the layered attention graph), [CLS] row; short inputs only."""

    name = "flow"
    description = "attention flow (max-flow), CLS row; inputs up to max_tokens (64)"

    def explain(self, ex: Encoded) -> np.ndarray:
        cap = int(self.options.get("max_tokens", MAX_FLOW_TOKENS))
        maps = _maps(self, ex)
        row = readout_row(maps.n_tokens, maps.causal)
        return attention_flow(maps, rows=[row], max_tokens=cap).flow[0].astype(np.float64)


class AttentionGradient(Explainer):
    """Attention x gradient rolled out (Chefer et al. 2021, generic attention): per layer
    mean_h max(0, dp_t/dA * A), accumulated R <- R + Ā R; [CLS] row."""

    name = "attn_grad"
    description = "gradient of the explained class probability w.r.t. the maps times the maps, rolled out"

    def explain(self, ex: Encoded) -> np.ndarray:
        target = self.target_of(ex)
        ids, mask = self.tensors(ex)
        model = classifier_module(self.loaded)
        with torch.enable_grad():
            # per-request leaf: the gradient flows to this request's embeddings and its own attention
            # tensors only (torch.autograd.grad), never into the shared parameters' .grad
            embeds = model.get_input_embeddings()(ids).detach().requires_grad_(True)  # [1, token, dim]
            out = model(inputs_embeds=embeds, attention_mask=mask, output_attentions=True)
            atts = tuple(out.attentions)  # L x [1, head, query, key], part of the graph (eval: no dropout)
            prob = torch.softmax(out.logits, dim=-1)[0, target]
            grads = torch.autograd.grad(prob, atts, allow_unused=True)
        weighted = np.stack(  # [layer, query, key]; a map the output does not depend on contributes 0
            [
                (torch.zeros_like(a) if g is None else g * a).clamp(min=0).mean(dim=1)[0].detach().cpu().numpy()
                for g, a in zip(grads, atts)
            ]
        )
        return gradient_rollout(weighted)[readout_row(len(ex), self.loaded.attention.causal)]


class RandomScores(Explainer):
    """Seeded random baseline: uniform scores, the same for the same seed and input ids."""

    name = "random"
    description = "seeded uniform random scores (the baseline every explainer should beat)"

    def explain(self, ex: Encoded) -> np.ndarray:
        seed = int(self.options.get("seed", 0))
        rng = np.random.default_rng([seed, zlib.crc32(ex.input_ids.astype(np.int64).tobytes())])
        scores = rng.random(len(ex))
        scores[list(ex.special)] = 0.0
        return scores
