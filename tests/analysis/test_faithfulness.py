"""ERASER metrics on a toy predictor whose probabilities are known in closed form (hand-computed)."""

from dataclasses import replace

import numpy as np
import pytest

from attnscope.analysis.faithfulness import (
    ERASER,
    ERASER_PAPER,
    FERRET,
    Scored,
    aggregate,
    aopc,
    comprehensiveness,
    evaluate,
    evaluate_many,
    get_convention,
    keep_tokens,
    remove_tokens,
    score_ordered,
    select_rationale,
    sufficiency,
    token_count,
)

CLS, SEP, MASK = 101, 102, 103
IDS = np.array([CLS, 5, 6, 1, 2, SEP])
SPECIAL = (0, 5)
# explainer scores: token 5 first, then 6, then 1; token 2 negative
SCORES = np.array([0.0, 0.9, 0.5, 0.1, -0.2, 0.0])


class Toy:
    """p(class 1) = 0.3 + 0.4 [id 5 present] + 0.2 [id 6 present]; records every call."""

    def __init__(self):
        self.calls: list[list[np.ndarray]] = []

    def __call__(self, batch):
        self.calls.append([np.asarray(b) for b in batch])
        p1 = np.array([0.3 + 0.4 * (5 in b) + 0.2 * (6 in b) for b in batch])
        return np.stack([1 - p1, p1], axis=1)


def test_eraser_code_rule_by_hand():
    # n = 4 candidates; bins 1,5,10,20,50%: removed 4 - int((1-k) 4) = 1,1,1,1,2; kept int(k 4) = 0,0,0,0,2
    # remove {5}: p1 0.5 (drop 0.4); remove {5,6}: 0.3 (0.6); keep nothing: 0.3 (0.6); keep {5,6}: 0.9 (0)
    toy = Toy()
    r = evaluate(toy, IDS, {"e": SCORES}, special=SPECIAL, k=0.5, convention=ERASER)["e"]
    assert ERASER.count == "eraser-code" and r.count == "eraser-code"
    assert r.target == 1 and r.p_full == pytest.approx(0.9)
    assert r.comprehensiveness == pytest.approx(0.6) and r.sufficiency == pytest.approx(0.0)
    assert r.comp_curve == pytest.approx([0.4, 0.4, 0.4, 0.4, 0.6])
    assert r.suff_curve == pytest.approx([0.6, 0.6, 0.6, 0.6, 0.0])
    assert r.aopc_comprehensiveness == pytest.approx(2.2 / 5)
    assert r.aopc_sufficiency == pytest.approx(2.4 / 5)
    assert any(np.array_equal(s, [CLS, SEP]) for s in toy.calls[0])  # a bin that keeps nothing
    # full, -{5}, -{5,6}, +{}, +{5,6}: duplicates across bins are sent once
    assert len(toy.calls) == 1 and len(toy.calls[0]) == 5


def test_ceil_rule_by_hand():
    # n = 4 candidates; bins 1,5,10,20,50% -> ceil(k n) = 1,1,1,1,2 tokens on both sides
    # remove {5}: p1 0.5 (drop 0.4); remove {5,6}: 0.3 (0.6); keep {5}: 0.7 (0.2); keep {5,6}: 0.9 (0)
    toy = Toy()
    conv = get_convention("eraser", count="ceil")
    r = evaluate(toy, IDS, {"e": SCORES}, special=SPECIAL, k=0.5, convention=conv)["e"]
    assert r.target == 1 and r.p_full == pytest.approx(0.9)
    assert r.comprehensiveness == pytest.approx(0.6) and r.sufficiency == pytest.approx(0.0)
    assert r.comp_curve == pytest.approx([0.4, 0.4, 0.4, 0.4, 0.6])
    assert r.suff_curve == pytest.approx([0.2, 0.2, 0.2, 0.2, 0.0])
    assert r.aopc_comprehensiveness == pytest.approx(2.2 / 5)
    assert r.aopc_sufficiency == pytest.approx(0.8 / 5)
    assert r.rationale == [1, 2]
    assert len(toy.calls) == 1  # every perturbation in one predict call
    # full, -{5}, -{5,6}, +{5}, +{5,6}: duplicates across bins are sent once
    assert len(toy.calls[0]) == 5


def test_eraser_paper_convention_is_five_sixths_of_the_code_value():
    r = evaluate(Toy(), IDS, {"e": SCORES}, special=SPECIAL, k=0.5, convention=ERASER_PAPER)["e"]
    assert r.aopc_comprehensiveness == pytest.approx(2.2 / 6)
    assert r.aopc_sufficiency == pytest.approx(2.4 / 6)


def test_ferret_convention_by_hand():
    # bins 10..100% of n=4 -> int(k n) = 0,0,1,1,2,2,2,3,3,4; 0 skips, repeats skip, only positive:
    # kept rationales {5}, {5,6}, {5,6,1} (the 4-token bin drops the negative token -> a repeat)
    r = evaluate(Toy(), IDS, {"e": SCORES}, special=SPECIAL, k=0.5, convention=FERRET, target=1)["e"]
    kept = [v for v in r.comp_curve if v is not None]
    assert kept == pytest.approx([0.4, 0.6, 0.6])
    assert r.comp_curve[:2] == [None, None]
    assert r.aopc_comprehensiveness == pytest.approx(1.6 / 3)
    assert r.aopc_sufficiency == pytest.approx(0.2 / 3)


def test_target_predicted_for_eraser_explained_for_ferret():
    # explaining class 0 (not predicted): p0 full 0.1; remove {5}: p0 0.5 -> drop -0.4
    e = evaluate(Toy(), IDS, {"e": SCORES}, special=SPECIAL, k=0.25, convention=ERASER, target=0)["e"]
    f = evaluate(Toy(), IDS, {"e": SCORES}, special=SPECIAL, k=0.25, convention=FERRET, target=0)["e"]
    assert e.target == 1 and e.comprehensiveness == pytest.approx(0.4)
    assert f.target == 0 and f.comprehensiveness == pytest.approx(-0.4)


def test_ferret_empty_cases_score_zero_and_one():
    negative = np.array([0.0, -1, -1, -1, -1, 0.0])
    r = evaluate(Toy(), IDS, {"e": negative}, special=SPECIAL, k=0.5, convention=FERRET)["e"]
    assert all(v is None for v in r.comp_curve)
    assert (r.aopc_comprehensiveness, r.aopc_sufficiency) == (0.0, 1.0)


def test_special_tokens_stay_and_deletion_keeps_document_order():
    toy = Toy()
    evaluate(toy, IDS, {"e": SCORES}, special=SPECIAL, k=0.5, convention=ERASER)
    for seq in toy.calls[0]:
        assert seq[0] == CLS and seq[-1] == SEP
    assert any(np.array_equal(s, [CLS, 1, 2, SEP]) for s in toy.calls[0])  # comprehensiveness input
    assert any(np.array_equal(s, [CLS, 5, 6, SEP]) for s in toy.calls[0])  # sufficiency input


def test_mask_removal_keeps_length_and_uses_the_mask_id():
    toy = Toy()
    conv = get_convention("eraser", removal="mask")
    r = evaluate(toy, IDS, {"e": SCORES}, special=SPECIAL, k=0.5, convention=conv, mask_id=MASK)["e"]
    assert all(len(s) == len(IDS) for s in toy.calls[0])
    assert any(np.array_equal(s, [CLS, MASK, MASK, 1, 2, SEP]) for s in toy.calls[0])
    assert r.comprehensiveness == pytest.approx(0.6)
    with pytest.raises(ValueError, match="mask_id"):
        evaluate(Toy(), IDS, {"e": SCORES}, special=SPECIAL, k=0.5, convention=conv)


def test_several_explainers_share_one_call_and_the_wrappers_agree():
    toy = Toy()
    rev = SCORES[::-1].copy()
    out = evaluate(toy, IDS, {"a": SCORES, "b": rev}, special=SPECIAL, k=0.5)
    assert len(toy.calls) == 1 and set(out) == {"a", "b"}
    assert comprehensiveness(Toy(), IDS, SCORES, 0.5, special=SPECIAL) == pytest.approx(0.6)
    assert sufficiency(Toy(), IDS, SCORES, 0.5, special=SPECIAL) == pytest.approx(0.0)
    assert aopc(Toy(), IDS, SCORES, special=SPECIAL) == pytest.approx((0.44, 0.48))
    # "b" ranks token 2 (id 2) first: removing it changes nothing, keeping it alone drops 0.6
    assert out["b"].comp_curve[0] == pytest.approx(0.0) and out["b"].suff_curve[0] == pytest.approx(0.6)


def test_aggregate_means_over_examples():
    a = evaluate(Toy(), IDS, {"e": SCORES}, special=SPECIAL, k=0.5)["e"]
    b = evaluate(Toy(), IDS, {"e": SCORES[::-1].copy()}, special=SPECIAL, k=0.5)["e"]
    agg = aggregate([a, b])
    assert agg["n"] == 2
    assert agg["comprehensiveness"] == pytest.approx((a.comprehensiveness + b.comprehensiveness) / 2)
    assert agg["comp_curve"][0] == pytest.approx((0.4 + 0.0) / 2)


def test_ferret_rule_under_an_eraser_convention_skips_empty_bins():
    # eraser bins with the ferret rule on n = 4: int(k 4) = 0,0,0,0,2 -> four skipped bins, one kept
    conv = get_convention("eraser", count="ferret")
    r = evaluate(Toy(), IDS, {"e": SCORES}, special=SPECIAL, k=0.5, convention=conv)["e"]
    assert r.comp_curve[:4] == [None] * 4 and r.comp_curve[4] == pytest.approx(0.6)
    assert r.aopc_comprehensiveness == pytest.approx(0.6) and r.aopc_sufficiency == pytest.approx(0.0)
    with pytest.raises(ValueError, match="count must be one of"):
        get_convention("eraser", count="round")


def test_counts_and_selection_helpers():
    assert token_count(0.07, 100) == 7  # not 8: 0.07*100 is 7.000000000000001 in floating point
    assert token_count(0.01, 20) == 1 and token_count(0.01, 20, "floor") == 0
    cand = np.array([1, 2, 3, 4])
    assert select_rationale(np.array([0, 1, 1, 1, 0, 0.0]), 0.5, cand).tolist() == [1, 2]  # ties: earlier
    assert remove_tokens(IDS, np.array([1, 3])).tolist() == [CLS, 6, 2, SEP]
    assert keep_tokens(IDS, np.array([3]), SPECIAL).tolist() == [CLS, 1, SEP]


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="unknown convention"):
        get_convention("nope")
    with pytest.raises(ValueError, match="gave 3 scores for 6 tokens"):
        evaluate(Toy(), IDS, {"e": np.zeros(3)}, special=SPECIAL, k=0.5)
    with pytest.raises(ValueError, match="predict returned shape"):
        evaluate(lambda b: np.zeros(2), IDS, {"e": SCORES}, special=SPECIAL, k=0.5)


def test_entropy_and_kl_variants_by_hand():
    """ERASER code's variants at k: remove {5, 6} gives p = (0.7, 0.3), keep {5, 6} gives the full
    p = (0.1, 0.9): H(p) - H(p') and KL(p' || p) in nats."""
    import math

    r = evaluate(Toy(), IDS, {"e": SCORES}, special=SPECIAL, k=0.5, convention=ERASER)["e"]
    h = lambda p: -sum(v * math.log(v) for v in p)  # noqa: E731
    assert r.comprehensiveness_entropy == pytest.approx(h([0.1, 0.9]) - h([0.7, 0.3]))
    assert r.comprehensiveness_kl == pytest.approx(0.7 * math.log(0.7 / 0.1) + 0.3 * math.log(0.3 / 0.9))
    assert r.sufficiency_entropy == pytest.approx(0.0, abs=1e-12)
    assert r.sufficiency_kl == pytest.approx(0.0, abs=1e-12)
    agg = aggregate([r, r])
    assert agg["comprehensiveness_kl"] == pytest.approx(r.comprehensiveness_kl)


def test_eraser_order_feeds_kept_tokens_highest_first_and_the_rest_lowest_first():
    # ids 10..13 at positions 1..4 with scores 0.1, 0.5, 0.9, 0.05; k = 0.5 of n = 4: 2 removed, 2 kept.
    # kept {12 (0.9), 11 (0.5)} highest first; remaining {13 (0.05), 10 (0.1)} lowest first (ERASER's
    # nlargest / nsmallest order); eraser-code feeds the same tokens in document order
    ids = np.array([CLS, 10, 11, 12, 13, SEP])
    scores = np.array([0.0, 0.1, 0.5, 0.9, 0.05, 0.0])
    fed = {}
    for rule in ("eraser-code", "eraser-order"):
        toy = Toy()
        conv = replace(ERASER, bins=(0.5,), count=rule)
        r = evaluate(toy, ids, {"e": scores}, special=SPECIAL, k=0.5, convention=conv)["e"]
        assert r.count == rule
        fed[rule] = [b.tolist() for b in toy.calls[0]]
    assert fed["eraser-code"] == [ids.tolist(), [CLS, 10, 13, SEP], [CLS, 11, 12, SEP]]
    assert fed["eraser-order"] == [ids.tolist(), [CLS, 13, 10, SEP], [CLS, 12, 11, SEP]]


def test_eraser_order_equals_eraser_code_on_a_bag_of_words_model_and_not_on_an_order_sensitive_one():
    rng = np.random.default_rng(0)
    ids = np.array([CLS, *range(20, 36), SEP])
    special = (0, len(ids) - 1)
    scores = rng.normal(size=len(ids))

    def first_token(batch):  # p(class 1) grows with the first non-special id: order matters
        p1 = np.array([0.1 + 0.8 * (b[1] - 20) / 16 if len(b) > 2 else 0.5 for b in batch])
        return np.stack([1 - p1, p1], axis=1)

    code = get_convention("eraser", count="eraser-code")
    order = get_convention("eraser", count="eraser-order")
    bag = {
        c.count: evaluate(Toy(), ids, {"e": scores}, special=special, k=0.2, convention=c)["e"] for c in (code, order)
    }
    assert bag["eraser-order"].comp_curve == pytest.approx(bag["eraser-code"].comp_curve)
    assert bag["eraser-order"].aopc_sufficiency == pytest.approx(bag["eraser-code"].aopc_sufficiency)
    seq = {
        c.count: evaluate(first_token, ids, {"e": scores}, special=special, k=0.5, convention=c)["e"]
        for c in (code, order)
    }
    assert seq["eraser-order"].sufficiency != pytest.approx(seq["eraser-code"].sufficiency)


def test_eraser_order_refuses_masking():
    with pytest.raises(ValueError, match="needs removal 'delete'"):
        get_convention("eraser", removal="mask", count="eraser-order")


def test_score_ordered_keeps_special_tokens_in_their_places():
    ids = np.array([CLS, 1, 2, SEP, 3, 4, SEP])  # a pair: [CLS] a b [SEP] c d [SEP]
    got = score_ordered(ids, np.array([5, 1, 4]), (0, 3, 6))
    # kept places 0, 1, 3, 4, 5, 6; the non-special ones (1, 4, 5) take ids[5], ids[1], ids[4] in that order
    assert got.tolist() == [CLS, 4, SEP, 1, 3, SEP]


def test_evaluate_many_equals_one_call_per_example():
    # three examples (one repeated, one with other ids and a target), two conventions: the same
    # results as evaluate one by one, from a single predict call with each distinct sequence once
    other = np.array([CLS, 6, 7, 5, SEP])
    examples = [
        Scored(IDS, {"e": SCORES, "flat": np.zeros(6)}, SPECIAL),
        Scored(other, {"e": np.array([0.0, 0.2, 0.9, 0.4, 0.0])}, (0, 4), target=0),
        Scored(IDS, {"e": SCORES}, SPECIAL),
    ]
    for conv in (ERASER, FERRET):
        toy = Toy()
        many = evaluate_many(toy, examples, k=0.5, convention=conv)
        assert len(toy.calls) == 1
        sent = [s.tobytes() for s in toy.calls[0]]
        assert len(sent) == len(set(sent))
        for ex, got in zip(examples, many):
            one = evaluate(Toy(), ex.ids, ex.scores, special=ex.special, k=0.5, convention=conv, target=ex.target)
            assert got.keys() == one.keys()
            for name in one:
                assert got[name].as_dict() == one[name].as_dict()
    assert evaluate_many(Toy(), [], k=0.5) == []
