"""Attention as a Markov kernel acting on the measure of tokens, in numpy (Vuckovic et al.;
docs/methods/markov-kernel.md).

One multi-head self-attention sublayer with its biases, as BERT computes it (no residual, no
LayerNorm unless asked): for head h with head dim d,

    s_h(x, y)   = (W_Q^h x + b_Q^h) . (W_K^h y + b_K^h) / sqrt(d)
    K_mu^h(x, dy) = exp(s_h(x, y)) mu(dy) / int exp(s_h(x, z)) mu(dz)             (Markov kernel)
    F_mu(x)     = sum_h W_O^h ( int (W_V^h y + b_V^h) K_mu^h(x, dy) ) + b_O  [+ x with residual]
    Phi(mu)     = (F_mu)_# mu                                                    (push-forward)

For x = x_i and mu uniform on the tokens, ``int (W_V y + b_V) K_mu(x_i, dy)`` is row i of
``softmax(Q K^T / sqrt(d)) V``: tests check it against the real layer's own forward.

Only the terms of s that depend on the key survive the softmax, so for the maths
``s_h(x, y) ~ x^T A_h y + c_h^T y`` with ``A_h = W_Q^hT W_K^h / sqrt(d)`` and
``c_h = W_K^hT b_Q^h / sqrt(d)`` (see ``attnscope.analysis.lipschitz``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import log_softmax, softmax


@dataclass(frozen=True)
class AttentionParams:
    """Weights of one multi-head attention sublayer, float64 numpy, per head.

    Shapes (H heads, head dim d, model dim D):
        w_q, w_k, w_v: ``[H, d, D]`` (x -> W x maps the model space to the head space)
        b_q, b_k, b_v: ``[H, d]``
        w_o: ``[H, D, d]`` (head h's slice of the output projection), b_o: ``[D]``
    """

    w_q: np.ndarray
    b_q: np.ndarray
    w_k: np.ndarray
    b_k: np.ndarray
    w_v: np.ndarray
    b_v: np.ndarray
    w_o: np.ndarray
    b_o: np.ndarray

    def __post_init__(self) -> None:
        for name in ("w_q", "b_q", "w_k", "b_k", "w_v", "b_v", "w_o", "b_o"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=np.float64))
        H, d, D = self.w_q.shape
        expected = {
            "w_k": (H, d, D),
            "w_v": (H, d, D),
            "b_q": (H, d),
            "b_k": (H, d),
            "b_v": (H, d),
            "w_o": (H, D, d),
            "b_o": (D,),
        }
        for name, shape in expected.items():
            if getattr(self, name).shape != shape:
                raise ValueError(
                    f"{name} must have shape {shape} for {H} heads of dim {d} in dim {D}; "
                    f"got {getattr(self, name).shape}"
                )

    @property
    def n_heads(self) -> int:
        return self.w_q.shape[0]

    @property
    def head_dim(self) -> int:
        return self.w_q.shape[1]

    @property
    def dim(self) -> int:
        return self.w_q.shape[2]

    @property
    def bilinear(self) -> np.ndarray:
        """``A_h = W_Q^hT W_K^h / sqrt(d)``: ``[H, D, D]``."""
        return np.einsum("hdi,hdj->hij", self.w_q, self.w_k) / np.sqrt(self.head_dim)

    @property
    def key_bias(self) -> np.ndarray:
        """``c_h = W_K^hT b_Q^h / sqrt(d)``, the part of the query bias that reaches the softmax: ``[H, D]``."""
        return np.einsum("hdj,hd->hj", self.w_k, self.b_q) / np.sqrt(self.head_dim)

    @property
    def value_out(self) -> np.ndarray:
        """``W_O^h W_V^h``: ``[H, D, D]``."""
        return np.einsum("hid,hdj->hij", self.w_o, self.w_v)


def scores(p: AttentionParams, x: np.ndarray, y: np.ndarray | None = None) -> np.ndarray:
    """Scores ``s_h(x_i, y_j)`` exactly as the layer computes them (all bias terms).

    Args: x ``[n, D]`` queries; y ``[m, D]`` keys (default x). Returns ``[H, n, m]``.
    """
    x = np.asarray(x, dtype=np.float64)
    y = x if y is None else np.asarray(y, dtype=np.float64)
    q = np.einsum("hdD,nD->hnd", p.w_q, x) + p.b_q[:, None]  # [H, n, d]
    k = np.einsum("hdD,mD->hmd", p.w_k, y) + p.b_k[:, None]  # [H, m, d]
    return q @ k.transpose(0, 2, 1) / np.sqrt(p.head_dim)


def markov_kernel(
    p: AttentionParams, x: np.ndarray, y: np.ndarray | None = None, weights: np.ndarray | None = None
) -> np.ndarray:
    """``K_mu^h(x_i, {y_j})`` for ``mu = sum_j weights_j delta_{y_j}`` (uniform by default).

    Returns ``[H, n, m]``, each row a probability vector over the atoms of mu.
    """
    s = scores(p, x, y)
    if weights is not None:
        w = np.asarray(weights, dtype=np.float64)
        with np.errstate(divide="ignore"):
            s = s + np.log(w)[None, None, :]
    return softmax(s, axis=-1)


def head_outputs(
    p: AttentionParams, x: np.ndarray, y: np.ndarray | None = None, weights: np.ndarray | None = None
) -> np.ndarray:
    """``int (W_V^h y + b_V^h) K_mu^h(x_i, dy)`` per head: ``[H, n, d]`` (the context vectors)."""
    y = np.asarray(x if y is None else y, dtype=np.float64)
    v = np.einsum("hdD,mD->hmd", p.w_v, y) + p.b_v[:, None]  # [H, m, d]
    return markov_kernel(p, x, y, weights) @ v


def field(
    p: AttentionParams,
    x: np.ndarray,
    y: np.ndarray | None = None,
    weights: np.ndarray | None = None,
    residual: bool = False,
) -> np.ndarray:
    """``F_mu(x_i)``: the sublayer's output at the queries x for the token measure on y. ``[n, D]``."""
    ctx = head_outputs(p, x, y, weights)  # [H, n, d]
    out = np.einsum("hDd,hnd->nD", p.w_o, ctx) + p.b_o
    return out + np.asarray(x, dtype=np.float64) if residual else out


def push_forward(p: AttentionParams, x: np.ndarray, residual: bool = False) -> np.ndarray:
    """``Phi(mu) = (F_mu)_# mu`` for the uniform measure on the tokens x ``[n, D]``: atoms ``[n, D]``."""
    return field(p, x, residual=residual)


def _log_normalise(z: np.ndarray) -> np.ndarray:
    top = np.max(z, axis=-1, keepdims=True)
    return z - top - np.log(np.sum(np.exp(z - top), axis=-1, keepdims=True))


def maxent_rows(
    s: np.ndarray, step: float = 0.7, tol: float = 1e-11, max_iter: int = 500, mask: np.ndarray | None = None
) -> tuple[np.ndarray, int]:
    """``argmax_{p in simplex} H(p) + <p, s>`` for every row of ``s`` by entropic mirror descent.

    Exponentiated gradient on the objective (gradient ``s - log p - 1``) from the uniform row:
    ``log p <- (1 - step) log p + step s - log Z``, a damped iteration (the error in log p shrinks by
    ``1 - step`` per step) that never evaluates a softmax of s directly; it stops when the KKT
    residual (the spread of ``s_j - log p_j`` over the row's support) is below ``tol`` for every row.
    Tests cross-check it against scipy's SLSQP, a solver that knows nothing of softmax.

    Args:
        s: scores ``[..., n]``; mask: boolean ``[..., n]``, False where a key is masked out (p_j = 0).
    Returns:
        ``(p [..., n], iterations)``.
    """
    s = np.asarray(s, dtype=np.float64)
    support = np.ones(s.shape, dtype=bool) if mask is None else np.broadcast_to(mask, s.shape)
    if not np.all(support.any(axis=-1)):
        raise ValueError("every row needs at least one unmasked key")
    masked = not support.all()
    s_in = np.where(support, s, -np.inf) if masked else s
    logp = np.where(support, -np.log(support.sum(axis=-1, keepdims=True)), -np.inf)
    for it in range(1, max_iter + 1):
        with np.errstate(invalid="ignore"):
            logp = _log_normalise((1.0 - step) * logp + step * s_in)
        if it % 4 == 0 or it == max_iter:
            gap = s - logp
            hi = np.max(np.where(support, gap, -np.inf), axis=-1)
            lo = np.min(np.where(support, gap, np.inf), axis=-1)
            if float(np.max(hi - lo)) < tol:
                break
    return np.exp(logp), it


def maxent_objective(p: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``H(p) + <p, s>`` per row (``0 log 0 = 0``)."""
    p = np.asarray(p, dtype=np.float64)
    plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return -plogp.sum(-1) + (p * s).sum(-1)


def softmax_rows(s: np.ndarray) -> np.ndarray:
    """Closed form of ``maxent_rows`` (Gibbs variational principle), for comparison."""
    return np.exp(log_softmax(np.asarray(s, dtype=np.float64), axis=-1))
