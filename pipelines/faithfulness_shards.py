"""The faithfulness table in shards: explain and score a slice of a data set's examples, keep each
example's numbers as JSON, and build the explainer x metric table from all of them.

``evaluate_dataset`` (one shard over every example) and the API's ``faithfulness`` job (one shard per
slice, possibly on Ray workers, checkpointed in the database) run the same two functions, so the table
is the same however the work was split (timings aside). Method: ``docs/methods/eraser.md``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from attnscope.analysis.faithfulness import FaithfulnessResult, aggregate, get_convention
from attnscope.analysis.plausibility import PRF, Plausibility
from attnscope.models.loading import Backend
from attnscope.pipelines.datasets import K_FRACTION, Example, load_dataset
from attnscope.pipelines.explainers import example_from_words, make_predict, require_classifier
from attnscope.pipelines.faithfulness_eval import METRICS, _row, check_metrics, explain_examples, token_cap
from attnscope.pipelines.faithfulness_uncertainty import uncertainty

Progress = Callable[[int, int], None]
# Examples explained and scored together: their perturbations go to the model in one call, batched by
# length across examples (bench/peers/ferret_eraser.py); progress is reported after each group.
EVAL_CHUNK = 16


def _faith_from(d: dict) -> FaithfulnessResult:
    return FaithfulnessResult(**{**d, "bins": tuple(d["bins"])})


def _plaus_to(p: Plausibility) -> dict:
    return {
        "token": [p.token.precision, p.token.recall, p.token.f1],
        "iou": [*p.iou.__dict__.values()],
        "auprc": p.auprc,
    }


def _plaus_from(d: dict) -> Plausibility:
    return Plausibility(PRF(*d["token"]), PRF(*d["iou"]), d["auprc"])


def check_labels(loaded: Backend, dataset: str, first: Example) -> None:
    """A classifier must predict the data set's labels (same names, same order)."""
    if tuple(first.labels) != tuple(loaded.labels or ()):
        raise ValueError(
            f"data set {dataset!r} has labels {list(first.labels)} but model "
            f"{loaded.spec.name!r} predicts {loaded.labels}; pick a model trained for this task"
        )


def faithfulness_shard(
    loaded: Backend,
    dataset: str,
    examples: Sequence[Example],
    explainers: Sequence[str],
    *,
    k: float,
    convention: str,
    removal: str | None,
    metrics: Sequence[str],
    max_tokens: int | None,
    options: dict | None,
    count: str | None = None,
    progress: Progress | None = None,
) -> dict:
    """Each example's explainer scores measured: ``{"examples": [record per example], "max_tokens":
    the model's limit, "wall_time_s"}``, JSON-able. A record holds the prediction's correctness,
    truncation counts, the explainers skipped by their token cap, and per explainer the
    ``FaithfulnessResult`` (as a dict), plausibility and seconds."""
    require_classifier(loaded)
    if not examples:
        return {"examples": [], "max_tokens": loaded.max_tokens, "wall_time_s": 0.0}
    check_labels(loaded, dataset, examples[0])
    predict = make_predict(loaded)
    began = time.time()
    records = []
    for first in range(0, len(examples), EVAL_CHUNK):
        items = examples[first : first + EVAL_CHUNK]
        encoded = [example_from_words(loaded, item.words, item.rationale, max_tokens=max_tokens) for item in items]
        runnable = [
            [e for e in explainers if (cap := token_cap(e, options)) is None or len(ex) <= cap] for ex in encoded
        ]
        results = explain_examples(
            loaded,
            encoded,
            runnable,
            k=k,
            convention=convention,
            removal=removal,
            count=count,
            metrics=metrics,
            options=options,
            predict=predict,
        )
        for item, ex, names, res in zip(items, encoded, runnable, results):
            records.append(
                {
                    "correct": int(int(np.argmax(res["probs"])) == item.label),
                    "truncated": int(ex.truncated > 0),
                    "tokens_cut": int(ex.truncated),
                    "human_total": int(ex.meta.get("human_total") or 0),
                    "human_lost": int(ex.human_lost),
                    "skipped": [e for e in explainers if e not in names],
                    "faith": {n: r.as_dict() for n, r in res["faithfulness"].items()},
                    "plaus": {n: _plaus_to(p) for n, p in res["plausibility"].items()},
                    "seconds": {n: float(s) for n, s in res["seconds"].items()},
                }
            )
            if progress:  # each example of the group is done
                progress(len(records), len(examples))
    return {"examples": records, "max_tokens": int(loaded.max_tokens), "wall_time_s": time.time() - began}


def merge_faithfulness(
    partials: list[dict],
    *,
    model: str,
    dataset: str,
    start: int,
    explainers: Sequence[str],
    metrics: Sequence[str],
    convention: str,
    removal: str | None,
    k: float,
    max_tokens: int | None,
    count: str | None = None,
) -> dict:
    """The explainer x metric table (JSON-able, with ``rows`` for CSV) from ``faithfulness_shard``
    outputs in example order, with every mean's interval, the paired differences from ``random`` and
    the per-example values (``attnscope.pipelines.faithfulness_uncertainty``)."""
    records = [r for part in partials for r in part["examples"]]
    if not records:
        raise ValueError(f"no examples in {dataset!r} from index {start}")
    faith = {e: [_faith_from(r["faith"][e]) for r in records if e in r["faith"]] for e in explainers}
    plaus = {e: [_plaus_from(r["plaus"][e]) for r in records if e in r["plaus"]] for e in explainers}
    seconds = {e: [r["seconds"][e] for r in records if e in r["seconds"]] for e in explainers}
    skipped = {e: sum(e in r["skipped"] for r in records) for e in explainers}
    human_total = sum(r["human_total"] for r in records)
    human_lost = sum(r["human_lost"] for r in records)
    model_limit = min(p["max_tokens"] for p in partials if p["examples"])
    rows = [_row(e, faith[e], plaus[e], seconds[e], metrics) for e in explainers]
    curves = {
        e: {k2: aggregate(faith[e]).get(k2) for k2 in ("bins", "comp_curve", "suff_curve")}
        for e in explainers
        if faith[e]
    }
    return {
        "kind": "faithfulness",
        "model": model,
        "dataset": dataset,
        "start": start,
        "n": len(records),
        "convention": convention,
        "removal": get_convention(convention, removal).removal,
        "count": get_convention(convention, removal, count).count,
        "k": k,
        "metrics": list(metrics),
        "accuracy": round(sum(r["correct"] for r in records) / len(records), 4),
        "truncation": {
            "max_tokens": min(max_tokens or model_limit, model_limit),
            "examples_truncated": sum(r["truncated"] for r in records),
            "tokens_cut": sum(r["tokens_cut"] for r in records),
            "human_tokens": human_total,
            "human_tokens_lost": human_lost,
            "human_fraction_lost": round(human_lost / human_total, 4) if human_total else None,
        },
        "skipped": skipped,
        "curves": curves,
        "wall_time_s": round(sum(p["wall_time_s"] for p in partials), 1),
        "rows": rows,
        **uncertainty(records, explainers, metrics, start),
    }


def evaluate_dataset(
    loaded: Backend,
    dataset: str,
    explainers: Sequence[str],
    *,
    n: int = 200,
    convention: str = "eraser",
    removal: str | None = None,
    count: str | None = None,
    k: float | None = None,
    metrics: Sequence[str] = METRICS,
    max_tokens: int | None = None,
    split: str | None = None,
    start: int = 0,
    allow_offensive: bool = False,
    options: dict | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """The explainer x metric table over examples ``start .. start + n`` of a data set (JSON-able,
    with ``rows`` for CSV). Explainers skip examples longer than their ``token_cap`` (flow: 64)."""
    require_classifier(loaded)
    metrics = check_metrics(metrics)
    examples = load_dataset(dataset, split, allow_offensive=allow_offensive)[start : start + n]
    if not examples:
        raise ValueError(f"no examples in {dataset!r} from index {start}")
    k = K_FRACTION[dataset] if k is None else k
    opts = dict(k=k, convention=convention, removal=removal, count=count, metrics=metrics, max_tokens=max_tokens)
    opts["options"] = options
    part = faithfulness_shard(loaded, dataset, examples, explainers, progress=progress, **opts)
    del opts["options"]
    return merge_faithfulness(
        [part], model=loaded.spec.name, dataset=dataset, start=start, explainers=explainers, **opts
    )
