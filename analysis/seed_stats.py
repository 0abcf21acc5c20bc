"""Statistics over training seeds: mean and sample standard deviation of one arm, and the confidence
interval of the gap between two arms trained with the same seeds.

The gap is paired by seed: arm A and arm B trained with seed ``s`` share the data order, the augmentation
draws and the dropout seed, so ``d_s = a_s - b_s`` removes that shared part of the noise. Its interval is
Student's ``t`` interval with ``n - 1`` degrees of freedom,

    mean(d) +/- t_{1 - (1 - level) / 2, n - 1} * sd(d) / sqrt(n),

with ``sd`` the sample standard deviation (``ddof = 1``). With three seeds ``t_{0.975, 2} = 4.303``, so the
interval is wide: it says how little three seeds can settle, which is the point of reporting it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Summary:
    """Mean and sample standard deviation (``ddof = 1``; NaN for one value) of ``n`` values."""

    mean: float
    sd: float
    n: int

    def text(self, digits: int = 3) -> str:
        """``"0.796 ± 0.004"`` (``"0.796"`` for one value)."""
        if self.n < 2:
            return f"{self.mean:.{digits}f}"
        return f"{self.mean:.{digits}f} ± {self.sd:.{digits}f}"


@dataclass(frozen=True)
class GapInterval:
    """The paired gap ``a - b`` over ``n`` seeds: its mean, sample sd, and the ``level`` t-interval
    ``[low, high]`` with ``df = n - 1`` (``t`` is the quantile used)."""

    mean: float
    sd: float
    n: int
    level: float
    df: int
    t: float
    low: float
    high: float

    @property
    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly on one side of 0 (the sign of the gap is settled)."""
        return self.low > 0 or self.high < 0

    def text(self, digits: int = 3) -> str:
        return f"{self.mean:+.{digits}f} [{self.low:+.{digits}f}, {self.high:+.{digits}f}]"


def summarise(values: Sequence[float]) -> Summary:
    """``Summary`` of ``values`` (at least one)."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.size == 0:
        raise ValueError("summarise needs at least one value")
    sd = float(x.std(ddof=1)) if x.size > 1 else math.nan
    return Summary(float(x.mean()), sd, int(x.size))


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (scipy)."""
    from scipy.stats import t as student_t

    return float(student_t.ppf(p, df))


def paired_gap(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> GapInterval:
    """The t-interval (``df = n - 1``) of ``mean(a - b)``, ``a[i]`` and ``b[i]`` from the same seed.

    Needs at least two pairs; with every difference equal the interval has zero width.
    """
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    if a.size != b.size:
        raise ValueError(f"paired gap needs one b per a; got {a.size} and {b.size} values")
    if a.size < 2:
        raise ValueError("a confidence interval over seeds needs at least two seeds")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1); got {level}")
    d = a - b
    n = int(d.size)
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    t = t_quantile(1 - (1 - level) / 2, n - 1)
    half = t * sd / math.sqrt(n)
    return GapInterval(mean, sd, n, float(level), n - 1, t, mean - half, mean + half)
