"""``attnscope faithfulness``: the explainer x metric table (ERASER faithfulness and plausibility) over a data set."""

from __future__ import annotations

import argparse
import logging

from attnscope.cli.common import add_executor_args, on_ray

log = logging.getLogger("attnscope")


def _add_faithfulness_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="minilm-sst2", help="a classifier from the registry")
    p.add_argument("--dataset", default="movies", choices=["sst2", "movies", "hatexplain"])
    p.add_argument(
        "--split", default=None, help="sst2: dev|train; movies: rationales|fold10; hatexplain: test|validation"
    )
    p.add_argument("--explainers", nargs="+", default=None, help="explainer names (default: all but flow/occlusion)")
    p.add_argument("--metrics", nargs="+", default=None, help="metric names (default: all)")
    p.add_argument("--n", type=int, default=200, help="number of examples")
    p.add_argument("--start", type=int, default=0, help="index of the first example")
    p.add_argument("--convention", default="eraser", choices=["eraser", "eraser-paper", "ferret"])
    p.add_argument("--removal", default=None, choices=["delete", "mask"])
    p.add_argument(
        "--count",
        default=None,
        choices=["eraser-code", "eraser-order", "ceil", "ferret"],
        help="counting rule for k%% of the tokens (default: the convention's; eraser: eraser-code)",
    )
    p.add_argument("--k", type=float, default=None, help="hard-rationale fraction (default: per data set)")
    p.add_argument("--max-tokens", type=int, default=None, help="truncate inputs (default: model limit)")
    p.add_argument("--ig-steps", type=int, default=None, help="integrated gradients steps (default 32)")
    p.add_argument("--allow-offensive", action="store_true", help="opt in to HateXplain (offensive text)")
    p.add_argument(
        "--out",
        required=True,
        help="output path without extension: writes OUT.json, OUT.csv and OUT-examples.csv (every example's values)",
    )
    add_executor_args(p)


def run(args: argparse.Namespace) -> int:
    """Dataset-level faithfulness table, with a progress bar; writes JSON and CSV."""

    from tqdm import tqdm

    from attnscope.models.loading import load_model
    from attnscope.pipelines.explainers import DEFAULT_EXPLAINERS
    from attnscope.pipelines.faithfulness_eval import METRICS
    from attnscope.pipelines.faithfulness_shards import evaluate_dataset

    options = {"integrated_gradients": {"n_steps": args.ig_steps}} if args.ig_steps else {}
    bar = tqdm(total=args.n, desc=f"faithfulness {args.dataset}", unit="example")

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    if args.executor == "ray":
        params = {
            "model": args.model,
            "dataset": args.dataset,
            "split": args.split,
            "explainers": args.explainers or list(DEFAULT_EXPLAINERS),
            "metrics": args.metrics or list(METRICS),
            "n": args.n,
            "start": args.start,
            "convention": args.convention,
            "removal": args.removal,
            "count": args.count,
            "k": args.k,
            "max_tokens": args.max_tokens,
            "allow_offensive": args.allow_offensive,
            "options": options,
        }
        try:
            result = on_ray("faithfulness", params, args, progress)
        finally:
            bar.close()
        if result is None:
            return 2
        return _write_faithfulness(args, result)
    try:
        result = evaluate_dataset(
            load_model(args.model),
            args.dataset,
            args.explainers or list(DEFAULT_EXPLAINERS),
            n=args.n,
            convention=args.convention,
            removal=args.removal,
            count=args.count,
            k=args.k,
            metrics=args.metrics or list(METRICS),
            max_tokens=args.max_tokens,
            split=args.split,
            start=args.start,
            allow_offensive=args.allow_offensive,
            options=options,
            progress=progress,
        )
    finally:
        bar.close()
    return _write_faithfulness(args, result)


def _write_faithfulness(args: argparse.Namespace, result: dict) -> int:
    import json
    from pathlib import Path

    from attnscope.server.jobs.kinds import rows_to_csv

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    out.with_suffix(".csv").write_text(rows_to_csv(result["rows"]))
    if result.get("per_example"):  # the long-format table of every example's values
        from attnscope.pipelines.faithfulness_uncertainty import example_rows

        out.with_name(out.with_suffix("").name + "-examples.csv").write_text(rows_to_csv(example_rows(result)))
    log.info(
        "wrote %s and %s (accuracy %.3f on %d examples)",
        out.with_suffix(".json"),
        out.with_suffix(".csv"),
        result["accuracy"],
        result["n"],
    )
    return 0


def add_parsers(sub) -> None:
    p_faith = sub.add_parser("faithfulness", help="ERASER faithfulness + plausibility table over a data set")
    _add_faithfulness_args(p_faith)
