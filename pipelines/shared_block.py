"""Infinite depth with shared weights: iterate one block past its trained depth.

``iterate_shared_block(loaded, text_or_x0, n_steps, layer=None)``:

- a model that offers ``shared_block`` (an ``nn.Module``, on the torch model or on the
  ``Backend``) is iterated from its first block's input ``hidden_states[0]``; the trained depth
  is its number of layers. Contract for such models (the HA zoo models): ``shared_block(hidden
  [1, token, dim], **kw)`` returns the next hidden states (a tensor, or a tuple whose first item is
  it); if the model also offers ``shared_block_kwargs(x0 [1, token, dim]) -> dict`` (e.g. the HA
  keys K computed once from the first pass), those keyword arguments are passed to every call;
- ``layer=k`` on a BERT-like model iterates encoder block k (attention + FFN + LayerNorms) with its
  own weights from its real input ``hidden_states[k]``: a DEMONSTRATION of a shared-weight
  iteration built from a model that was not trained with shared weights (trained depth 1).

The block runs in float64 on the CPU (a copy), so W1 between iterates is not floored by float32
noise. The analysis itself is ``attnscope.analysis.measure.fixed_point_iteration``.

The contraction condition: for a shared (HA) block, the DERIVED fixed-key bound of
``attnscope.analysis.block_bound`` (max-over-tokens metric, which dominates W1) is computed globally and
along the orbit, against the observed step ratios and an empirical estimate around ``x0``
(``attnscope.pipelines.fixed_key_block``). For a demonstration layer, the attention sublayer's W1 bound.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from attnscope.analysis.block_bound import BlockBound, OrbitCheck, global_bound, orbit_check
from attnscope.analysis.indices import check_index
from attnscope.analysis.lipschitz import lipschitz_bound
from attnscope.analysis.measure import FixedPoint, fixed_point_iteration
from attnscope.models.capture import capture
from attnscope.models.interface import Backend, SitesUnavailableError
from attnscope.pipelines.fixed_key_block import (
    BlockEstimate,
    BlockHalves,
    NotFixedKeyBlockError,
    estimate_block_lipschitz,
    extract_fixed_key_block,
)
from attnscope.pipelines.layers import encoder_layers, extract_attention_params, is_pre_norm

log = logging.getLogger(__name__)


class NoSharedBlockError(ValueError):
    """The model has no ``shared_block`` and no layer to iterate was named."""


@dataclass
class BlockContraction:
    """The contraction condition for a shared (HA) block, from the DERIVED fixed-key bound.

    global_bound: valid for every pair of clouds (LayerNorm at its eps floor); ``contraction`` is
    ``global_bound.log10_bound < 0`` (Banach: a unique fixed cloud). orbit: the pairwise bound along
    the orbit against the observed step ratios (``orbit.worst_slack <= 0`` must hold). estimate:
    ``L_hat`` around ``x0`` from perturbations, each pair against its own bound.
    """

    global_bound: BlockBound
    orbit: OrbitCheck
    estimate: BlockEstimate

    @property
    def contraction(self) -> bool:
        """Banach's condition: the global bound below 1 (per-step bounds below 1 would only say that the
        steps seen shrink, not that there is one fixed cloud)."""
        return bool(self.global_bound.log10_bound < 0)


@dataclass
class SharedIteration:
    label: str
    demonstration: bool  # True: a non-shared model's layer iterated with its own weights
    trained_depth: int
    start_depth: int  # hidden_states index the iteration starts from
    result: FixedPoint
    # DERIVED bound of the iterated block's attention sublayer with its residual, on the ball of
    # radius result.radius that holds the whole orbit. "L < 1" is the contraction condition for
    # iterating that sublayer alone; the block's FFN and LayerNorms are not bounded, so for the
    # full block it is reported, not concluded from.
    log10_bound_attention: float | None
    attention_contraction: bool | None
    block_contraction: BlockContraction | None = None


def find_shared_block(loaded: Backend) -> torch.nn.Module | None:
    """The model's one shared block (``Sites.shared``: the zoo's HA models), or None."""
    try:
        sites = loaded.sites
    except SitesUnavailableError:
        return None
    return sites.blocks[0].block if sites.shared else None


def _as_step(block: torch.nn.Module, kwargs: dict) -> Callable[[np.ndarray], np.ndarray]:
    def step(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            out = block(torch.as_tensor(x, dtype=torch.float64)[None], **kwargs)
        out = out[0] if isinstance(out, (tuple, list)) else out
        return out[0].numpy()

    return step


def block_step(loaded: Backend, layer: int | None = None, x0: np.ndarray | None = None):
    """``(label, step, trained_depth, start_depth, demonstration)`` for the block to iterate."""
    if layer is None:
        block = find_shared_block(loaded)
        if block is None:
            raise NoSharedBlockError(
                f"model {loaded.spec.name!r} has no shared block; name a layer to iterate (a demonstration "
                "with that layer's own weights) or use a weight-sharing (HA) model"
            )
        sites = loaded.sites
        block = copy.deepcopy(block).double().eval().cpu()
        kwargs = {}
        if sites.shared_state is not None and x0 is not None:
            kwargs = sites.shared_state(torch.as_tensor(x0, dtype=torch.float64)[None])
        return "shared block", _as_step(block, kwargs), loaded.n_layers, 0, False
    layers = encoder_layers(loaded)
    check_index("layer", layer, len(layers), f"model {loaded.spec.name!r}")
    block = copy.deepcopy(layers[layer].block).double().eval().cpu()
    label = f"layer {layer} block iterated with its own weights (demonstration, not a trained weight-sharing model)"
    kwargs = {"state": {}} if loaded.sites.pass_state else {}  # zoo blocks take the (here empty) pass state
    return label, _as_step(block, kwargs), 1, layer, True


def iterate_shared_block(
    loaded: Backend, text: str | np.ndarray, n_steps: int, layer: int | None = None
) -> SharedIteration:
    """Iterate the shared block (or layer ``layer``'s block) ``n_steps`` times.

    Args:
        text: the input text, or directly the starting cloud ``x0 [token, dim]``.
    Returns:
        ``SharedIteration`` with ``result.w1_steps [n_steps]`` = W1 between successive iterates.
    """
    if isinstance(text, str):
        hs = capture(loaded, text).hidden_states
        start = 0 if layer is None else layer
        x0 = hs[start].astype(np.float64)
    else:
        x0 = np.asarray(text, dtype=np.float64)
    label, step, depth, start, demo = block_step(loaded, layer, x0)
    result = fixed_point_iteration(step, x0, n_steps, keep_orbit=layer is None)
    block = _block_contraction(loaded, x0, result.orbit) if layer is None else None
    log10_bound = None
    if layer is not None and not is_pre_norm(loaded):  # pre-LN: the sublayer reads LN(x), not the orbit
        params = extract_attention_params(loaded, layer)
        log10_bound = lipschitz_bound(params, result.radius, residual=True).log10_bound
    contraction = None if log10_bound is None else bool(log10_bound < 0)
    return SharedIteration(label, demo, depth, start, result, log10_bound, contraction, block)


def _block_contraction(loaded: Backend, x0: np.ndarray, orbit: np.ndarray) -> BlockContraction | None:
    """The fixed-key bound for the shared block along ``orbit`` (None for blocks it does not cover)."""
    try:
        fk = extract_fixed_key_block(loaded, x0)
    except NotFixedKeyBlockError as exc:
        log.info("no contraction bound for %s: %s", loaded.spec.name, exc)
        return None
    halves = BlockHalves(loaded, x0)
    mids = np.stack([halves(x)[0] for x in orbit])
    return BlockContraction(global_bound(fk), orbit_check(fk, orbit, mids), estimate_block_lipschitz(loaded, x0))
