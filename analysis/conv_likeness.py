"""How convolution-like a layer of 2D attention heads is (Cordonnier et al.'s question, measured).

Cordonnier et al. show that ``K x K`` heads, each attending with all its mass to one offset of the
``K x K`` neighbourhood of the query, implement a ``K x K`` convolution. A trained layer is compared with
that construction (``radius`` 1: the 3 x 3 neighbourhood, offsets ``(drow, dcol)`` with
``max(|drow|, |dcol|) <= 1``) on what a 2D shift scan (``attnscope.analysis.shift``) measures:

- ``best_mass[head]``: the mass of each head's best offset (mean over the query rows where it exists): 1 for a
  head of the construction, ``1 / cells`` for a uniform head;
- ``distinct_offsets``: how many different best offsets the layer's heads pick (the construction: ``K^2``,
  one per head);
- ``in_neighbourhood``: how many heads' best offset lies in the neighbourhood (the construction: all);
- ``covered``: how many of the ``K^2`` neighbourhood offsets are some head's best offset (the
  construction: all ``K^2``);
- ``neighbourhood_mass``: the mean over the ``K^2`` neighbourhood offsets of the largest mass any head puts
  on that offset, in ``[0, 1]``; 1 exactly when every tap of a ``K x K`` kernel has a head that puts all of
  its mass there (the construction), so ``1 - neighbourhood_mass`` is how far the layer is from being able
  to express every ``K x K`` convolution;
- for Gaussian heads with centres ``mu[head] = (drow, dcol)`` (grid cells, ``key - query``):
  ``centre_distance[head] = |mu|`` and ``centres_in_neighbourhood``, the heads whose centre rounds to an
  offset of the neighbourhood.

Pure numpy on arrays: ``mass [head, offset]``, ``offsets [offset, 2]``, ``centres [head, 2]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ConvLikeness:
    """One layer against the ``(2 radius + 1)^2`` convolution. Arrays are ``[head]`` / ``[head, 2]``."""

    radius: int
    best_offset: np.ndarray
    best_mass: np.ndarray
    distinct_offsets: int
    in_neighbourhood: int
    covered: int
    neighbourhood_size: int
    neighbourhood_mass: float
    centre_distance: np.ndarray | None = None
    centres_in_neighbourhood: int | None = None

    def as_dict(self) -> dict:
        """JSON-able fields (arrays as lists, floats rounded to 6 digits)."""
        out = {
            "radius": self.radius,
            "best_offset": self.best_offset.astype(int).tolist(),
            "best_mass": np.round(self.best_mass.astype(float), 6).tolist(),
            "distinct_offsets": self.distinct_offsets,
            "in_neighbourhood": self.in_neighbourhood,
            "covered": self.covered,
            "neighbourhood_size": self.neighbourhood_size,
            "neighbourhood_mass": round(float(self.neighbourhood_mass), 6),
        }
        if self.centre_distance is not None:
            out["centre_distance"] = np.round(self.centre_distance.astype(float), 6).tolist()
            out["centres_in_neighbourhood"] = self.centres_in_neighbourhood
        return out


def in_window(offsets: np.ndarray, radius: int = 1) -> np.ndarray:
    """``[offset]`` bool: ``max(|drow|, |dcol|) <= radius`` for offsets ``[offset, 2]``."""
    return np.abs(np.asarray(offsets)).max(axis=-1) <= radius


def centre_distance(centres: np.ndarray) -> np.ndarray:
    """``[head]`` Euclidean distance (grid cells) of each centre ``[head, 2]`` from the query (offset 0)."""
    return np.sqrt((np.asarray(centres, dtype=np.float64) ** 2).sum(-1))


def conv_likeness(
    mass: np.ndarray, offsets: np.ndarray, centres: np.ndarray | None = None, radius: int = 1
) -> ConvLikeness:
    """Compare one layer's heads with the ``(2 radius + 1)^2`` convolution (module docstring).

    ``mass [head, offset]``: mean attention mass of each head at each offset (a 2D shift scan's
    ``mass[layer]``); ``offsets [offset, 2]``: the scan's ``(drow, dcol)``, which must contain the whole
    neighbourhood; ``centres [head, 2]``: Gaussian centres, optional.
    """
    mass = np.asarray(mass, dtype=np.float64)
    offsets = np.asarray(offsets)
    if mass.ndim != 2 or offsets.ndim != 2 or offsets.shape != (mass.shape[1], 2):
        raise ValueError(f"need mass [head, offset] and offsets [offset, 2]; got {mass.shape} and {offsets.shape}")
    if radius < 0:
        raise ValueError(f"radius must be >= 0; got {radius}")
    window = in_window(offsets, radius)
    size = (2 * radius + 1) ** 2
    if int(window.sum()) != size:
        raise ValueError(f"the offsets must cover the whole {2 * radius + 1}x{2 * radius + 1} neighbourhood")
    best = mass.argmax(axis=1)  # first maximum in scan order on ties
    best_offset = offsets[best]
    best_mass = mass[np.arange(mass.shape[0]), best]
    best_in = window[best]
    cd = cin = None
    if centres is not None:
        centres = np.asarray(centres, dtype=np.float64)
        if centres.shape != (mass.shape[0], 2):
            raise ValueError(f"centres must be [head, 2] = ({mass.shape[0]}, 2); got {centres.shape}")
        cd = centre_distance(centres)
        cin = int(in_window(np.rint(centres), radius).sum())
    return ConvLikeness(
        radius=int(radius),
        best_offset=best_offset,
        best_mass=best_mass,
        distinct_offsets=len({tuple(o) for o in best_offset.tolist()}),
        in_neighbourhood=int(best_in.sum()),
        covered=len({int(i) for i in best[best_in]}),
        neighbourhood_size=size,
        neighbourhood_mass=float(mass[:, window].max(axis=0).mean()),
        centre_distance=cd,
        centres_in_neighbourhood=cin,
    )
