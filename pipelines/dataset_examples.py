"""Per-example values of the census and probe jobs: what a shard keeps, how the merge joins them, and
their long-format tables (``GET /jobs/{id}/result?format=csv&table=examples``; the CLI's
``OUT-examples.csv``).

A census keeps every example's ``[layer, head]`` value of every metric when the whole job holds at most
``PER_EXAMPLE_VALUES`` numbers (examples x layers x heads x metrics: 2,777 MiniLM examples, 740 of
SmolLM2's 270 heads); a larger census keeps its per-head statistics only (``per_example`` is None) so
that a 5,000-example job's result stays a few MB. A probe keeps, per layer, whether each example's
held-out prediction was right (examples x layers booleans, always kept).
"""

from __future__ import annotations

import math

import numpy as np

PER_EXAMPLE_VALUES = 2_000_000
"""The most per-example numbers a census result keeps (examples x layers x heads x metrics)."""


def keeps_examples(total: int, cells: int, metrics: int) -> bool:
    """Whether a census of ``total`` examples over ``cells`` heads and ``metrics`` metrics keeps them all."""
    return total * cells * metrics <= PER_EXAMPLE_VALUES


def rounded(grid: np.ndarray) -> list:
    """``[layer, head]`` floats as nested lists, 6 decimals, NaN as None (JSON)."""
    return [[None if not math.isfinite(v) else round(float(v), 6) for v in row] for row in np.asarray(grid)]


def join_examples(parts: list[dict | None]) -> dict | None:
    """The shards' kept examples joined in order (``{"id": [...], "values": {metric: [example][layer][head]}}``),
    or None when any shard kept none."""
    if not parts or any(p is None for p in parts):
        return None
    metrics = list(parts[0]["values"])
    return {
        "id": [i for p in parts for i in p["id"]],
        "values": {k: [g for p in parts for g in p["values"][k]] for k in metrics},
    }


def census_example_rows(result: dict) -> list[dict]:
    """The long-format table of a census' kept values: one row per example and head, a column per metric."""
    pe = result.get("per_example")
    if not pe:
        return []
    metrics = list(pe["values"])
    rows = []
    for e, ex_id in enumerate(pe["id"]):
        grids = {k: pe["values"][k][e] for k in metrics}
        for layer, by_head in enumerate(grids[metrics[0]]):
            for head in range(len(by_head)):
                row = {"example": ex_id, "head": f"L{layer}H{head}", "layer": layer, "head_index": head}
                row.update({k: grids[k][layer][head] for k in metrics})
                rows.append(row)
    return rows


def probe_example_rows(result: dict) -> list[dict]:
    """The long-format table of a probe's held-out outcomes: one row per example and layer (``correct`` 0/1)."""
    pe = result.get("per_example")
    if not pe:
        return []
    layers = [r["layer"] for r in result["rows"]]
    return [
        {"example": ex_id, "label": pe["label"][e], "layer": layer, "correct": int(pe["correct"][li][e])}
        for e, ex_id in enumerate(pe["id"])
        for li, layer in enumerate(layers)
    ]
