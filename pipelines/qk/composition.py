"""Composition scores between heads from their weights (Elhage et al. 2021, "A Mathematical Framework
for Transformer Circuits"; ``docs/methods/qk-attribution.md``).

Row convention (``x @ W``): a head's OV circuit is ``W_OV = W_V W_O`` ``[d_model, d_model]`` and its QK
circuit ``W_QK = W_Q W_K^T`` (a score is ``x_i W_QK x_j^T``). How much source head ``s`` (an earlier
layer) feeds destination head ``d``'s query, key or value is the normalised Frobenius norm

    Q: |W_OV^s W_QK^d|   / (|W_OV^s| |W_QK^d|)
    K: |W_OV^s W_QK^dT|  / (|W_OV^s| |W_QK^d|)
    V: |W_OV^s W_OV^d|   / (|W_OV^s| |W_OV^d|)

(TransformerLens ``HookedTransformer.all_composition_scores`` computes the same with ``left = OV`` and
``right = QK, QK^T, OV``). The destination's pre-attention norm is folded into its reading weights
(its gain; a LayerNorm's centering too), the frozen scale being a scalar the norm cancels. Grouped-
query attention: query head ``h`` reads key/value head ``h // (n_heads / n_kv_heads)``.

Factors are reduced first: with ``W_V = Q_A R_A`` and ``W_K = Q_K R_K`` (QR), ``|W_V W_O W_Q W_K^T| =
|(R_A W_O)(W_Q R_K^T)|``, so each pair is one ``[d_head, d_model] x [d_model, d_head]`` product.

The baseline is the score of random Gaussian matrices of the same shapes (the paper compares
against the expected score of random matrices), a mean and standard deviation over ``samples``
draws from a seeded generator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch

Mode = Literal["q", "k", "v"]
MODES: tuple[Mode, ...] = ("q", "k", "v")


@dataclass(frozen=True)
class LayerHeadWeights:
    """One attention layer's per-head weights, row convention.

    ``w_q [head, d_model, d_head]``, ``w_k, w_v [kv_head, d_model, d_head]``, ``w_o [head, d_head,
    d_model]``; ``reader_gain [d_model]`` the pre-attention norm's gain (None: no norm or unit gain);
    ``reader_centres`` whether that norm centres its input (LayerNorm)."""

    w_q: torch.Tensor
    w_k: torch.Tensor
    w_v: torch.Tensor
    w_o: torch.Tensor
    reader_gain: torch.Tensor | None = None
    reader_centres: bool = False

    @property
    def n_heads(self) -> int:
        return int(self.w_q.shape[0])

    def expanded(self, w: torch.Tensor) -> torch.Tensor:
        """``[kv_head, ...] -> [head, ...]``: each query head's key/value head."""
        group = self.n_heads // int(w.shape[0])
        return w.repeat_interleave(group, dim=0)

    def reading(self, w: torch.Tensor) -> torch.Tensor:
        """``w [.., d_model, d_head]`` with this layer's norm folded in front: ``C diag(g) w``."""
        w = w.to(torch.float64)
        if self.reader_gain is not None:
            w = self.reader_gain.to(torch.float64)[:, None] * w
        if self.reader_centres:
            w = w - w.mean(-2, keepdim=True)
        return w


@dataclass(frozen=True)
class CompositionScores:
    """``scores[mode] [src_layer, src_head, dst_layer, dst_head]`` in [0, 1], zero where the destination
    is not in a later layer (and beyond a layer's own head count where layers differ); ``baseline[mode]``
    (mean, std) of random matrices of the same shapes."""

    scores: dict[str, torch.Tensor]
    baseline: dict[str, tuple[float, float]]


def _r_factor(w: torch.Tensor) -> torch.Tensor:
    """``w [.., m, n]`` (m >= n) -> ``R [.., n, n]`` with ``w = Q R``, ``Q`` orthonormal columns."""
    return torch.linalg.qr(w, mode="r").R


def _reduced(layer: LayerHeadWeights, mode: Mode) -> dict[str, torch.Tensor]:
    """Per query head: the writing side ``R_V W_O [head, d_head, d_model]``, and for ``mode`` the reading
    side ``W_read R_other^T [head, d_model, d_head]`` with ``|W_OV| ``, ``|right|`` norms ``[head]``."""
    f64 = torch.float64
    w_o = layer.w_o.to(f64)
    r_v = _r_factor(layer.expanded(layer.reading(layer.w_v)))
    write = r_v @ w_o  # [head, d_head, d_model]: |W_V W_O| = |R_V W_O|
    q = layer.reading(layer.w_q)
    k = layer.expanded(layer.reading(layer.w_k))
    v = layer.expanded(layer.reading(layer.w_v))
    if mode == "q":
        read, other = q, k
    elif mode == "k":
        read, other = k, q
    else:
        read, other = v, w_o.transpose(-1, -2)
    read = read @ _r_factor(other).transpose(-1, -2)  # [head, d_model, d_head]
    if mode == "v":
        right_norm = torch.linalg.matrix_norm(_r_factor(v) @ w_o)
    else:
        right_norm = torch.linalg.matrix_norm(_r_factor(q) @ _r_factor(k).transpose(-1, -2))
    return {"write": write, "write_norm": torch.linalg.matrix_norm(write), "read": read, "right_norm": right_norm}


def composition_scores(
    layers: list[LayerHeadWeights],
    *,
    modes: tuple[Mode, ...] = MODES,
    samples: int = 32,
    seed: int = 0,
    between: Callable[[int, int], torch.Tensor] | None = None,
) -> CompositionScores:
    """Q-, K- and/or V-composition (``modes``) between every pair of heads in different layers. The
    reductions are float64; the pair products one float32 GEMM per source layer,
    ``[head * d_head, d_model] x [d_model, later heads * d_head]``. ``between(a, b)``: the ``[d_model,
    d_model]`` map (row convention) that what layer ``a``'s heads write goes through before layer ``b``
    reads it (a post-norm model's norms in between, their divisors dropped); the writer is then
    ``W_OV M`` in numerator and norm alike, so positive scalars in ``M`` cancel."""
    n_layers, n_heads = len(layers), max(lay.n_heads for lay in layers)
    d_head = int(layers[0].w_q.shape[2])
    scores: dict[str, torch.Tensor] = {}
    for mode in modes:
        red = [_reduced(lay, mode) for lay in layers]
        out = torch.zeros(n_layers, n_heads, n_layers, n_heads, dtype=torch.float64)
        if between is not None:
            for a in range(n_layers - 1):
                for b in range(a + 1, n_layers):
                    out[a, : layers[a].n_heads, b, : layers[b].n_heads] = _through(red[a], red[b], between(a, b))
            scores[mode] = out
            continue
        for a in range(n_layers - 1):
            n_s = layers[a].n_heads
            write = red[a]["write"].float().reshape(n_s * d_head, -1)  # [(s e), m]
            later = torch.cat([r["read"] for r in red[a + 1 :]]).float()  # [(b t), m, f]
            prod = (write @ later.permute(1, 0, 2).reshape(write.shape[1], -1)).reshape(n_s, d_head, -1, d_head)
            num = prod.double().pow(2).sum(dim=(1, 3)).sqrt()  # [s, (b t)]
            right = torch.cat([r["right_norm"] for r in red[a + 1 :]])  # [(b t)]
            ratio = num / red[a]["write_norm"][:, None] / right[None]
            col = 0
            for b in range(a + 1, n_layers):
                n_t = layers[b].n_heads
                out[a, :n_s, b, :n_t] = ratio[:, col : col + n_t]
                col += n_t
        scores[mode] = out
    d_model = int(layers[0].w_q.shape[1])
    return CompositionScores(scores=scores, baseline=random_baseline(d_model, d_head, samples=samples, seed=seed))


def _through(src: dict, dst: dict, m: torch.Tensor) -> torch.Tensor:
    """``[src_head, dst_head]`` scores of a writer read through ``m [d_model, d_model]`` (float64)."""
    write = src["write"] @ m.to(torch.float64)  # [s, d_head, d_model]
    n_s, e, d_model = write.shape
    n_t, _, f = dst["read"].shape
    read = dst["read"].permute(1, 0, 2).reshape(d_model, n_t * f)  # [m, (t f)]
    prod = (write.reshape(n_s * e, d_model) @ read).reshape(n_s, e, n_t, f)  # one GEMM
    num = prod.pow(2).sum(dim=(1, 3)).sqrt()  # [s, t]
    write_norm = torch.linalg.matrix_norm(write)[:, None]
    ratio = num / write_norm.clamp_min(1e-300) / dst["right_norm"][None]
    return torch.where(write_norm > 0, ratio, 0.0)  # a writer the path erases composes with nothing


def random_baseline(d_model: int, d_head: int, *, samples: int, seed: int) -> dict[str, tuple[float, float]]:
    """Mean and std of each mode's score for ``samples`` pairs of random heads of the same shapes
    (independent standard Gaussian entries: the score does not depend on their scale)."""
    gen = torch.Generator().manual_seed(seed)
    out: dict[str, tuple[float, float]] = {}
    for mode in MODES:
        values = []
        for _ in range(samples):

            def draw(*shape):
                return torch.randn(*shape, generator=gen, dtype=torch.float64)

            src = LayerHeadWeights(
                draw(1, d_model, d_head), draw(1, d_model, d_head), draw(1, d_model, d_head), draw(1, d_head, d_model)
            )
            dst = LayerHeadWeights(
                draw(1, d_model, d_head), draw(1, d_model, d_head), draw(1, d_model, d_head), draw(1, d_head, d_model)
            )
            a, b = _reduced(src, mode), _reduced(dst, mode)
            num = torch.linalg.matrix_norm(a["write"][0] @ b["read"][0])
            values.append(float(num / a["write_norm"][0] / b["right_norm"][0]))
        t = torch.tensor(values, dtype=torch.float64)
        out[mode] = (float(t.mean()), float(t.std()))
    return out


def direct_score(
    src: LayerHeadWeights, s: int, dst: LayerHeadWeights, d: int, mode: Mode, between: torch.Tensor | None = None
) -> float:
    """The same score from the full ``[d_model, d_model]`` matrices, for checks (float64); ``between``
    the map from the writer to the reader (``composition_scores``'s ``between(a, b)``)."""
    ov_s = src.expanded(src.reading(src.w_v))[s] @ src.w_o[s].to(torch.float64)
    if between is not None:
        ov_s = ov_s @ between.to(torch.float64)
    # the source's own reading norm folds into its OV on the reading side, as in _reduced
    q = dst.reading(dst.w_q)[d]
    k = dst.expanded(dst.reading(dst.w_k))[d]
    v = dst.expanded(dst.reading(dst.w_v))[d]
    qk = q @ k.T
    right = {"q": qk, "k": qk.T, "v": v @ dst.w_o[d].to(torch.float64)}[mode]
    fro = torch.linalg.matrix_norm
    return float(fro(ov_s @ right) / fro(ov_s) / fro(right))
