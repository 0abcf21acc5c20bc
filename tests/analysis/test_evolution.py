import numpy as np
import pytest
from _planted import maps_from, random_rows
from hypothesis import given, settings
from hypothesis import strategies as st

from attnscope.analysis.evolution import compare, evolution, js_divergence, normalised_entropy


def _uniform_over_first(n, m):
    w = np.zeros((n, n), np.float32)
    w[:, :m] = 1.0 / m
    return w


def test_uniform_rows_have_entropy_log_n():
    n = 10
    maps = maps_from(np.full((1, 2, n, n), 1 / n, np.float32))
    ev = evolution(maps)
    np.testing.assert_allclose(ev.entropy, np.log(n), atol=1e-5)
    np.testing.assert_allclose(ev.norm_entropy, 1.0, atol=1e-5)
    np.testing.assert_allclose(ev.effective_keys, n, rtol=1e-5)
    np.testing.assert_allclose(ev.top1, 1 / n, rtol=1e-6)


def test_one_hot_rows_have_zero_entropy_and_one_effective_key():
    maps = maps_from(np.eye(6, dtype=np.float32)[None, None])
    ev = evolution(maps)
    np.testing.assert_allclose(ev.entropy, 0.0, atol=1e-7)
    np.testing.assert_allclose(ev.effective_keys, 1.0, atol=1e-6)
    np.testing.assert_allclose(ev.head_top1, 1.0)


def test_causal_rows_are_normalised_by_the_keys_they_can_see():
    n = 5
    tril = np.tril(np.ones((n, n), np.float32))
    maps = maps_from((tril / tril.sum(-1, keepdims=True))[None, None], causal=True)
    ev = evolution(maps)
    np.testing.assert_allclose(ev.entropy[0, 0], np.log(np.arange(1, n + 1)), atol=1e-6)
    np.testing.assert_allclose(ev.norm_entropy[0, 0], [0, 1, 1, 1, 1], atol=1e-6)  # one key: 0
    np.testing.assert_allclose(normalised_entropy(np.full(3, np.log(3.0)), causal=False), 1.0, atol=1e-6)


def test_sharpening_slope_is_exact_for_halving_support():
    # layer l is uniform over 8 / 2^l keys: entropy log 8 - l log 2, slope -log 2
    n = 8
    w = np.stack([_uniform_over_first(n, m)[None] for m in (8, 4, 2, 1)])
    ev = evolution(maps_from(w))
    np.testing.assert_allclose(ev.layer_entropy, np.log([8, 4, 2, 1]), atol=1e-5)
    assert ev.slope == pytest.approx(-np.log(2), abs=1e-5)
    assert ev.intercept == pytest.approx(np.log(8), abs=1e-5)


def test_consecutive_layer_similarity():
    n = 6
    a = _uniform_over_first(n, 3)  # keys 0..2
    b = np.zeros((n, n), np.float32)
    b[:, 3:] = 1 / 3  # keys 3..5: disjoint support
    ev = evolution(maps_from(np.stack([a[None], a[None], b[None]])))
    np.testing.assert_allclose(ev.js_next, [0.0, np.log(2)], atol=1e-5)
    np.testing.assert_allclose(ev.cosine_next, [1.0, 0.0], atol=1e-6)


def test_js_divergence_by_hand():
    p = np.array([[1.0, 0.0], [0.5, 0.5]])
    q = np.array([[0.0, 1.0], [1.0, 0.0]])
    # row 1: m = (3/4, 1/4); JS = H(m) - H(p)/2 - H(q)/2
    h_m = -(0.75 * np.log(0.75) + 0.25 * np.log(0.25))
    np.testing.assert_allclose(js_divergence(p, q), [np.log(2), h_m - 0.5 * np.log(2)], atol=1e-6)


def test_compare_matches_layers_by_depth():
    rng = np.random.default_rng(0)
    a = maps_from(random_rows(rng, (3, 2, 7, 7)))
    b = maps_from(random_rows(rng, (5, 4, 7, 7)))
    cmp = compare(a, b)
    assert cmp.match_b.tolist() == [0, 2, 4]
    assert cmp.same_tokens and cmp.js_ab.shape == (3,)
    same = compare(a, a)
    np.testing.assert_allclose(same.js_ab, 0.0, atol=1e-5)
    np.testing.assert_allclose(same.cosine_ab, 1.0, atol=1e-6)
    other = maps_from(random_rows(rng, (2, 2, 5, 5)))
    assert compare(a, other).js_ab is None


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 12), st.integers(0, 2**16), st.booleans())
def test_entropy_bounds_and_head_permutation(n, seed, causal):
    rng = np.random.default_rng(seed)
    w = random_rows(rng, (3, 3, n, n), sparsity=0.6)
    if causal:
        w = np.tril(w) + np.float32(1e-9) * np.eye(n, dtype=np.float32)
        w /= w.sum(-1, keepdims=True)
    ev = evolution(maps_from(w, causal=causal))
    assert np.all(ev.entropy >= 0) and np.all(ev.entropy <= np.log(n) + 1e-5)
    assert np.all((ev.norm_entropy >= 0) & (ev.norm_entropy <= 1))
    assert np.all(ev.effective_keys >= 1 - 1e-5) and np.all(ev.top1 <= 1)
    assert np.all((ev.js_next >= 0) & (ev.js_next <= np.log(2) + 1e-6))
    perm = rng.permutation(3)
    ev2 = evolution(maps_from(w[:, perm], causal=causal))
    np.testing.assert_allclose(ev2.head_entropy, ev.head_entropy[:, perm], atol=1e-6)
    np.testing.assert_allclose(ev2.js_next, ev.js_next, atol=1e-5)  # head means do not change
