"""Statistics over seeds: closed-form checks of the mean/sd and of the paired t-interval (df = n - 1)."""

import math

import pytest

from attnscope.analysis.seed_stats import paired_gap, summarise, t_quantile


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
