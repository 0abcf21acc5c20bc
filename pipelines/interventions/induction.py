"""Does ablating the heads labelled induction heads hurt in-context copying? The causal test of the
induction label (Olsson et al. 2022).

Heads are ranked by the project's induction score (``attnscope.analysis.heads.induction_scores``,
mean over ``score_seeds`` of the repeated-random-token probe). On probes of *other* seeds
(``eval_seeds``) the top ``k`` heads are ablated together, and so are ``n_random`` sets of ``k`` heads
drawn uniformly (seeded); the metric is the change of the mean next-token loss over the second copy
(the positions whose next token the first copy predicts). All sets of one probe run as one batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnscope.pipelines.induction_probe import mean_induction_scores, probe_ids
from attnscope.pipelines.interventions.apply import HeadMeans, prepare
from attnscope.pipelines.interventions.metrics import MetricSpec, effect
from attnscope.pipelines.interventions.spec import HeadAblation, InterventionSet


def induction_ablation(
    backend,
    k: int = 5,
    n_random: int = 20,
    half: int = 30,
    method: str = "zero",
    score_seeds: Sequence[int] = (0, 1, 2, 3, 4),
    eval_seeds: Sequence[int] = (100, 101, 102, 103, 104),
    seed: int = 0,
    means: HeadMeans | None = None,
) -> dict:
    """Loss increase on the second copy when the top-``k`` induction heads are ablated, against
    ``n_random`` random ``k``-sets (mean, std, min, max over sets, each averaged over ``eval_seeds``)."""
    if not backend.attention.causal:
        raise ValueError(f"model {backend.spec.name!r} is not a causal LM; the induction test needs one")
    score = mean_induction_scores(backend, half, score_seeds)  # [layer, head]
    n_l, n_h = score.shape
    order = np.argsort(-score, axis=None, kind="stable")
    top = [tuple(int(v) for v in np.unravel_index(i, score.shape)) for i in order[:k]]
    rng = np.random.default_rng(seed)
    randoms = [
        [tuple(int(v) for v in np.unravel_index(i, score.shape)) for i in rng.choice(n_l * n_h, k, replace=False)]
        for _ in range(n_random)
    ]
    sets = [InterventionSet((HeadAblation(tuple(h), method),)) for h in [top, *randoms]]
    effects, clean_losses = [], []
    for s in eval_seeds:
        ids = probe_ids(backend, 2 * half, seed=s)
        b = len(ids) - 2 * half
        positions = tuple(range(b + half, b + 2 * half - 1))  # the next token repeats the first copy
        prep = prepare(backend, backend.encode_ids(ids), sets, MetricSpec("loss", positions), means=means)
        effects.append(effect(prep.metric, prep.clean, prep.forward(sets)))
        clean_losses.append(float(-prep.clean.target_logprob[0].mean()))
    eff = np.mean(effects, axis=0)  # [1 + n_random] averaged over probes
    rand = eff[1:]
    return {
        "model": backend.spec.name,
        "k": k,
        "method": method,
        "probe": f"{half} random tokens repeated once; scored on seeds {list(score_seeds)}, "
        f"ablated on seeds {list(eval_seeds)}",
        "top_heads": [{"head": f"L{a}H{b}", "induction_score": round(float(score[a, b]), 4)} for a, b in top],
        "clean_second_copy_loss": float(np.mean(clean_losses)),
        "top_k_loss_increase": float(eff[0]),
        "random_loss_increase": {
            "mean": float(rand.mean()),
            "std": float(rand.std(ddof=1)) if rand.size > 1 else 0.0,
            "min": float(rand.min()),
            "max": float(rand.max()),
            "n_sets": int(rand.size),
        },
        "random_sets_beaten": int((eff[0] > rand).sum()),
    }
