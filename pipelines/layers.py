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

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

from attnscope.analysis.indices import check_index
from attnscope.analysis.markov_kernel import AttentionParams, scores
from attnscope.analysis.measure import max_entropy_check
from attnscope.models.cancel import check_cancelled
from attnscope.models.capture import encode_batch
from attnscope.models.interface import Backend, BlockSites, Capture, Sites, SitesUnavailableError
from attnscope.models.session import SiteRecorder, session

log = logging.getLogger(__name__)


class UnsupportedLayerError(ValueError):
    """The model has no BERT-like attention layers (query/key/value + output.dense)."""


def _refusal(sites: Sites) -> str | None:
    """Why the model's layers are not maps on token measures (None: they are), from its ``Sites``."""
    if sites.shared:
        return "its shared block keeps the keys of the first pass (HA): see the fixed-point view's fixed-key bound"
    for blk in sites.blocks:
        if blk.scores != "content":
            return "its attention is not query-key content attention (SAN / content-free heads)"
        if not blk.logit_edits:
            return "Evolving Attention passes each layer's logits to the next"
        if blk.position_bias:
            return "its scores carry a positional bias, tied to token positions rather than to the tokens"
        if blk.rope is not None:
            return "its queries and keys are rotated by position (RoPE), tied to token positions"
    if sites.unembed is not None and sites.unembed.kind == "lm_head":
        return "its attention is causal: a query sees only earlier tokens, not the token measure"
    return None


def measure_sites(loaded: Backend) -> Sites:
    """The model's ``Sites`` when its layers are maps on token measures (BERT-like encoders, the zoo's
    plain content attention), else ``UnsupportedLayerError`` with the reason."""
    try:
        sites = loaded.sites
    except SitesUnavailableError as exc:
        raise UnsupportedLayerError(
            f"model {loaded.spec.name!r} has no BERT-like attention layers ({exc}); the measure-theoretic "
            "layer analyses need one, e.g. minilm"
        ) from None
    why = _refusal(sites)
    if why:
        raise UnsupportedLayerError(
            f"model {loaded.spec.name!r}: the measure-theoretic layer analyses need attention that is a map on "
            f"token measures, and {why}; use minilm, vit or text-vanilla"
        )
    return sites


def encoder_layers(loaded: Backend) -> list[BlockSites]:
    """``[layer]`` the blocks (``BlockSites``) of a model whose layers are maps on token measures."""
    return list(measure_sites(loaded).blocks)


def is_pre_norm(loaded: Backend) -> bool:
    """Whether the attention reads ``LN1(x)`` (the zoo; pre-norm) rather than ``x`` itself (BERT)."""
    return loaded.sites.norm_placement == "pre"


def _block(loaded: Backend, layer: int) -> BlockSites:
    layers = encoder_layers(loaded)
    check_index("layer", layer, len(layers), f"model {loaded.spec.name!r}")
    return layers[layer]


def layer_input(loaded: Backend, hidden: np.ndarray, layer: int) -> np.ndarray:
    """The token cloud layer ``layer``'s attention reads, from the hidden states ``[layer + 1, token,
    dim]``: ``hidden[layer]`` (post-norm: BERT), or ``LN1(hidden[layer])`` (pre-norm: the zoo), float64."""
    x = np.asarray(hidden[layer], dtype=np.float64)
    if not is_pre_norm(loaded):
        return x
    with torch.no_grad():
        return _block(loaded, layer).ln_attn.apply(torch.as_tensor(x)).numpy()


def _np(t: torch.Tensor | None, shape: tuple[int, ...]) -> np.ndarray:
    if t is None:
        return np.zeros(shape)
    return t.detach().double().cpu().numpy().reshape(shape)


def extract_attention_params(loaded: Backend, layer: int) -> AttentionParams:
    """Per-head weights of one attention sublayer (from ``Sites``). Shapes as in ``AttentionParams``:
    ``w_q [H, d, D]`` (``W_Q[h]`` transposed), ``w_o [H, D, d]``, biases ``[H, d]`` / ``[D]``."""
    blk = _block(loaded, layer)
    H, D, d = blk.W_Q.shape

    def t(w: torch.Tensor) -> np.ndarray:  # [H, D, d] -> [H, d, D]
        return w.detach().double().cpu().numpy().transpose(0, 2, 1)

    return AttentionParams(
        w_q=t(blk.W_Q),
        b_q=_np(blk.b_Q, (H, d)),
        w_k=t(blk.W_K),
        b_k=_np(blk.b_K, (H, d)),
        w_v=t(blk.W_V),
        b_v=_np(blk.b_V, (H, d)),
        w_o=blk.W_O.detach().double().cpu().numpy().transpose(0, 2, 1),  # [H, d, D] -> [H, D, d]
        b_o=_np(blk.b_O, (D,)),
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
def layer_context(loaded: Backend, text: str, layer: int) -> tuple[np.ndarray, np.ndarray]:
    """Input ``[token, dim]`` of layer ``layer``'s self-attention and its output ``[token, H*d]``
    (``softmax(QK^T/sqrt d) V``, heads concatenated: the ``head_z`` site), recorded during the model's
    own forward in one request session (``attnscope.models.session``: nothing is set on the model)."""
    _block(loaded, layer)
    if is_pre_norm(loaded):
        raise UnsupportedLayerError(
            "layer_context records a post-norm layer's attention input; for zoo layers use AttentionSublayer "
            "on layer_input"
        )
    enc = {k: v.to(loaded.device) for k, v in encode_batch(loaded, [text]).items()}
    rec = SiteRecorder({"resid_pre", "head_z"}, layers={layer})
    with session(rec):
        loaded.model(**enc)
    hidden, z = rec.values["resid_pre"][layer], rec.values["head_z"][layer]
    return hidden[0].double().cpu().numpy(), z[0].flatten(-2).double().cpu().numpy()


class AttentionSublayer:
    """Phi's point map for one layer, in float64: ``x [token, dim] -> F_mu(x) [token, dim]``.

    ``F_mu(x) = sum_h softmax((x W_Q[h] + b_Q[h]) (x W_K[h] + b_K[h])^T / sqrt d) (x W_V[h] + b_V[h])
    W_O[h] + b_O`` from the layer's ``Sites`` weights (float64 copies), plus ``x`` when ``residual``;
    the LayerNorm after the residual is left out.
    """

    def __init__(self, loaded: Backend, layer: int, residual: bool = False):
        blk = _block(loaded, layer)
        scale = loaded.attention.scale
        self.scale = float(scale) if scale else float(blk.W_Q.shape[-1]) ** -0.5

        def f64(t: torch.Tensor | None, like: torch.Tensor) -> torch.Tensor:
            return torch.zeros(like.shape[0], like.shape[-1], dtype=torch.float64) if t is None else t.double().cpu()

        self.w_q, self.w_k, self.w_v = (w.detach().double().cpu().clone() for w in (blk.W_Q, blk.W_K, blk.W_V))
        self.b_q, self.b_k, self.b_v = f64(blk.b_Q, blk.W_Q), f64(blk.b_K, blk.W_K), f64(blk.b_V, blk.W_V)
        self.w_o = blk.W_O.detach().double().cpu().clone()
        self.b_o = torch.zeros(self.w_o.shape[-1], dtype=torch.float64) if blk.b_O is None else blk.b_O.double().cpu()
        self.residual = residual
        self.layer = layer

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        check_cancelled()  # one evaluation per call: a cancelled request stops here (models/cancel.py)
        q = torch.einsum("nD,hDd->hnd", x, self.w_q) + self.b_q[:, None]
        k = torch.einsum("nD,hDd->hnd", x, self.w_k) + self.b_k[:, None]
        v = torch.einsum("nD,hDd->hnd", x, self.w_v) + self.b_v[:, None]
        p = torch.softmax(q @ k.transpose(-1, -2) * self.scale, dim=-1)  # [H, n, n]
        out = torch.einsum("hnd,hdD->nD", p @ v, self.w_o) + self.b_o
        return out + x if self.residual else out

    def numpy(self, x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return self(torch.as_tensor(np.asarray(x, dtype=np.float64))).numpy()


def max_entropy_deviation(loaded: Backend, cap: Capture) -> np.ndarray:
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
