"""Effect metrics and rank agreement on inputs with closed-form answers."""

import numpy as np
import pytest

from attnscope.analysis import interventions as m
from attnscope.analysis.maps import AttentionMaps


def test_prob_and_margin_changes():
    clean = np.array([0.0, np.log(3.0)])  # p = [0.25, 0.75], predicted class 1, margin log 3
    altered = np.array([[0.0, np.log(1.5)], [0.0, np.log(3.0)], [np.log(2.0), 0.0]])
    np.testing.assert_allclose(m.prob_change(clean, altered), [0.6 - 0.75, 0.0, 1 / 3 - 0.75])
    np.testing.assert_allclose(m.logit_diff_change(clean, altered), [np.log(0.5), 0.0, -np.log(2) - np.log(3)])
    np.testing.assert_array_equal(m.flips(clean, altered), [0.0, 0.0, 1.0])


def test_margin_of_three_classes_uses_the_best_other_class():
    z = np.array([1.0, 5.0, 3.0])
    assert m.margin(z, 1) == pytest.approx(2.0)
    assert m.margin(z, 0) == pytest.approx(-4.0)


def test_cosine_distance():
    e = np.array([1.0, 0.0])
    np.testing.assert_allclose(m.cosine_distance(e, np.array([[1.0, 0.0], [0.0, 2.0], [-3.0, 0.0]])), [0.0, 1.0, 2.0])


def test_loss_and_answer_changes():
    clean = np.log(np.array([0.5, 0.25]))
    altered = np.log(np.array([[0.5, 0.25], [0.25, 0.25]]))
    np.testing.assert_allclose(m.loss_change(clean, altered), [0.0, np.log(2) / 2])
    c = np.array([[3.0, 1.0]])  # z_A - z_B = 2
    a = np.array([[[1.0, 1.0]], [[4.0, 0.0]]])
    np.testing.assert_allclose(m.answer_diff_change(c, a), [-2.0, 2.0])


def test_head_confidence_of_one_hot_and_uniform_heads():
    n = 4
    w = np.zeros((1, 2, n, n), np.float32)
    w[0, 0] = np.eye(n)
    w[0, 1] = 1.0 / n
    conf = m.head_confidence(AttentionMaps(weights=w, tokens=tuple("abcd")))
    np.testing.assert_allclose(conf, [[1.0, 0.25]])


def test_rank_agreement_of_monotone_scores_and_constant_ones():
    effect = -np.arange(6.0).reshape(2, 3)  # |effect| ranks like importance
    assert m.rank_agreement(effect, np.arange(6.0).reshape(2, 3)).rho == pytest.approx(1.0)
    assert m.rank_agreement(effect, -np.arange(6.0).reshape(2, 3)).rho == pytest.approx(-1.0)
    assert m.rank_agreement(np.zeros((2, 3)), np.arange(6.0).reshape(2, 3)).rho is None
    with pytest.raises(ValueError, match="same"):
        m.rank_agreement(np.zeros((2, 3)), np.zeros((3, 3)))


def test_signed_rank_agreement_keeps_signs():
    x = np.array([[-2.0, -1.0, 0.5], [1.0, 3.0, 0.0]])
    assert m.signed_rank_agreement(x, 2 * x + 1).rho == pytest.approx(1.0)
    assert m.signed_rank_agreement(x, -x).rho == pytest.approx(-1.0)
    # |x| ranks unlike x: the signed and the absolute rankings differ on the same numbers
    assert m.signed_rank_agreement(x, np.abs(x)).rho < 0.5 < m.rank_agreement(x, np.abs(x)).rho
    assert m.signed_rank_agreement(np.ones((1, 2)), np.arange(2.0)).rho is None  # fewer than 3 heads
    with pytest.raises(ValueError, match="same"):
        m.signed_rank_agreement(np.zeros((2, 3)), np.zeros((3, 3)))


def test_top_heads_by_magnitude():
    e = np.array([[0.1, -0.9], [0.5, 0.0]])
    assert m.top_heads(e, 2) == [(0, 1, -0.9), (1, 0, 0.5)]
