"""The faithfulness table's uncertainty: each example's value of every metric, the 95 % bootstrap
interval of every mean over the examples, and every explainer's paired difference from ``random`` on
the same examples (``attnscope.analysis.stats``; method: ``docs/methods/statistics.md``).

``merge_faithfulness`` adds these to the job's result, so a table row's mean comes with its interval
and ``n``, and the per-example values are kept (``per_example``; the long-format CSV is
``GET /jobs/{id}/result?format=csv&table=examples``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnscope.analysis.stats import bootstrap_rows

BASELINE = "random"
LEVEL, METHOD, RESAMPLES, SEED = 0.95, "BCa", 1999, 0
# per-example values read from a shard record: faithfulness metrics from "faith", these from "plaus"
PLAUSIBILITY_VALUES = {"token_f1": ("token", 2), "auprc": ("auprc", None)}
NOT_A_MEAN = {"iou_f1"}  # F1 of mean precision and mean recall: its examples are kept as P and R


def _value(record: dict, explainer: str, metric: str) -> float:
    if metric in PLAUSIBILITY_VALUES:
        p = record["plaus"].get(explainer)
        if p is None:
            return np.nan
        key, index = PLAUSIBILITY_VALUES[metric]
        v = p[key] if index is None else p[key][index]
    elif metric in ("iou_precision", "iou_recall"):
        p = record["plaus"].get(explainer)
        v = None if p is None else p["iou"][0 if metric == "iou_precision" else 1]
    else:
        f = record["faith"].get(explainer)
        v = None if f is None else f.get(metric)
    return np.nan if v is None else float(v)


def per_example_metrics(metrics: Sequence[str]) -> list[str]:
    """The metrics kept per example: the asked ones, with IOU F1 as its precision and recall."""
    out = [m for m in metrics if m not in NOT_A_MEAN]
    if "iou_f1" in metrics:
        out += ["iou_precision", "iou_recall"]
    return out


def per_example(records: list[dict], explainers: Sequence[str], metrics: Sequence[str]) -> dict:
    """``{explainer: {metric: [value per example, None where not measured]}}`` in example order."""
    kept = per_example_metrics(metrics)
    return {
        e: {m: [None if np.isnan(v) else round(v, 6) for v in (_value(r, e, m) for r in records)] for m in kept}
        for e in explainers
    }


def interval_table(values: dict, explainers: Sequence[str], metrics: Sequence[str], against: str | None) -> dict:
    """``{explainer: {metric: MeanInterval dict | None}}`` of ``values`` (``per_example``'s shape), or of the
    paired differences ``explainer - against`` (``against`` itself left out)."""
    keys = [(e, m) for e in explainers if e != against for m in metrics]
    if not keys:
        return {}

    def arr(e, m):
        return np.array([np.nan if v is None else v for v in values[e][m]], dtype=np.float64)

    rows = np.stack([arr(e, m) - (arr(against, m) if against else 0.0) for e, m in keys])  # [cell, example]
    out: dict = {}
    for (e, m), iv in zip(keys, bootstrap_rows(rows, LEVEL, METHOD, RESAMPLES, SEED), strict=True):
        out.setdefault(e, {})[m] = None if iv.n == 0 else iv.as_dict()
    return out


def uncertainty(records: list[dict], explainers: Sequence[str], metrics: Sequence[str], start: int) -> dict:
    """The fields ``merge_faithfulness`` adds: ``interval`` (how the intervals were made), ``intervals``
    (``{explainer: {metric: {mean, low, high, n}}}``), ``vs_random`` (the same for ``explainer - random``
    on the examples both ran on; None without ``random``) and ``per_example`` (``index``: each example's
    index in the data set, ``values``: ``per_example``)."""
    values = per_example(records, explainers, metrics)
    means = [m for m in metrics if m not in NOT_A_MEAN]
    return {
        "interval": {"level": LEVEL, "method": METHOD, "resamples": RESAMPLES, "seed": SEED, "over": "examples"},
        "intervals": interval_table(values, explainers, means, None),
        "vs_random": interval_table(values, explainers, means, BASELINE) if BASELINE in explainers else None,
        "per_example": {"index": list(range(start, start + len(records))), "values": values},
    }


def example_rows(result: dict) -> list[dict]:
    """The long-format table of ``per_example``: one row per example, explainer and metric measured."""
    pe = result["per_example"]
    return [
        {"example": idx, "explainer": e, "metric": m, "value": v}
        for e, by_metric in pe["values"].items()
        for m, vs in by_metric.items()
        for idx, v in zip(pe["index"], vs, strict=True)
        if v is not None
    ]
