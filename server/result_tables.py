"""The long-format tables of a job's per-example values (``GET /jobs/{id}/result?format=csv&table=examples``):
one row per example and cell, for the kinds that keep per-example values (census, probe, faithfulness,
head-effects, dla, circuit)."""

from __future__ import annotations

from attnscope.pipelines.circuits.dataset import pair_rows as circuit_rows
from attnscope.pipelines.dataset_examples import census_example_rows, probe_example_rows
from attnscope.pipelines.faithfulness_uncertainty import example_rows as faithfulness_rows
from attnscope.pipelines.interventions.dataset import effect_rows
from attnscope.pipelines.writes.dla_dataset import dla_example_rows

EXAMPLE_TABLES = {
    "census": census_example_rows,
    "probe": probe_example_rows,
    "faithfulness": faithfulness_rows,
    "head-effects": effect_rows,
    "dla": dla_example_rows,
    "circuit": circuit_rows,
}


def example_table(kind: str, result: dict) -> list[dict] | None:
    """The per-example rows of ``result`` (None: the kind, or this older result, keeps none)."""
    build = EXAMPLE_TABLES.get(kind)
    if build is None or not isinstance(result, dict):
        return None
    if kind == "faithfulness" and not result.get("per_example"):
        return None
    return build(result) or None
