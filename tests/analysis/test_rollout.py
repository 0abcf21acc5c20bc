"""Rollout, flow and gradient rollout on two-token maps with hand-computed answers."""

import numpy as np
import pytest

from analysis.maps import AttentionMaps
from analysis.rollout import TooLongForFlowError, flow, flow_rows, gradient_rollout, rollout

TO_FIRST = np.array([[1.0, 0.0], [1.0, 0.0]])  # every query attends to token 0


def maps_of(*layers):
    w = np.stack([np.asarray(l)[None] for l in layers]).astype(np.float32)  # [layer, head=1, q, k]
    return AttentionMaps(weights=w, tokens=tuple(f"t{i}" for i in range(w.shape[-1])))


def test_rollout_by_hand():
    # Â = 0.5 W + 0.5 I = [[1, 0], [.5, .5]]; two layers: Â Â = [[1, 0], [.75, .25]]
    r = rollout(maps_of(TO_FIRST, TO_FIRST))
    assert r.shape == (2, 2, 2)
    np.testing.assert_allclose(r[0], [[1, 0], [0.5, 0.5]])
    np.testing.assert_allclose(r[1], [[1, 0], [0.75, 0.25]])
    np.testing.assert_allclose(rollout(maps_of(np.eye(2)))[0], np.eye(2))


def test_rollout_averages_heads_first():
    w = np.stack([np.eye(2), TO_FIRST])[None].astype(np.float32)  # 1 layer, 2 heads
    r = rollout(AttentionMaps(weights=w, tokens=("a", "b")))
    # mean head = [[1, 0], [.5, .5]]; + I, rows renormalised: [[1, 0], [.25, .75]]
    np.testing.assert_allclose(r[0], [[1, 0], [0.25, 0.75]])


def test_flow_by_hand_differs_from_rollout():
    # query 1 to key 0: two paths of capacity .5 each -> 1; to key 1: one path of .5 -> rows [2/3, 1/3]
    f = flow(maps_of(TO_FIRST, TO_FIRST))
    np.testing.assert_allclose(f, [[1, 0], [2 / 3, 1 / 3]], atol=1e-5)
    np.testing.assert_allclose(flow_rows(maps_of(TO_FIRST, TO_FIRST), [1]), [[2 / 3, 1 / 3]], atol=1e-5)
    # one layer: flow is the augmented matrix itself
    np.testing.assert_allclose(flow(maps_of(TO_FIRST)), [[1, 0], [0.5, 0.5]], atol=1e-5)


def test_flow_refuses_long_inputs_with_a_clear_message():
    n = 5
    with pytest.raises(TooLongForFlowError, match="capped at 4 tokens; this input has 5"):
        flow(maps_of(np.full((n, n), 1 / n)), max_tokens=4)


def test_gradient_rollout_by_hand():
    g = np.array([[[0.0, 1.0], [0.0, 0.0]]])
    np.testing.assert_allclose(gradient_rollout(g), [[1, 1], [0, 1]])
    two = gradient_rollout(np.concatenate([g, g]))  # (I + G)(I + G) = I + 2G (G² = 0)
    np.testing.assert_allclose(two, [[1, 2], [0, 1]])
