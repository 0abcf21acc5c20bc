"""Why induction heads attend where they do, on a causal LM (``docs/methods/qk-attribution.md``,
the finding in ``docs/results/interventions.md``).

On repeated random tokens ``r_1..r_m r_1..r_m`` (Olsson et al. 2022), the heads with the highest
induction score are taken; at second-copy queries ``i`` and their induction keys ``j = i - m + 1``
(the token after the earlier copy of ``r_i``) each score is split into query-part x key-part terms.
Three answers to "what makes the head attend there", side by side: the key-side parts carrying the
score (mean share over positions), the earlier heads with the highest K-composition into the head
(weights only), and the score change when the top key-side head is zero-ablated (interventions API)
beside the change when a K-composition-ranked head or a random earlier head is ablated instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from attnscope.analysis.heads import induction_scores
from attnscope.pipelines.induction_probe import probe_ids
from attnscope.pipelines.interventions.edits import EditContext, build_edits
from attnscope.pipelines.interventions.spec import HeadAblation, InterventionSet
from attnscope.pipelines.qk.explain import explain_pair, sites_composition


def _label(layer: int, head: int) -> str:
    return f"L{layer}H{head}"


def _parse(label: str) -> tuple[int, int]:
    a, b = label[1:].split("H")
    return int(a), int(b)


def _ablation(backend, n_tokens: int, head: tuple[int, int]):
    return build_edits(
        [InterventionSet((HeadAblation((head,), "zero"),))],
        EditContext(n_heads=backend.n_heads, head_dim=backend.sites.d_head, n_tokens=n_tokens),
    )


def induction_qk(
    backend, half: int = 20, seeds: Sequence[int] = (0, 1, 2), top: int = 3, positions: int = 6, seed: int = 0
) -> dict:
    """The report (a JSON-able dict) for the ``top`` induction heads of ``backend``'s model."""
    if not backend.attention.causal:
        raise ValueError(f"model {backend.spec.name!r} is not a causal LM; the induction probe needs one")
    sites = backend.sites
    scores, probes = [], []
    for s in seeds:
        ids = probe_ids(backend, 2 * half, seed=s)
        maps = backend.run(backend.encode_ids(ids), hidden_states=False).maps
        scores.append(induction_scores(maps, ids))
        probes.append((ids, maps))
    score = np.mean(scores, axis=0)  # [layer, head]
    ranked = score.copy()
    ranked[0] = -np.inf  # a layer-0 head reads nothing earlier heads wrote
    order = np.argsort(-ranked, axis=None, kind="stable")[:top]
    heads = [tuple(int(v) for v in np.unravel_index(k, score.shape)) for k in order]
    comp = sites_composition(backend, modes=("k",))
    k_comp = comp.scores["k"]  # [src_layer, src_head, dst_layer, dst_head]
    base_mean, base_std = comp.baseline["k"]
    ids, maps = probes[0]
    inp = backend.encode_ids(ids)
    b = len(ids) - 2 * half
    qs = [int(q) for q in np.linspace(b + half + 1, b + 2 * half - 1, positions).round()]
    prev = {  # previous-token score: mean attention to p - 1, rows 1.. of the first probe
        (m, h): float(np.mean([maps.layer(m)[h, p, p - 1] for p in range(1, len(ids))]))
        for m in range(sites.n_layers)
        for h in range(sites.n_heads)
    }
    rng = np.random.default_rng(seed)
    out = []
    for layer, head in heads:
        exps = [explain_pair(backend, inp, layer, head, i, i - half + 1) for i in qs]
        k_labels = exps[0].attribution.key_labels
        q_labels = exps[0].attribution.query_labels
        key_share = torch.stack([e.attribution.key_totals for e in exps]).mean(0)
        query_share = torch.stack([e.attribution.query_totals for e in exps]).mean(0)
        clean = float(np.mean([e.view.score for e in exps]))
        key_heads = sorted(
            ((c, float(v)) for c, v in zip(k_labels, key_share) if c.startswith("L")), key=lambda cv: -cv[1]
        )
        flat = k_comp[:layer, :, layer, head]  # [src_layer < layer, src_head]
        ranked = torch.argsort(flat.flatten(), descending=True)[:3]
        comp_top = [_label(int(r) // sites.n_heads, int(r) % sites.n_heads) for r in ranked]
        random_head = _label(int(rng.integers(0, layer)), int(rng.integers(0, sites.n_heads)))

        def ablated(label: str, layer: int = layer, head: int = head) -> float:
            hooks = [_ablation(backend, len(inp), _parse(label))]
            return float(
                np.mean([explain_pair(backend, inp, layer, head, i, i - half + 1, hooks).view.score for i in qs])
            )

        checks = {}
        for label in dict.fromkeys([key_heads[0][0], comp_top[0], random_head]):
            checks[label] = ablated(label) - clean
        out.append(
            {
                "head": _label(layer, head),
                "induction_score": round(float(score[layer, head]), 4),
                "mean_score": round(clean, 4),
                "mean_weight": round(float(np.mean([e.view.weight for e in exps])), 4),
                "conservation_error_max": float(max(e.attribution.conservation_error for e in exps)),
                "top_key_parts": [
                    {"part": k_labels[int(c)], "share": round(float(key_share[c]), 4)}
                    for c in torch.argsort(key_share, descending=True)[:4]
                ],
                "top_key_heads": [
                    {"part": c, "share": round(v, 4), "prev_token_score": round(prev[_parse(c)], 4)}
                    for c, v in key_heads[:3]
                ],
                "top_query_parts": [
                    {"part": q_labels[int(c)], "share": round(float(query_share[c]), 4)}
                    for c in torch.argsort(query_share, descending=True)[:3]
                ],
                "k_composition_top": [
                    {
                        "head": c,
                        "score": round(float(k_comp[_parse(c)[0], _parse(c)[1], layer, head]), 4),
                        "prev_token_score": round(prev[_parse(c)], 4),
                    }
                    for c in comp_top
                ],
                "ablation_score_change": {label: round(v, 4) for label, v in checks.items()},
                "random_head_ablated": random_head,
            }
        )
    return {
        "model": backend.spec.name,
        "probe": f"{half} random tokens repeated once; heads ranked on seeds {list(seeds)}, attributed on seed "
        f"{seeds[0]} at second-copy queries {qs} and keys query - {half - 1}",
        "k_composition_baseline": {"mean": round(base_mean, 4), "std": round(base_std, 4)},
        "heads": out,
    }
