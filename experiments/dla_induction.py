"""Which heads write the next token on the second copy of repeated random tokens, and are they the
induction heads? (#23, "the heads with the largest DLA ... on the second copy of repeated random
tokens"). SmolLM2 on the interventions' probe (``half`` random tokens repeated once after the BOS,
``pipelines.induction_probe``; evaluation seeds 100-104, not the seeds 0-4 that score the heads):

- **DLA**: at every second-copy position ``i`` whose next token the first copy predicts, each head's
  direct part of the logit of that true next token (final norm frozen, ``pipelines.writes``), averaged
  over the positions and then over the seeds (what ``POST /runs/{id}/head-effects`` attributes for
  metric ``loss``); ``induction share``: the fraction of a head's part that its source split puts on
  the induction key ``j = i - half + 1`` (the token after the earlier copy of token ``i``).
- **Induction score** (``analysis.heads.induction_scores``, mean over probe seeds 0-4; the heads
  ``attnscope heads`` labels induction) and **ablation effect** (each head zero-ablated alone,
  ``pipelines.interventions.head_effects``, metric ``loss`` over the same positions: the loss
  increase, mean over seeds).

    .venv/bin/python -m attnscope.experiments.dla_induction [--seeds 100 ... 104] [--half 30] [--top 10] [--out OUT]

Prints Markdown: the heads of largest DLA with their induction score, ablation effect and ranks, and
the overlap of the top-k by each measure; ``--out OUT.json`` writes the three ``[layer][head]`` grids,
the per-seed DLA grids and the summary.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr

from attnscope.analysis.stats import bootstrap_interval
from attnscope.pipelines.induction_probe import mean_induction_scores, probe_ids
from attnscope.pipelines.interventions.apply import head_effects
from attnscope.pipelines.interventions.metrics import MetricSpec
from attnscope.pipelines.writes.recorded import attribute, record_writes


def second_copy(lm, half: int, seed: int) -> dict:
    """One probe: DLA ``[layer, head]`` (mean over the positions), the induction-key part of it
    ``[layer, head]`` and the zero-ablation loss increase ``[layer, head]``."""
    ids = probe_ids(lm, 2 * half, seed=seed)
    b = len(ids) - 2 * half
    positions = tuple(range(b + half, b + 2 * half - 1))  # the next token repeats the first copy
    inp = lm.encode_ids(ids)
    writes = record_writes(lm, inp)
    dla, induction_part = [], []
    for i in positions:
        att = attribute(writes, i, int(ids[i + 1]))
        dla.append(att.heads)
        induction_part.append(att.sources[:, :, i - half + 1])  # [layer, head]
    eff = head_effects(lm, inp, method="zero", metric=MetricSpec("loss", positions))["effect"]
    return {"dla": np.mean(dla, axis=0), "induction_part": np.mean(induction_part, axis=0), "effect": eff}


def ranks(grid: np.ndarray) -> np.ndarray:
    """``[layer, head]`` 1-based rank of each cell, largest first."""
    order = np.argsort(-grid, axis=None, kind="stable")
    r = np.empty(grid.size, dtype=int)
    r[order] = np.arange(1, grid.size + 1)
    return r.reshape(grid.shape)


def top(grid: np.ndarray, k: int) -> list[tuple[int, int]]:
    return [tuple(int(v) for v in np.unravel_index(o, grid.shape)) for o in np.argsort(-grid, axis=None)[:k]]


def label(head: tuple[int, int]) -> str:
    return f"L{head[0]}H{head[1]}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[100, 101, 102, 103, 104])
    ap.add_argument("--half", type=int, default=30)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default="", help="OUT.json with the grids and the summary")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from attnscope.models.loading import load_model

    lm = load_model("smollm2", "cpu", capture="lazy")
    score = mean_induction_scores(lm, args.half)  # [layer, head], seeds 0-4
    runs = [second_copy(lm, args.half, s) for s in args.seeds]
    dla = np.mean([r["dla"] for r in runs], axis=0)
    part = np.mean([r["induction_part"] for r in runs], axis=0)
    eff = np.mean([r["effect"] for r in runs], axis=0)
    r_dla, r_score, r_eff = ranks(dla), ranks(score), ranks(eff)
    labelled = [h for h in top(score, 270) if score[h] >= 0.5]  # attnscope heads' induction label
    print(f"SmolLM2, {args.half} random tokens repeated once, seeds {args.seeds}; induction heads (score >= 0.5, "
          f"seeds 0-4): {', '.join(label(h) for h in labelled)}\n")  # fmt: skip
    print("| head | DLA of the true next token (mean over seeds; per-seed range) | share from the induction key "
          "| induction score (rank) | ablation loss increase (rank) |")  # fmt: skip
    print("|---|---|---|---|---|")
    for h in top(dla, args.top):
        seeds = [r["dla"][h] for r in runs]
        share = part[h] / dla[h] if dla[h] else float("nan")
        print(
            f"| {label(h)} | {dla[h]:+.3f} ({min(seeds):+.3f}..{max(seeds):+.3f}) | {share:.2f} | "
            f"{score[h]:.3f} ({r_score[h]}) | {eff[h]:+.3f} ({r_eff[h]}) |"
        )
    overlap = {}
    for k in (len(labelled), args.top):
        by_dla, by_score, by_eff = set(top(dla, k)), set(top(score, k)), set(top(eff, k))
        overlap[k] = {"dla_score": len(by_dla & by_score), "dla_effect": len(by_dla & by_eff)}
        print(f"\nTop {k} by DLA: {len(by_dla & by_score)} among the top {k} by induction score, "
              f"{len(by_dla & by_eff)} among the top {k} by ablation effect.")  # fmt: skip
    print("\nThe induction heads' DLA ranks (of 270): " + ", ".join(f"{label(h)} {r_dla[h]}" for h in labelled))
    rho_signed = [spearmanr(r["dla"].ravel(), r["effect"].ravel())[0] for r in runs]
    rho_abs = [spearmanr(np.abs(r["dla"]).ravel(), np.abs(r["effect"]).ravel())[0] for r in runs]
    rho_score = [spearmanr(r["dla"].ravel(), score.ravel())[0] for r in runs]
    summary = {}
    for key, vals, what in (
        ("rho_signed", rho_signed, "DLA vs ablation loss increase"),
        ("rho_abs", rho_abs, "|DLA| vs |ablation effect|"),
        ("rho_score", rho_score, "DLA vs induction score"),
    ):
        iv = bootstrap_interval(vals)
        summary[key] = {"mean": iv.mean, "low": iv.low, "high": iv.high, "n": iv.n, "per_seed": list(map(float, vals))}
        print(f"Spearman rho over 270 heads, {what}: mean over {iv.n} seeds {iv.mean:+.3f}, "
              f"95 % BCa [{iv.low:+.3f}, {iv.high:+.3f}]")  # fmt: skip
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        doc = {
            "model": "smollm2", "half": args.half, "seeds": args.seeds, "score_seeds": [0, 1, 2, 3, 4],
            "induction_heads": [label(h) for h in labelled], "overlap": overlap, **summary,
            "dla": dla.tolist(), "induction_part": part.tolist(), "effect": eff.tolist(), "score": score.tolist(),
            "dla_per_seed": [r["dla"].tolist() for r in runs],
        }  # fmt: skip
        out.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
