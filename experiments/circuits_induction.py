"""The induction circuit of a causal LM over seeded repeated-random-token pairs: per pair EAP and
EAP-IG over every edge, the Spearman agreement of each with exact path patching on its top edges,
the faithfulness curve of the EAP circuit, and the edges most often in the top; means with 95 % BCa
bootstrap intervals over the pairs, as Markdown and JSON (every pair's values in its ``rows``), and the
same per-pair values in long format beside it (``OUT-pairs.csv``: one row per pair and quantity):

    python -m attnscope.experiments.circuits_induction --pairs 8 --out results/circuits/smollm2-induction.json
"""

from __future__ import annotations

import csv
import json
import sys
from collections import Counter
from pathlib import Path

from attnscope.experiments.model_args import parse, parser


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--half", type=int, default=15, help="tokens per copy (a pair is 1 + 2 half tokens)")
    ap.add_argument("--top", type=int, default=50, help="top edges re-checked exactly")
    ap.add_argument("--steps", type=int, default=5, help="EAP-IG steps")
    args = parse(ap, argv)

    from attnscope.analysis.stats import bootstrap_interval
    from attnscope.models.loading import load_model
    from attnscope.pipelines.circuits.attribution import eap, eap_ig
    from attnscope.pipelines.circuits.extract import exact_recheck, faithfulness_curve, ranked_edges
    from attnscope.pipelines.circuits.patching import prepare
    from attnscope.pipelines.circuits.tasks import induction_pairs

    backend = load_model(args.model, "cpu")
    ks = [0, 10, 25, 50, 100, 200, 500]
    rows, counts = [], Counter()
    for seed in range(args.pairs):
        pairs = induction_pairs(backend.model.config.vocab_size, n=1, half=args.half, seed=seed, bos=0, low=1000)
        prep = prepare(backend.model, backend.sites, pairs.clean, pairs.corrupted, pairs.metric)
        s_eap, s_ig = eap(prep), eap_ig(prep, args.steps)
        a_eap, a_ig = exact_recheck(prep, s_eap, args.top), exact_recheck(prep, s_ig, args.top)
        curve = faithfulness_curve(prep, s_eap, ks)
        g = prep.graph
        sn, rn = g.sender_names(), g.receiver_names()
        heads = [(s, r) for s, r in ranked_edges(s_eap) if sn[s].startswith("a") and "<" in rn[r]][:10]
        counts.update(f"{sn[s]} -> {rn[r]}" for s, r in heads)
        rows.append({"seed": seed, "m_clean": prep.m_clean, "m_corrupted": prep.m_corrupted,
                     "spearman_eap": a_eap.spearman, "spearman_eap_ig": a_ig.spearman,
                     "curve": curve, "top_edges": [f"{sn[s]} -> {rn[r]}" for s, r in ranked_edges(s_eap)[:10]],
                     "top_head_edges": [f"{sn[s]} -> {rn[r]}" for s, r in heads]})  # fmt: skip
        sys.stderr.write(f"pair {seed}: rho EAP {a_eap.spearman:.3f}, EAP-IG {a_ig.spearman:.3f}\n")

    def iv(vals):
        i = bootstrap_interval(vals)
        return {"mean": i.mean, "low": i.low, "high": i.high, "n": i.n}

    summary = {
        "model": args.model,
        "pairs": args.pairs,
        "tokens": 1 + 2 * args.half,
        "top": args.top,
        "steps": args.steps,
        "m_clean": iv([r["m_clean"] for r in rows]),
        "m_corrupted": iv([r["m_corrupted"] for r in rows]),
        "spearman_eap": iv([r["spearman_eap"] for r in rows]),
        "spearman_eap_ig": iv([r["spearman_eap_ig"] for r in rows]),
        "faithfulness": {str(k): iv([dict(r["curve"])[k] for r in rows]) for k in ks},
        "head_edges_in_top10": counts.most_common(15),
        "rows": rows,
    }
    out = [f"## Induction circuit of {args.model} ({args.pairs} pairs of {1 + 2 * args.half} tokens)\n\n"]
    for key in ("m_clean", "m_corrupted", "spearman_eap", "spearman_eap_ig"):
        v = summary[key]
        out.append(f"- {key}: {v['mean']:.3f} [{v['low']:.3f}, {v['high']:.3f}]\n")
    out.append("\n| edges kept | faithfulness |\n|---|---|\n")
    out += [
        f"| {k} | {v['mean']:.3f} [{v['low']:.3f}, {v['high']:.3f}] |\n" for k, v in summary["faithfulness"].items()
    ]
    out.append("\n| head -> head edge | pairs with it in the top 10 head edges |\n|---|---|\n")
    out += [f"| {e} | {c} |\n" for e, c in summary["head_edges_in_top10"]]
    sys.stdout.write("".join(out))
    if args.out:
        out_path = Path(args.out)
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(summary, indent=1, default=float) + "\n")
        with out_path.with_name(out_path.stem + "-pairs.csv").open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=["seed", "quantity", "value"])
            writer.writeheader()
            writer.writerows(pair_rows(rows))
    return 0


def pair_rows(rows: list[dict]) -> list[dict]:
    """The long-format table of the pairs' values: one row per pair and quantity (``m_clean``,
    ``m_corrupted``, ``spearman_eap``, ``spearman_eap_ig``, ``faithfulness@k`` for each k of its curve)."""
    out = []
    for r in rows:
        for key in ("m_clean", "m_corrupted", "spearman_eap", "spearman_eap_ig"):
            out.append({"seed": r["seed"], "quantity": key, "value": float(r[key])})
        out += [{"seed": r["seed"], "quantity": f"faithfulness@{k}", "value": float(v)} for k, v in r["curve"]]
    return out


if __name__ == "__main__":
    raise SystemExit(main())
