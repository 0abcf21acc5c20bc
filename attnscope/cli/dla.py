"""``attnscope dla``: direct logit attribution per head averaged over a data set, the ``dla`` job of the
API computed here or on Ray (the same shards and merge as ``POST /jobs``, so the same result).

Writes the job's JSON, its per-head CSV (mean, 95 % t interval, n) beside it and ``OUT-examples.csv``
(one row per example and head); prints the heads of largest mean part with their intervals.
"""

from __future__ import annotations

import argparse
import sys

from attnscope.cli.common import add_executor_args, in_process, on_ray, write_job_files


def _report(result: dict) -> str:
    h = result["heads"]
    lines = [
        f"direct logit attribution of {result['model']} over {result['n']} {result['dataset']} examples "
        f"(target: {result['target']}, <= {result['max_tokens']} tokens; {result['skipped']} skipped); "
        "means with 95 % t intervals over the examples\n\n",
        f"- logit: {result['logit']['mean']:.4g} [{result['logit']['low']:.4g}, {result['logit']['high']:.4g}]\n",
        "\n| head | mean part | 95 % interval |\n|---|---|---|\n",
    ]
    for t in result["top"]:
        layer, head = t["layer"], t["head"]
        low, high = h["low"][layer][head], h["high"][layer][head]
        interval = f"[{low:+.4g}, {high:+.4g}]" if low is not None else "n < 2"
        lines.append(f"| L{layer}H{head} | {t['mean']:+.4g} | {interval} |\n")
    return "".join(lines)


def run(args: argparse.Namespace) -> int:
    """Parameters the job refuses (a model that is not a causal LM, an unknown split, a bound passed)
    are a message on stderr and exit status 2, as the API's 422 says them."""
    from pydantic import ValidationError
    from tqdm import tqdm

    from attnscope.models.loading import load_model
    from attnscope.pipelines.writes.dla_dataset import dla_example_rows
    from attnscope.server.jobs.dataset_kinds import register_job_kinds
    from attnscope.server.jobs.kinds import JOB_KINDS, ParamsError

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    params = {
        "model": args.model, "dataset": args.dataset, "n": args.n, "split": args.split, "seed": args.seed,
        "max_tokens": args.max_tokens, "target": args.target,
    }  # fmt: skip
    register_job_kinds()
    try:
        checked = JOB_KINDS["dla"].validate(params)
    except (ValidationError, ParamsError, ValueError, LookupError) as exc:
        sys.stderr.write(f"attnscope dla: {exc}\n")
        return 2
    with tqdm(total=args.n, desc=f"dla {args.model} on {args.dataset}", unit="ex", file=sys.stderr) as bar:

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        if args.executor == "ray":
            result = on_ray("dla", params, args, progress)
            if result is None:
                return 2
        else:
            result = in_process("dla", checked, load_model(args.model, args.device), progress)
    written = write_job_files(args.out, result, dla_example_rows(result))
    sys.stdout.write(_report(result))
    sys.stdout.write(f"\nwrote {', '.join(map(str, written))}\n")
    return 0


def add_parsers(sub) -> None:
    p = sub.add_parser("dla", help="direct logit attribution per head averaged over a data set (the dla job)")
    p.add_argument("--model", default="smollm2", help="a pre-norm causal LM or a text classifier (minilm-sst2)")
    p.add_argument("--dataset", default="sst2", choices=["sst2", "movies"])
    p.add_argument("--n", type=int, default=100, help="examples (a seeded sample of the split; 1..2000)")
    p.add_argument("--split", default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-tokens", type=int, default=64, help="each text is cut to this many tokens (2..256)")
    p.add_argument(
        "--target",
        default="predicted",
        choices=["predicted", "next", "label"],
        help="the logit attributed: the model's own top next token (a classifier: its class), the text's true "
        "next token (causal LMs), or the example's gold class (classifiers)",
    )
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--device", default=None)
    p.add_argument("--out", default="dla.json", help="JSON path; the CSV and OUT-examples.csv beside it")
    add_executor_args(p)
