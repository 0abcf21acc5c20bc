"""Train the zoo's twins once per seed: the same recipe as ``make zoo`` (``attnscope.models.zoo.configs``), only
the seed changes (model initialisation, batch order, augmentation, dropout).

Checkpoints go to ``build/experiments/seed<s>/<name>/`` (not committed; ``make experiments`` rebuilds them), and
one JSON record per (arm, seed) to ``results/experiments/runs/<name>-seed<s>.json``: accuracy on the held-out
split, parameter count, steps, wall time. An arm already trained for a seed is skipped, so an interrupted run
resumes where it stopped.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from attnscope.models.zoo.configs import ZOO
from attnscope.models.zoo.manifest import folder
from attnscope.pipelines import train as zoo_train

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[1]
CHECKPOINTS = REPO / "build" / "experiments"
RESULTS = REPO / "results" / "experiments"
SEEDS = (0, 1, 2)
# the arms: the EA twins (text and vision), the HA arms (their non-HA twin is the vanilla arm of the same modality)
ARMS = ("text-vanilla", "text-ea", "text-ha", "vit", "ea-vit", "ha-vit")
# Cordonnier's Gaussian model, trained per seed after the twins (its convolution-likeness over seeds)
GAUSS_ARMS = ("gauss9-iso",)


def checkpoint_root(seed: int) -> Path:
    return CHECKPOINTS / f"seed{seed}"


def record_path(name: str, seed: int) -> Path:
    return RESULTS / "runs" / f"{name}-seed{seed}.json"


def trained(name: str, seed: int) -> bool:
    """Whether arm ``name`` has a checkpoint and a record for ``seed``."""
    return record_path(name, seed).is_file() and (folder(name, checkpoint_root(seed)) / "model.safetensors").is_file()


def train_arm(name: str, seed: int, epochs_scale: float = 1.0) -> dict:
    """Train zoo model ``name`` with ``seed`` (the zoo's recipe; ``epochs_scale`` < 1 shortens every arm alike)
    into ``build/experiments/seed<seed>/``; returns (and writes) its record."""
    if name not in ZOO:
        raise KeyError(f"unknown zoo model {name!r}; known: {', '.join(ZOO)}")
    start = time.time()
    manifest = zoo_train.train(name, root=checkpoint_root(seed), progress=False, seed=seed, epochs_scale=epochs_scale)
    record = {
        "name": name,
        "seed": seed,
        "eval_accuracy": manifest["eval_accuracy"],
        "n_eval": manifest["data"]["n_eval"],
        "params": manifest["params"],
        "steps": manifest["steps"],
        "train": manifest["train"],
        "wall_time_s": round(time.time() - start, 1),
        "torch": manifest["torch"],
    }
    path = record_path(name, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    log.info(
        "%s seed %d: accuracy %.4f (%d params, %.0f s)",
        name,
        seed,
        record["eval_accuracy"],
        record["params"],
        record["wall_time_s"],
    )
    return record


def train_all(arms=ARMS + GAUSS_ARMS, seeds=SEEDS, epochs_scale: float = 1.0) -> list[dict]:
    """Every arm for every seed, seed by seed (so a stopped run has whole seeds), the Gaussian arms last;
    skips what is trained."""
    out = []
    order = [(s, a) for s in seeds for a in arms if a not in GAUSS_ARMS]
    order += [(s, a) for s in seeds for a in arms if a in GAUSS_ARMS]
    for seed, name in order:
        if trained(name, seed):
            out.append(json.loads(record_path(name, seed).read_text()))
            continue
        out.append(train_arm(name, seed, epochs_scale))
    return out
