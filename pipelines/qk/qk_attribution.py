"""An exact split of one attention score into query-part x key-part terms
(``docs/methods/qk-attribution.md``).

The residual stream entering layer ``l`` at a position is a sum of what its parts wrote (the token
embedding, each earlier head, each earlier MLP, the output biases). With the pre-attention norm's
scale frozen at its clean value the norm is linear; the projections and the position rotation are
linear too. So the query at ``i`` is ``sum_c q_c`` and the key at ``j`` is ``sum_c' k_c'`` (the
projection biases and a LayerNorm's bias being parts of their own), and the score is

    s(i, j) = scale * q_i . k_j = sum_{c, c'} scale * q_c . k_c'

exactly. Only the two positions asked are expanded: memory is ``parts x d_model``, independent of
the context length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attnscope.pipelines.qk.linear_maps import FrozenNorm
from attnscope.pipelines.qk.qk_view import HeadQK

NORM_BIAS = "norm bias"
QUERY_BIAS = "q bias"
KEY_BIAS = "k bias"


@dataclass(frozen=True)
class QKTerm:
    """One term ``scale * q_c . k_c'``: the query-side part, the key-side part, its value."""

    query_part: str
    key_part: str
    value: float


@dataclass(frozen=True)
class QKAttribution:
    """``matrix [query_part, key_part]`` float64, ``matrix.sum() == score``; ``score`` the head's score
    recomputed from the clean residual streams (float64); ``conservation_error`` ``|matrix.sum() -
    score|``; ``residual_error`` the largest ``|sum(parts) - residual|`` at the two positions (zero when
    the parts are the whole stream)."""

    query_labels: tuple[str, ...]
    key_labels: tuple[str, ...]
    matrix: torch.Tensor
    score: float
    conservation_error: float
    residual_error: float

    @property
    def key_totals(self) -> torch.Tensor:
        """``[key_part]`` each key-side part's share of the score (summed over query parts)."""
        return self.matrix.sum(0)

    @property
    def query_totals(self) -> torch.Tensor:
        """``[query_part]`` each query-side part's share of the score (summed over key parts)."""
        return self.matrix.sum(1)

    def top_terms(self, n: int) -> list[QKTerm]:
        """The ``n`` terms of largest magnitude, largest first."""
        flat = self.matrix.flatten()
        order = torch.argsort(flat.abs(), descending=True)[:n]
        width = self.matrix.shape[1]
        return [
            QKTerm(self.query_labels[int(k) // width], self.key_labels[int(k) % width], float(flat[k])) for k in order
        ]

    def condensed(self, n: int) -> tuple[tuple[str, ...], tuple[str, ...], torch.Tensor]:
        """The matrix on the ``n`` query parts and ``n`` key parts of largest ``|total|`` (in their
        order), the rest summed into a last ``other`` row and column (when any is left): ``[n' , n']``
        with the same sum, the score."""

        def pick(totals: torch.Tensor) -> list[int]:
            keep = torch.argsort(totals.abs(), descending=True)[:n]
            return sorted(int(k) for k in keep)

        rows, cols = pick(self.query_totals), pick(self.key_totals)
        groups_r = [[r] for r in rows] + (
            [[r for r in range(len(self.query_labels)) if r not in rows]] if len(rows) < len(self.query_labels) else []
        )
        groups_c = [[c] for c in cols] + (
            [[c for c in range(len(self.key_labels)) if c not in cols]] if len(cols) < len(self.key_labels) else []
        )
        out = torch.stack([torch.stack([self.matrix[g][:, h].sum() for h in groups_c]) for g in groups_r])
        q = tuple(self.query_labels[r] for r in rows) + (("other",) if len(groups_r) > len(rows) else ())
        k = tuple(self.key_labels[c] for c in cols) + (("other",) if len(groups_c) > len(cols) else ())
        return q, k, out

    def top_key_part(self) -> str:
        """The key-side part with the largest positive share of the score."""
        return self.key_labels[int(torch.argmax(self.key_totals))]


def side_vectors(
    parts: torch.Tensor,
    total: torch.Tensor,
    norm: FrozenNorm | None,
    project,
    bias: torch.Tensor | None,
    bias_label: str,
    labels: Sequence[str],
) -> tuple[torch.Tensor, list[str]]:
    """``parts [part, d_model]`` at one position -> their query (or key) vectors ``[part', d_head]``
    after norm, projection and rotation (``project(x [.., d_model]) -> [.., d_head]`` without bias),
    with the norm's bias and the projection's bias appended as parts of their own."""
    if norm is None:
        normed, norm_bias = parts, None
    else:
        normed, norm_bias = norm.apply_to_parts(parts, total)
    vectors = [project(normed)]
    out_labels = list(labels)
    if norm_bias is not None:
        vectors.append(project(norm_bias[None, :]))
        out_labels.append(NORM_BIAS)
    if bias is not None:
        vectors.append(project(None, bias=bias)[None, :])
        out_labels.append(bias_label)
    return torch.cat(vectors), out_labels


def qk_attribution(
    parts_query: torch.Tensor,
    parts_key: torch.Tensor,
    labels: Sequence[str],
    head: HeadQK,
    i: int,
    j: int,
    *,
    norm: FrozenNorm | None,
    resid_query: torch.Tensor | None = None,
    resid_key: torch.Tensor | None = None,
) -> QKAttribution:
    """Split the score of ``head`` at (query ``i``, key ``j``).

    ``parts_query [part, d_model]``, ``parts_key [part, d_model]``: what each part (``labels``) wrote to
    the residual stream at ``i`` and at ``j`` before the layer; ``resid_query, resid_key [d_model]`` the
    clean streams there (default: the sums of the parts), at which the ``norm``'s scale is frozen.
    Computed in float64."""
    if parts_query.shape != parts_key.shape or parts_query.shape[0] != len(labels):
        raise ValueError(
            f"parts at the query {tuple(parts_query.shape)} and the key {tuple(parts_key.shape)} must both be "
            f"[{len(labels)} parts, d_model]"
        )
    dt = torch.float64
    pq, pk = parts_query.to(dt), parts_key.to(dt)
    rq = pq.sum(0) if resid_query is None else resid_query.to(dt)
    rk = pk.sum(0) if resid_key is None else resid_key.to(dt)
    residual_error = max(float((pq.sum(0) - rq).abs().max()), float((pk.sum(0) - rk).abs().max()))
    w_q, w_k = head.w_q.to(dt), head.w_k.to(dt)

    def project_q(x, bias=None):
        return head.rope(bias.to(dt) if x is None else x @ w_q, i)

    def project_k(x, bias=None):
        return head.rope(bias.to(dt) if x is None else x @ w_k, j)

    qs, q_labels = side_vectors(pq, rq, norm, project_q, head.b_q, QUERY_BIAS, labels)
    ks, k_labels = side_vectors(pk, rk, norm, project_k, head.b_k, KEY_BIAS, labels)
    matrix = (qs @ ks.T) * head.scale  # [query_part, key_part]

    def normed(x):
        return x if norm is None else norm(x)

    clean = HeadQK(w_q=w_q, b_q=head.b_q, w_k=w_k, b_k=head.b_k, kv_head=head.kv_head, scale=head.scale, rope=head.rope)
    score = float(clean.query(normed(rq), i) @ clean.key(normed(rk), j)) * head.scale
    return QKAttribution(
        query_labels=tuple(q_labels),
        key_labels=tuple(k_labels),
        matrix=matrix,
        score=score,
        conservation_error=abs(float(matrix.sum()) - score),
        residual_error=residual_error,
    )
