"""Each head's direct logit attribution beside its ablation effect on the same run and metric
(``POST /runs/{id}/head-effects``): the logit the metric reads, split per head with the final norm
frozen (``recorded.attribute``), averaged over the metric's positions, and the Spearman rank
correlation of ``|effect|`` with ``|DLA|`` over the heads.

What is attributed: ``answer_logit_diff`` reads ``logit(correct) - logit(wrong)`` at its positions,
so that difference; ``loss`` reads the log-probability of the text's true next token after each of
its positions, so that token's logit there (a logit, not a log-probability: the softmax's
normaliser is no head's direct write). Both are linear, so the mean over positions of the per-position
parts is the attribution of the mean. A head's ablation effect is its direct part plus what it changes
downstream; a head whose effect is mostly direct ranks alike in both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from attnscope.analysis.interventions import RankAgreement, rank_agreement
from attnscope.models.sites import SitesUnavailableError
from attnscope.pipelines.writes.recorded import RecordedWrites, attribute, readout_parts


@dataclass(frozen=True)
class DlaBeside:
    """``heads [layer, head]``: the mean direct part over ``positions`` of the logit (difference) the
    metric reads; ``agreement``: Spearman of ``|effect|`` with ``|heads|``."""

    heads: np.ndarray
    positions: tuple[int, ...]
    agreement: RankAgreement


def dla_beside_effect(
    backend,
    token_ids: Sequence[int],
    kind: str,
    positions: Sequence[int],
    answers: Sequence[int] | None,
    effect: np.ndarray,
    recording: Callable[[], RecordedWrites],
) -> DlaBeside | None:
    """The DLA of the logit the metric ``kind`` reads, beside ``effect [layer, head]``; None for a metric
    that reads no logit of a causal LM (classifiers' and embeddings' metrics) or a model whose anatomy
    the readout cannot read (no final norm or unembedding, post-norm)."""
    if kind not in ("loss", "answer_logit_diff"):
        return None
    try:
        readout_parts(backend.sites, "direct logit attribution")
    except (SitesUnavailableError, ValueError):
        return None
    writes = recording()
    parts = []
    for p in positions:
        if kind == "loss":
            att = attribute(writes, int(p), int(token_ids[p + 1]), split=False)
        else:
            att = attribute(writes, int(p), int(answers[0]), int(answers[1]), split=False)
        parts.append(np.asarray(att.heads, dtype=np.float64))
    heads = np.mean(parts, axis=0)  # [layer, head]
    return DlaBeside(heads, tuple(int(p) for p in positions), rank_agreement(effect, np.abs(heads)))
