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

import torch

from attnscope.models.zoo.configs import ZOO
from attnscope.models.zoo.manifest import ROOT as ZOO_ROOT
from attnscope.models.zoo.manifest import folder, read_manifest
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
    """Where the arms retrained with ``seed`` live."""
    return CHECKPOINTS / f"seed{seed}"


def record_path(name: str, seed: int) -> Path:
    return RESULTS / "runs" / f"{name}-seed{seed}.json"


def arm_root(name: str, seed: int) -> Path:
    """The checkpoint root of arm ``name`` for ``seed``: the committed zoo (``models/zoo/checkpoints``) when the
    seed's record says it uses the committed checkpoint, else ``checkpoint_root(seed)``."""
    path = record_path(name, seed)
    if path.is_file() and json.loads(path.read_text()).get("checkpoint") == "committed":
        return ZOO_ROOT
    return checkpoint_root(seed)


def trained(name: str, seed: int) -> bool:
    """Whether arm ``name`` has a checkpoint and a record for ``seed``."""
    return record_path(name, seed).is_file() and (folder(name, arm_root(name, seed)) / "model.safetensors").is_file()


def committed_matches(name: str, seed: int, epochs_scale: float = 1.0) -> bool:
    """Whether the committed zoo checkpoint of ``name`` is what training with ``seed`` and the zoo's recipe
    gives: the zoo's own seed (``pipelines.train.SEED``), the full budget, and a manifest with that seed and the
    catalog's recipe. Retraining it reproduces the committed bytes (``reproduce``; docs/claims.md)."""
    manifest = read_manifest(name)
    return (
        seed == zoo_train.SEED
        and epochs_scale == 1.0
        and manifest is not None
        and manifest.get("seed") == seed
        and manifest.get("train") == ZOO[name]["train"]
    )


def committed_record(name: str, seed: int) -> dict:
    """The record of the committed checkpoint (from its manifest), marked ``checkpoint: committed``."""
    m = read_manifest(name)
    record = {
        "name": name,
        "seed": seed,
        "eval_accuracy": m["eval_accuracy"],
        "n_eval": m["data"]["n_eval"],
        "params": m["params"],
        "steps": m["steps"],
        "train": m["train"],
        "wall_time_s": m["wall_time_s"],
        "torch": m["torch"],
        "checkpoint": "committed",
        "note": "the committed zoo checkpoint (seed 0, the zoo's recipe); retraining it is not byte-identical across "
        "machines and thread counts: `python -m attnscope.experiments reproduce --arms NAME` measures how far "
        "(docs/claims.md)",
    }
    path = record_path(name, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return record


def reproduce(name: str, out: Path) -> dict:
    """Retrain ``name`` with the zoo's seed and recipe into ``out`` and compare it with the committed checkpoint:
    ``identical`` (``model.safetensors`` byte for byte), ``max_abs_diff`` over all weights, and both held-out
    accuracies."""
    from safetensors.numpy import load_file

    manifest = zoo_train.train(name, root=out, progress=False, seed=zoo_train.SEED)
    new_path, old_path = folder(name, out) / "model.safetensors", folder(name) / "model.safetensors"
    new, old = load_file(str(new_path)), load_file(str(old_path))
    diff = max(float(abs(new[k].astype("float64") - old[k]).max()) for k in old) if new.keys() == old.keys() else None
    result = {
        "name": name,
        "identical": new_path.read_bytes() == old_path.read_bytes(),
        "max_abs_diff": diff,
        "accuracy": manifest["eval_accuracy"],
        "committed_accuracy": read_manifest(name)["eval_accuracy"],
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
    }
    log.info("%s retrained with seed %d: %s", name, zoo_train.SEED, result)
    return result


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
        if committed_matches(name, seed, epochs_scale):
            out.append(committed_record(name, seed))
            continue
        out.append(train_arm(name, seed, epochs_scale))
    return out
