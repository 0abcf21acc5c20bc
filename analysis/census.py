"""Dataset-level census: run one per-example analysis over many examples and aggregate per head.

Model-agnostic: ``census`` takes any iterable of ``AttentionMaps`` (a generator that captures as it
goes keeps memory flat) and a callable returning an array (for example ``[layer, head]`` shift
scores) or a dict of such arrays. It keeps running means and standard deviations (Welford/Chan,
float64, NaN entries skipped per element) and shows a tqdm progress bar.

    census(maps_iter, lambda m: scan_shifts(m).shift_score)
    census(maps_iter, lambda m: {"entropy": evolution(m).head_entropy,
                                 "distance": attention_distance(m).per_head})
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from attnscope.analysis.maps import AttentionMaps

log = logging.getLogger(__name__)


class RunningStats:
    """Element-wise running mean and variance of same-shaped arrays; NaN entries are skipped."""

    def __init__(self) -> None:
        self.count: np.ndarray | None = None
        self.mean: np.ndarray | None = None
        self._m2: np.ndarray | None = None

    def add(self, x: np.ndarray) -> None:
        x = np.asarray(x, dtype=np.float64)
        if self.mean is None:
            self.count = np.zeros(x.shape, np.int64)
            self.mean = np.zeros(x.shape)
            self._m2 = np.zeros(x.shape)
        if x.shape != self.mean.shape:
            raise ValueError(
                f"an example gave shape {x.shape} but earlier ones gave {self.mean.shape}; a census "
                "needs the same layers and heads in every example (same model, no select)"
            )
        ok = ~np.isnan(x)
        self.count += ok
        delta = np.where(ok, x - self.mean, 0.0)
        self.mean += np.where(ok, delta / np.maximum(self.count, 1), 0.0)
        self._m2 += np.where(ok, delta * (x - self.mean), 0.0)

    @property
    def std(self) -> np.ndarray:
        """Population standard deviation (0 where fewer than two values; NaN where none)."""
        var = np.where(self.count > 0, self._m2 / np.maximum(self.count, 1), np.nan)
        return np.sqrt(np.maximum(var, 0.0))

    def result_mean(self) -> np.ndarray:
        return np.where(self.count > 0, self.mean, np.nan)

    def merge(self, other: RunningStats) -> None:
        """Add ``other``'s values (Chan et al. 1979, the pairwise update of mean and M2).

        Merging shard states in a fixed order gives the same floats wherever the shards ran.
        """
        if other.mean is None:
            return
        if self.mean is None:
            self.count, self.mean, self._m2 = other.count.copy(), other.mean.copy(), other._m2.copy()
            return
        if other.mean.shape != self.mean.shape:
            raise ValueError(f"cannot merge running stats of shape {other.mean.shape} into {self.mean.shape}")
        n = self.count + other.count
        safe = np.maximum(n, 1)
        delta = other.mean - self.mean
        self.mean = np.where(n > 0, self.mean + delta * other.count / safe, 0.0)
        self._m2 = self._m2 + other._m2 + delta**2 * self.count * other.count / safe
        self.count = n

    def state(self) -> dict:
        """JSON-able state (``count``, ``mean``, ``m2`` as nested lists; floats round-trip exactly)."""
        if self.mean is None:
            return {"count": None, "mean": None, "m2": None}
        return {"count": self.count.tolist(), "mean": self.mean.tolist(), "m2": self._m2.tolist()}

    @classmethod
    def from_state(cls, state: dict) -> RunningStats:
        """The inverse of ``state()``."""
        stats = cls()
        if state.get("mean") is not None:
            stats.count = np.asarray(state["count"], dtype=np.int64)
            stats.mean = np.asarray(state["mean"], dtype=np.float64)
            stats._m2 = np.asarray(state["m2"], dtype=np.float64)
        return stats


@dataclass(frozen=True)
class Census:
    """Per-element ``mean``/``std``/``count`` (arrays, or dicts of arrays if the analysis returned
    a dict) over ``n`` examples."""

    mean: np.ndarray | dict[str, np.ndarray]
    std: np.ndarray | dict[str, np.ndarray]
    count: np.ndarray | dict[str, np.ndarray]
    n: int


def census(
    items: Iterable[AttentionMaps],
    analysis: Callable[[AttentionMaps], np.ndarray | Mapping[str, np.ndarray]],
    *,
    total: int | None = None,
    progress: bool = True,
    desc: str = "census",
) -> Census:
    """Aggregate ``analysis(maps)`` over ``items``: mean and std per element (e.g. per head).

    ``total`` sizes the progress bar when ``items`` has no ``len``; ``progress=False`` hides it.
    Raises ``ValueError`` on an empty iterable or when shapes (or dict keys) change.
    """
    stats: dict[str, RunningStats] = {}
    keyed: bool | None = None
    n = 0
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    for maps in tqdm(items, total=total, desc=desc, disable=not progress, leave=False):
        out = analysis(maps)
        is_map = isinstance(out, Mapping)
        if keyed is None:
            keyed = is_map
            stats = {k: RunningStats() for k in (out if is_map else ["value"])}
        if is_map != keyed or (is_map and set(out) != set(stats)):
            raise ValueError("the analysis must return the same kind of result (same keys) every time")
        for key, value in out.items() if is_map else [("value", out)]:
            stats[key].add(value)
        n += 1
    if n == 0:
        raise ValueError("census got no examples")
    log.info("census over %d examples (%s)", n, ", ".join(stats))
    means = {k: s.result_mean() for k, s in stats.items()}
    stds = {k: s.std for k, s in stats.items()}
    counts = {k: s.count for k, s in stats.items()}
    if keyed:
        return Census(means, stds, counts, n)
    return Census(means["value"], stds["value"], counts["value"], n)
