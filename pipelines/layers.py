"""Attention layers as maps on token measures: BERT-like Hugging Face encoders (post-LN: a layer's
attention reads the hidden states themselves) and the zoo's plain content-attention transformers
(``vit``, ``text-vanilla``; pre-LN: the attention reads ``LN1(hidden states)``, see ``layer_input``).
Zoo layers with positional biases, Evolving Attention or HA's fixed keys are not maps on token
measures and are refused with the reason.

- ``extract_attention_params(loaded, layer)``: W_Q, W_K, W_V, W_O and their biases, per head, as an
  ``attnscope.analysis.markov_kernel.AttentionParams`` (numpy float64);
- ``record_io(module)``: a context manager that records a module's inputs/outputs with a forward
  hook and removes the hook in ``finally``;
- ``layer_context(loaded, text, layer)``: the layer's input ``[token, dim]`` and the output of its
  self-attention, ``softmax(QK^T/sqrt d) V`` per head concatenated, from the model's own forward;
- ``AttentionSublayer``: Phi's point map (self-attention + output projection, optional residual,
  no LayerNorm) as a float64 torch function, the map that ``attnscope.analysis.lipschitz`` bounds;
- ``max_entropy_deviation(loaded, capture)``: ``attnscope.analysis.measure.max_entropy_check`` per layer.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

from attnscope.analysis.indices import check_index
from attnscope.analysis.markov_kernel import AttentionParams, scores
from attnscope.analysis.measure import max_entropy_check
from attnscope.models.cancel import check_cancelled
from attnscope.models.capture import Capture, encode_text
from attnscope.models.loading import LoadedModel
from attnscope.models.shell import module_shell, submodule_of

log = logging.getLogger(__name__)


class UnsupportedLayerError(ValueError):
    """The model has no BERT-like attention layers (query/key/value + output.dense)."""


def _zoo_blocks(loaded: LoadedModel):
    encoder = getattr(loaded.model, "encoder", None)
    blocks = getattr(encoder, "blocks", None)
    return None if blocks is None else (encoder, blocks)


def _zoo_refusal(encoder, blocks) -> str | None:
    """Why the zoo encoder's layers are not maps on token measures (None: they are)."""
    if encoder.shared:
        return "its shared block keeps the keys of the first pass (HA): see the fixed-point view's fixed-key bound"
    for block in blocks:
        attn = block.attn
        if not hasattr(attn, "q"):
            return "its attention is not query-key content attention (SAN / content-free heads)"
        if getattr(attn, "ea", None) is not None:
            return "Evolving Attention passes each layer's logits to the next"
        if getattr(attn, "bias", None) is not None:
            return "its scores carry a positional bias, tied to token positions rather than to the tokens"
    return None


def is_pre_norm(loaded: LoadedModel) -> bool:
    """Zoo blocks are pre-LN: their attention reads ``LN1(x)``; BERT's reads ``x``."""
    return _zoo_blocks(loaded) is not None


def encoder_layers(loaded: LoadedModel) -> list[torch.nn.Module]:
    """The encoder blocks: ``base_model.encoder.layer`` of a BERT-like model, or the zoo's
    ``encoder.blocks`` when they are maps on token measures."""
    zoo = _zoo_blocks(loaded)
    if zoo is not None:
        why = _zoo_refusal(*zoo)
        if why:
            raise UnsupportedLayerError(
                f"model {loaded.spec.name!r}: the measure-theoretic layer analyses need "
                f"attention that is a map on token measures, and {why}; use minilm, vit or "
                "text-vanilla"
            )
        return list(zoo[1])
    base = getattr(loaded.model, "base_model", loaded.model)
    layers = getattr(getattr(base, "encoder", None), "layer", None)
    if layers is None or not all(hasattr(l, "attention") and hasattr(l.attention, "self") for l in layers):
        raise UnsupportedLayerError(
            f"model {loaded.spec.name!r} has no BERT-like attention layers (encoder.layer[i].attention."
            "self.query/key/value); the measure-theoretic layer analyses need one, e.g. minilm"
        )
    return list(layers)


def attention_module(loaded: LoadedModel, layer: int) -> torch.nn.Module:
    """``encoder.layer[layer].attention`` (BERT: self-attention + output projection + LayerNorm) or
    the zoo block's ``attn`` (``MultiHeadAttention``)."""
    layers = encoder_layers(loaded)
    check_index("layer", layer, len(layers), f"model {loaded.spec.name!r}")
    return layers[layer].attn if is_pre_norm(loaded) else layers[layer].attention


def layer_input(loaded: LoadedModel, hidden: np.ndarray, layer: int) -> np.ndarray:
    """The token cloud layer ``layer``'s attention reads, from the hidden states ``[layer + 1, token,
    dim]``: ``hidden[layer]`` (BERT), or ``LN1(hidden[layer])`` (zoo, pre-LN), float64."""
    x = np.asarray(hidden[layer], dtype=np.float64)
    if not is_pre_norm(loaded):
        return x
    ln = copy.deepcopy(encoder_layers(loaded)[layer].ln1).double().cpu()
    with torch.no_grad():
        return ln(torch.as_tensor(x)).numpy()


def _np(t: torch.Tensor | None, shape: tuple[int, ...]) -> np.ndarray:
    if t is None:
        return np.zeros(shape)
    return t.detach().double().cpu().numpy().reshape(shape)


def extract_attention_params(loaded: LoadedModel, layer: int) -> AttentionParams:
    """Per-head weights of one attention sublayer. Shapes as in ``AttentionParams``."""
    att = attention_module(loaded, layer)
    if is_pre_norm(loaded):
        q, k, v, dense = att.q, att.k, att.v, att.out
        H, d = int(att.heads), int(att.head_dim)
    else:
        sa, dense = att.self, att.output.dense
        q, k, v = sa.query, sa.key, sa.value
        H, d = int(sa.num_attention_heads), int(sa.attention_head_size)
    D = q.weight.shape[1]
    return AttentionParams(
        w_q=_np(q.weight, (H, d, D)),
        b_q=_np(q.bias, (H, d)),
        w_k=_np(k.weight, (H, d, D)),
        b_k=_np(k.bias, (H, d)),
        w_v=_np(v.weight, (H, d, D)),
        b_v=_np(v.bias, (H, d)),
        # the output projection's weight is [D, H*d]: its columns h*d:(h+1)*d are head h's W_O^h
        w_o=dense.weight.detach().double().cpu().numpy().reshape(D, H, d).transpose(1, 0, 2),
        b_o=_np(dense.bias, (D,)),
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
    if is_pre_norm(loaded):
        raise UnsupportedLayerError(
            "layer_context records BERT's self-attention module; for zoo layers use AttentionSublayer on layer_input"
        )
    # the recorder hooks a per-request shell (shared weights): a hook on the shared module would also
    # record every concurrent request's forward pass
    shell = module_shell(loaded.model)
    sa = submodule_of(shell, loaded.model, attention_module(loaded, layer).self)
    enc = {k: v.to(loaded.device) for k, v in encode_text(loaded, [text]).items()}
    with record_io(sa) as calls:
        shell(**enc)
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
        self.pre_norm = is_pre_norm(loaded)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        check_cancelled()  # one evaluation per call: a cancelled request stops here (models/cancel.py)
        if self.pre_norm:  # zoo MultiHeadAttention: output projection included, fresh state
            out = self.attention(x[None], {})[0][0]
        else:
            ctx = self.attention.self(x[None])[0]  # [1, token, H*d]
            out = self.attention.output.dense(ctx)[0]
        return out + x if self.residual else out

    def numpy(self, x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return self(torch.as_tensor(np.asarray(x, dtype=np.float64))).numpy()


def max_entropy_deviation(loaded: LoadedModel, cap: Capture) -> np.ndarray:
    """``[layer]``: largest |maximum-entropy row - model's attention row| per layer.

    Scores are recomputed in float64 from the extracted weights and the cloud each layer's attention
    reads (``layer_input``); the rows are solved by ``attnscope.analysis.markov_kernel.maxent_rows``.
    """
    hidden = cap.hidden()
    if hidden is None:
        raise ValueError("the capture has no hidden states; capture with hidden_states=True")
    n_layers = cap.maps.n_layers
    s = np.stack([scores(extract_attention_params(loaded, l), layer_input(loaded, hidden, l)) for l in range(n_layers)])
    return max_entropy_check(s, cap.maps.weights)
