"""``attnscope census | probe``: per-head statistics, or the label predicted from the maps, over a data set."""

from __future__ import annotations

import argparse
import sys

from attnscope.cli.common import add_executor_args, on_ray, write_job_files


def run(args: argparse.Namespace) -> int:
    """``census`` / ``probe`` from the command line, with a progress bar; JSON, CSV and, when the result
    keeps every example's values, the long-format ``OUT-examples.csv``."""
    from tqdm import tqdm

    from attnscope.models.loading import load_model
    from attnscope.pipelines.dataset_examples import census_example_rows, probe_example_rows
    from attnscope.pipelines.dataset_runs import run_census, run_probe

    with tqdm(total=args.n, desc=f"{args.command} {args.model} on {args.dataset}", unit="ex") as bar:

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        params = {"model": args.model, "dataset": args.dataset, "n": args.n, "split": args.split, "seed": args.seed}
        if args.executor == "ray":
            if args.command == "probe":
                params["classifier"] = args.classifier
            result = on_ray(args.command, params, args, progress)
            if result is None:
                return 2
        elif args.command == "census":
            result = run_census(
                load_model(args.model, args.device), args.dataset, args.n, args.split, args.seed, progress
            )
        else:
            result = run_probe(
                load_model(args.model, args.device),
                args.dataset,
                args.n,
                args.split,
                args.seed,
                progress=progress,
                classifier=args.classifier,
            )
    examples = (census_example_rows if args.command == "census" else probe_example_rows)(result)
    written = write_job_files(args.out, result, examples)
    sys.stdout.write(f"wrote {', '.join(map(str, written))} ({result['n']} examples)\n")
    return 0


def add_parsers(sub) -> None:
    """``census`` and ``probe``."""
    for name, what in (
        ("census", "per-head statistics over a data set"),
        ("probe", "per-layer accuracy of predicting the label from the maps alone"),
    ):
        p = sub.add_parser(name, help=what)
        p.add_argument("--model", default="minilm")
        p.add_argument("--dataset", default="sst2", choices=["sst2", "movies"])
        p.add_argument("--n", type=int, default=200)
        p.add_argument("--split", default=None)
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--device", default=None)
        p.add_argument("--out", default=f"{name}.json", help="JSON path; the CSV (and OUT-examples.csv) beside it")
        add_executor_args(p)
        if name == "probe":
            p.add_argument(
                "--classifier",
                default="logistic",
                choices=["logistic", "cnn"],
                help="logistic regression on the flattened maps, or a 2-layer CNN (one channel per head)",
            )
