"""Train the zoo: ``python -m attnscope.pipelines.train [name ...]`` (no names: every model, one at a time).

Deterministic (fixed seeds, fixed data split), 2 CPU threads, a progress bar per model, evaluation
on the held-out split at the end, then ``checkpoints/<name>/{model.safetensors, manifest.json}``
with the architecture config, data split hash, steps, seed, eval accuracy and wall time.
"""

from __future__ import annotations

import argparse
import logging
import math
import time

import numpy as np
import torch
from torch.nn import functional as F
from tqdm import tqdm

from attnscope.models.settings import model_settings
from attnscope.models.zoo import data
from attnscope.models.zoo.build import build_model, count_params
from attnscope.models.zoo.configs import ZOO
from attnscope.models.zoo.manifest import ROOT, save_checkpoint

log = logging.getLogger(__name__)

SEED = 0
CI_SLICE = 500  # CI re-measures accuracy on the first CI_SLICE held-out examples
FLOOR = {"vision": 0.95, "text": 0.78}


def set_seed(seed: int) -> None:
    torch.manual_seed(seed)
    np.random.seed(seed)


def load_split(modality: str, split: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Model-ready inputs and labels: images ``[n, 1, 28, 28]`` (normalised) or ids ``[n, 64]``."""
    if modality == "vision":
        s = data.mnist({"train": "train", "eval": "eval"}[split])
        return torch.from_numpy(data.images_to_tensor_input(s.x)), torch.from_numpy(s.y)
    s = data.sst2({"train": "train", "eval": "dev"}[split], data.load_vocab())
    return torch.from_numpy(s.x), torch.from_numpy(s.y)


def split_hash(modality: str) -> str:
    return data.mnist_split_hash() if modality == "vision" else data.sst2_split_hash(data.load_vocab())


def translate(images: torch.Tensor, max_shift: int, gen: torch.Generator) -> torch.Tensor:
    """Random integer translation of each image by up to ``max_shift`` pixels (zero = background)."""
    if max_shift <= 0:
        return images
    bg = float(images.amin())
    b, _, h, w = images.shape
    padded = F.pad(images, (max_shift,) * 4, value=bg)
    off = torch.randint(0, 2 * max_shift + 1, (b, 2), generator=gen)
    return torch.stack([padded[i, :, off[i, 0] : off[i, 0] + h, off[i, 1] : off[i, 1] + w] for i in range(b)])


def trim(ids: torch.Tensor) -> torch.Tensor:
    """Drop all-padding columns at the end of a batch of ids."""
    n = int((ids != 0).sum(1).max())
    return ids[:, : max(n, 1)]


@torch.no_grad()
def evaluate(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, modality: str, batch: int = 250) -> float:
    model.eval()
    correct = 0
    for i in range(0, len(x), batch):
        xb = x[i : i + batch]
        logits, _ = model(trim(xb) if modality == "text" else xb, return_maps=False)
        correct += int((logits.argmax(-1) == y[i : i + batch]).sum())
    return correct / len(x)


def batch_order(x: torch.Tensor, modality: str, batch: int, gen: torch.Generator) -> list[torch.Tensor]:
    """Shuffled batches of indices; text batches are bucketed by length (sorted within chunks of 50
    batches, then the batch order shuffled) so little time goes into padding."""
    perm = torch.randperm(len(x), generator=gen)
    if modality != "text":
        return list(perm.split(batch))
    lengths = (x != 0).sum(1)
    chunks = []
    for chunk in perm.split(batch * 50):
        chunk = chunk[torch.argsort(lengths[chunk], stable=True)]
        chunks += list(chunk.split(batch))
    order = torch.randperm(len(chunks), generator=gen)
    return [chunks[i] for i in order]


def lr_at(step: int, total: int, base: float, warmup: float) -> float:
    w = max(1, int(total * warmup))
    if step < w:
        return base * (step + 1) / w
    return base * 0.5 * (1 + math.cos(math.pi * (step - w) / max(1, total - w)))


def train_steps(
    model,
    x,
    y,
    modality: str,
    recipe: dict,
    seed: int,
    max_steps: int | None = None,
    progress: bool = True,
    desc: str = "",
) -> int:
    """Optimise ``model`` on ``(x, y)`` following ``recipe``; returns the number of steps taken."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=recipe["lr"], weight_decay=recipe["weight_decay"])
    per_epoch = math.ceil(len(x) / recipe["batch"])
    total = recipe["epochs"] * per_epoch if max_steps is None else max_steps
    bar = tqdm(total=total, desc=desc, disable=not progress, leave=False)
    step = 0
    model.train()
    while step < total:
        for idx in batch_order(x, modality, recipe["batch"], gen):
            if step >= total:
                break
            xb, yb = x[idx], y[idx]
            xb = translate(xb, recipe.get("shift", 0), gen) if modality == "vision" else trim(xb)
            for g in opt.param_groups:
                g["lr"] = lr_at(step, total, recipe["lr"], recipe["warmup"])
            logits, _ = model(xb, return_maps=False)
            loss = F.cross_entropy(logits, yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{loss.item():.3f}")
    bar.close()
    return step


def train(name: str, root=None, progress: bool = True, seed: int = SEED, epochs_scale: float = 1.0) -> dict:
    """Train zoo model ``name`` from scratch, evaluate it, write its checkpoint; returns the manifest.

    ``epochs_scale`` (default 1: the zoo's recipe) multiplies the recipe's number of optimisation steps (rounded,
    at least 1; the learning-rate schedule spans the shortened run): the seeded experiments
    (``attnscope.experiments``) use it to shorten every arm alike, and their quick test to take a few steps.
    """
    entry = ZOO[name]
    modality, arch, recipe = entry["modality"], entry["arch"], entry["train"]
    if modality == "text":
        arch = {**arch, "vocab_size": len(data.load_vocab())}
    set_seed(seed)
    start = time.time()
    model = build_model(arch)
    x, y = load_split(modality, "train")
    max_steps = None
    if epochs_scale != 1.0:
        max_steps = max(1, round(recipe["epochs"] * math.ceil(len(x) / recipe["batch"]) * epochs_scale))
        recipe = {**recipe, "epochs_scale": epochs_scale}
    steps = train_steps(model, x, y, modality, recipe, seed, max_steps=max_steps, progress=progress, desc=name)
    wall = time.time() - start
    xe, ye = load_split(modality, "eval")
    acc = evaluate(model, xe, ye, modality)
    ci = evaluate(model, xe[:CI_SLICE], ye[:CI_SLICE], modality)
    manifest = {
        "name": name,
        "arch": arch,
        "train": recipe,
        "seed": seed,
        "steps": steps,
        "data": {
            "dataset": "mnist" if modality == "vision" else "sst2",
            "split_hash": split_hash(modality),
            "n_train": len(x),
            "n_eval": len(xe),
            "eval_split": "eval" if modality == "vision" else "dev",
        },
        "eval_accuracy": round(acc, 4),
        "ci_slice": CI_SLICE,
        "ci_slice_accuracy": round(ci, 4),
        "meets_floor": acc >= FLOOR[modality],
        "floor": FLOOR[modality],
        "params": count_params(model),
        "wall_time_s": round(wall, 1),
        "torch": torch.__version__,
    }
    save_checkpoint(name, model, manifest, root)
    log.info("%s: eval accuracy %.4f, %d params, %.0f s", name, acc, manifest["params"], wall)
    return manifest


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"models to train (default: all): {', '.join(ZOO)}")
    parser.add_argument("--vocab", action="store_true", help="(re)build the SST-2 word vocabulary first")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    # 2 threads by default; on a shared, oversubscribed machine 1 thread is several times faster
    torch.set_num_threads(model_settings().train_threads or 2)  # ATTNSCOPE_TRAIN_THREADS
    if args.vocab or not data.VOCAB_FILE.is_file():
        data.VOCAB_FILE.parent.mkdir(parents=True, exist_ok=True)
        data.VOCAB_FILE.write_text("\n".join(data.build_vocab()) + "\n", encoding="utf-8")
    names = args.names or list(ZOO)
    unknown = [n for n in names if n not in ZOO]
    if unknown:
        parser.error(f"unknown zoo models {unknown}; known: {', '.join(ZOO)}")
    rows = []
    for name in names:
        m = train(name)
        rows.append(
            f"{name:24s} {m['params']:>9,d} {m['eval_accuracy']:.4f} {m['wall_time_s']:>7.1f}s"
            + ("" if m["meets_floor"] else f"  BELOW FLOOR {m['floor']}")
        )
    log.info("trained into %s:\n%s", ROOT, "\n".join(rows))


if __name__ == "__main__":
    main()
