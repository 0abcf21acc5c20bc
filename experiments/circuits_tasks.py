"""How well a causal LM solves the shipped pair sets before they become circuit tasks: on ``n`` seeded
indirect-object pairs (``tasks.ioi_pairs``) and the capitals table, the share of items whose clean
prompt prefers the answer (logit difference > 0, Wilson 95 % interval), the mean logit difference on
the clean and on the corrupted prompts (95 % t intervals over the items), and the capitals the model
names as its top token:

    python -m attnscope.experiments.circuits_tasks --n 200 --out results/circuits/smollm2-tasks.json
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

from attnscope.experiments.model_args import parse, parser


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__)
    ap.add_argument("--n", type=int, default=200, help="indirect-object pairs drawn")
    ap.add_argument("--seed", type=int, default=0)
    args = parse(ap, argv)

    from attnscope.analysis.stats import proportion_interval, t_interval
    from attnscope.models.loading import load_model
    from attnscope.pipelines.circuits.task_sets import answer_logit_diffs, solved_pairs
    from attnscope.pipelines.circuits.tasks import ioi_pairs

    backend = load_model(args.model, "cpu")

    def one_token(text: str) -> bool:
        return len(backend.tokenizer(text, add_special_tokens=False)["input_ids"]) == 1

    drawn = ioi_pairs(args.n, args.seed, one_token=one_token)
    clean = answer_logit_diffs(backend, drawn)
    corrupted = answer_logit_diffs(backend, [replace(p, clean=p.corrupted) for p in drawn])
    solved = int((clean > 0).sum())
    caps = solved_pairs(backend, "capitals")
    summary = {
        "model": args.model,
        "ioi": {
            "n": len(drawn),
            "seed": args.seed,
            "accuracy": proportion_interval(solved, len(drawn)).as_dict(4),
            "logit_diff_clean": t_interval(clean).as_dict(4),
            "logit_diff_corrupted": t_interval(corrupted).as_dict(4),
            "per_template_accuracy": _by_template(drawn, clean),
        },
        "capitals": {"kept": len(caps.pairs), "of": caps.candidates, "labels": [p.label for p in caps.pairs]},
    }
    acc, lc, lx = (summary["ioi"][k] for k in ("accuracy", "logit_diff_clean", "logit_diff_corrupted"))
    sys.stdout.write(
        f"IOI on {args.model}, {len(drawn)} pairs (seed {args.seed}): accuracy {acc['mean']:.3f} "
        f"[{acc['low']:.3f}, {acc['high']:.3f}] (Wilson); logit difference clean {lc['mean']:.3f} "
        f"[{lc['low']:.3f}, {lc['high']:.3f}], corrupted {lx['mean']:.3f} [{lx['low']:.3f}, {lx['high']:.3f}]\n"
        f"capitals named as the top token: {len(caps.pairs)} of {caps.candidates}\n"
    )
    if args.out:
        path = Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(summary, indent=1) + "\n")
    return 0


def _by_template(pairs, diffs) -> dict[str, float]:
    """The share solved by the clean prompt's first word (When, After, While, Then, Friends)."""
    out: dict[str, list[bool]] = {}
    for p, d in zip(pairs, diffs, strict=True):
        out.setdefault(" ".join(p.clean.split()[:1]), []).append(bool(d > 0))
    return {k: round(sum(v) / len(v), 4) for k, v in out.items()}


if __name__ == "__main__":
    raise SystemExit(main())
