"""The project's statistics: every interval, paired difference and multiple-comparison correction.

Over training seeds (a few values per arm, ``experiments/``): mean and sample standard deviation of one
arm (``summarise``), and the gap between two arms trained with the same seeds (``paired_gap``). The gap
is paired by seed: arm A and arm B trained with seed ``s`` share the data order, the augmentation draws
and the dropout seed, so ``d_s = a_s - b_s`` removes that shared part of the noise. Its interval is
Student's ``t`` interval with ``n - 1`` degrees of freedom,

    mean(d) +/- t_{1 - (1 - level) / 2, n - 1} * sd(d) / sqrt(n),

with ``sd`` the sample standard deviation (``ddof = 1``). With three seeds ``t_{0.975, 2} = 4.303``, so the
interval is wide: it says how little three seeds can settle, which is the point of reporting it.
``t_interval`` is the same interval for one arm's mean.

Over examples (tens to thousands of values, data-set jobs): ``bootstrap_interval`` (percentile or BCa,
``scipy.stats.bootstrap``, seeded) of a mean, ``paired_difference`` of two measurements on the same
examples (an explainer against random on the same reviews). Across heads (a family of tests):
``one_sample_p`` (t test of a mean effect against 0) and ``adjust`` (Holm's family-wise or
Benjamini-Hochberg's false-discovery correction). A difference is called a difference only when its
interval excludes 0 (``excludes_zero``). Method and sources: ``docs/methods/statistics.md``.
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


# --- intervals over examples, paired differences, multiple comparisons ---------------------------------------


@dataclass(frozen=True)
class Interval:
    """A mean over ``n`` values and its ``level`` interval ``[low, high]`` by ``method`` (``"t"``,
    ``"percentile"`` or ``"BCa"``); ``low``/``high`` are NaN when ``n < 2`` (no interval from one value)."""

    mean: float
    low: float
    high: float
    n: int
    level: float
    method: str

    @property
    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly on one side of 0 (False when there is no interval)."""
        return bool(self.low > 0 or self.high < 0)

    def as_dict(self, digits: int = 4) -> dict:
        """JSON-able ``{"mean", "low", "high", "n"}`` (NaN as ``None``, rounded to ``digits``); the level
        and method are the table's, said once beside it."""

        def r(v: float) -> float | None:
            return None if not math.isfinite(v) else round(float(v), digits)

        return {"mean": r(self.mean), "low": r(self.low), "high": r(self.high), "n": self.n}

    def text(self, digits: int = 3) -> str:
        """``"0.412 [0.371, 0.455]"`` (``"0.412"`` without an interval)."""
        if not math.isfinite(self.low):
            return f"{self.mean:.{digits}f}"
        return f"{self.mean:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def _values(values: Sequence[float] | np.ndarray) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.size == 0:
        raise ValueError("an interval needs at least one value")
    if not np.all(np.isfinite(x)):
        raise ValueError("an interval needs finite values; drop the missing ones first")
    return x


def _check_level(level: float) -> None:
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1); got {level}")


def t_interval(values: Sequence[float], level: float = 0.95) -> Interval:
    """Student's t interval of the mean, ``mean +/- t_{1 - (1 - level)/2, n - 1} sd / sqrt(n)``
    (over seeds: few values, assumed roughly normal)."""
    _check_level(level)
    x = _values(values)
    mean = float(x.mean())
    if x.size < 2:
        return Interval(mean, math.nan, math.nan, 1, float(level), "t")
    half = t_quantile(1 - (1 - level) / 2, x.size - 1) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return Interval(mean, mean - half, mean + half, int(x.size), float(level), "t")


BOOTSTRAP_METHODS = ("percentile", "BCa")


def bootstrap_interval(
    values: Sequence[float],
    level: float = 0.95,
    method: str = "BCa",
    n_resamples: int = 9999,
    seed: int = 0,
) -> Interval:
    """Bootstrap interval of the mean over examples (``scipy.stats.bootstrap``: resample the examples
    with replacement ``n_resamples`` times; ``"percentile"`` takes the quantiles of the resampled means,
    ``"BCa"`` corrects them for bias and skew, Efron 1987). Seeded, so the same values give the same
    interval. Values all equal give the zero-width interval ``[v, v]`` (BCa is undefined there)."""
    _check_level(level)
    if method not in BOOTSTRAP_METHODS:
        raise ValueError(f"method must be one of {', '.join(BOOTSTRAP_METHODS)}; got {method!r}")
    x = _values(values)
    mean = float(x.mean())
    if x.size < 2:
        return Interval(mean, math.nan, math.nan, 1, float(level), method)
    if np.ptp(x) == 0:
        return Interval(mean, mean, mean, int(x.size), float(level), method)
    from scipy.stats import bootstrap

    res = bootstrap(
        (x,),
        np.mean,
        n_resamples=n_resamples,
        confidence_level=level,
        method=method,
        vectorized=True,
        rng=np.random.default_rng(seed),
    )
    ci = res.confidence_interval
    return Interval(mean, float(ci.low), float(ci.high), int(x.size), float(level), method)


def paired_difference(
    a: Sequence[float],
    b: Sequence[float],
    level: float = 0.95,
    method: str = "BCa",
    n_resamples: int = 9999,
    seed: int = 0,
) -> Interval:
    """Bootstrap interval of ``mean(a - b)`` where ``a[i]`` and ``b[i]`` were measured on the same
    example ``i`` (two explainers on one review): resampling the examples keeps each pair together,
    so the shared difficulty of an example cancels. Needs one ``b`` per ``a``."""
    a = _values(a)
    b = _values(b)
    if a.size != b.size:
        raise ValueError(f"a paired difference needs one b per a; got {a.size} and {b.size} values")
    return bootstrap_interval(a - b, level, method, n_resamples, seed)


def one_sample_p(
    values: np.ndarray, axis: int = -1, popmean: float = 0.0, alternative: str = "two-sided"
) -> np.ndarray:
    """p of the t test that the mean of ``values`` along ``axis`` is ``popmean`` (``scipy.stats.ttest_1samp``):
    two-sided by default, ``"greater"`` for the one-sided test that it exceeds ``popmean`` (a head's score
    above a label threshold); NaN where fewer than two values or no spread."""
    from scipy.stats import ttest_1samp

    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be two-sided, greater or less; got {alternative!r}")
    x = np.asarray(values, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.asarray(ttest_1samp(x, popmean, axis=axis, alternative=alternative).pvalue, dtype=np.float64)
    return p


CORRECTIONS = ("holm", "bh")


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979; controls the family-wise error rate):
    sorted ascending, ``p_(i) * (m - i + 1)``, made non-decreasing, capped at 1; same order as given."""
    p = np.asarray(pvalues, dtype=np.float64).reshape(-1)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    scaled = p[order] * (m - np.arange(m))
    adjusted = np.minimum(np.maximum.accumulate(scaled), 1.0)
    out = np.empty(m)
    out[order] = adjusted
    return out


def adjust(pvalues: Sequence[float], method: str = "holm") -> np.ndarray:
    """Adjusted p-values of a family of tests: ``"holm"`` (family-wise error, ``holm``) or ``"bh"``
    (Benjamini-Hochberg false discovery rate, ``scipy.stats.false_discovery_control``). NaN p-values
    (untestable) stay NaN and do not count in the family."""
    if method not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}; got {method!r}")
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        if method == "holm":
            out[ok] = holm(p[ok])
        else:
            from scipy.stats import false_discovery_control

            out[ok] = false_discovery_control(p[ok], method="bh")
    return out


def bootstrap_rows(
    values: np.ndarray,
    level: float = 0.95,
    method: str = "BCa",
    n_resamples: int = 1999,
    seed: int = 0,
) -> list[Interval]:
    """``bootstrap_interval`` of each row of ``values`` (``[row, example]``, NaN: not measured on that
    example), computed in one ``scipy.stats.bootstrap`` call per pattern of missing values, so a table
    of many rows costs a few calls. Rows with the same examples measured share the resampled examples
    (the same draws as ``bootstrap_interval`` gives each alone, up to the batching)."""
    _check_level(level)
    if method not in BOOTSTRAP_METHODS:
        raise ValueError(f"method must be one of {', '.join(BOOTSTRAP_METHODS)}; got {method!r}")
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"bootstrap_rows needs a [row, example] array; got shape {x.shape}")
    out: list[Interval | None] = [None] * x.shape[0]
    ok = np.isfinite(x)
    groups: dict[bytes, list[int]] = {}
    for r in range(x.shape[0]):
        groups.setdefault(np.packbits(ok[r]).tobytes() + ok[r].sum().tobytes(), []).append(r)
    from scipy.stats import bootstrap

    for rows in groups.values():
        cols = np.flatnonzero(ok[rows[0]])
        sub = x[np.ix_(rows, cols)]  # [row, measured example]
        n = sub.shape[1]
        means = sub.mean(axis=1) if n else np.full(len(rows), np.nan)
        low = np.full(len(rows), np.nan)
        high = np.full(len(rows), np.nan)
        if n >= 2:
            flat = np.ptp(sub, axis=1) == 0
            low[flat], high[flat] = means[flat], means[flat]
            vary = np.flatnonzero(~flat)
            if vary.size:
                res = bootstrap(
                    (sub[vary],),
                    np.mean,
                    n_resamples=n_resamples,
                    batch=max(1, 4_000_000 // (vary.size * n)),
                    confidence_level=level,
                    method=method,
                    vectorized=True,
                    axis=-1,
                    rng=np.random.default_rng(seed),
                )
                low[vary] = res.confidence_interval.low
                high[vary] = res.confidence_interval.high
        for i, r in enumerate(rows):
            out[r] = Interval(float(means[i]), float(low[i]), float(high[i]), int(n), float(level), method)
    return out  # type: ignore[return-value]


def t_summary(
    mean: np.ndarray, sd: np.ndarray, n: np.ndarray, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Student's t interval and two-sided p (mean 0) from running statistics: element-wise ``mean``, sample
    ``sd`` (``ddof = 1``) and count ``n`` of any shape (e.g. ``[layer, head]``), as ``(low, high, p)``; the
    same numbers as ``t_interval`` and ``scipy.stats.ttest_1samp`` on the values. NaN where ``n < 2``; ``p``
    is NaN where ``sd`` is 0 (a constant effect has no test)."""
    from scipy.stats import t as student_t

    _check_level(level)
    mean, sd = np.asarray(mean, dtype=np.float64), np.asarray(sd, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    df = np.where(n >= 2, n - 1, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        se = sd / np.sqrt(n)
        half = student_t.ppf(1 - (1 - level) / 2, df) * se
        p = np.where(sd > 0, 2 * student_t.sf(np.abs(mean) / se, df), np.nan)
    return mean - half, mean + half, p


def proportion_interval(successes: int, n: int, level: float = 0.95, method: str = "wilson") -> Interval:
    """Interval of a proportion ``successes / n`` (an accuracy over ``n`` held-out predictions, each example
    predicted once): Wilson's score interval by default, ``"exact"`` for Clopper-Pearson
    (``scipy.stats.binomtest(...).proportion_ci``)."""
    from scipy.stats import binomtest

    _check_level(level)
    if not 0 <= successes <= n or n < 1:
        raise ValueError(f"a proportion needs 0 <= successes <= n and n >= 1; got {successes} of {n}")
    ci = binomtest(int(successes), int(n)).proportion_ci(confidence_level=level, method=method)
    return Interval(successes / n, float(ci.low), float(ci.high), int(n), float(level), method)
