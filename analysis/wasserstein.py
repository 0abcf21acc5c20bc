"""1-Wasserstein distance between token measures (Euclidean cost).

A token cloud ``x`` of shape ``[token, dim]`` stands for the empirical measure
``mu = sum_i a_i delta_{x_i}`` (uniform ``a_i = 1/n`` unless weights are given).

- Equal sizes, uniform weights: W1 is an assignment problem (Birkhoff: an optimal coupling of two
  uniform measures with n atoms each is a permutation), solved exactly with
  ``scipy.optimize.linear_sum_assignment``: ``W1 = (1/n) min_sigma sum_i ||x_i - y_sigma(i)||``.
- General sizes or weights: the exact transport LP, solved with POT's network simplex (``ot.emd2``).
"""

from __future__ import annotations

import logging

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

log = logging.getLogger(__name__)


def _cloud(name: str, x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty token cloud [token, dim]; got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} contains NaN or infinity")
    return x


def _weights(name: str, w: np.ndarray | None, n: int) -> np.ndarray:
    if w is None:
        return np.full(n, 1.0 / n)
    w = np.asarray(w, dtype=np.float64)
    if w.shape != (n,) or np.any(w < 0) or not np.isclose(w.sum(), 1.0, atol=1e-9):
        raise ValueError(
            f"{name} must be {n} non-negative weights summing to 1; got shape {w.shape}, sum {w.sum():.6g}"
        )
    return w


def w1_uniform(x: np.ndarray, y: np.ndarray, return_assignment: bool = False):
    """Exact W1 between two uniform measures with the same number of atoms.

    Args:
        x, y: ``[token, dim]`` clouds with the same number of tokens.
        return_assignment: also return ``sigma`` (``[token]``: x_i is sent to y_sigma(i)).
    Returns:
        ``W1`` (float), or ``(W1, sigma)``.
    """
    x, y = _cloud("x", x), _cloud("y", y)
    if x.shape != y.shape:
        raise ValueError(
            f"w1_uniform needs clouds of equal shape; got {x.shape} and {y.shape} (use w1 for unequal sizes)"
        )
    cost = cdist(x, y)  # [n, n]
    rows, cols = linear_sum_assignment(cost)
    value = float(cost[rows, cols].mean())
    return (value, cols) if return_assignment else value


def w1(x: np.ndarray, y: np.ndarray, a: np.ndarray | None = None, b: np.ndarray | None = None) -> float:
    """Exact W1 between ``sum_i a_i delta_{x_i}`` and ``sum_j b_j delta_{y_j}`` (any sizes).

    Args:
        x: ``[n, dim]``; y: ``[m, dim]``; a: ``[n]`` and b: ``[m]`` weights (uniform when omitted).
    Uses the assignment solver when both are uniform with ``n == m``, else POT's ``emd2``.
    """
    x, y = _cloud("x", x), _cloud("y", y)
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"clouds live in different spaces: dim {x.shape[1]} vs {y.shape[1]}")
    if a is None and b is None and x.shape[0] == y.shape[0]:
        return w1_uniform(x, y)
    import ot  # POT; imported lazily (it is only needed for unequal sizes/weights)

    a, b = _weights("a", a, x.shape[0]), _weights("b", b, y.shape[0])
    return float(ot.emd2(a, b, cdist(x, y), numItermax=1_000_000))


def w1_successive(hidden_states: np.ndarray) -> np.ndarray:
    """W1 between the token clouds of successive layers.

    Args:
        hidden_states: ``[layer + 1, token, dim]`` (index 0: the embeddings / input of layer 0).
    Returns:
        ``[layer]``: entry l is ``W1(mu_l, mu_{l+1})``, how far layer l moves the token measure.
    """
    hs = np.asarray(hidden_states, dtype=np.float64)
    if hs.ndim != 3 or hs.shape[0] < 2:
        raise ValueError(f"hidden_states must be [layer + 1, token, dim] with at least 2 entries; got {hs.shape}")
    return np.array([w1_uniform(hs[l], hs[l + 1]) for l in range(hs.shape[0] - 1)])


def w1_between_inputs(hidden_a: np.ndarray, hidden_b: np.ndarray) -> np.ndarray:
    """W1 between two inputs' token clouds at every depth (the inputs may differ in length).

    Args:
        hidden_a: ``[layer + 1, n_a, dim]``; hidden_b: ``[layer + 1, n_b, dim]`` (same model).
    Returns:
        ``[layer + 1]``: entry l is ``W1(mu^a_l, mu^b_l)``.
    """
    ha, hb = np.asarray(hidden_a, dtype=np.float64), np.asarray(hidden_b, dtype=np.float64)
    if ha.ndim != 3 or hb.ndim != 3 or ha.shape[0] != hb.shape[0] or ha.shape[2] != hb.shape[2]:
        raise ValueError(f"need [layer + 1, token, dim] from the same model; got {ha.shape} and {hb.shape}")
    return np.array([w1(ha[l], hb[l]) for l in range(ha.shape[0])])
