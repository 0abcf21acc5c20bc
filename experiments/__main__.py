"""``python -m attnscope.experiments [train|measure|all|reproduce|values]``: see ``attnscope.experiments``.

``values`` measures the single figures the docs quote (``attnscope.experiments.values``).

``reproduce`` retrains ``--arms`` (default ``gauss9-iso``, the fastest arm) with the zoo's seed and recipe into a
temporary folder, logs the largest weight difference and both accuracies, and exits 1 unless every retrained
``model.safetensors`` is byte-identical to the committed one (docs/claims.md says what it measured).
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

import torch

from attnscope.experiments import seeds
from attnscope.models.settings import model_settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="seeded experiments on the zoo's twins (1 CPU thread)")
    parser.add_argument("step", nargs="?", default="all", choices=["train", "measure", "all", "reproduce", "values"])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(seeds.SEEDS), help="training seeds")
    parser.add_argument(
        "--arms", nargs="+", default=None, help="zoo models (default: every arm; reproduce: gauss9-iso)"
    )
    parser.add_argument(
        "--probes", nargs="+", default=["logistic", "cnn"], choices=["logistic", "cnn"], help="map-probe classifiers"
    )
    parser.add_argument("--no-measure", action="store_true", help="measure: only rewrite the tables from results/")
    parser.add_argument(
        "--epochs-scale", type=float, default=1.0, help="multiply every arm's epochs alike (1: the zoo's budget)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    torch.set_num_threads(model_settings().train_threads or 1)  # ATTNSCOPE_TRAIN_THREADS
    log = logging.getLogger(__name__)
    start = time.time()
    if args.step == "reproduce":
        with tempfile.TemporaryDirectory(prefix="attnscope-reproduce-") as tmp:
            results = [seeds.reproduce(name, Path(tmp)) for name in args.arms or ["gauss9-iso"]]
        same = sum(r["identical"] for r in results)
        log.info("reproduce done in %.0f s: %d of %d byte-identical", time.time() - start, same, len(results))
        return 0 if same == len(results) else 1
    if args.step == "values":
        from attnscope.experiments import values

        values.write_values()
        log.info("values done in %.0f s", time.time() - start)
        return 0
    arms = args.arms or list(seeds.ARMS) + list(seeds.GAUSS_ARMS)
    if args.step in ("train", "all"):
        seeds.train_all(arms, args.seeds, args.epochs_scale)
    if args.step in ("measure", "all"):
        from attnscope.experiments import report

        report.write_all(args.seeds, arms, probes=tuple(args.probes), measure_missing=not args.no_measure)
    log.info("experiments done in %.0f s on %d thread(s)", time.time() - start, torch.get_num_threads())
    return 0


if __name__ == "__main__":
    sys.exit(main())
