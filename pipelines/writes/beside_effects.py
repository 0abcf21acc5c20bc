"""Each head's direct logit attribution beside its ablation effect on the same run and metric
(``POST /runs/{id}/head-effects``): the logit the metric reads, split per head with the final norm
frozen (``recorded.attribute``), averaged over the metric's positions, and the Spearman rank
correlation of the signed DLA with the effect oriented by the metric over the heads.

What is attributed: ``answer_logit_diff`` reads ``logit(correct) - logit(wrong)`` at its positions,
so that difference; ``loss`` reads the log-probability of the text's true next token after each of
its positions, so that token's logit there (a logit, not a log-probability: the softmax's
normaliser is no head's direct write). Both are linear, so the mean over positions of the per-position
parts is the attribution of the mean. A head's ablation effect is its direct part plus what it changes
downstream; a head whose effect is mostly direct ranks alike in both.

What is ranked (``dla_agreement``): the signed DLA against the effect oriented so that removing a
head's direct part predicts it. Zero-ablating a head that writes ``d`` into the logit difference takes
``d`` out of it (norm frozen, nothing downstream), so ``answer_logit_diff`` changes by ``-d``: DLA
is ranked against ``-effect``. Taking ``d`` out of the true next token's logit raises the loss by
about ``d (1 - p)`` (the other logits held): DLA is ranked against ``+effect``. Signs are kept: a head
that writes the answer and whose ablation *raises* the difference disagrees, which ``|effect|``
against ``|DLA|`` would count as agreement. ``experiments/dla_ablation.py`` ranks the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from attnscope.analysis.interventions import RankAgreement, signed_rank_agreement
from attnscope.models.sites import SitesUnavailableError
from attnscope.pipelines.writes.recorded import RecordedWrites, attribute, readout_parts


@dataclass(frozen=True)
class DlaBeside:
    """``heads [layer, head]``: the mean direct part over ``positions`` of the logit (difference) the
    metric reads; ``agreement``: Spearman of ``heads`` with the effect oriented by ``against``
    (``"-effect"`` or ``"effect"``, ``dla_agreement``)."""

    heads: np.ndarray
    positions: tuple[int, ...]
    agreement: RankAgreement
    against: str


# the sign that turns a metric's ablation effect into the first-order prediction of the DLA (module doc)
EFFECT_SIGN = {"answer_logit_diff": -1.0, "loss": 1.0}


def dla_agreement(dla: np.ndarray, effect: np.ndarray, kind: str) -> tuple[RankAgreement, str]:
    """Spearman of the signed ``dla [layer, head]`` with ``effect [layer, head]`` oriented for the metric
    ``kind`` (``-effect`` for ``answer_logit_diff``, ``effect`` for ``loss``), and that orientation."""
    if kind not in EFFECT_SIGN:
        raise ValueError(f"DLA is compared with the causal LM metrics {sorted(EFFECT_SIGN)}, not {kind!r}")
    sign = EFFECT_SIGN[kind]
    return signed_rank_agreement(dla, sign * np.asarray(effect, np.float64)), "-effect" if sign < 0 else "effect"


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
    if kind not in EFFECT_SIGN:
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
    agreement, against = dla_agreement(heads, effect, kind)
    return DlaBeside(heads, tuple(int(p) for p in positions), agreement, against)
