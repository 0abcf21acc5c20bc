"""The layer x position patching sweep (TransformerLens's ``get_act_patch_resid_pre`` plot): one
residual patch per ``(layer, position)``, batched, each scored against the clean pass.

``effect[l, p]`` is the metric change (altered minus clean) when only the residual stream after block
``l`` at position ``p`` is taken from the source input (the corrupted one when ``direction="noising"``,
the clean one when ``"denoising"``). ``full`` is the change when the source's whole last residual
stream is patched in, i.e. the target run on the source (the scale of the plot: a cell near ``full``
carries all of the difference)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attnscope.models.interface import Backend, ModelInput
from attnscope.pipelines.interventions.apply import DEFAULT_METRIC, MAX_GRID_CHUNK, prediction, prepare
from attnscope.pipelines.interventions.metrics import MetricSpec, effect
from attnscope.pipelines.interventions.spec import InterventionSet, ResidualPatch


def sweep_sets(n_layers: int, n_tokens: int) -> list[InterventionSet]:
    """One set per cell in ``(layer, position)`` order: patch the residual after block ``layer`` at
    ``position``."""
    return [InterventionSet((ResidualPatch(layer, (p,)),)) for layer in range(n_layers) for p in range(n_tokens)]


def residual_patching(
    backend: Backend,
    inp: ModelInput,
    source: ModelInput | None,
    metric: MetricSpec = DEFAULT_METRIC,
    direction: str = "noising",
    chunk: int = 32,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """``effect [layer, position]`` (see the module docstring), ``full`` (float), ``metric``, the
    clean prediction and ``target`` (the input whose forward pass was altered). Without a source, or
    with one of another length, ``InterventionError`` (from ``validate``)."""
    n_tokens = len(inp) if direction == "noising" or source is None else len(source)
    sets = sweep_sets(backend.n_layers, n_tokens)
    prep = prepare(backend, inp, sets[:1], metric, source, direction)
    last = backend.n_layers - 1
    full = InterventionSet((ResidualPatch(last, tuple(range(n_tokens))),))
    chunk = max(1, min(int(chunk), MAX_GRID_CHUNK))
    values = []
    for first in range(0, len(sets), chunk):
        altered = prep.forward(sets[first : first + chunk])
        values.append(effect(prep.metric, prep.clean, altered))
        if progress is not None:
            progress(min(first + chunk, len(sets)), len(sets))
    whole = effect(prep.metric, prep.clean, prep.forward([full]))
    return {
        "effect": np.concatenate(values).reshape(backend.n_layers, n_tokens),
        "full": float(whole[0]),
        "metric": prep.metric,
        "clean": prediction(backend, prep.clean),
        "target": prep.target,
    }


__all__ = ["residual_patching", "sweep_sets"]
