"""Analyses on causal maps (a decoder's attention): only offsets <= 0 exist, and the first row (one
key, itself) is forced, so it is left out of every mean. Closed-form answers on planted maps."""

import numpy as np
import pytest

from attnscope.analysis.distance import attention_distance
from attnscope.analysis.evolution import evolution
from attnscope.analysis.heads import classify_heads, induction_scores, make_probe_ids, sink_scores
from attnscope.analysis.implied_conv import implied_convolution
from attnscope.analysis.maps import AttentionMaps
from attnscope.analysis.shift import scan_shifts


def causal(heads: list[np.ndarray], special=()) -> AttentionMaps:
    w = np.stack(heads)[None].astype(np.float32)  # [1, head, n, n]
    n = w.shape[-1]
    assert np.all(np.triu(w[0, 0], 1) == 0)
    return AttentionMaps(w, tokens=[f"t{i}" for i in range(n)], special=special, causal=True)


def uniform(n: int) -> np.ndarray:
    """Row q spreads evenly over keys 0..q."""
    return np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]


def previous(n: int) -> np.ndarray:
    """Row 0 on itself (forced), every later row on the previous token."""
    a = np.zeros((n, n))
    a[0, 0] = 1
    a[np.arange(1, n), np.arange(n - 1)] = 1
    return a


def first(n: int) -> np.ndarray:
    """Every row on position 0: an attention sink."""
    a = np.zeros((n, n))
    a[:, 0] = 1
    return a


def test_only_offsets_up_to_zero_are_scanned():
    scan = scan_shifts(causal([previous(12)]), k=4)
    assert scan.offsets.tolist() == [-4, -3, -2, -1, 0]
    # the first row is left out of every offset: offset 0 exists in rows 1..11 only
    assert scan.count.tolist() == [8, 9, 10, 11, 11]
    with pytest.raises(KeyError):
        scan.mass_at(1)


def test_a_uniform_causal_head_is_no_shift_head():
    """Mass at offset d over rows q >= max(1, -d) is mean 1/(q + 1); offsets 0 and -1 tie exactly
    (with the forced first row counted, offset 0 would win by 1/n)."""
    n = 16
    scan = scan_shifts(causal([uniform(n)]), k=3)
    q = np.arange(1, n)
    np.testing.assert_allclose(scan.mass_at(0)[0, 0], np.mean(1 / (q + 1)), rtol=1e-6)
    np.testing.assert_allclose(scan.mass_at(-1)[0, 0], np.mean(1 / (q + 1)), rtol=1e-6)
    np.testing.assert_allclose(scan.mass_at(-2)[0, 0], np.mean(1 / (np.arange(2, n) + 1)), rtol=1e-6)
    assert scan.shift_score[0, 0] == pytest.approx(0.0, abs=1e-6)
    assert not scan.is_shift[0, 0]


def test_previous_token_and_sink_heads_and_their_labels():
    n = 20
    maps = causal([previous(n), first(n), uniform(n)])
    types = classify_heads(maps)
    np.testing.assert_allclose(types.scores["previous"][0], [1.0, 1 / 19, np.mean(1 / np.arange(2, n + 1))], rtol=1e-5)
    assert "next" not in types.scores
    # sink: rows 1..19 on position 0 (the first row is position 0 itself)
    np.testing.assert_allclose(types.scores["sink"][0], [1 / 19, 1.0, np.mean(1 / np.arange(2, n + 1))], rtol=1e-5)
    assert types.labels_of(0, 0) == ("previous",)
    assert "sink" in types.labels_of(0, 1) and "previous" not in types.labels_of(0, 1)
    assert types.heads_with("sink") == ["L0H1"]
    np.testing.assert_allclose(sink_scores(maps)[0], types.scores["sink"][0], rtol=1e-6)


def test_sink_scores_skip_special_rows_and_read_any_position():
    n = 6
    a = first(n)
    maps = causal([a], special=(3,))
    assert sink_scores(maps)[0, 0] == pytest.approx(1.0)
    assert sink_scores(maps, position=n - 1)[0, 0] == 0.0  # no later row


def test_entropy_top1_and_distance_leave_the_forced_row_out():
    n = 10
    ev = evolution(causal([uniform(n), previous(n)]))
    # uniform rows: normalised entropy exactly 1 on every row with a choice; previous: 0
    np.testing.assert_allclose(ev.head_norm_entropy[0], [1.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(ev.head_top1[0], [np.mean(1 / np.arange(2, n + 1)), 1.0], rtol=1e-6)
    dist = attention_distance(causal([previous(n), first(n)]))
    # previous: every chosen row looks 1 back; first: row q looks q back, q = 1..9
    np.testing.assert_allclose(dist.per_head[0], [1.0, np.mean(np.arange(1, n))], rtol=1e-6)


def test_implied_kernel_has_the_causal_offsets():
    conv = implied_convolution(causal([previous(12)]), k=3)
    assert conv.kernel.shape == (1, 1, 4)
    assert conv.r2[0, 0] == pytest.approx(1.0)


def test_induction_score_on_a_repeated_random_probe():
    """Olsson et al.: mean attention from each token of the second copy to the token after its
    earlier occurrence. A planted induction head scores 1, a previous-token head 0."""
    ids = make_probe_ids(1000, 20, seed=1)
    n = ids.size
    ind = np.zeros((n, n))
    ind[:10, 0] = 1  # first copy: nothing to copy yet, park on the first token
    for q in range(10, n):
        ind[q, q - 10 + 1] = 1  # the token after the earlier occurrence of ids[q]
    scores = induction_scores(causal([ind, previous(n)]), ids)
    np.testing.assert_allclose(scores[0], [1.0, 0.0], atol=1e-6)


def test_rollout_reads_the_last_row_of_causal_maps():
    from attnscope.analysis.rollout import default_row, rollout_importance

    maps = causal([previous(6)])
    assert default_row(maps) == 5
    imp = rollout_importance(maps, -1)
    assert imp.row == 5 and imp.values.shape == (6,)
