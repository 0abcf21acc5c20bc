import numpy as np
import pytest
from _planted import maps_from, random_rows
from hypothesis import given, settings
from hypothesis import strategies as st

from attnscope.analysis.rollout import MAX_FLOW_TOKENS, attention_flow, augmented, rollout, rollout_importance


def _three_token_two_layer():
    """Layer 0 has two heads whose mean is W1 = [[0,1,0],[0,0,1],[.5,0,.5]]; layer 1 (both heads)
    sends every token to token 0. By hand:
    Ahat1 = [[.5,.5,0],[0,.5,.5],[.25,0,.75]],  Ahat2 = [[1,0,0],[.5,.5,0],[.5,0,.5]],
    R2 = Ahat2 Ahat1 = [[.5,.5,0],[.25,.5,.25],[.375,.25,.375]]."""
    a = [[0, 1, 0], [0, 0, 1], [0, 0, 1]]
    b = [[0, 1, 0], [0, 0, 1], [1, 0, 0]]
    c = [[1, 0, 0], [1, 0, 0], [1, 0, 0]]
    return maps_from([[a, b], [c, c]], special=(0,))


def test_rollout_by_hand():
    maps = _three_token_two_layer()
    r = rollout(maps)
    np.testing.assert_allclose(r.joint[0], [[0.5, 0.5, 0], [0, 0.5, 0.5], [0.25, 0, 0.75]])
    np.testing.assert_allclose(r.joint[1], [[0.5, 0.5, 0], [0.25, 0.5, 0.25], [0.375, 0.25, 0.375]])
    np.testing.assert_allclose(r.importance().values, [0.5, 0.5, 0])  # CLS row (special 0)
    np.testing.assert_allclose(r.importance(2).values, [0.375, 0.25, 0.375])
    np.testing.assert_allclose(r.importance(None).values, [1.125 / 3, 1.25 / 3, 0.625 / 3])


def test_vector_rollout_equals_the_matrix_product():
    maps = _three_token_two_layer()
    np.testing.assert_allclose(rollout_importance(maps).values, [0.5, 0.5, 0])
    np.testing.assert_allclose(rollout_importance(maps, 1).values, [0.25, 0.5, 0.25])
    rng = np.random.default_rng(0)
    big = maps_from(random_rows(rng, (4, 3, 9, 9)))
    full = rollout(big)
    for row in (None, 0, 5):
        expect = full.importance(row).values
        np.testing.assert_allclose(rollout_importance(big, row).values, expect, atol=1e-6)


def test_flow_by_hand():
    # max-flow from output node (2, i) to input node (0, j) in the layered graph of Ahat2, Ahat1:
    # row 0: only through (1,0): [.5, .5, 0]
    # row 1: via (1,0) cap .5 and (1,1) cap .5: to x0 .5, to x1 .5 + .5, to x2 .5 -> [.5, 1, .5] / 2
    # row 2: via (1,0) cap .5 and (1,2) cap .5: to x0 .5 + min(.5, .25), to x1 .5, to x2 min(.5, .75)
    #        -> [.75, .5, .5] / 1.75
    flow = attention_flow(_three_token_two_layer())
    np.testing.assert_allclose(flow.flow, [[0.5, 0.5, 0], [0.25, 0.5, 0.25], [3 / 7, 2 / 7, 2 / 7]], atol=1e-6)
    np.testing.assert_allclose(flow.importance().values, [0.5, 0.5, 0], atol=1e-6)
    one = attention_flow(_three_token_two_layer(), rows=[2])
    np.testing.assert_allclose(one.importance(2).values, [3 / 7, 2 / 7, 2 / 7], atol=1e-6)
    with pytest.raises(KeyError):
        one.importance(1)


def test_flow_refuses_long_inputs():
    n = MAX_FLOW_TOKENS + 1
    maps = maps_from(np.full((1, 1, n, n), 1 / n, np.float32))
    with pytest.raises(ValueError, match=f"limited to {MAX_FLOW_TOKENS} tokens"):
        attention_flow(maps)


def test_grid_importance():
    # CLS + 2x2 grid; one layer where every token attends to cell 3 (position 4)
    w = np.zeros((1, 1, 5, 5), np.float32)
    w[0, 0, :, 4] = 1
    maps = maps_from(w, special=(0,), grid=(2, 2))
    imp = rollout_importance(maps)
    np.testing.assert_allclose(imp.values, [0.5, 0, 0, 0, 0.5])
    np.testing.assert_allclose(imp.grid, [[0, 0], [0, 0.5]])
    assert attention_flow(maps).importance().grid.shape == (2, 2)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 7), st.integers(1, 3), st.integers(0, 2**16))
def test_rollout_rows_stay_stochastic_and_ignore_head_order(n, layers, seed):
    rng = np.random.default_rng(seed)
    w = random_rows(rng, (layers, 3, n, n), sparsity=0.5)
    r = rollout(maps_from(w))
    np.testing.assert_allclose(r.joint.sum(-1), 1.0, atol=1e-5)
    assert np.all(r.joint >= 0)
    np.testing.assert_allclose(augmented(w.mean(1)).sum(-1), 1.0, atol=1e-5)
    r2 = rollout(maps_from(w[:, rng.permutation(3)]))
    np.testing.assert_allclose(r2.joint, r.joint, atol=1e-5)
    f = attention_flow(maps_from(w), rows=[0])
    np.testing.assert_allclose(f.flow.sum(-1), 1.0, atol=1e-5)
    assert np.all(f.flow >= 0)
