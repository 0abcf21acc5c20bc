"""``python -m attnscope.experiments [train|measure|all]``: see ``attnscope.experiments``."""

from __future__ import annotations

import argparse
import logging
import os
import time

import torch

from attnscope.experiments import seeds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="seeded experiments on the zoo's twins (1 CPU thread)")
    parser.add_argument("step", nargs="?", default="all", choices=["train", "measure", "all"])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(seeds.SEEDS), help="training seeds")
    parser.add_argument("--arms", nargs="+", default=list(seeds.ARMS) + list(seeds.GAUSS_ARMS), help="zoo models")
    parser.add_argument(
        "--epochs-scale", type=float, default=1.0, help="multiply every arm's epochs alike (1: the zoo's budget)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    torch.set_num_threads(int(os.environ.get("ATTNSCOPE_TRAIN_THREADS", "1")))
    start = time.time()
    if args.step in ("train", "all"):
        seeds.train_all(args.arms, args.seeds, args.epochs_scale)
    if args.step in ("measure", "all"):
        from attnscope.experiments import report

        report.write_all(args.seeds)
    logging.getLogger(__name__).info(
        "experiments done in %.0f s on %d thread(s)", time.time() - start, torch.get_num_threads()
    )


if __name__ == "__main__":
    main()
