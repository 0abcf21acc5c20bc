"""Attention layers of BERT-like Hugging Face encoders as maps on token measures.

- ``extract_attention_params(loaded, layer)``: W_Q, W_K, W_V, W_O and their biases, per head, as an
  ``analysis.kernel.AttentionParams`` (numpy float64);
- ``record_io(module)``: a context manager that records a module's inputs/outputs with a forward
  hook and removes the hook in ``finally``;
- ``layer_context(loaded, text, layer)``: the layer's input ``[token, dim]`` and the output of its
  self-attention, ``softmax(QK^T/sqrt d) V`` per head concatenated, from the model's own forward;
- ``AttentionSublayer``: Phi's point map (self-attention + output projection, optional residual,
  no LayerNorm) as a float64 torch function, the map that ``analysis.lipschitz`` bounds;
- ``max_entropy_deviation(loaded, capture)``: ``analysis.measure.max_entropy_check`` per layer.
"""

from __future__ import annotations

import copy
import logging
from contextlib import contextmanager
from typing import Iterator

import numpy as np
import torch

from analysis.kernel import AttentionParams, scores
from analysis.measure import max_entropy_check
from models.capture import Capture, encode_text
from models.loading import LoadedModel

log = logging.getLogger(__name__)


class UnsupportedLayerError(ValueError):
    """The model has no BERT-like attention layers (query/key/value + output.dense)."""


def encoder_layers(loaded: LoadedModel) -> list[torch.nn.Module]:
    """The encoder blocks (``base_model.encoder.layer``) of a BERT-like model."""
    base = getattr(loaded.model, "base_model", loaded.model)
    layers = getattr(getattr(base, "encoder", None), "layer", None)
    if layers is None or not all(hasattr(l, "attention") and hasattr(l.attention, "self") for l in layers):
        raise UnsupportedLayerError(
            f"model {loaded.spec.name!r} has no BERT-like attention layers (encoder.layer[i].attention."
            "self.query/key/value); the measure-theoretic layer analyses need one, e.g. minilm")
    return list(layers)


def attention_module(loaded: LoadedModel, layer: int) -> torch.nn.Module:
    """``encoder.layer[layer].attention`` (self-attention + output projection + LayerNorm)."""
    layers = encoder_layers(loaded)
    if not 0 <= layer < len(layers):
        raise IndexError(f"layer={layer} is out of range: model {loaded.spec.name!r} has {len(layers)} layers, "
                         f"use 0..{len(layers) - 1}")
    return layers[layer].attention


def extract_attention_params(loaded: LoadedModel, layer: int) -> AttentionParams:
    """Per-head weights of one attention sublayer. Shapes as in ``AttentionParams``."""
    att = attention_module(loaded, layer)
    sa, dense = att.self, att.output.dense
    H, d = int(sa.num_attention_heads), int(sa.attention_head_size)

    def np_(t: torch.Tensor | None, shape: tuple[int, ...]) -> np.ndarray:
        if t is None:
            return np.zeros(shape)
        return t.detach().double().cpu().numpy().reshape(shape)

    D = sa.query.weight.shape[1]
    return AttentionParams(
        w_q=np_(sa.query.weight, (H, d, D)), b_q=np_(sa.query.bias, (H, d)),
        w_k=np_(sa.key.weight, (H, d, D)), b_k=np_(sa.key.bias, (H, d)),
        w_v=np_(sa.value.weight, (H, d, D)), b_v=np_(sa.value.bias, (H, d)),
        # dense.weight is [D, H*d]: its columns h*d:(h+1)*d are head h's W_O^h
        w_o=dense.weight.detach().double().cpu().numpy().reshape(D, H, d).transpose(1, 0, 2),
        b_o=np_(dense.bias, (D,)),
    )


@contextmanager
def record_io(module: torch.nn.Module) -> Iterator[list[tuple[tuple, dict, object]]]:
    """Record ``(args, kwargs, output)`` of every call of ``module`` inside the ``with`` block.

    The forward hook is removed in ``finally``, also when the block raises.
    """
    calls: list[tuple[tuple, dict, object]] = []

    def hook(_module, args, kwargs, output):
        calls.append((args, kwargs, output))

    handle = module.register_forward_hook(hook, with_kwargs=True)
    try:
        yield calls
    finally:
        handle.remove()


@torch.inference_mode()
def layer_context(loaded: LoadedModel, text: str, layer: int) -> tuple[np.ndarray, np.ndarray]:
    """Input ``[token, dim]`` of layer ``layer``'s self-attention and its output ``[token, H*d]``
    (``softmax(QK^T/sqrt d) V``, heads concatenated), recorded during the model's own forward."""
    sa = attention_module(loaded, layer).self
    enc = {k: v.to(loaded.device) for k, v in encode_text(loaded, [text]).items()}
    with record_io(sa) as calls:
        loaded.model(**enc)
    if len(calls) != 1:
        raise RuntimeError(f"expected one call of layer {layer}'s self-attention, saw {len(calls)}")
    args, kwargs, output = calls[0]
    hidden = args[0] if args else kwargs["hidden_states"]
    context = output[0] if isinstance(output, tuple) else output
    return hidden[0].double().cpu().numpy(), context[0].double().cpu().numpy()


class AttentionSublayer:
    """Phi's point map for one layer, in float64: ``x [token, dim] -> F_mu(x) [token, dim]``.

    ``F_mu(x) = W_O (softmax(QK^T / sqrt d) V) + b_O`` with the layer's own modules (Q/K/V biases
    included), plus ``x`` when ``residual``; the LayerNorm after the residual is left out.
    """

    def __init__(self, loaded: LoadedModel, layer: int, residual: bool = False):
        att = attention_module(loaded, layer)
        self.attention = copy.deepcopy(att).double().eval().cpu()
        for prm in self.attention.parameters():
            prm.requires_grad_(False)
        self.residual = residual
        self.layer = layer

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        ctx = self.attention.self(x[None])[0]  # [1, token, H*d]
        out = self.attention.output.dense(ctx)[0]
        return out + x if self.residual else out

    def numpy(self, x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return self(torch.as_tensor(np.asarray(x, dtype=np.float64))).numpy()


def max_entropy_deviation(loaded: LoadedModel, cap: Capture) -> np.ndarray:
    """``[layer]``: largest |maximum-entropy row - model's attention row| per layer.

    Scores are recomputed in float64 from the extracted weights and the captured input of each
    layer (``hidden_states[layer]``); the rows are solved by ``analysis.kernel.maxent_rows``.
    """
    if cap.hidden_states is None:
        raise ValueError("the capture has no hidden states; capture with hidden_states=True")
    n_layers = cap.maps.n_layers
    s = np.stack([scores(extract_attention_params(loaded, l), cap.hidden_states[l]) for l in range(n_layers)])
    return max_entropy_check(s, cap.maps.weights)
