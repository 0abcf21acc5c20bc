"""Dataset-level runs: capture N examples of a data set and aggregate a per-head census, or probe
each layer's maps for the label. Used by the API's jobs and by the ``attnscope`` CLI.

Text inputs longer than the model's limit are truncated to it (tokens past the limit are not seen).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import numpy as np

from attnscope.analysis.census import RunningStats
from attnscope.analysis.heads import sink_scores
from attnscope.analysis.map_probe import probe_layers
from attnscope.analysis.maps import AttentionMaps
from attnscope.analysis.overview import overview
from attnscope.analysis.stats import proportion_interval, t_summary
from attnscope.models.capture import capture_truncated
from attnscope.models.loading import Backend
from attnscope.pipelines.dataset_examples import join_examples, keeps_examples, rounded
from attnscope.pipelines.datasets import Example, load_dataset
from attnscope.pipelines.map_probe_cnn import cnn_fit_score

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
CENSUS_METRICS = (
    "shift_score",
    "best_mass",
    "previous",
    "next",
    "norm_entropy",
    "top1",
    "distance",
    "cls_sink",
    "sep_sink",
    "sink",
)
TEXT_DATASETS = ("sst2", "movies")


def pick_examples(dataset: str, n: int, split: str | None = None, seed: int = 0) -> list[Example]:
    """``n`` examples of ``dataset`` (a seeded sample when the split is larger; all if smaller)."""
    if dataset not in TEXT_DATASETS:
        raise ValueError(f"census/probe data sets: {', '.join(TEXT_DATASETS)}; got {dataset!r}")
    examples = load_dataset(dataset, split)
    if n < len(examples):
        idx = np.sort(np.random.default_rng(seed).choice(len(examples), size=n, replace=False))
        examples = [examples[i] for i in idx]
    return examples


def iter_maps(loaded: Backend, examples: list[Example], progress: Progress | None = None) -> Iterator[AttentionMaps]:
    """Capture each example (truncated to the model's limit), reporting ``progress(done, total)``."""
    for i, ex in enumerate(examples):
        yield capture_truncated(loaded, ex.text).maps
        if progress is not None:
            progress(i + 1, len(examples))


def head_metrics(maps: AttentionMaps) -> dict[str, np.ndarray]:
    """Per-head ``[layer, head]`` metrics of one example, from one pass over its maps."""
    ov = overview(maps)
    scores = ov.types.scores
    return {
        "shift_score": ov.scan.shift_score,
        "best_mass": ov.scan.best_mass,
        "previous": scores.get("previous", np.zeros_like(ov.scan.best_mass)),
        "next": scores.get("next", np.zeros_like(ov.scan.best_mass)),
        "norm_entropy": ov.evolution.head_norm_entropy,
        "top1": ov.evolution.head_top1,
        "distance": ov.distance.per_head,
        "cls_sink": scores["cls_sink"],
        "sep_sink": scores["sep_sink"],
        # mass on the first position from every later row (a decoder's attention sink)
        "sink": scores["sink"] if "sink" in scores else sink_scores(maps),
    }


def census_shard(
    loaded: Backend, examples: list[Example], progress: Progress | None = None, total: int | None = None
) -> dict:
    """Running statistics of ``CENSUS_METRICS`` over ``examples`` (one shard of a census job of ``total``
    examples; None: these are all).

    Returns a JSON-able ``{"n": examples, "stats": {metric: RunningStats.state()}, "examples": kept, "ids":
    [example id]}`` (the ids always, so that any example can be opened on its own):
    per-head ``count``/``mean``/``m2`` arrays ``[layer, head]``; ``kept`` is ``{"id": [...], "values":
    {metric: [example][layer][head]}}`` when the job's values fit ``dataset_examples.PER_EXAMPLE_VALUES``,
    else None. ``merge_census`` folds shards in order.
    """
    stats = {k: RunningStats() for k in CENSUS_METRICS}
    kept: dict | None = {"id": [], "values": {k: [] for k in CENSUS_METRICS}}
    n = 0
    for ex, maps in zip(examples, iter_maps(loaded, examples, progress)):
        values = head_metrics(maps)
        if n == 0 and not keeps_examples(total or len(examples), values["shift_score"].size, len(CENSUS_METRICS)):
            kept = None
        for k in CENSUS_METRICS:
            stats[k].add(values[k])
            if kept is not None:
                kept["values"][k].append(rounded(values[k]))
        if kept is not None:
            kept["id"].append(ex.id)
        n += 1
    ids = [ex.id for ex in examples[:n]]
    return {"n": n, "stats": {k: s.state() for k, s in stats.items()}, "examples": kept, "ids": ids}


def merge_census(partials: list[dict], model: str, dataset: str, split: str | None = None, seed: int = 0) -> dict:
    """The census result from ``census_shard`` outputs, merged in list order (Chan's pairwise update).

    Per-head mean, std and 95 % t interval of every metric, JSON-able, with CSV ``rows`` (one per head:
    each metric's mean, std, interval and n) and ``per_example`` (every example's values, or None when a
    shard kept none: see ``census_shard``) and ``example_ids`` (every example's id, in order; None when a
    shard made before the ids were kept has none).
    """
    stats = {k: RunningStats() for k in CENSUS_METRICS}
    n = 0
    for part in partials:
        n += int(part["n"])
        for k in CENSUS_METRICS:
            stats[k].merge(RunningStats.from_state(part["stats"][k]))
    if n == 0:
        raise ValueError("census got no examples")
    mean = {k: s.result_mean() for k, s in stats.items()}
    std = {k: s.std for k, s in stats.items()}
    intervals = {k: _interval(stats[k]) for k in CENSUS_METRICS}
    n_layers, n_heads = mean["shift_score"].shape
    rows = []
    for layer in range(n_layers):
        for head in range(n_heads):
            row = {"head": f"L{layer}H{head}", "layer": layer, "head_index": head}
            for k in CENSUS_METRICS:
                row[f"{k}_mean"] = round(float(mean[k][layer, head]), 6)
                row[f"{k}_std"] = round(float(std[k][layer, head]), 6)
                row[f"{k}_low"] = intervals[k]["low"][layer][head]
                row[f"{k}_high"] = intervals[k]["high"][layer][head]
                row[f"{k}_n"] = intervals[k]["n"][layer][head]
            rows.append(row)
    return {
        "kind": "census",
        "model": model,
        "dataset": dataset,
        "split": split,
        "n": n,
        "seed": seed,
        "metrics": {k: {"mean": mean[k].tolist(), "std": std[k].tolist(), **intervals[k]} for k in CENSUS_METRICS},
        "interval": {"level": 0.95, "method": "t", "over": "examples"},
        "rows": rows,
        "per_example": join_examples([part.get("examples") for part in partials]),
        "example_ids": None if any("ids" not in p for p in partials) else [i for p in partials for i in p["ids"]],
    }


def _interval(s: RunningStats) -> dict:
    """The 95 % t interval of each head's mean (``t_summary``) and its count, ``[layer][head]`` lists."""
    n = s.count.astype(np.float64)
    sd = np.where(n >= 2, s.std * np.sqrt(n / np.maximum(n - 1, 1)), np.nan)  # population sd -> ddof 1
    low, high, _ = t_summary(s.result_mean(), sd, n)

    return {"low": rounded(low), "high": rounded(high), "n": s.count.tolist()}


def run_census(
    loaded: Backend, dataset: str, n: int, split: str | None = None, seed: int = 0, progress: Progress | None = None
) -> dict:
    """Per-head mean and std of ``CENSUS_METRICS`` over ``n`` examples; JSON-able, with CSV ``rows``
    (one shard: the API's census job runs the same code in shards, see ``census_shard``)."""
    examples = pick_examples(dataset, n, split, seed)
    return merge_census([census_shard(loaded, examples, progress)], loaded.spec.name, dataset, split, seed)


PROBE_CLASSIFIERS = ("logistic", "cnn")


def run_probe(
    loaded: Backend,
    dataset: str,
    n: int,
    split: str | None = None,
    seed: int = 0,
    size: int = 32,
    folds: int = 5,
    progress: Progress | None = None,
    classifier: str = "logistic",
) -> dict:
    """Cross-validated accuracy of predicting the label from each layer's maps alone, with a
    logistic regression on the flattened maps or the 2-layer CNN with one channel per head."""
    if classifier not in PROBE_CLASSIFIERS:
        raise ValueError(f"classifier must be one of {', '.join(PROBE_CLASSIFIERS)}; got {classifier!r}")
    examples = pick_examples(dataset, n, split, seed)
    items = list(iter_maps(loaded, examples, progress))
    fit_score = cnn_fit_score(seed=seed) if classifier == "cnn" else None
    res = probe_layers(
        items,
        [ex.label for ex in examples],
        size=size,
        folds=folds,
        seed=seed,
        fit_score=fit_score,
        classifier=classifier,
    )
    rows = []
    for li, (layer, a, s) in enumerate(zip(res.layer_ids, res.accuracy, res.accuracy_std)):
        # every example is predicted once (its held-out fold): the interval is that of the share of the n
        # predictions that were right (from the mean fold accuracy, to rounding, for a classifier that
        # gives only accuracies; folds differ in size by at most one)
        right = int(res.correct[li].sum()) if res.correct is not None else round(float(a) * len(items))
        iv = proportion_interval(right, len(items))
        rows.append(
            {
                "layer": int(layer),
                "accuracy": round(float(a), 4),
                "accuracy_std": round(float(s), 4),
                "chance": res.chance,
                "accuracy_low": round(iv.low, 4),
                "accuracy_high": round(iv.high, 4),
                "n": len(items),
            }
        )
    per_example = None
    if res.correct is not None:
        per_example = {
            "id": [ex.id for ex in examples],
            "label": [int(ex.label) for ex in examples],
            "correct": res.correct.astype(bool).tolist(),
        }
    return {
        "kind": "probe",
        "model": loaded.spec.name,
        "dataset": dataset,
        "n": len(items),
        "folds": res.folds,
        "size": res.size,
        "classifier": classifier,
        "chance": res.chance,
        "interval": {"level": 0.95, "method": "wilson", "over": "examples"},
        "rows": rows,
        "per_example": per_example,
    }
