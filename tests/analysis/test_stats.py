"""The statistics module: closed-form checks of the seed mean/sd, the t-intervals, the bootstrap over examples,
paired differences and the Holm and Benjamini-Hochberg corrections."""

import math

import numpy as np
import pytest

from attnscope.analysis.stats import (
    adjust,
    bootstrap_interval,
    bootstrap_rows,
    holm,
    one_sample_p,
    paired_difference,
    paired_gap,
    proportion_interval,
    summarise,
    t_interval,
    t_quantile,
    t_summary,
)


def test_summary_is_mean_and_sample_sd():
    s = summarise([1.0, 2.0, 3.0, 6.0])
    assert s.mean == pytest.approx(3.0)
    assert s.sd == pytest.approx(math.sqrt(14 / 3))  # squared deviations 4+1+0+9 over n - 1 = 3
    assert s.n == 4
    assert s.text(2) == "3.00 ± 2.16"


def test_one_value_has_no_sd():
    s = summarise([0.5])
    assert math.isnan(s.sd) and s.text() == "0.500"
    with pytest.raises(ValueError):
        summarise([])


@pytest.mark.parametrize(
    ("p", "df", "closed_form"),
    [
        (0.975, 1, math.tan(math.pi * (0.975 - 0.5))),  # df 1 is Cauchy: tan(pi (p - 1/2)) = 12.706
        (0.975, 2, (2 * 0.975 - 1) / math.sqrt(2 * 0.975 * 0.025)),  # df 2: (2p - 1) / sqrt(2 p (1 - p)) = 4.303
        (0.95, 2, (2 * 0.95 - 1) / math.sqrt(2 * 0.95 * 0.05)),
    ],
)
def test_t_quantile_matches_closed_forms(p, df, closed_form):
    assert t_quantile(p, df) == pytest.approx(closed_form, rel=1e-12)


def test_paired_gap_three_seeds():
    # differences 1, 2, 3: mean 2, sd 1, half-width t_{0.975,2} / sqrt(3) = 4.3027 / 1.7321 = 2.4841
    g = paired_gap([2.0, 4.0, 6.0], [1.0, 2.0, 3.0])
    t2 = 0.95 / math.sqrt(2 * 0.975 * 0.025)
    assert (g.mean, g.sd, g.n, g.df) == (pytest.approx(2.0), pytest.approx(1.0), 3, 2)
    assert g.t == pytest.approx(t2)
    assert g.low == pytest.approx(2 - t2 / math.sqrt(3)) and g.high == pytest.approx(2 + t2 / math.sqrt(3))
    assert g.low == pytest.approx(-0.4841, abs=1e-4)
    assert not g.excludes_zero  # three seeds do not settle this gap's sign
    assert g.text(2) == "+2.00 [-0.48, +4.48]"


def test_paired_gap_two_seeds_and_sign():
    # differences -0.1 and -0.3: mean -0.2, sd 0.1414, half-width 12.706 * 0.1414 / sqrt(2) = 1.2706
    g = paired_gap([0.4, 0.5], [0.5, 0.8])
    assert g.mean == pytest.approx(-0.2)
    assert g.high - g.mean == pytest.approx(math.tan(math.pi * 0.475) * 0.1, rel=1e-9)
    same = paired_gap([1.0, 2.0, 3.0], [0.5, 1.5, 2.5])  # every difference 0.5: zero width, sign settled
    assert (same.low, same.high) == (pytest.approx(0.5), pytest.approx(0.5))
    assert same.excludes_zero


def test_paired_gap_refuses_bad_input():
    with pytest.raises(ValueError, match="one b per a"):
        paired_gap([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="at least two seeds"):
        paired_gap([1], [2])
    with pytest.raises(ValueError, match="level"):
        paired_gap([1, 2], [2, 3], level=1.5)


def test_t_interval_of_one_mean():
    # 1, 2, 3: mean 2, sd 1, half-width t_{0.975,2} / sqrt(3)
    t2 = 0.95 / math.sqrt(2 * 0.975 * 0.025)
    iv = t_interval([1.0, 2.0, 3.0])
    assert (iv.mean, iv.n, iv.method) == (pytest.approx(2.0), 3, "t")
    assert (iv.low, iv.high) == (pytest.approx(2 - t2 / math.sqrt(3)), pytest.approx(2 + t2 / math.sqrt(3)))
    one = t_interval([0.7])
    assert one.mean == 0.7 and math.isnan(one.low) and not one.excludes_zero
    assert one.as_dict() == {"mean": 0.7, "low": None, "high": None, "n": 1}


def test_percentile_bootstrap_of_zeros_and_ones_is_the_binomial_quantiles():
    # five 0s and five 1s: a resample's mean is Binomial(10, 1/2) / 10, whose 2.5 % and 97.5 % quantiles are
    # 0.2 and 0.8 (P(X <= 1) = 0.011 < 0.025 < P(X <= 2) = 0.055), far from the next atoms
    iv = bootstrap_interval([0.0] * 5 + [1.0] * 5, method="percentile", n_resamples=20000)
    assert (iv.low, iv.high, iv.mean, iv.n) == (pytest.approx(0.2), pytest.approx(0.8), 0.5, 10)
    assert iv.excludes_zero  # 0.2 > 0
    assert bootstrap_interval([0.0] * 5 + [1.0] * 5, method="percentile", n_resamples=20000) == iv  # seeded


def test_bca_on_normal_data_matches_the_normal_interval_and_leans_right_on_skewed_data():
    rng = np.random.default_rng(7)
    x = rng.normal(0.3, 1.0, 400)
    iv = bootstrap_interval(x)
    half = 1.959964 * x.std(ddof=1) / math.sqrt(x.size)
    assert iv.low == pytest.approx(x.mean() - half, abs=0.15 * half)
    assert iv.high == pytest.approx(x.mean() + half, abs=0.15 * half)
    assert iv.excludes_zero and iv.method == "BCa"
    # right-skewed values: BCa moves both ends up against the percentile interval (Efron 1987)
    e = rng.exponential(1.0, 60)
    bca, pct = bootstrap_interval(e), bootstrap_interval(e, method="percentile")
    assert bca.low > pct.low and bca.high > pct.high


def test_constant_values_give_a_zero_width_interval():
    iv = bootstrap_interval([0.25] * 8)
    assert (iv.low, iv.high) == (0.25, 0.25) and iv.excludes_zero


def test_paired_difference_cancels_what_the_pairs_share():
    rng = np.random.default_rng(3)
    b = rng.normal(0.0, 1.0, 50)  # examples differ a lot ...
    a = b + 0.1 + rng.normal(0.0, 0.01, 50)  # ... but a beats b by 0.1 on each one
    d = paired_difference(a, b)
    assert d.low == pytest.approx(0.1, abs=0.01) and d.high == pytest.approx(0.1, abs=0.01)
    assert d.excludes_zero
    unpaired = bootstrap_interval(a).high - bootstrap_interval(a).low
    assert d.high - d.low < unpaired / 20
    shift = paired_difference([1.0, 2.0, 5.0], [0.5, 1.5, 4.5])
    assert (shift.low, shift.high) == (0.5, 0.5)
    with pytest.raises(ValueError, match="one b per a"):
        paired_difference([1.0, 2.0], [1.0])


def test_intervals_refuse_bad_input():
    with pytest.raises(ValueError, match="level"):
        bootstrap_interval([1.0, 2.0], level=0)
    with pytest.raises(ValueError, match="method"):
        bootstrap_interval([1.0, 2.0], method="basic-ish")
    with pytest.raises(ValueError, match="finite"):
        t_interval([1.0, math.nan])
    with pytest.raises(ValueError, match="at least one"):
        bootstrap_interval([])


def test_one_sample_p_matches_the_closed_form_for_two_degrees_of_freedom():
    # 1, 2, 3: t = 2 / (1 / sqrt 3) = 2 sqrt 3, df 2; two-sided P(|T| > t) = 1 - t / sqrt(t^2 + 2)
    t = 2 * math.sqrt(3)
    p = one_sample_p(np.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 1.0]]))
    assert p[0] == pytest.approx(1 - t / math.sqrt(t * t + 2), rel=1e-9)
    assert p[1] == pytest.approx(1.0)


def test_one_sided_p_against_a_threshold_is_half_the_two_sided_on_the_right_side():
    # 0.7, 0.8, 0.9 against 0.5: t = 0.3 / (0.1 / sqrt 3) = 3 sqrt 3, df 2
    # one-sided P(T > t) = (1 - t / sqrt(t^2 + 2)) / 2
    t = 3 * math.sqrt(3)
    x = np.array([[0.7, 0.8, 0.9], [0.3, 0.2, 0.1]])
    p = one_sample_p(x, popmean=0.5, alternative="greater")
    assert p[0] == pytest.approx((1 - t / math.sqrt(t * t + 2)) / 2, rel=1e-9)
    assert p[1] == pytest.approx(1 - p[0], rel=1e-9)  # below the threshold: the one-sided test does not fire
    with pytest.raises(ValueError, match="alternative"):
        one_sample_p(x, alternative="bigger")


def test_holm_and_bh_known_answers():
    p = [0.01, 0.04, 0.03, 0.005]
    # Holm: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04 -> running max 0.06
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert adjust(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: p_(i) m / i = 0.02, 0.02, 0.04, 0.04 -> running min from the top
    assert adjust(p, "bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert holm([0.6, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    with_nan = adjust([0.01, math.nan, 0.04], "holm")  # a NaN is no test: the family is 2
    assert with_nan[0] == pytest.approx(0.02) and math.isnan(with_nan[1]) and with_nan[2] == pytest.approx(0.04)
    with pytest.raises(ValueError, match="correction"):
        adjust(p, "bonferroni-ish")


def test_bootstrap_rows_equals_one_call_per_row_and_handles_missing_values():
    rng = np.random.default_rng(11)
    x = rng.exponential(1.0, (4, 30))
    x[2, :] = 0.5  # constant: zero width
    x[3, [0, 5]] = np.nan  # two examples not measured: its own group, n = 28
    got = bootstrap_rows(x, method="percentile", n_resamples=4000)
    for r in (0, 1):
        alone = bootstrap_interval(x[r], method="percentile", n_resamples=4000)
        assert got[r].mean == pytest.approx(alone.mean)
        assert got[r].low == pytest.approx(alone.low, abs=0.03) and got[r].high == pytest.approx(alone.high, abs=0.03)
    assert (got[2].low, got[2].high, got[2].n) == (0.5, 0.5, 30)
    assert got[3].n == 28 and got[3].mean == pytest.approx(np.nanmean(x[3]))
    single = bootstrap_rows(np.array([[1.0, np.nan, np.nan]]))[0]
    assert single.n == 1 and math.isnan(single.low)


def test_t_summary_matches_ttest_1samp_and_t_interval():
    from scipy.stats import ttest_1samp

    rng = np.random.default_rng(5)
    x = rng.normal(0.1, 1.0, (3, 2, 25))  # [layer, head, example]
    low, high, p = t_summary(x.mean(-1), x.std(-1, ddof=1), np.full((3, 2), 25))
    assert p == pytest.approx(ttest_1samp(x, 0.0, axis=-1).pvalue, rel=1e-9)
    iv = t_interval(x[1, 0])
    assert (low[1, 0], high[1, 0]) == (pytest.approx(iv.low), pytest.approx(iv.high))
    flat_low, _, flat_p = t_summary(np.array([0.0, 0.2]), np.array([0.0, 0.1]), np.array([10, 1]))
    assert math.isnan(flat_p[0]) and math.isnan(flat_low[1])  # no spread: no test; one value: no interval


def test_proportion_interval_is_wilsons_score_interval():
    # Wilson: (p + z^2 / 2n +/- z sqrt(p (1 - p) / n + z^2 / 4n^2)) / (1 + z^2 / n)
    k, n, z = 218, 300, 1.959963984540054
    p = k / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    iv = proportion_interval(k, n)
    assert iv.low == pytest.approx((centre - half) / (1 + z * z / n), rel=1e-9)
    assert iv.high == pytest.approx((centre + half) / (1 + z * z / n), rel=1e-9)
    assert iv.mean == pytest.approx(p) and iv.n == 300
    exact = proportion_interval(0, 10, method="exact")  # Clopper-Pearson at 0 of n: [0, 1 - (alpha / 2)^(1/n)]
    assert exact.low == 0 and exact.high == pytest.approx(1 - 0.025**0.1, rel=1e-9)
    with pytest.raises(ValueError, match="successes"):
        proportion_interval(11, 10)
