"""``attnscope heads | head-effects``: a causal LM's head types, and per-head ablation effects."""

from __future__ import annotations

import argparse
import sys


def run_heads(args: argparse.Namespace) -> int:
    """A causal LM's sink / previous-token / duplicate / induction heads as Markdown (and JSON)."""
    import json
    from pathlib import Path

    from attnscope.models.loading import load_model
    from attnscope.pipelines.decoder_heads import decoder_heads, markdown

    loaded = load_model(args.model, args.device)
    report = decoder_heads(loaded, half=args.half, seeds=range(args.seeds), top=args.top)
    sys.stdout.write(markdown(report) + "\n")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    return 0


def run_head_effects(args: argparse.Namespace) -> int:
    """Per-head effect grids: over a data set (JSON + CSV), on one ``--text``, or the induction test."""
    import json
    from pathlib import Path

    from attnscope.models.loading import load_model
    from attnscope.server.jobs.kinds import rows_to_csv

    loaded = load_model(args.model, args.device)
    if args.induction:
        from attnscope.pipelines.interventions.induction import induction_ablation

        report = induction_ablation(loaded, k=args.k, n_random=args.random_sets, method=args.method)
    elif args.text:
        from attnscope.analysis.interventions import top_heads
        from attnscope.pipelines.interventions import MetricSpec, head_effects

        inp = loaded.encode_text(args.text)
        res = head_effects(loaded, inp, args.method, MetricSpec(args.metric), chunk=args.chunk)
        report = {
            "model": args.model,
            "tokens": len(inp),
            "metric": res["metric"].kind,
            "effect": res["effect"].tolist(),
            "top": [{"layer": a, "head": b, "effect": e} for a, b, e in top_heads(res["effect"], 10)],
        }
    else:
        from tqdm import tqdm

        from attnscope.pipelines.dataset_runs import pick_examples
        from attnscope.pipelines.interventions.dataset import grid_shard, merge_grids

        examples = pick_examples(args.dataset, args.n, args.split, args.seed)
        with tqdm(total=len(examples), desc=f"head-effects {args.model} on {args.dataset}", unit="ex") as bar:

            def progress(done: int, total: int) -> None:
                bar.update(done - bar.n)

            part = grid_shard(
                loaded, examples, args.method, args.metric, args.max_tokens, args.chunk, progress=progress
            )
        report = merge_grids([part], args.model, args.method, args.dataset)
    text = json.dumps(report, indent=1)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")
        if "rows" in report:
            out.with_suffix(".csv").write_text(rows_to_csv(report["rows"]))
        sys.stdout.write(f"wrote {out}\n")
    else:
        sys.stdout.write(text + "\n")
    return 0


def add_parsers(sub) -> None:
    """``heads`` and ``head-effects``."""
    p_heads = sub.add_parser("heads", help="a causal LM's sink, previous-token, duplicate and induction heads")
    p_heads.add_argument("--model", default="smollm2")
    p_heads.add_argument("--half", type=int, default=30, help="random tokens per copy of the probe")
    p_heads.add_argument("--seeds", type=int, default=5, help="probe seeds 0..N-1")
    p_heads.add_argument("--top", type=int, default=5, help="heads listed per kind")
    p_heads.add_argument("--device", default=None)
    p_heads.add_argument("--out", default="", help="also write the report as JSON")
    p_fx = sub.add_parser("head-effects", help="per-head ablation effects (causal tests of heads)")
    p_fx.add_argument("--model", default="minilm-sst2")
    p_fx.add_argument("--dataset", default="sst2", choices=["sst2", "movies"])
    p_fx.add_argument("--n", type=int, default=50, help="examples (a seeded sample of the split)")
    p_fx.add_argument("--split", default=None)
    p_fx.add_argument("--seed", type=int, default=0)
    p_fx.add_argument("--method", default="zero", choices=["zero", "mean", "uniform"])
    p_fx.add_argument("--metric", default=None, help="prob, logit_diff, flip, cosine or loss (default: the task's)")
    p_fx.add_argument("--max-tokens", type=int, default=64, help="texts are cut to this many tokens")
    p_fx.add_argument("--chunk", type=int, default=32, help="copies of an input per batched forward pass")
    p_fx.add_argument("--text", default="", help="one text instead of a data set")
    p_fx.add_argument(
        "--induction", action="store_true", help="causal LMs: top-k induction heads vs random k-sets on the probe"
    )
    p_fx.add_argument("--k", type=int, default=5, help="--induction: heads per set")
    p_fx.add_argument("--random-sets", type=int, default=20, help="--induction: random sets")
    p_fx.add_argument("--device", default=None)
    p_fx.add_argument("--out", default="", help="JSON path (a CSV of the per-head rows goes beside it)")


def run(args: argparse.Namespace) -> int:
    return run_heads(args) if args.command == "heads" else run_head_effects(args)
