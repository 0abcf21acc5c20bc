"""Exact path patching of named edges over seeded induction pairs: the previous-token head -> induction
head key paths (and, beside them, the same senders' query and value paths and seeded random control
edges into the same key inputs), each edge's exact noising effect and its EAP score, with 95 % t
intervals over the pairs, under two corruptions (``tasks.induction_pairs``' ``corrupt``):

- ``second``: the corrupted input replaces the second copy (the circuit job's pairs); the first copy,
  and so every key an induction head matches in it, is the same in both inputs;
- ``first``: the corrupted input replaces the first copy; the keys of the first copy differ.

    python -m attnscope.experiments.circuits_paths --pairs 10 --out results/circuits/smollm2-induction-paths.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from attnscope.experiments.model_args import parse, parser

# SmolLM2's previous-token head L16H0 and the induction heads it feeds by QK attribution
# (docs/results/llm.md): L17H3/L17H4 read key/value head 1 of layer 17, L18H6 kv head 2 of layer 18;
# L17H8 is L18H6's other key-side part.
EDGES = [
    ("a16.h0", "a17.g1<k>", "previous-token -> induction keys (L17H3-H5)"),
    ("a16.h0", "a18.g2<k>", "previous-token -> induction keys (L18H6-H8)"),
    ("a17.h8", "a18.g2<k>", "L17H8 -> induction keys (L18H6-H8)"),
    ("a16.h0", "a17.h3<q>", "previous-token -> L17H3 query"),
    ("a16.h0", "a18.h6<q>", "previous-token -> L18H6 query"),
    ("a16.h0", "a17.g1<v>", "previous-token -> L17 kv head 1 values"),
    ("a16.h0", "a18.g2<v>", "previous-token -> L18 kv head 2 values"),
]
PREVIOUS_TOKEN = {(16, 0), (11, 1), (1, 2), (2, 1), (19, 3), (17, 8)}


def control_edges(n: int, seed: int, n_heads: int = 9) -> list[tuple[str, str, str]]:
    """``n`` seeded random heads of layers 1-15 (no previous-token head) into the same key inputs."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out: list[tuple[str, str, str]] = []
    while len(out) < n:
        layer, head = int(rng.integers(1, 16)), int(rng.integers(0, n_heads))
        receiver = ("a17.g1<k>", "a18.g2<k>")[len(out) % 2]
        edge = (f"a{layer}.h{head}", receiver, "control: a random earlier head -> the same keys")
        if (layer, head) not in PREVIOUS_TOKEN and edge not in out:
            out.append(edge)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--half", type=int, default=15, help="tokens per copy (a pair is 1 + 2 half tokens)")
    ap.add_argument("--controls", type=int, default=6, help="random control edges")
    args = parse(ap, argv)

    from attnscope.analysis.stats import t_interval
    from attnscope.models.loading import load_model
    from attnscope.pipelines.circuits.attribution import eap
    from attnscope.pipelines.circuits.patching import patch_edge, prepare
    from attnscope.pipelines.circuits.tasks import induction_pairs

    backend = load_model(args.model, "cpu")
    edges = EDGES + control_edges(args.controls, 0, backend.sites.n_heads)
    vocab = backend.model.config.vocab_size
    per: dict[str, dict] = {}
    for corrupt in ("second", "first"):
        rows = []
        for seed in range(args.pairs):
            ps = induction_pairs(vocab, n=1, half=args.half, seed=seed, bos=0, low=1000, corrupt=corrupt)
            prep = prepare(backend.model, backend.sites, ps.clean, ps.corrupted, ps.metric)
            scores = eap(prep)
            row = {"seed": seed, "m_clean": prep.m_clean, "m_corrupted": prep.m_corrupted, "exact": [], "eap": []}
            for s_name, r_name, _ in edges:
                s, r = prep.graph.edge(s_name, r_name)
                row["exact"].append(patch_edge(prep, s, r))
                row["eap"].append(float(scores[s, r]))
            rows.append(row)
            sys.stderr.write(f"{corrupt} pair {seed}: {[round(x, 3) for x in row['exact'][:3]]}\n")

        def iv(values):
            return t_interval(values).as_dict(6)

        per[corrupt] = {
            "m_clean": iv([r["m_clean"] for r in rows]),
            "m_corrupted": iv([r["m_corrupted"] for r in rows]),
            "edges": [
                {
                    "sender": s,
                    "receiver": r,
                    "reads": what,
                    "exact": iv([row["exact"][i] for row in rows]),
                    "eap": iv([row["eap"][i] for row in rows]),
                }
                for i, (s, r, what) in enumerate(edges)
            ],  # fmt: skip
            "rows": rows,
        }
    out = [f"## Path patching of {args.model}'s induction paths ({args.pairs} pairs of {1 + 2 * args.half} tokens)\n"]
    for corrupt, res in per.items():
        mc, mx = res["m_clean"], res["m_corrupted"]
        out.append(f"\ncorrupted copy: {corrupt}; loss clean {mc['mean']:.3f} [{mc['low']:.3f}, {mc['high']:.3f}], ")
        out.append(f"corrupted {mx['mean']:.3f} [{mx['low']:.3f}, {mx['high']:.3f}]\n\n")
        out.append("| edge | reads as | exact effect on the loss | EAP score |\n|---|---|---|---|\n")
        for e in res["edges"]:
            x, a = e["exact"], e["eap"]
            out.append(
                f"| {e['sender']} -> {e['receiver']} | {e['reads']} | {x['mean']:+.4f} [{x['low']:+.4f}, "
                f"{x['high']:+.4f}] | {a['mean']:+.4f} [{a['low']:+.4f}, {a['high']:+.4f}] |\n"
            )
    sys.stdout.write("".join(out))
    if args.out:
        path = Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        summary = {"model": args.model, "pairs": args.pairs, "tokens": 1 + 2 * args.half, "metric": "loss", **per}
        path.write_text(json.dumps(summary, indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
