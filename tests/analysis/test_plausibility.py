"""Plausibility metrics on hand-made spans, checked by hand and against scikit-learn."""

import numpy as np
import pytest

from attnscope.analysis.plausibility import (
    aggregate_plausibility,
    auprc,
    iou_counts,
    iou_prf,
    plausibility,
    precision_recall_curve,
    spans,
    token_prf,
    word_mask_to_tokens,
)


def test_token_f1_by_hand():
    r = token_prf(np.array([0, 1, 1, 0, 0]), np.array([0, 1, 0, 0, 1]))
    assert (r.precision, r.recall, r.f1) == pytest.approx((0.5, 0.5, 0.5))
    assert token_prf(np.zeros(3), np.ones(3)).f1 == 0.0


def test_spans_and_iou_f1_by_hand():
    pred, true = np.array([0, 1, 1, 0, 0]), np.array([0, 1, 0, 0, 1])
    assert spans(pred) == [(1, 3)] and spans(true) == [(1, 2), (4, 5)]
    # [1,3) vs [1,2): IOU 1/2 -> a hit at threshold 0.5; P = 1/1, R = 1/2
    assert iou_counts(pred, true, 0.5) == (1, 1, 2)
    r = iou_prf(pred, true, 0.5)
    assert (r.precision, r.recall, r.f1) == pytest.approx((1.0, 0.5, 2 / 3))
    assert iou_counts(pred, true, 0.51) == (0, 1, 2)


def test_auprc_by_hand_and_against_sklearn():
    true, scores = np.array([1, 0, 1, 0]), np.array([0.9, 0.8, 0.7, 0.1])
    # points (R, P): (1, 2/3), (.5, .5), (.5, 1), (0, 1) -> 0.5*(2/3+.5)/2*... = 0.291667 + 0.5
    assert auprc(true, scores) == pytest.approx(0.5 * (2 / 3 + 0.5) / 2 + 0.5)
    assert auprc(np.zeros(4), scores) is None
    from sklearn.metrics import auc
    from sklearn.metrics import precision_recall_curve as sk_prc

    rng = np.random.default_rng(0)
    for _ in range(25):
        n = int(rng.integers(2, 40))
        y = rng.integers(0, 2, n)
        y[0] = 1
        s = np.round(rng.random(n), 1)  # ties on purpose
        p, r = precision_recall_curve(y, s)
        sp, sr, _ = sk_prc(y, s)
        np.testing.assert_allclose(p, sp)
        np.testing.assert_allclose(r, sr)
        assert auprc(y, s) == pytest.approx(auc(sr, sp))


def test_word_marks_map_onto_subwords():
    assert word_mask_to_tokens([None, 0, 0, 1, 2, None], [1, 0, 1]).tolist() == [0, 1, 1, 0, 1, 0]


def test_plausibility_leaves_special_positions_out_and_aggregates():
    human = np.array([1, 1, 0, 0, 1, 1])  # specials (0, 5) marked on purpose: they must not count
    hard = np.array([1, 1, 0, 0, 0, 1])
    one = plausibility(np.array([9, 0.9, 0.1, 0.2, 0.3, 9]), human, hard, special=(0, 5))
    assert one.token.f1 == pytest.approx(2 * 1 * 0.5 / 1.5)
    assert one.iou.recall == pytest.approx(0.5)
    agg = aggregate_plausibility([one, one])
    assert agg["token_f1"] == pytest.approx(one.token.f1)
    assert agg["iou_f1"] == pytest.approx(2 * 1 * 0.5 / 1.5)
    assert agg["n_with_rationale"] == 2
