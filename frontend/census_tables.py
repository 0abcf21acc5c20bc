"""Pure table builders of the Census page (data in, ``DataTable`` columns and rows out): every row that
is compared with another carries its 95 % interval and ``n``.

Census: one row per head for the chosen metric, its mean over the examples, the t interval of that mean,
the std over the examples and the examples where the metric is defined. Probe: one row per layer, the
accuracy with its Wilson interval over the examples and, against the majority-class rate, a verdict that
says "above chance" or "below chance" only when the interval excludes that rate.
"""

from __future__ import annotations

from collections.abc import Sequence


def _num(v, digits: int = 4):
    return None if v is None else round(float(v), digits)


def census_table(rows: Sequence[dict], metric: str) -> tuple[list[dict], list[dict]]:
    """``(columns, data)`` of ``metric`` per head from a census result's ``rows`` (numbers kept numeric so
    the table sorts; an interval end is None where fewer than two examples define the metric)."""
    columns = [
        {"name": "head", "id": "head"},
        {"name": f"{metric} mean", "id": "mean", "type": "numeric"},
        {"name": "95 % low (t)", "id": "low", "type": "numeric"},
        {"name": "95 % high (t)", "id": "high", "type": "numeric"},
        {"name": "std over examples", "id": "std", "type": "numeric"},
        {"name": "n", "id": "n", "type": "numeric"},
    ]
    data = [
        {
            "head": r["head"],
            "mean": _num(r.get(f"{metric}_mean")),
            "low": _num(r.get(f"{metric}_low")),
            "high": _num(r.get(f"{metric}_high")),
            "std": _num(r.get(f"{metric}_std")),
            "n": r.get(f"{metric}_n"),
        }
        for r in rows
    ]
    return columns, data


def against_chance(low, high, chance: float) -> str:
    """The verdict of an accuracy interval ``[low, high]`` against the chance rate."""
    if low is None or high is None:
        return "–"
    if low > chance:
        return "above chance"
    if high < chance:
        return "below chance"
    return "no difference"


def probe_table(rows: Sequence[dict], n: int, chance: float) -> tuple[list[dict], list[dict]]:
    """``(columns, data)`` of a probe result: per layer the accuracy, its 95 % Wilson interval over the ``n``
    examples, the std over the folds, chance and the verdict against chance."""
    columns = [
        {"name": "layer", "id": "layer", "type": "numeric"},
        {"name": "accuracy", "id": "accuracy", "type": "numeric"},
        {"name": "95 % low (Wilson)", "id": "low", "type": "numeric"},
        {"name": "95 % high (Wilson)", "id": "high", "type": "numeric"},
        {"name": "std over folds", "id": "std", "type": "numeric"},
        {"name": "chance", "id": "chance", "type": "numeric"},
        {"name": "n", "id": "n", "type": "numeric"},
        {"name": "vs chance", "id": "verdict"},
    ]
    data = [
        {
            "layer": r["layer"],
            "accuracy": _num(r["accuracy"]),
            "low": _num(r.get("accuracy_low")),
            "high": _num(r.get("accuracy_high")),
            "std": _num(r.get("accuracy_std")),
            "chance": _num(chance),
            "n": r.get("n") or n,
            "verdict": against_chance(r.get("accuracy_low"), r.get("accuracy_high"), chance),
        }
        for r in rows
    ]
    return columns, data
