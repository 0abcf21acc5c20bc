"""Causal tests of heads: ablation, attention-edge knockout and activation patching as data
(``spec``), applied per request (``edits``, ``runner``), scored (``metrics``), one at a time or as a
batched per-head grid (``apply``). ``docs/methods/interventions.md`` defines each."""

from attnscope.pipelines.interventions.apply import HeadMeans, grid_sets, head_effects, intervene
from attnscope.pipelines.interventions.metrics import MetricSpec
from attnscope.pipelines.interventions.spec import (
    EdgeKnockout,
    HeadAblation,
    HeadPatch,
    InterventionError,
    InterventionSet,
    ResidualPatch,
)

__all__ = [
    "EdgeKnockout",
    "HeadAblation",
    "HeadMeans",
    "HeadPatch",
    "InterventionError",
    "InterventionSet",
    "MetricSpec",
    "ResidualPatch",
    "grid_sets",
    "head_effects",
    "intervene",
]
