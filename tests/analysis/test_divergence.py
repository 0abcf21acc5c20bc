"""Jensen-Shannon divergence and per-head comparison: closed-form values."""

import numpy as np
import pytest

from attnscope.analysis.divergence import comparable, head_divergences, js_divergence, total_variation
from attnscope.analysis.maps import AttentionMaps


def test_js_of_equal_disjoint_and_a_known_pair():
    p = np.array([0.2, 0.3, 0.5])
    assert js_divergence(p, p) == pytest.approx(0.0, abs=1e-15)
    assert js_divergence([1.0, 0.0], [0.0, 1.0]) == pytest.approx(1.0)  # disjoint supports: 1 bit
    # 0.5 log2(4/3) + 0.5 (0.5 log2(2/3) + 0.5 log2 2) = 0.311278...
    expected = 0.5 * np.log2(4 / 3) + 0.5 * (0.5 * np.log2(2 / 3) + 0.5)
    assert js_divergence([1.0, 0.0], [0.5, 0.5]) == pytest.approx(expected, rel=1e-12)
    assert js_divergence([0.5, 0.5], [1.0, 0.0]) == pytest.approx(expected, rel=1e-12)  # symmetric
    assert js_divergence([1.0, 0.0], [0.0, 1.0], base=np.e) == pytest.approx(np.log(2))  # nats


def test_js_works_along_the_last_axis_and_checks_shapes():
    a = np.eye(3)[None].repeat(2, axis=0)  # [2, 3, 3]: each row a point mass
    b = np.roll(a, 1, axis=-1)
    np.testing.assert_allclose(js_divergence(a, b), np.ones((2, 3)))
    np.testing.assert_allclose(total_variation(a, b), np.ones((2, 3)))
    with pytest.raises(ValueError, match="one shape"):
        js_divergence(np.ones(3) / 3, np.ones(4) / 4)


def _maps(w, model="m"):
    return AttentionMaps(
        weights=np.asarray(w, np.float32), tokens=tuple(f"t{i}" for i in range(w.shape[-1])), model=model
    )


def test_head_divergences_per_head_and_the_shape_sentence():
    n = 4
    uniform = np.full((2, 3, n, n), 1 / n)
    a = uniform.copy()
    a[1, 2] = np.eye(n)  # one head becomes a point mass per row
    d = head_divergences(_maps(a), _maps(uniform))
    assert d.js.shape == (2, 3) and d.js[0].max() == pytest.approx(0.0, abs=1e-6)
    # JS(point mass, uniform over 4) = 0.5 log2(2/(1+1/4)) + 0.5 * 4 * (1/4) * ... closed form:
    m_hit, m_miss = (1 + 1 / n) / 2, (1 / n) / 2
    expected = 0.5 * np.log2(1 / m_hit) + 0.5 * (
        (1 / n) * np.log2((1 / n) / m_hit) + (n - 1) / n * np.log2((1 / n) / m_miss)
    )
    assert d.js[1, 2] == pytest.approx(expected, rel=1e-5)
    assert d.tv[1, 2] == pytest.approx(1 - 1 / n, rel=1e-5)
    assert d.max_abs_diff[1, 2] == pytest.approx(1 - 1 / n, rel=1e-5)
    assert comparable(_maps(a), _maps(np.full((2, 3, 5, 5), 0.2))).startswith("the runs have 4 and 5 tokens")
    with pytest.raises(ValueError, match="different shapes"):
        head_divergences(_maps(a), _maps(np.full((1, 3, n, n), 1 / n)))


def test_aligned_positions_pair_equal_tokens_and_one_for_one_substitutions():
    from attnscope.analysis.divergence import aligned_positions

    a = ["[CLS]", "the", "cat", "sat", "[SEP]"]
    b = ["[CLS]", "the", "big", "dog", "sat", "down", "[SEP]"]
    # "cat" -> "big dog" is a 1-for-2 replacement (left out); "down" is an insertion (left out)
    assert aligned_positions(a, b) == ([0, 1, 3, 4], [0, 1, 4, 6])
    assert aligned_positions(["x", "cat", "y"], ["x", "dog", "y"]) == ([0, 1, 2], [0, 1, 2])
    assert aligned_positions(["a", "cat", "b", "c"], ["a", "dog", "b", "z", "c"]) == ([0, 1, 2, 3], [0, 1, 2, 4])


def test_restricted_maps_renormalise_their_rows():
    from attnscope.analysis.divergence import restrict

    rng = np.random.default_rng(0)
    w = rng.random((2, 5, 5))
    w /= w.sum(-1, keepdims=True)
    sub = restrict(w, [0, 2, 4])
    assert sub.shape == (2, 3, 3)
    np.testing.assert_allclose(sub.sum(-1), 1.0)
    expected = w[:, [0, 2, 4]][:, :, [0, 2, 4]]
    np.testing.assert_allclose(sub, expected / expected.sum(-1, keepdims=True))
    zero = np.zeros((1, 2, 2))
    np.testing.assert_array_equal(restrict(zero, [0, 1]), zero)  # a row with no weight stays 0


def test_aligned_divergences_vanish_for_an_inserted_token_and_match_scipy():
    from scipy.spatial.distance import jensenshannon

    from attnscope.analysis.divergence import aligned_positions

    rng = np.random.default_rng(1)
    wa = rng.random((2, 3, 4, 4))
    wa /= wa.sum(-1, keepdims=True)
    wb = np.zeros((2, 3, 5, 5))  # B = A with a token inserted at position 2 (its own rows and weight arbitrary)
    keep = [0, 1, 3, 4]
    wb[:, :, np.ix_(keep, keep)[0], np.ix_(keep, keep)[1]] = wa * 0.7
    wb[:, :, :, 2] = 0.3
    wb[:, :, 2] = rng.random((2, 3, 5))
    wb /= wb.sum(-1, keepdims=True)
    a = AttentionMaps(weights=wa.astype(np.float32), tokens=("a", "b", "c", "d"), model="m")
    b = AttentionMaps(weights=wb.astype(np.float32), tokens=("a", "b", "NEW", "c", "d"), model="m")
    assert "needs the same positions" in comparable(a, b) and comparable(a, b, aligned=True) == ""
    with pytest.raises(ValueError, match="same positions"):
        head_divergences(a, b)
    positions = aligned_positions(list(a.tokens), list(b.tokens))
    assert positions == ([0, 1, 2, 3], keep)
    d = head_divergences(a, b, positions)
    np.testing.assert_allclose(d.js, 0.0, atol=1e-6)  # renormalised over the shared keys, B's rows are A's
    np.testing.assert_allclose(d.tv, 0.0, atol=1e-6)
    wb2 = wb.copy()
    wb2[1, 2] = np.roll(wb2[1, 2], 1, axis=-1)
    wb2[1, 2] /= wb2[1, 2].sum(-1, keepdims=True)
    b2 = AttentionMaps(weights=wb2.astype(np.float32), tokens=b.tokens, model="m")
    d2 = head_divergences(a, b2, positions)
    pa = wa[1, 2].astype(np.float32).astype(np.float64)
    pb = wb2[1, 2][np.ix_(keep, keep)].astype(np.float32).astype(np.float64)
    pb /= pb.sum(-1, keepdims=True)
    pa /= pa.sum(-1, keepdims=True)
    expected = np.mean([jensenshannon(pa[i], pb[i], base=2) ** 2 for i in range(4)])
    assert d2.js[1, 2] == pytest.approx(expected, rel=1e-5)
    with pytest.raises(ValueError, match="pair up"):
        head_divergences(a, b, ([0, 1], [0]))
