"""A ``dla`` job's mean head parts beside a ``head-effects`` grid's mean effects (two result JSONs of
the same model): the heads of largest mean DLA with their ablation rank, and Spearman's rho over the
heads, signed (DLA against minus the effect: a head that writes the prediction should, ablated,
lower its probability) and absolute (|DLA| against |effect|, as ``POST /runs/{id}/head-effects``).

    .venv/bin/python -m attnscope.experiments.dla_beside_grid results/writes/minilm-sst2-dla-200.json \\
        results/interventions/minilm-sst2-head-effects.json [--top 6]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr


def beside(dla_result: dict, grid_result: dict, top: int = 6) -> str:
    """Markdown: the top heads by mean DLA with their mean effect and ablation rank, and both rhos."""
    dla = np.asarray(dla_result["heads"]["mean"], dtype=np.float64)  # [layer, head]
    eff = np.asarray(grid_result["mean_effect"], dtype=np.float64)
    if dla.shape != eff.shape:
        raise ValueError(f"the dla result has {dla.shape} heads, the grid {eff.shape}: not the same model")
    rank = np.argsort(np.argsort(eff, axis=None)).reshape(eff.shape) + 1  # 1: the largest drop
    lines = ["| head | mean DLA | mean ablation effect | ablation rank (most negative first) |", "|---|---|---|---|"]
    for o in np.argsort(-dla, axis=None)[:top]:
        a, b = np.unravel_index(o, dla.shape)
        lines.append(f"| L{a}H{b} | {dla[a, b]:+.4f} | {eff[a, b]:+.4f} | {rank[a, b]} of {eff.size} |")
    signed = spearmanr(dla.ravel(), -eff.ravel())
    absolute = spearmanr(np.abs(dla).ravel(), np.abs(eff).ravel())
    lines.append(f"\nSpearman over {eff.size} heads: signed {signed.statistic:+.3f} (p {signed.pvalue:.2g}), "
                 f"absolute {absolute.statistic:+.3f} (p {absolute.pvalue:.2g})")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dla", help="a dla job's result JSON")
    ap.add_argument("grid", help="a head-effects job's result JSON (same model)")
    ap.add_argument("--top", type=int, default=6)
    args = ap.parse_args()
    print(beside(json.loads(Path(args.dla).read_text()), json.loads(Path(args.grid).read_text()), args.top))


if __name__ == "__main__":
    main()
