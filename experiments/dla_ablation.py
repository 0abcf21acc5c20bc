"""Direct logit attribution beside the ablation effect, per head, on SmolLM2 factual prompts (#23
item 7): for each prompt "The capital of <country> is", each head's DLA of ``logit(answer) -
logit(contrast)`` at the last position (``pipelines.writes``) and the change of the same logit
difference when that head alone is zero-ablated (``pipelines.interventions.head_effects``), ranked
against each other with Spearman's rho over the 270 heads. A head that writes the answer directly
should, ablated, lower the difference: the script correlates the signed DLA with ``-effect``, the
definition the head-effects route answers as ``dla_agreement`` (``pipelines.writes.beside_effects.
dla_agreement``). Over the prompts: the mean rho with its bootstrap (BCa) interval.

    .venv/bin/python -m attnscope.experiments.dla_ablation [--prompts 8] [--method zero] [--top 5] [--out OUT]

Prints Markdown (a table per prompt and the summary); ``--out OUT`` also writes every prompt's values:
``OUT.json`` (per prompt: rho, p and the DLA and effect grids ``[layer][head]``; the summary interval) and
``OUT-examples.csv`` (long format: one row per prompt and head).
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np
import torch

from attnscope.analysis.stats import bootstrap_interval
from attnscope.pipelines.interventions.apply import head_effects
from attnscope.pipelines.interventions.metrics import MetricSpec
from attnscope.pipelines.writes.beside_effects import dla_agreement
from attnscope.pipelines.writes.readouts import single_token_id
from attnscope.pipelines.writes.recorded import attribute, record_writes

# (country, answer, contrast): single-token answers of SmolLM2's tokenizer
FACTS = [
    ("France", " Paris", " London"),
    ("Italy", " Rome", " Paris"),
    ("Germany", " Berlin", " Paris"),
    ("Spain", " Madrid", " Rome"),
    ("Japan", " Tokyo", " Beijing"),
    ("Russia", " Moscow", " Berlin"),
    ("England", " London", " Paris"),
    ("China", " Beijing", " Tokyo"),
]


def compare(lm, country: str, answer: str, contrast: str, method: str) -> dict:
    """DLA ``[layer, head]``, ablation effect ``[layer, head]`` and their rank correlation."""
    inp = lm.encode_text(f"The capital of {country} is")
    a, b = single_token_id(lm, answer), single_token_id(lm, contrast)
    pos = len(inp) - 1
    dla = attribute(record_writes(lm, inp), pos, a, b, split=False).heads
    metric = MetricSpec("answer_logit_diff", (pos,), (a, b))
    eff = head_effects(lm, inp, method=method, metric=metric)["effect"]
    agreement, _ = dla_agreement(dla, eff, metric.kind)  # Spearman of DLA with -effect
    return {"dla": dla, "effect": eff, "rho": agreement.rho, "p": agreement.p}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", type=int, default=len(FACTS), help=f"how many of the {len(FACTS)} facts")
    ap.add_argument("--method", default="zero", choices=("zero", "mean"))
    ap.add_argument("--top", type=int, default=5, help="heads of largest DLA listed for the first prompt")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default="", help="OUT.json and OUT-examples.csv with every prompt's values")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from attnscope.models.loading import load_model

    lm = load_model("smollm2", "cpu", capture="lazy")
    rows = []
    print("| prompt | answer - contrast | Spearman rho (DLA vs -ablation effect, 270 heads) | p |")
    print("|---|---|---|---|")
    for k, (country, answer, contrast) in enumerate(FACTS[: args.prompts]):
        r = compare(lm, country, answer, contrast, args.method)
        rows.append(r)
        print(f"| The capital of {country} is | `{answer}` - `{contrast}` | {r['rho']:+.3f} | {r['p']:.1e} |")
        if k == 0:
            first = r
    order = np.argsort(-first["dla"], axis=None)[: args.top]
    print(f"\nHeads of largest DLA on the first prompt ({args.method} ablation effect beside):\n")
    print("| head | DLA | ablation effect | ablation rank (of 270, most negative first) |")
    print("|---|---|---|---|")
    eff_rank = np.argsort(np.argsort(first["effect"], axis=None))
    for o in order:
        layer, head = np.unravel_index(o, first["dla"].shape)
        print(
            f"| L{layer}H{head} | {first['dla'][layer, head]:+.3f} | {first['effect'][layer, head]:+.3f} | "
            f"{int(eff_rank[o]) + 1} |"
        )
    rhos = [r["rho"] for r in rows]
    iv = bootstrap_interval(rhos)
    print(
        f"\nMean rho over {len(rhos)} prompts: {iv.mean:+.3f}, "
        f"95 % BCa bootstrap interval [{iv.low:+.3f}, {iv.high:+.3f}]"
    )
    if args.out:
        facts = FACTS[: args.prompts]
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        per_prompt = [
            {"prompt": f"The capital of {c} is", "answer": a, "contrast": b, "rho": r["rho"], "p": r["p"],
             "dla": r["dla"].tolist(), "effect": r["effect"].tolist()}
            for (c, a, b), r in zip(facts, rows)
        ]  # fmt: skip
        summary = {"method": args.method, "rho": {"mean": iv.mean, "low": iv.low, "high": iv.high, "n": iv.n}}
        out.with_suffix(".json").write_text(json.dumps({**summary, "prompts": per_prompt}, indent=1) + "\n")
        with out.with_name(out.name + "-examples.csv").open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=["prompt", "head", "dla", "effect"])
            writer.writeheader()
            writer.writerows(prompt_rows(per_prompt))


def prompt_rows(per_prompt: list[dict]) -> list[dict]:
    """The long-format table of the prompts' grids: one row per prompt and head (its DLA and effect)."""
    return [
        {"prompt": r["prompt"], "head": f"L{layer}H{head}", "dla": d, "effect": e}
        for r in per_prompt
        for layer, (d_row, e_row) in enumerate(zip(r["dla"], r["effect"]))
        for head, (d, e) in enumerate(zip(d_row, e_row))
    ]


if __name__ == "__main__":
    main()
