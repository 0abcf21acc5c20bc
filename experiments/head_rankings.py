"""The per-head ranking of a head-effects result with its uncertainty: each head's mean effect, 95 % t
interval over the examples, two-sided p (mean effect 0) and its Holm and Benjamini-Hochberg adjustments
across all the heads, and how many heads stand out after each correction:

    python -m attnscope.experiments.head_rankings results/interventions/minilm-sst2-head-effects.json

Works on results written before the per-head tests were added (from each head's mean, std and the number of
examples; ``attnscope.pipelines.interventions.dataset.head_tests``), and prints the heads of largest mean
|effect| as Markdown.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from attnscope.pipelines.interventions.dataset import ALPHA, head_tests, standouts


def ranking(result: dict, top: int = 6) -> str:
    """Markdown: the ``top`` heads by mean |effect| with interval and corrected p, then the counts."""
    mean = np.asarray(result["mean_effect"], dtype=np.float64)
    std = np.asarray(result["std_effect"], dtype=np.float64)
    tests = head_tests(mean, std, np.full(mean.shape, result["n"]))
    out = standouts(tests)
    flip = result.get("flip_rate")
    lines = [
        "| head | mean Δ | 95 % interval | std over examples | flip rate | p | Holm p | BH p |",
        "|---|---|---|---|---|---|---|---|",
    ]
    order = sorted(np.ndindex(mean.shape), key=lambda i: -abs(mean[i]))[:top]
    for i in order:
        f = "–" if flip is None else f"{flip[i[0]][i[1]]:.2f}"
        lines.append(
            f"| L{i[0]}H{i[1]} | {mean[i]:+.3f} | [{tests['effect_low'][i]:+.3f}, {tests['effect_high'][i]:+.3f}] "
            f"| {std[i]:.3f} | {f} | {tests['p'][i]:.2g} | {tests['p_holm'][i]:.2g} | {tests['p_bh'][i]:.2g} |"
        )
    lines += [
        "",
        f"{result['model']} on {result['dataset']}, n = {result['n']}, {out['tested']} heads tested; heads whose "
        f"mean effect differs from 0 at {ALPHA}: {out['holm']['count']} after Holm "
        f"({', '.join(out['holm']['heads']) or 'none'}), {out['bh']['count']} after Benjamini-Hochberg "
        f"({', '.join(out['bh']['heads']) or 'none'}).",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("result", help="JSON written by attnscope head-effects --out (or a head-effects job)")
    p.add_argument("--top", type=int, default=6, help="heads listed (by mean |effect|)")
    args = p.parse_args(argv)
    sys.stdout.write(ranking(json.loads(Path(args.result).read_text()), args.top) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
