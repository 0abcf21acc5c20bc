"""Circuits from edge scores: the top edges by ``|score|`` (a count or a threshold), the
faithfulness curve, and the rank agreement of attribution scores with exact path patching.

``scores [S, R]`` in ``Graph`` order, NaN off the graph's edges.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import spearmanr

from attnscope.pipelines.circuits.graph import CircuitInputError, Graph
from attnscope.pipelines.circuits.patching import Prepared, empty_metric, faithfulness, patch_edge

MAX_EDGES_CHECKED = 200


def ranked_edges(scores: np.ndarray) -> list[tuple[int, int]]:
    """Every edge ``(sender, receiver)`` by decreasing ``|score|`` (ties: graph order)."""
    s, r = np.nonzero(~np.isnan(scores))
    order = np.argsort(-np.abs(scores[s, r]), kind="stable")
    return [(int(s[i]), int(r[i])) for i in order]


def top_edges(scores: np.ndarray, k: int | None = None, threshold: float | None = None) -> np.ndarray:
    """``[S, R]`` bool: the ``k`` edges of largest ``|score|``, or those with ``|score| >= threshold``."""
    if (k is None) == (threshold is None):
        raise CircuitInputError("give the number of edges (k) or a threshold, not both")
    keep = np.zeros(scores.shape, bool)
    if threshold is not None:
        return np.nan_to_num(np.abs(scores), nan=-1.0) >= float(threshold)
    n_edges = int((~np.isnan(scores)).sum())
    if not 0 <= k <= n_edges:
        raise CircuitInputError(f"k={k} is out of range: the graph has {n_edges} edges")
    for s, r in ranked_edges(scores)[:k]:
        keep[s, r] = True
    return keep


def faithfulness_curve(
    prep: Prepared, scores: np.ndarray, ks: list[int], source=None, m_empty: float | None = None
) -> list[tuple[int, float]]:
    """``(k, faithfulness of the top-k circuit)`` for each ``k`` (edges outside read ``source``: None for
    their corrupted values, ``patching.mean_senders`` for mean ablation)."""
    if source is not None and m_empty is None:
        m_empty = empty_metric(prep, source)
    return [(int(k), faithfulness(prep, top_edges(scores, k=k), source, m_empty)) for k in ks]


@dataclass(frozen=True)
class Agreement:
    edges: list[tuple[str, str]]
    attributed: list[float]
    exact: list[float]
    spearman: float


def exact_recheck(prep: Prepared, scores: np.ndarray, n: int = 50, direction: str = "noising") -> Agreement:
    """Exact path patching of the ``n`` top edges by ``|score|`` and the Spearman rank correlation of
    the scores with the exact effects over them."""
    if not 2 <= n <= MAX_EDGES_CHECKED:
        raise CircuitInputError(f"n={n} edges to re-check is out of range: use 2..{MAX_EDGES_CHECKED}")
    g: Graph = prep.graph
    edges = ranked_edges(scores)[:n]
    exact = [patch_edge(prep, s, r, direction) for s, r in edges]
    att = [float(scores[s, r]) for s, r in edges]
    rho = float(spearmanr(att, exact).statistic) if len(edges) > 1 else float("nan")
    sn, rn = g.sender_names(), g.receiver_names()
    return Agreement([(sn[s], rn[r]) for s, r in edges], att, exact, rho)
